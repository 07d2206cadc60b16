//! The authorization rules seen from outside an HTTP server: S-5 (a 401
//! naming its protected resource metadata, RFC 9728), S-16 (no HTTP
//! without credentials off loopback), S-17 (the metadata's authorization
//! servers and their issuers, RFC 8414) and S-20 (no wildcard scope).
//! None applies on stdio, and S-5, S-17 and S-20 only to a server that
//! asks for credentials.

use serde_json::Value;

use super::{cannot, fail, pass_note};
use crate::doctor::Verdict;
use crate::doctor::observe::{HttpProbes, Observations, Transport};

/// Scope names that grant everything (the standard forbids them).
const WILDCARD_SCOPES: [&str; 6] = ["*", "all", "full-access", "full_access", "admin", "root"];

/// The HTTP probes of a server that asks for credentials, or the verdict
/// when the rule does not apply.
fn behind_auth(obs: &Observations) -> Result<&HttpProbes, Verdict> {
    if obs.transport != Some(Transport::Http) {
        return Err(pass_note("not applicable: stdio (the OS authenticates)"));
    }
    let Some(http) = &obs.http else {
        return Err(cannot("the HTTP probes could not be sent"));
    };
    if http.unauthenticated.is_none() {
        return Err(pass_note(
            "not applicable: the endpoint serves without credentials (S-16 judges where it may)",
        ));
    }
    Ok(http)
}

/// The protected resource metadata document, or the verdict when there is
/// none to read.
fn metadata(http: &HttpProbes) -> Result<&serde_json::Map<String, Value>, Verdict> {
    match &http.resource_metadata {
        Some((_, 200, Some(Value::Object(doc)))) => Ok(doc),
        Some((_, 200, _)) => Err(fail(vec![
            "the protected resource metadata is not a JSON object".into(),
        ])),
        Some((_, status, _)) => Err(fail(vec![format!(
            "GET of the protected resource metadata answered HTTP {status}"
        )])),
        None => Err(cannot(
            "the protected resource metadata could not be fetched",
        )),
    }
}

/// The strings of the metadata's list `field` (empty when absent); a
/// missing or broken document is S-5's failure, and leaves this rule
/// unjudged.
fn listed<'a>(http: &'a HttpProbes, field: &str) -> Result<Vec<&'a str>, Verdict> {
    let doc = match metadata(http) {
        Ok(doc) => doc,
        Err(Verdict::Fail { .. }) => {
            return Err(cannot(format!(
                "no protected resource metadata to read {field} from"
            )));
        }
        Err(v) => return Err(v),
    };
    Ok(doc
        .get(field)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default())
}

pub(super) fn resource_server(obs: &Observations) -> Verdict {
    let http = match behind_auth(obs) {
        Ok(h) => h,
        Err(v) => return v,
    };
    let bearer = http
        .challenge
        .as_deref()
        .is_some_and(|c| c.trim_start().to_ascii_lowercase().starts_with("bearer"));
    let names_metadata = http
        .challenge
        .as_deref()
        .is_some_and(|c| c.contains("resource_metadata="));
    let no_document = matches!(&http.resource_metadata, Some((_, 404, _)));
    if bearer && !names_metadata && no_document {
        // Static bearer tokens (API keys), with no OAuth in sight: S-5 asks
        // an OAuth 2.1 resource server of a multi-tenant server, and who
        // the tokens belong to is not visible from outside.
        return cannot(
            "the server takes bearer tokens without OAuth (its challenge names no resource_metadata and it serves no protected resource metadata): S-5 requires an OAuth 2.1 resource server of a multi-tenant server, which cannot be told from outside",
        );
    }
    let mut evidence = Vec::new();
    match http.challenge.as_deref() {
        None => evidence.push("the 401 has no WWW-Authenticate header".into()),
        Some(c) if !c.trim_start().to_ascii_lowercase().starts_with("bearer") => {
            evidence.push("WWW-Authenticate does not offer the Bearer scheme".into())
        }
        Some(c) if !c.contains("resource_metadata=") => {
            evidence.push("WWW-Authenticate names no resource_metadata".into())
        }
        Some(_) => {}
    }
    match metadata(http) {
        Ok(doc) => match doc.get("resource").and_then(Value::as_str) {
            None => evidence.push("the protected resource metadata has no resource".into()),
            Some(resource) => {
                let url = obs.url.as_deref().unwrap_or_default();
                if resource.trim_end_matches('/') != url.trim_end_matches('/') {
                    evidence.push(
                        "the protected resource metadata's resource is not the URL served (RFC 9728 §3.3)"
                            .into(),
                    );
                }
            }
        },
        Err(Verdict::Fail { evidence: e }) => evidence.extend(e),
        Err(v) => return v,
    }
    if evidence.is_empty() {
        pass_note("401 challenge names resource_metadata; the document's resource is the URL")
    } else {
        fail(evidence)
    }
}

/// Whether `url`'s host is a loopback address or `localhost`.
pub(super) fn is_loopback_url(url: &str) -> bool {
    let Ok(parsed) = url::Url::parse(url) else {
        return false;
    };
    match parsed.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

pub(super) fn http_auth(obs: &Observations) -> Verdict {
    if obs.transport != Some(Transport::Http) {
        return pass_note("not applicable: stdio");
    }
    let Some(http) = &obs.http else {
        return cannot("the HTTP probes could not be sent");
    };
    let loopback = obs.url.as_deref().is_some_and(is_loopback_url);
    match (http.unauthenticated.is_some(), loopback) {
        (true, _) => pass_note("credentials are required"),
        (false, true) => pass_note(
            "loopback address served without credentials: reachable by every local process",
        ),
        (false, false) => fail(vec![
            "a request without credentials is served on a non-loopback address".into(),
        ]),
    }
}

pub(super) fn authorization_servers(obs: &Observations) -> Verdict {
    let http = match behind_auth(obs) {
        Ok(h) => h,
        Err(v) => return v,
    };
    let servers = match listed(http, "authorization_servers") {
        Ok(s) => s,
        Err(v) => return v,
    };
    if servers.is_empty() {
        return fail(vec![
            "the protected resource metadata names no authorization_servers".into(),
        ]);
    }
    let mut evidence = Vec::new();
    for (i, issuer) in servers.iter().enumerate() {
        let n = i + 1;
        match http
            .issuer_metadata
            .iter()
            .find(|(named, ..)| named == issuer)
        {
            Some((_, 200, Some(meta))) => {
                if meta.get("issuer").and_then(Value::as_str) != Some(*issuer) {
                    evidence.push(format!(
                        "authorization server {n}: its metadata's issuer is not its own URL (RFC 8414 §3.3)"
                    ));
                }
            }
            Some((_, status, _)) => evidence.push(format!(
                "authorization server {n}: no metadata (HTTP {status} at RFC 8414 and OpenID paths)"
            )),
            None => evidence.push(format!(
                "authorization server {n}: its metadata could not be fetched"
            )),
        }
    }
    if evidence.is_empty() {
        pass_note(format!(
            "{} authorization server(s), each issuer's metadata names itself",
            servers.len()
        ))
    } else {
        fail(evidence)
    }
}

pub(super) fn scopes(obs: &Observations) -> Verdict {
    let http = match behind_auth(obs) {
        Ok(h) => h,
        Err(v) => return v,
    };
    let mut evidence = Vec::new();
    let challenges = http
        .challenge
        .iter()
        .map(|c| ("the 401", c))
        .chain(
            http.refused_calls
                .iter()
                .filter_map(|(tool, c)| c.as_ref().map(|c| (tool.as_str(), c))),
        )
        .filter(|(_, c)| c.contains("insufficient_scope"));
    let mut scoped = 0;
    for (place, c) in challenges {
        scoped += 1;
        // `error="insufficient_scope"` is not a `scope=` parameter.
        let names_scope = c.split(',').any(|p| {
            p.trim()
                .trim_start_matches("Bearer ")
                .trim()
                .starts_with("scope=")
        });
        if !names_scope {
            evidence.push(format!(
                "{place}: an insufficient_scope challenge names no scope"
            ));
        }
    }
    let scopes = match listed(http, "scopes_supported") {
        Ok(s) => s,
        Err(v) => return v,
    };
    for s in &scopes {
        if WILDCARD_SCOPES.contains(&s.to_ascii_lowercase().as_str()) {
            evidence.push(format!("scopes_supported names the wildcard scope {s:?}"));
        }
    }
    if !evidence.is_empty() {
        return fail(evidence);
    }
    let challenged = match scoped {
        0 => String::new(),
        n => format!("; {n} insufficient_scope challenge(s) name their scopes"),
    };
    if scopes.is_empty() {
        pass_note(format!("no scopes_supported published{challenged}"))
    } else {
        pass_note(format!(
            "{} scope(s) published, none a wildcard{challenged}",
            scopes.len()
        ))
    }
}
