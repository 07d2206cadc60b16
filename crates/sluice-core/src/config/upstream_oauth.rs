//! `auth = "oauth"` and `[upstream.oauth]` of an HTTP upstream: sluice logs
//! in to it as an OAuth client (`sluice login`), and sends the token it got
//! on every request. What is set here is only what sluice cannot discover:
//! a pre-registered client, the scopes to ask for, the URL of sluice's
//! client ID metadata document, and a fixed loopback port for the redirect.

use std::fmt;

use toml::Spanned;

use super::diagnostics::Diagnostics;
use super::raw::{RawOAuth, RawUpstream};

/// How sluice logs in to one OAuth-protected upstream.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct UpstreamOAuth {
    /// `client_id`: a client registered with the authorization server out
    /// of band; without it, sluice uses `client_metadata_url` when the
    /// server supports client ID metadata documents, else dynamic
    /// registration.
    pub client_id: Option<String>,
    /// `client_secret` (with `${VAR}` expanded): the pre-registered
    /// client's secret, for a confidential client.
    pub client_secret: Option<String>,
    /// `scopes`: what to ask for; empty lets the upstream's challenge, then
    /// its `scopes_supported`, decide (and asks for no scope when neither
    /// names one).
    pub scopes: Vec<String>,
    /// `client_metadata_url`: an `https://` URL with a path, where sluice's
    /// client ID metadata document is served.
    pub client_metadata_url: Option<String>,
    /// `redirect_port`: the loopback port of `http://127.0.0.1:<port>/callback`;
    /// `None` takes a free port at each login.
    pub redirect_port: Option<u16>,
}

/// The secret is not shown.
impl fmt::Debug for UpstreamOAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UpstreamOAuth")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "(set)"),
            )
            .field("scopes", &self.scopes)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("redirect_port", &self.redirect_port)
            .finish()
    }
}

/// `auth` and `oauth` of `upstream[i]` (`key`), for an HTTP upstream:
/// `Some(None)` when it logs in to nothing, `None` when something was
/// refused (reported).
pub(super) fn validate_oauth(
    key: &str,
    raw: &RawUpstream,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<Option<UpstreamOAuth>> {
    let on = match &raw.auth {
        None => false,
        Some(mode) if mode.get_ref() == "oauth" => true,
        Some(mode) => {
            diags.push(
                Some(mode.span()),
                &format!("{key}.auth"),
                format!(
                    "{:?}: the only mode is \"oauth\" (a static credential goes in `headers`)",
                    mode.get_ref()
                ),
            );
            return None;
        }
    };
    if !on {
        if let Some(table) = &raw.oauth {
            diags.push(
                Some(table.span()),
                &format!("{key}.oauth"),
                "is set but `auth = \"oauth\"` is not: add it, or remove the table".into(),
            );
            return None;
        }
        return Some(None);
    }
    let mut ok = true;
    let has_authorization = raw
        .headers
        .iter()
        .flatten()
        .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
    if has_authorization {
        diags.push(
            raw.auth.as_ref().map(Spanned::span),
            &format!("{key}.headers.Authorization"),
            "conflicts with `auth = \"oauth\"`, which sends the token sluice logged in for".into(),
        );
        ok = false;
    }
    let empty = RawOAuth::default();
    let table = raw.oauth.as_ref().map_or(&empty, Spanned::get_ref);
    let key = format!("{key}.oauth");
    let config = oauth_table(&key, table, env, diags);
    ok.then_some(Some(config?))
}

fn oauth_table(
    key: &str,
    raw: &RawOAuth,
    env: &dyn Fn(&str) -> Option<String>,
    diags: &mut Diagnostics<'_>,
) -> Option<UpstreamOAuth> {
    let mut ok = true;
    let client_secret = match &raw.client_secret {
        None => None,
        Some(s) => {
            let v = diags.expand(
                Some(s.span()),
                &format!("{key}.client_secret"),
                s.get_ref(),
                env,
            );
            ok &= v.is_some();
            v
        }
    };
    if let (Some(secret), None) = (&raw.client_secret, &raw.client_id) {
        diags.push(
            Some(secret.span()),
            &format!("{key}.client_secret"),
            "needs `client_id`: a secret belongs to a pre-registered client".into(),
        );
        ok = false;
    }
    if let Some(url) = &raw.client_metadata_url
        && !is_metadata_document_url(url.get_ref())
    {
        diags.push(
            Some(url.span()),
            &format!("{key}.client_metadata_url"),
            format!(
                "{:?}: must be an https:// URL with a path (the client ID metadata document)",
                url.get_ref()
            ),
        );
        ok = false;
    }
    let mut scopes = Vec::new();
    for (i, scope) in raw.scopes.iter().flatten().enumerate() {
        let s = scope.get_ref();
        if s.is_empty()
            || s.chars()
                .any(|c| c.is_whitespace() || c == '"' || c == '\\')
        {
            diags.push(
                Some(scope.span()),
                &format!("{key}.scopes[{i}]"),
                format!("{s:?}: a scope is one non-empty word without quotes or backslashes"),
            );
            ok = false;
        } else if !scopes.contains(s) {
            scopes.push(s.clone());
        }
    }
    let redirect_port = match &raw.redirect_port {
        None => None,
        Some(port) => match u16::try_from(*port.get_ref()) {
            Ok(p) if p >= 1024 => Some(p),
            _ => {
                diags.push(
                    Some(port.span()),
                    &format!("{key}.redirect_port"),
                    format!("{}: must be a port from 1024 to 65535", port.get_ref()),
                );
                ok = false;
                None
            }
        },
    };
    ok.then(|| UpstreamOAuth {
        client_id: raw.client_id.as_ref().map(|c| c.get_ref().clone()),
        client_secret,
        scopes,
        client_metadata_url: raw
            .client_metadata_url
            .as_ref()
            .map(|u| u.get_ref().clone()),
        redirect_port,
    })
}

/// A client ID metadata document's URL: `https://`, a host, and a path
/// other than `/` (the draft's rule, so that the URL names a document).
fn is_metadata_document_url(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    match rest.split_once('/') {
        Some((host, path)) => !host.is_empty() && !path.is_empty(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use crate::config::UpstreamTransport;
    use crate::config::testing::{errors, parse_with};

    /// The key path of each problem, in order.
    fn keys(errors: &[String]) -> Vec<&str> {
        errors
            .iter()
            .map(|e| e.splitn(4, ':').nth(3).unwrap_or("").trim_start())
            .map(|rest| rest.split(':').next().unwrap_or(""))
            .collect()
    }

    fn oauth_of(text: &str) -> Option<super::UpstreamOAuth> {
        let config = parse_with(text, &|v| (v == "SECRET").then(|| "s3cret".to_owned())).unwrap();
        match &config.upstreams[0].transport {
            UpstreamTransport::Http { oauth, .. } => oauth.clone(),
            UpstreamTransport::Stdio { .. } => panic!("an HTTP upstream"),
        }
    }

    #[test]
    fn auth_oauth_alone_discovers_everything() {
        let oauth = oauth_of(
            "[[upstream]]\nname = \"a\"\nurl = \"https://mcp.example.com/mcp\"\nauth = \"oauth\"\n",
        )
        .unwrap();
        assert_eq!(oauth, super::UpstreamOAuth::default());
    }

    #[test]
    fn the_table_is_read_and_the_secret_expanded() {
        let oauth = oauth_of(
            "[[upstream]]\nname = \"a\"\nurl = \"https://mcp.example.com/mcp\"\nauth = \"oauth\"\n\
             [upstream.oauth]\nclient_id = \"sluice\"\nclient_secret = \"${SECRET}\"\n\
             scopes = [\"read\", \"write\", \"read\"]\nredirect_port = 8976\n\
             client_metadata_url = \"https://sluice.example.com/client.json\"\n",
        )
        .unwrap();
        assert_eq!(oauth.client_id.as_deref(), Some("sluice"));
        assert_eq!(oauth.client_secret.as_deref(), Some("s3cret"));
        assert_eq!(oauth.scopes, ["read", "write"]);
        assert_eq!(oauth.redirect_port, Some(8976));
        assert!(!format!("{oauth:?}").contains("s3cret"));
    }

    #[test]
    fn no_oauth_without_the_switch() {
        assert_eq!(
            oauth_of("[[upstream]]\nname = \"a\"\nurl = \"https://mcp.example.com/mcp\"\n"),
            None
        );
    }

    #[test]
    fn every_mistake_is_reported() {
        let errs = errors(
            "[[upstream]]\nname = \"a\"\nurl = \"https://mcp.example.com/mcp\"\nauth = \"oauth\"\n\
             headers = { Authorization = \"Bearer x\" }\n\
             [upstream.oauth]\nclient_secret = \"x\"\nscopes = [\"a b\"]\nredirect_port = 80\n\
             client_metadata_url = \"http://sluice.example.com/client.json\"\n\
             [[upstream]]\nname = \"b\"\nurl = \"https://b.example.com/mcp\"\nauth = \"basic\"\n\
             [[upstream]]\nname = \"c\"\nurl = \"https://c.example.com/mcp\"\n[upstream.oauth]\n",
        );
        assert_eq!(
            keys(&errs),
            [
                "upstream[0].headers.Authorization",
                "upstream[0].oauth.client_secret",
                "upstream[0].oauth.client_metadata_url",
                "upstream[0].oauth.scopes[0]",
                "upstream[0].oauth.redirect_port",
                "upstream[1].auth",
                "upstream[2].oauth",
            ],
            "{errs:#?}"
        );
    }

    #[test]
    fn a_stdio_upstream_takes_no_oauth() {
        let errs = errors("[[upstream]]\nname = \"a\"\ncommand = \"x\"\nauth = \"oauth\"\n");
        assert_eq!(keys(&errs), ["upstream[0].auth"], "{errs:#?}");
    }
}
