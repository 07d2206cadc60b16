#![allow(clippy::unwrap_used)]
use super::*;
use serde_json::json;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| (*x).to_owned()).collect()
}

#[test]
fn challenges_are_read_quoted_or_not() {
    let c = Challenge::parse(
        r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp", error_description="needs \"write\"""#,
    );
    assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
    assert_eq!(c.scopes, s(&["mcp:basic", "mcp:write"]));
    assert_eq!(
        c.resource_metadata.as_deref(),
        Some("http://h/.well-known/oauth-protected-resource/mcp")
    );
    assert!(c.is_insufficient_scope());
    let bare = Challenge::parse("bearer error=invalid_token,scope=a");
    assert_eq!(bare.error.as_deref(), Some("invalid_token"));
    assert_eq!(bare.scopes, s(&["a"]));
    assert!(!bare.is_insufficient_scope());
}

#[test]
fn other_schemes_are_skipped() {
    let c = Challenge::parse(r#"Basic realm="x", Bearer scope="a b a""#);
    assert_eq!(c.scopes, s(&["a", "b"]));
    assert_eq!(Challenge::parse(r#"Basic realm="x""#), Challenge::default());
    assert_eq!(Challenge::parse(""), Challenge::default());
    assert_eq!(Challenge::parse("Bearer"), Challenge::default());
}

#[test]
fn a_401_refreshes_once_then_asks_for_a_login() {
    assert_eq!(after_unauthorized(false, true), AfterUnauthorized::Refresh);
    assert_eq!(after_unauthorized(true, true), AfterUnauthorized::Login);
    assert_eq!(after_unauthorized(false, false), AfterUnauthorized::Login);
}

/// A login at `at_ms` granted `granted`.
fn login(record: &LoginRecord, at_ms: i64, granted: &[&str]) -> LoginRecord {
    let mut next = record.clone();
    next.logged_in_at_ms = at_ms;
    next.credentials = json!({"token_response": {"access_token": "t"}, "granted_scopes": granted});
    next.step_up = step_up_after_login(record.step_up.as_ref());
    next
}

/// The record after a refusal: what to do, and the record with the
/// step-up kept.
fn refused(challenge: &Challenge, record: &LoginRecord) -> (StepUpVerdict, LoginRecord) {
    let (after, step_up) = after_forbidden(challenge, record);
    let mut next = record.clone();
    next.step_up = Some(step_up);
    (after, next)
}

#[test]
fn a_step_up_asks_for_the_union_and_then_logs_in_once_more() {
    let challenge = Challenge::parse(r#"Bearer error="insufficient_scope", scope="b c""#);
    let r = login(&sample(), 10, &["a", "b"]);
    assert_eq!(r.readiness(), Readiness::Ready);
    let (first, r) = refused(&challenge, &r);
    assert_eq!(
        first,
        StepUpVerdict::Login {
            scopes: s(&["a", "b", "c"])
        }
    );
    // Nothing is sent until a new login.
    assert_eq!(
        r.readiness(),
        Readiness::NeedsLogin {
            scopes: s(&["a", "b", "c"])
        }
    );
    assert_eq!(
        login_scopes(&s(&["a"]), r.step_up.as_ref()),
        s(&["a", "b", "c"])
    );
    let r = login(&r, 20, &["a", "b"]);
    assert_eq!(r.readiness(), Readiness::Ready);
    assert_eq!(r.step_up.as_ref().unwrap().logins, 1);
    // The new token was granted only a and b again: one more login.
    let (second, r) = refused(&challenge, &r);
    assert_eq!(
        second,
        StepUpVerdict::Login {
            scopes: s(&["a", "b", "c"])
        }
    );
    let r = login(&r, 30, &["a", "b"]);
    // Two logins made: the third refusal is the last.
    let (third, r) = refused(&challenge, &r);
    assert_eq!(
        third,
        StepUpVerdict::GiveUp {
            scopes: s(&["a", "b", "c"])
        }
    );
    assert_eq!(
        r.readiness(),
        Readiness::GivenUp {
            scopes: s(&["a", "b", "c"])
        }
    );
    // A login by hand after giving up starts afresh.
    assert_eq!(login_scopes(&s(&["a"]), r.step_up.as_ref()), s(&["a"]));
    let r = login(&r, 40, &["a"]);
    assert_eq!(r.step_up, None);
    assert_eq!(r.readiness(), Readiness::Ready);
}

#[test]
fn a_refusal_of_every_granted_scope_after_a_login_is_given_up() {
    let challenge = Challenge::parse(r#"Bearer error="insufficient_scope", scope="admin""#);
    let r = login(&sample(), 10, &["admin"]);
    let (first, r) = refused(&challenge, &r);
    assert_eq!(
        first,
        StepUpVerdict::Login {
            scopes: s(&["admin"])
        }
    );
    let r = login(&r, 20, &["admin"]);
    let (second, _) = refused(&challenge, &r);
    assert_eq!(
        second,
        StepUpVerdict::GiveUp {
            scopes: s(&["admin"])
        }
    );
}

#[test]
fn registration_follows_the_specs_order() {
    assert_eq!(
        registration(true, true, true, true),
        Ok(Registration::Preregistered)
    );
    assert_eq!(
        registration(false, true, true, true),
        Ok(Registration::MetadataDocument)
    );
    assert_eq!(
        registration(false, true, false, true),
        Ok(Registration::Dynamic)
    );
    assert_eq!(
        registration(false, false, true, true),
        Ok(Registration::Dynamic)
    );
    assert!(registration(false, true, false, false).is_err());
}

#[test]
fn a_legacy_issuer_is_taken_only_from_the_servers_own_origin() {
    let server = "http://localhost:4000/mcp";
    assert!(legacy_issuer_acceptable(
        server,
        "http://localhost:4000/oauth"
    ));
    assert!(legacy_issuer_acceptable(server, "http://LOCALHOST:4000"));
    assert!(!legacy_issuer_acceptable(
        server,
        "http://localhost:4001/oauth"
    ));
    assert!(!legacy_issuer_acceptable(
        server,
        "https://localhost:4000/oauth"
    ));
    assert!(!legacy_issuer_acceptable(
        server,
        "http://evil.example.com/oauth"
    ));
    assert!(!legacy_issuer_acceptable(
        server,
        "http://localhost:4000@evil.example.com/"
    ));
    assert!(!legacy_issuer_acceptable(server, "not a url"));
}

#[test]
fn a_dead_token_waits_for_a_login() {
    let r = login(&sample(), 10, &[]).without_tokens();
    assert_eq!(r.readiness(), Readiness::NeedsLogin { scopes: vec![] });
    assert_eq!(r.client, sample().client);
}

fn sample() -> LoginRecord {
    LoginRecord {
        format: LoginRecord::FORMAT,
        upstream: "docs".into(),
        principal: String::new(),
        url: "https://docs.example.com/mcp".into(),
        client: ClientIdentity {
            client_id: "c".into(),
            client_secret: None,
            registration: "dynamic".into(),
            redirect_uri: "http://127.0.0.1:1/callback".into(),
        },
        metadata: json!({}),
        credentials: json!({
            "client_id": "c",
            "token_response": {"access_token": "t", "token_type": "bearer", "expires_in": 3600, "refresh_token": "r"},
            "granted_scopes": ["read"],
            "token_received_at": 1000
        }),
        step_up: None,
        logged_in_at_ms: 1_000_000,
    }
}

#[test]
fn a_record_is_used_only_for_its_key_and_url() {
    let record = sample();
    let key = VaultKey::operator("docs");
    assert!(record.is_for(&key, "https://docs.example.com/mcp"));
    assert!(!record.is_for(&key, "https://evil.example.com/mcp"));
    assert!(!record.is_for(&VaultKey::operator("other"), "https://docs.example.com/mcp"));
    let alice = VaultKey {
        principal: "alice".into(),
        upstream: "docs".into(),
    };
    assert!(!record.is_for(&alice, "https://docs.example.com/mcp"));
    assert_eq!(record.granted_scopes(), s(&["read"]));
    assert!(record.can_refresh());
    assert_eq!(record.expires_at_ms(), Some(4_600_000));
    assert_eq!(login_command("docs"), "sluice login docs");
}
