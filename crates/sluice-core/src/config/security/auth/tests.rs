#![allow(clippy::unwrap_used)]
use std::time::Duration;

use super::*;
use crate::config::testing::secrets::{errors, parse};

#[test]
fn bearer_tokens_are_checked() {
    let e = errors(
        "[auth]\nmode = \"bearer\"\n[[auth.token]]\nprincipal = \"a\"\nenv = \"SHORT\"\n[[auth.token]]\nprincipal = \"b\"\nenv = \"UNSET\"\n[[auth.token]]\nprincipal = \"c\"\n",
    );
    assert_eq!(e.len(), 3, "{e:?}");
    assert!(e[0].contains("auth.token[0].env: $SHORT is shorter than 16 characters"));
    assert!(e[1].contains("auth.token[1].env: $UNSET is not set"));
    assert!(e[2].contains("auth.token[2]: needs exactly one of `env`"));
    let e = errors("[auth]\nmode = \"bearer\"\n");
    assert!(e[0].contains("needs at least one [[auth.token]]"), "{e:?}");
}

#[test]
fn token_files_are_read_by_the_loader() {
    let mut c = parse(
            "[auth]\nmode = \"bearer\"\n[[auth.token]]\nprincipal = \"a\"\nfile = \"a.token\"\n[[auth.token]]\nprincipal = \"b\"\nfile = \"b.token\"\n",
        )
        .unwrap();
    let read = |p: &std::path::Path| match p.to_str() {
        Some("a.token") => Ok("  file-token-0123456789\n".to_owned()),
        _ => Err("No such file".to_owned()),
    };
    let problems = c.auth.load_token_files(&read).unwrap_err();
    assert_eq!(
        problems,
        ["auth.token[1].file: cannot read b.token: No such file"]
    );
    let AuthMode::Bearer(tokens) = &c.auth.mode else {
        panic!("bearer");
    };
    assert_eq!(tokens[0].secret(), Some("file-token-0123456789"));
}

#[test]
fn oauth_needs_a_resource_an_issuer_and_narrow_scopes() {
    let c = parse(
            "[auth]\nmode = \"oauth\"\nresource = \"https://mcp.example.com/mcp\"\nscopes_supported = [\"mcp:tools\"]\nrequired_scopes = [\"mcp:tools\"]\nclock_skew = \"30s\"\n[[auth.issuer]]\nissuer = \"https://auth.example.com\"\n[[auth.require]]\nupstream = \"fs\"\ntool = \"write\"\nscopes = [\"files:write\"]\n",
        )
        .unwrap();
    let AuthMode::OAuth(o) = &c.auth.mode else {
        panic!("oauth");
    };
    assert_eq!(o.issuers[0].issuer, "https://auth.example.com");
    assert_eq!(o.clock_skew, Duration::from_secs(30));
    assert_eq!(o.principal_claim, "sub");
    assert_eq!(c.auth.require[0].scopes, ["files:write"]);
    let e = errors(
        "[auth]\nmode = \"oauth\"\nscopes_supported = [\"*\", \"all\", \"a b\"]\nclock_skew = \"1h\"\n",
    );
    let joined = e.join("\n");
    for want in [
        "auth.resource: auth.mode = \"oauth\" needs `resource`",
        "auth.issuer: auth.mode = \"oauth\" needs at least one [[auth.issuer]]",
        "auth.scopes_supported: \"*\" is a wildcard scope",
        "auth.scopes_supported: \"all\" is a wildcard scope",
        "auth.scopes_supported: \"a b\" is not a scope name",
        "auth.clock_skew: \"1h\" is out of range (allowed: 0ms to 300s",
    ] {
        assert!(joined.contains(want), "missing {want:?} in\n{joined}");
    }
}

#[test]
fn issuer_keys_come_over_https_unless_private() {
    let base =
        "[auth]\nmode = \"oauth\"\nresource = \"https://mcp.example.com/mcp\"\n[[auth.issuer]]\n";
    let e = errors(&format!(
        "{base}issuer = \"http://auth.example.com\"\njwks_url = \"http://auth.example.com/jwks\"\n"
    ));
    assert!(e[0].contains("auth.issuer[0].issuer: \"http://auth.example.com\": an issuer's keys must come over https"), "{e:?}");
    assert!(
        e[1].contains(
            "auth.issuer[0].jwks_url: \"http://auth.example.com/jwks\": must be an https URL"
        ),
        "{e:?}"
    );
    assert!(
        parse(&format!(
            "{base}issuer = \"http://127.0.0.1:9000\"\nallow_private = true\n"
        ))
        .is_ok()
    );
}

#[test]
fn keys_of_another_mode_are_refused() {
    let e = errors(
        "[auth]\nresource = \"https://x/mcp\"\n[[auth.require]]\nupstream = \"a\"\nscopes = [\"s\"]\n",
    );
    assert!(
        e.iter()
            .any(|m| m.contains("auth.resource: only applies with auth.mode = \"oauth\"")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|m| m.contains("auth.require: scopes can only be required")),
        "{e:?}"
    );
}
