//! Where a request goes: the upstream that owns a tool, prompt or resource,
//! or why it goes nowhere.
//!
//! Routing is also approval: an entry withheld for drift is refused as
//! drift (never answered as unknown), a name in the namespace of an
//! upstream whose catalog was never read to its end is "not served yet",
//! and with a lockfile in force a URI no approved entry or template covers
//! is not found (guessing its upstream would reach unapproved resources).

use serde_json::{Value, json};

use crate::audit;
use crate::catalog::{Federation, Route};
use crate::config::CatalogMode;
use crate::method::{ListKind, Method};
use crate::naming::Naming;
use crate::outbound::Url;
use crate::progressive;

use super::Denied;

/// Where a resource request goes, and what the audit log may call it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRoute<'a> {
    /// The owning upstream.
    pub upstream: &'a str,
    /// The audit target: the URI's scheme when the approved catalog lists
    /// the URI, `None` when sluice fell back to the only upstream offering
    /// resources (a scheme the client made up is never a label).
    pub target: Option<String>,
}

/// What a `tools/call` is, before routing.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    /// A call of the tool its params name, as the client sent them.
    Tool,
    /// `sluice_call_tool` in progressive mode: a call of the tool it names,
    /// through the same policies; these are the inner call's params.
    Direct(Value),
    /// A meta-tool of progressive mode that sluice answers itself
    /// (listing servers or tools, describing a tool), with its arguments.
    Meta {
        /// `sluice_list_servers`, `sluice_list_tools` or
        /// `sluice_describe_tool`.
        name: String,
        /// Its arguments (`{}` when absent).
        arguments: Value,
    },
}

/// What a `tools/call` with `params` is: in progressive mode, a meta-tool
/// name is sluice's own, and `sluice_call_tool` stands for the call it
/// names; otherwise every name is an upstream tool's.
pub fn tool_call(mode: CatalogMode, params: &Value) -> Result<ToolCall, Denied> {
    check_arguments(ListKind::Tools, params)?;
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if mode != CatalogMode::Progressive || !progressive::is_meta_tool(name) {
        return Ok(ToolCall::Tool);
    }
    let arguments = params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if name != progressive::CALL_TOOL {
        return Ok(ToolCall::Meta {
            name: name.to_owned(),
            arguments,
        });
    }
    let Some(inner) = arguments.get("name").and_then(Value::as_str) else {
        return Err(Denied::invalid_params(
            "arguments.name must be a tool's name",
        ));
    };
    check_arguments(ListKind::Tools, &arguments)?;
    let mut direct = params.clone();
    if let Some(obj) = direct.as_object_mut() {
        obj.insert("name".into(), inner.into());
        obj.insert(
            "arguments".into(),
            arguments
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| json!({})),
        );
    }
    Ok(ToolCall::Direct(direct))
}

/// A call's `arguments`, when present, must be an object, and a prompt's
/// an object of strings (MCP 2025-11-25, `CallToolRequest`,
/// `GetPromptRequest`): anything else is refused here rather than
/// forwarded for the upstream to guess at. `null` counts as absent.
pub fn check_arguments(kind: ListKind, params: &Value) -> Result<(), Denied> {
    match (kind, params.get("arguments")) {
        (_, None | Some(Value::Null)) => Ok(()),
        (ListKind::Prompts, Some(Value::Object(args))) if args.values().all(Value::is_string) => {
            Ok(())
        }
        (ListKind::Prompts, _) => Err(Denied::invalid_params(
            "params.arguments must be an object of strings",
        )),
        (_, Some(Value::Object(_))) => Ok(()),
        (_, Some(_)) => Err(Denied::invalid_params("params.arguments must be an object")),
    }
}

/// A subscription lives in a legacy session: without one (a 2026-07-28
/// request, where the method is gone, or a client that skipped
/// `initialize`) there is nothing to hold it, and forwarding would let
/// anyone undo other clients' subscriptions on the shared upstream.
/// The request's session, which holds the subscription `method` changes.
pub fn subscription_session<S>(method: Method, session: Option<S>) -> Result<S, Denied> {
    session.ok_or_else(|| Denied::MethodNotFound(method.name().unwrap_or_default().to_owned()))
}

/// The route of a tool or prompt by its exposed name. `unread` gives the
/// running upstreams that have no complete catalog yet, in config order
/// (asked only when the name is not served).
pub fn named<'a, 'u>(
    federation: &'a Federation,
    naming: &Naming,
    kind: ListKind,
    name: &str,
    unread: impl FnOnce() -> Vec<&'u str>,
) -> Result<&'a Route, Denied> {
    let route = match kind {
        ListKind::Tools => federation.route_tool(name),
        _ => federation.route_prompt(name),
    };
    if let Some(route) = route {
        return Ok(route);
    }
    if let Some(withheld) = federation.withheld(kind, name) {
        return Err(Denied::DriftBlocked {
            kind,
            name: name.to_owned(),
            upstream: withheld.upstream.clone(),
            drift: withheld.drift,
        });
    }
    if let Some(upstream) = pending_owner(naming, &unread(), name) {
        return Err(Denied::CatalogPending {
            upstream: upstream.to_owned(),
        });
    }
    Err(Denied::UnknownEntry {
        kind,
        name: name.to_owned(),
    })
}

/// The upstream whose namespace `exposed` is in, when that upstream has no
/// complete catalog yet (so the name may well exist).
fn pending_owner<'u>(naming: &Naming, unread: &[&'u str], exposed: &str) -> Option<&'u str> {
    unread
        .iter()
        .copied()
        .filter(|up| naming.is_prefixed(up))
        .find(|up| exposed.starts_with(&naming.prefix(up)))
}

/// S-25: only a well-formed absolute URI (RFC 3986) is passed on.
pub fn check_uri(uri: &str) -> Result<(), Denied> {
    match Url::parse(uri) {
        Ok(_) => Ok(()),
        Err(_) => Err(Denied::invalid_params(
            "params.uri is not an absolute URI (RFC 3986)",
        )),
    }
}

/// The upstream that serves `uri`: the one that lists it, else the first
/// with a matching template; unless `listed_only` (pinned, or through a
/// view), else the only upstream that offers resources at all (`offering`,
/// asked only then: the connected upstreams that declare resources).
pub fn resource<'a>(
    federation: &'a Federation,
    listed_only: bool,
    uri: &str,
    offering: impl FnOnce() -> Vec<&'a str>,
) -> Result<ResourceRoute<'a>, Denied> {
    if let Some(withheld) = federation.withheld_resource(uri) {
        return Err(Denied::DriftBlocked {
            kind: ListKind::Resources,
            name: uri.to_owned(),
            upstream: withheld.upstream.clone(),
            drift: withheld.drift,
        });
    }
    if let Some(owner) = federation.route_resource(uri) {
        return Ok(ResourceRoute {
            upstream: owner,
            target: Some(audit::resource_kind(uri)),
        });
    }
    let not_found = || Denied::ResourceNotFound {
        uri: uri.to_owned(),
    };
    if listed_only {
        return Err(not_found());
    }
    match offering()[..] {
        [only] => Ok(ResourceRoute {
            upstream: only,
            target: None,
        }),
        _ => Err(not_found()),
    }
}

/// The upstream a completion's `ref` is about, and the name the upstream
/// knows a prompt by (`None` for a resource template, whose URI is kept).
pub fn completion<'a>(
    federation: &'a Federation,
    naming: &Naming,
    listed_only: bool,
    reference: &serde_json::Value,
    offering: impl FnOnce() -> Vec<&'a str>,
) -> Result<(ResourceRoute<'a>, Option<&'a str>), Denied> {
    let field = |key: &str| {
        reference
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = field("name");
            // A prompt not served yet is unknown here, as it always was:
            // completions do not wait for a catalog.
            let route = named(federation, naming, ListKind::Prompts, name, Vec::new)?;
            Ok((
                ResourceRoute {
                    upstream: &route.upstream,
                    target: Some(name.to_owned()),
                },
                Some(&route.name),
            ))
        }
        Some("ref/resource") => {
            let uri = field("uri");
            match federation.template_owner(uri) {
                // `uri` is a template the catalog lists.
                Some(owner) => Ok((
                    ResourceRoute {
                        upstream: owner,
                        target: Some(audit::resource_kind(uri)),
                    },
                    None,
                )),
                None => Ok((resource(federation, listed_only, uri, offering)?, None)),
            }
        }
        _ => Err(Denied::invalid_params(
            "params.ref must be a ref/prompt or ref/resource",
        )),
    }
}

#[cfg(test)]
mod tests;
