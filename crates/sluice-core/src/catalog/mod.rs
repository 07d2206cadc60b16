//! The federated catalog: every upstream's lists merged into one, and the
//! routes that take a client's request back to the upstream that owns it.
//!
//! - Tools and prompts are renamed `<upstream><sep><name>` ([`crate::naming`]);
//!   the route table maps the exposed name back to the upstream and the
//!   original name.
//! - Resources and templates keep their URIs. When two upstreams list the
//!   same URI, the upstream listed **first in the config** owns it; the
//!   other's entry is not shown, and the collision is reported. A read of a
//!   URI that no list names goes to the first upstream (in config order)
//!   with a template that matches it.
//! - Every entry is otherwise passed as the upstream sent it.
//! - Entries withheld for drift ([`drift`]) are not listed, but their names
//!   and URIs are remembered so that a call to one is refused as drift, not
//!   answered as unknown.
//!
//! The submodules hold what decides which entries are served: the
//! [`definition`] of an entry and its digest, the [`lockfile`] of approved
//! definitions and the [`locking`] that writes them, the [`drift`] between
//! the two, and the [`redaction`] of
//! secrets out of definitions before any of that.

pub mod definition;
pub mod drift;
pub mod entry;
pub mod lockfile;
pub mod locking;
pub mod poisoning;
pub mod redaction;
pub mod view;

use std::collections::HashMap;

use serde_json::Value;

pub use crate::discovery::UpstreamCatalog;
use crate::method::ListKind;
use crate::naming::Naming;
use drift::{DriftKind, Withheld};

/// The longest URI matched against templates.
const MAX_MATCHED_URI: usize = 2048;

/// Where a namespaced tool or prompt goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The upstream's name.
    pub upstream: String,
    /// The name the upstream knows it by.
    pub name: String,
}

/// An entry that could not be shown because another upstream's entry has
/// the same exposed name or URI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collision {
    /// Which list.
    pub kind: ListKind,
    /// The exposed name or URI.
    pub key: String,
    /// The upstream whose entry is shown.
    pub kept: String,
    /// The upstream whose entry is hidden.
    pub hidden: String,
}

/// The merged catalog a client sees, with its routes.
#[derive(Debug, Clone, Default)]
pub struct Federation {
    /// The merged lists, in client order.
    lists: UpstreamCatalog,
    tool_routes: HashMap<String, Route>,
    /// Exposed tool name -> index in `tools`.
    tool_index: HashMap<String, usize>,
    prompt_routes: HashMap<String, Route>,
    resource_owners: HashMap<String, String>,
    templates: Vec<(UriTemplate, String)>,
    collisions: Vec<Collision>,
    /// Withheld tools and prompts (by exposed name), resources (by URI)
    /// and templates (by URI template).
    withheld: HashMap<(ListKind, String), WithheldRoute>,
    withheld_templates: Vec<(UriTemplate, WithheldRoute)>,
}

/// Where a withheld entry would have gone, and why it is withheld.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WithheldRoute {
    /// The upstream's name.
    pub upstream: String,
    /// How the entry drifted.
    pub drift: DriftKind,
}

// === impl Federation ===

impl Federation {
    /// Merges catalogs given in config order. Upstreams without a catalog
    /// (not started yet, or never read completely) contribute nothing.
    pub fn build<'a>(
        upstreams: impl IntoIterator<Item = (&'a str, &'a UpstreamCatalog)>,
        naming: &Naming,
    ) -> Self {
        let mut fed = Federation::default();
        for (upstream, catalog) in upstreams {
            for tool in &catalog.tools {
                fed.add_named(ListKind::Tools, upstream, naming, tool);
            }
            for prompt in &catalog.prompts {
                fed.add_named(ListKind::Prompts, upstream, naming, prompt);
            }
            for resource in &catalog.resources {
                fed.add_resource(upstream, resource);
            }
            for template in &catalog.resource_templates {
                fed.add_template(upstream, template);
            }
        }
        fed
    }

    fn add_named(&mut self, kind: ListKind, upstream: &str, naming: &Naming, entry: &Value) {
        let Some(name) = entry.get("name").and_then(Value::as_str) else {
            return;
        };
        let exposed = naming.exposed(upstream, name);
        let taken = match kind {
            ListKind::Prompts => self.prompt_routes.get(&exposed),
            _ => self.tool_routes.get(&exposed),
        };
        if let Some(kept) = taken.map(|r| r.upstream.clone()) {
            self.collide(kind, &exposed, kept, upstream);
            return;
        }
        let (routes, list) = match kind {
            ListKind::Prompts => (&mut self.prompt_routes, &mut self.lists.prompts),
            _ => (&mut self.tool_routes, &mut self.lists.tools),
        };
        let mut entry = entry.clone();
        if let Some(obj) = entry.as_object_mut() {
            obj.insert("name".into(), exposed.clone().into());
        }
        if kind == ListKind::Tools {
            self.tool_index.insert(exposed.clone(), list.len());
        }
        list.push(entry);
        routes.insert(
            exposed,
            Route {
                upstream: upstream.to_owned(),
                name: name.to_owned(),
            },
        );
    }

    /// Records that `hidden`'s entry lost `key` to `kept`'s.
    fn collide(&mut self, kind: ListKind, key: &str, kept: String, hidden: &str) {
        self.collisions.push(Collision {
            kind,
            key: key.to_owned(),
            kept,
            hidden: hidden.to_owned(),
        });
    }

    fn add_resource(&mut self, upstream: &str, entry: &Value) {
        let Some(uri) = entry.get("uri").and_then(Value::as_str) else {
            return;
        };
        if let Some(kept) = self.resource_owners.get(uri).cloned() {
            self.collide(ListKind::Resources, uri, kept, upstream);
            return;
        }
        self.resource_owners
            .insert(uri.to_owned(), upstream.to_owned());
        self.lists.resources.push(entry.clone());
    }

    fn add_template(&mut self, upstream: &str, entry: &Value) {
        let Some(template) = entry.get("uriTemplate").and_then(Value::as_str) else {
            return;
        };
        if let Some((_, kept)) = self.templates.iter().find(|(t, _)| t.source == template) {
            let kept = kept.clone();
            self.collide(ListKind::ResourceTemplates, template, kept, upstream);
            return;
        }
        self.templates
            .push((UriTemplate::parse(template), upstream.to_owned()));
        self.lists.resource_templates.push(entry.clone());
    }

    /// The merged list of one kind, as the client sees it.
    pub fn list(&self, kind: ListKind) -> &[Value] {
        self.lists.list(kind)
    }

    /// A tool's definition as the client sees it.
    pub fn tool(&self, exposed: &str) -> Option<&Value> {
        self.tool_index
            .get(exposed)
            .and_then(|&i| self.lists.tools.get(i))
    }

    /// Where a namespaced tool goes.
    pub fn route_tool(&self, exposed: &str) -> Option<&Route> {
        self.tool_routes.get(exposed)
    }

    /// Where a namespaced prompt goes.
    pub fn route_prompt(&self, exposed: &str) -> Option<&Route> {
        self.prompt_routes.get(exposed)
    }

    /// Which upstream serves a resource URI: the one that lists it, else the
    /// first (in config order) with a template that matches it.
    pub fn route_resource(&self, uri: &str) -> Option<&str> {
        if let Some(owner) = self.resource_owners.get(uri) {
            return Some(owner);
        }
        self.route_template(uri)
    }

    /// The first upstream (in config order) with a template matching `uri`.
    pub fn route_template(&self, uri: &str) -> Option<&str> {
        // Matching backtracks; a URI this long is not a resource name.
        if uri.len() > MAX_MATCHED_URI {
            return None;
        }
        self.templates
            .iter()
            .find(|(t, _)| t.matches(uri))
            .map(|(_, upstream)| upstream.as_str())
    }

    /// The upstream that owns a template, by its exact `uriTemplate` string.
    pub fn template_owner(&self, template: &str) -> Option<&str> {
        self.templates
            .iter()
            .find(|(t, _)| t.source == template)
            .map(|(_, upstream)| upstream.as_str())
    }

    /// Records entries of `upstream` that are withheld for drift.
    pub fn withhold(&mut self, upstream: &str, naming: &Naming, withheld: &[Withheld]) {
        for w in withheld {
            let route = WithheldRoute {
                upstream: upstream.to_owned(),
                drift: w.drift,
            };
            let key = match w.entry.kind {
                ListKind::Tools | ListKind::Prompts => naming.exposed(upstream, &w.entry.key),
                ListKind::ResourceTemplates => {
                    self.withheld_templates
                        .push((UriTemplate::parse(&w.entry.key), route.clone()));
                    w.entry.key.clone()
                }
                ListKind::Resources => w.entry.key.clone(),
            };
            self.withheld.entry((w.entry.kind, key)).or_insert(route);
        }
    }

    /// The withheld tool or prompt a client names, if it is one.
    pub fn withheld(&self, kind: ListKind, exposed: &str) -> Option<&WithheldRoute> {
        self.withheld.get(&(kind, exposed.to_owned()))
    }

    /// Whether a read of `uri` would reach a withheld entry: a withheld
    /// resource with that URI, or (when no served entry or template takes
    /// it) a withheld template that matches it.
    pub fn withheld_resource(&self, uri: &str) -> Option<&WithheldRoute> {
        if self.resource_owners.contains_key(uri) {
            return None;
        }
        if let Some(route) = self.withheld.get(&(ListKind::Resources, uri.to_owned())) {
            return Some(route);
        }
        if uri.len() > MAX_MATCHED_URI || self.route_template(uri).is_some() {
            return None;
        }
        self.withheld_templates
            .iter()
            .find(|(t, _)| t.matches(uri))
            .map(|(_, route)| route)
    }

    /// Entries hidden because another upstream had the same key.
    pub fn collisions(&self) -> &[Collision] {
        &self.collisions
    }
}

/// An RFC 6570 URI template, reduced to what routing needs: literal parts
/// and expressions. A simple expression (`{id}`) matches a non-empty run
/// without `/`, `?` or `#`; the other operators (`{+path}`, `{/seg}`,
/// `{?q}`, ...) match any run, possibly empty. Matching is anchored at both
/// ends.
#[derive(Debug, Clone)]
struct UriTemplate {
    source: String,
    parts: Vec<TemplatePart>,
}

#[derive(Debug, Clone)]
enum TemplatePart {
    Literal(String),
    Simple,
    Any,
}

impl UriTemplate {
    fn parse(source: &str) -> Self {
        let mut parts = Vec::new();
        let mut rest = source;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(TemplatePart::Literal(rest[..open].to_owned()));
            }
            let Some(close) = rest[open..].find('}') else {
                parts.push(TemplatePart::Literal(rest[open..].to_owned()));
                rest = "";
                break;
            };
            let expr = &rest[open + 1..open + close];
            let simple = expr
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '%');
            parts.push(if simple {
                TemplatePart::Simple
            } else {
                TemplatePart::Any
            });
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            parts.push(TemplatePart::Literal(rest.to_owned()));
        }
        UriTemplate {
            source: source.to_owned(),
            parts,
        }
    }

    fn matches(&self, uri: &str) -> bool {
        match_parts(&self.parts, uri)
    }
}

fn match_parts(parts: &[TemplatePart], input: &str) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return input.is_empty();
    };
    match first {
        TemplatePart::Literal(lit) => input
            .strip_prefix(lit.as_str())
            .is_some_and(|after| match_parts(rest, after)),
        TemplatePart::Simple => {
            let stop = input.find(['/', '?', '#']).unwrap_or(input.len());
            (1..=stop).any(|n| input.is_char_boundary(n) && match_parts(rest, &input[n..]))
        }
        TemplatePart::Any => {
            (0..=input.len()).any(|n| input.is_char_boundary(n) && match_parts(rest, &input[n..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn catalog(tools: &[&str], uris: &[&str], templates: &[&str]) -> UpstreamCatalog {
        UpstreamCatalog {
            tools: tools
                .iter()
                .map(|n| json!({"name": n, "x-extra": 1}))
                .collect(),
            resources: uris.iter().map(|u| json!({"uri": u, "name": u})).collect(),
            resource_templates: templates
                .iter()
                .map(|t| json!({"uriTemplate": t, "name": t}))
                .collect(),
            prompts: vec![json!({"name": "p"})],
        }
    }

    #[test]
    fn names_are_prefixed_and_routed_back() {
        let a = catalog(&["echo", "add"], &[], &[]);
        let b = catalog(&["echo"], &[], &[]);
        let fed = Federation::build([("a", &a), ("b", &b)], &Naming::new("__", vec![]));
        let names: Vec<&str> = fed
            .list(ListKind::Tools)
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["a__echo", "a__add", "b__echo"]);
        assert_eq!(fed.list(ListKind::Tools)[0]["x-extra"], json!(1));
        assert_eq!(
            fed.route_tool("b__echo"),
            Some(&Route {
                upstream: "b".into(),
                name: "echo".into()
            })
        );
        assert_eq!(fed.route_tool("c__echo"), None);
        assert_eq!(
            fed.tool("b__echo"),
            Some(&json!({"name": "b__echo", "x-extra": 1}))
        );
        assert_eq!(
            fed.route_prompt("b__p").map(|r| r.upstream.as_str()),
            Some("b")
        );
    }

    #[test]
    fn an_unprefixed_upstream_keeps_its_names_and_loses_collisions_to_earlier_ones() {
        let tools = |names: &[&str]| UpstreamCatalog {
            tools: names.iter().map(|n| json!({"name": n})).collect(),
            ..UpstreamCatalog::default()
        };
        let (a, b) = (tools(&["x", "a__y"]), tools(&["y", "z"]));
        let naming = Naming::new("__", vec!["b".into()]);
        let fed = Federation::build([("a", &a), ("b", &b)], &naming);
        let names: Vec<&str> = fed
            .list(ListKind::Tools)
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, vec!["a__x", "a__a__y", "y", "z"]);
        assert_eq!(fed.route_tool("z").map(|r| r.upstream.as_str()), Some("b"));
        let clash = Federation::build(
            [("a", &tools(&["z"])), ("b", &b)],
            &Naming::new("__", vec!["a".into(), "b".into()]),
        );
        assert_eq!(
            clash.route_tool("z").map(|r| r.upstream.as_str()),
            Some("a")
        );
        assert_eq!(clash.collisions().len(), 1);
    }

    #[test]
    fn ambiguous_exposed_names_keep_the_first_upstream() {
        let a = catalog(&["_b"], &[], &[]);
        let b = catalog(&["b"], &[], &[]);
        let fed = Federation::build([("a", &a), ("a_", &b)], &Naming::new("__", vec![]));
        assert_eq!(fed.list(ListKind::Tools).len(), 1);
        assert_eq!(fed.route_tool("a___b").map(|r| r.name.as_str()), Some("_b"));
        assert_eq!(fed.collisions().len(), 1);
    }

    #[test]
    fn resource_collisions_go_to_the_first_upstream() {
        let a = catalog(&[], &["file:///x"], &["a://{id}"]);
        let b = catalog(&[], &["file:///x", "file:///y"], &["b://item/{id}/data"]);
        let fed = Federation::build([("a", &a), ("b", &b)], &Naming::new("__", vec![]));
        assert_eq!(fed.list(ListKind::Resources).len(), 2);
        assert_eq!(fed.route_resource("file:///x"), Some("a"));
        assert_eq!(fed.route_resource("file:///y"), Some("b"));
        assert_eq!(fed.route_resource("b://item/42/data"), Some("b"));
        assert_eq!(fed.route_resource("a://7"), Some("a"));
        assert_eq!(fed.route_resource("a://7/deeper"), None);
        assert_eq!(fed.route_resource("z://nothing"), None);
        assert_eq!(
            fed.collisions(),
            &[Collision {
                kind: ListKind::Resources,
                key: "file:///x".into(),
                kept: "a".into(),
                hidden: "b".into()
            }]
        );
    }

    #[test]
    fn templates_match_rfc6570_shapes() {
        let t = UriTemplate::parse("demo://resource/dynamic/text/{resourceId}");
        assert!(t.matches("demo://resource/dynamic/text/1"));
        assert!(!t.matches("demo://resource/dynamic/text/"));
        assert!(!t.matches("demo://resource/dynamic/blob/1"));
        let t = UriTemplate::parse("file://{+path}");
        assert!(t.matches("file:///etc/hosts"));
        let t = UriTemplate::parse("search://q{?query,limit}");
        assert!(t.matches("search://q?query=x&limit=2"));
        assert!(t.matches("search://q"));
    }
}
