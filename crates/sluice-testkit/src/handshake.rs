//! Which era each request is served in, and the handshakes: the 2025-x `initialize`, the
//! 2026-07-28 `server/discover` and the per-request `_meta` envelope that replaces the handshake
//! there.

use serde_json::{Value, json};

use crate::era::{Era, LEGACY_VERSIONS, META_PROTOCOL_VERSION, MODERN_VERSION, cacheable};
use crate::fixture::Fixture;
use crate::jsonrpc::{RpcError, meta, method};
use crate::{EraMode, Violation};

impl Fixture {
    /// The era a request is served in. Dual: `initialize` opens legacy, `server/discover` and
    /// anything with a `_meta` protocol version is modern, everything else is legacy.
    pub fn era_of(&self, msg: &Value) -> Era {
        match self.cfg.era {
            EraMode::Modern => Era::Modern,
            EraMode::Legacy => Era::Legacy,
            EraMode::Dual => {
                let m = method(msg);
                if m == "initialize" {
                    Era::Legacy
                } else if m == "server/discover"
                    || meta(msg).is_some_and(|m| m.contains_key(META_PROTOCOL_VERSION))
                {
                    Era::Modern
                } else {
                    Era::Legacy
                }
            }
        }
    }

    /// Versions named in `-32022` errors.
    fn supported_versions(&self) -> Vec<&'static str> {
        let mut v = vec![MODERN_VERSION];
        if self.cfg.era == EraMode::Dual {
            v.extend(LEGACY_VERSIONS);
        }
        v
    }

    /// Checks the per-request `_meta` of a modern request: the protocol version must be present
    /// (else -32602) and supported (else -32022). `initialize` sent to a modern-only server also
    /// gets -32022, naming the supported versions.
    pub fn check_modern_envelope(&self, msg: &Value) -> Result<(), RpcError> {
        let unsupported = |requested: Value| {
            RpcError::new(-32022, "Unsupported protocol version")
                .with_data(json!({"supported": self.supported_versions(), "requested": requested}))
        };
        if method(msg) == "initialize" {
            let requested = msg
                .get("params")
                .and_then(|p| p.get("protocolVersion"))
                .cloned()
                .unwrap_or(Value::Null);
            return Err(unsupported(requested));
        }
        match meta(msg).and_then(|m| m.get(META_PROTOCOL_VERSION)) {
            None => Err(RpcError::invalid_params(format!(
                "Missing params._meta[\"{META_PROTOCOL_VERSION}\"]"
            ))),
            Some(Value::String(v)) if v == MODERN_VERSION => Ok(()),
            // `--violate echo-unknown-version`: served as if it were supported.
            Some(_) if self.cfg.violates(Violation::EchoUnknownVersion) => Ok(()),
            Some(other) => Err(unsupported(other.clone())),
        }
    }

    /// The `initialize` result (legacy): the version asked for if it is supported, else the
    /// first supported one; `--violate echo-unknown-version` and `bad-version-echo` change it.
    pub fn initialize(&self, params: &Value) -> Value {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        // `--violate echo-unknown-version`: whatever was asked for is "agreed".
        let echo_any = self.cfg.violates(Violation::EchoUnknownVersion);
        let version = requested
            .filter(|v| echo_any || LEGACY_VERSIONS.contains(v))
            .unwrap_or(LEGACY_VERSIONS[0]);
        let version = if self.cfg.violates(Violation::BadVersionEcho) {
            "2024-99-99"
        } else {
            version
        };
        json!({
            "protocolVersion": version,
            "capabilities": capabilities(Era::Legacy, self.cfg.violates(Violation::NoListChanged)),
            "serverInfo": self.server_info(),
        })
    }

    /// The `server/discover` result (modern).
    pub fn discover(&self) -> Value {
        cacheable(
            json!({
                "supportedVersions": [MODERN_VERSION],
                "capabilities": capabilities(Era::Modern, self.cfg.violates(Violation::NoListChanged)),
                "_meta": {"io.modelcontextprotocol/serverInfo": self.server_info()},
            }),
            Era::Modern,
        )
    }
}

/// Capabilities advertised in `server/discover` (modern) and `initialize` (legacy, which also
/// supports `resources/subscribe`); without `tools.listChanged` under `--violate
/// no-list-changed`.
fn capabilities(era: Era, no_list_changed: bool) -> Value {
    let resources = match era {
        Era::Modern => json!({}),
        Era::Legacy => json!({"subscribe": true}),
    };
    let tools = if no_list_changed {
        json!({})
    } else {
        json!({"listChanged": true})
    };
    json!({"tools": tools, "resources": resources, "prompts": {}})
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use super::*;
    use crate::testutil::{error_code, fixture, legacy_req, modern_req, modern_req_v, result};

    #[tokio::test]
    async fn no_version_drops_the_server_info_version() {
        let init = || {
            legacy_req(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
            )
        };
        let discover = || modern_req("server/discover", json!({}));
        let info = "/_meta/io.modelcontextprotocol~1serverInfo";
        let plain = Arc::new(fixture(&[]));
        let r = result(&plain, Era::Legacy, init()).await;
        assert_eq!(r["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
        let r = result(&plain, Era::Modern, discover()).await;
        assert_eq!(
            r.pointer(info).unwrap()["version"],
            env!("CARGO_PKG_VERSION")
        );

        let broken = Arc::new(fixture(&["--violate", "no-version"]));
        let r = result(&broken, Era::Legacy, init()).await;
        assert_eq!(r["serverInfo"], json!({"name": "sluice-fixture"}));
        let r = result(&broken, Era::Modern, discover()).await;
        assert_eq!(r.pointer(info).unwrap(), &json!({"name": "sluice-fixture"}));
    }

    #[tokio::test]
    async fn echo_unknown_version_agrees_to_anything() {
        let init = legacy_req(
            "initialize",
            json!({"protocolVersion": "1999-01-01", "capabilities": {}}),
        );
        let list = modern_req_v("tools/list", json!({}), "1999-01-01");
        let plain = Arc::new(fixture(&[]));
        let r = result(&plain, Era::Legacy, init.clone()).await;
        assert_eq!(r["protocolVersion"], "2025-11-25");
        assert_eq!(error_code(&plain, Era::Modern, list.clone()).await, -32022);

        let broken = Arc::new(fixture(&["--violate", "echo-unknown-version"]));
        let r = result(&broken, Era::Legacy, init).await;
        assert_eq!(r["protocolVersion"], "1999-01-01");
        let r = result(&broken, Era::Modern, list).await;
        assert_eq!(r["tools"].as_array().map(Vec::len), Some(16));
        // A supported version is still answered as such.
        let init = legacy_req(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
        );
        assert_eq!(
            result(&broken, Era::Legacy, init).await["protocolVersion"],
            "2025-06-18"
        );
    }
}
