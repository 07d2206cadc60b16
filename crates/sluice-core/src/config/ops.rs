//! The operations sections of `sluice.toml`: `[metrics]` (the Prometheus
//! endpoint) and `[telemetry]` (OpenTelemetry traces).

use std::net::SocketAddr;

use super::diagnostics::Diagnostics;
use super::raw::{RawMetrics, RawTelemetry};

/// `[metrics]`: the Prometheus endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsConfig {
    /// `enabled` (default true).
    pub enabled: bool,
    /// `listen`: serve `GET /metrics` on this address of its own, without
    /// auth (for a scraper on a private network). When absent, `/metrics`
    /// is served on the MCP listener, behind `[auth]` when it is on.
    pub listen: Option<SocketAddr>,
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            enabled: true,
            listen: None,
        }
    }
}

/// `[telemetry]`: where traces go.
#[derive(Debug, Clone, PartialEq)]
pub struct TelemetryConfig {
    /// `otlp_endpoint`: the OTLP/HTTP collector base URL (traces are sent
    /// to `<endpoint>/v1/traces`); `None`: no traces are exported.
    pub otlp_endpoint: Option<String>,
    /// `service_name` (default `sluice`).
    pub service_name: String,
    /// `sample_ratio`: the share of new traces recorded (0..=1, default 1);
    /// a trace the client started is recorded when the client sampled it.
    pub sample_ratio: f64,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            otlp_endpoint: None,
            service_name: "sluice".to_owned(),
            sample_ratio: 1.0,
        }
    }
}

pub(super) fn validate_metrics(
    raw: &RawMetrics,
    diags: &mut Diagnostics<'_>,
) -> Option<MetricsConfig> {
    let listen = match &raw.listen {
        None => None,
        Some(s) => Some(diags.socket_addr(s, "metrics.listen")?),
    };
    Some(MetricsConfig {
        enabled: raw.enabled.unwrap_or(true),
        listen,
    })
}

pub(super) fn validate_telemetry(
    raw: &RawTelemetry,
    diags: &mut Diagnostics<'_>,
) -> Option<TelemetryConfig> {
    let mut out = TelemetryConfig::default();
    let mut ok = true;
    if let Some(endpoint) = &raw.otlp_endpoint {
        let text = endpoint.get_ref();
        match url::Url::parse(text) {
            Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
                out.otlp_endpoint = Some(text.trim_end_matches('/').to_owned());
            }
            _ => {
                diags.push(
                    Some(endpoint.span()),
                    "telemetry.otlp_endpoint",
                    format!(
                        "{text:?} is not an http(s) URL of an OTLP/HTTP collector (e.g. \"http://127.0.0.1:4318\")"
                    ),
                );
                ok = false;
            }
        }
    }
    if let Some(name) = &raw.service_name {
        let valid = !name.get_ref().is_empty()
            && name.get_ref().len() <= 64
            && name.get_ref().chars().all(|c| c.is_ascii_graphic());
        if valid {
            out.service_name = name.get_ref().clone();
        } else {
            diags.push(
                Some(name.span()),
                "telemetry.service_name",
                format!(
                    "{:?}: must be 1 to 64 visible ASCII characters",
                    name.get_ref()
                ),
            );
            ok = false;
        }
    }
    if let Some(ratio) = &raw.sample_ratio {
        if (0.0..=1.0).contains(ratio.get_ref()) {
            out.sample_ratio = *ratio.get_ref();
        } else {
            diags.push(
                Some(ratio.span()),
                "telemetry.sample_ratio",
                format!("{} is out of range (allowed: 0 to 1)", ratio.get_ref()),
            );
            ok = false;
        }
    }
    ok.then_some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config::{Config, Source};

    fn parse(text: &str) -> Result<Config, Vec<String>> {
        Config::from_toml(
            Source {
                name: "sluice.toml",
                text,
            },
            &|_| None,
        )
        .map_err(|ds| {
            ds.iter()
                .map(|d| format!("{}: {}", d.key, d.message))
                .collect()
        })
    }

    #[test]
    fn metrics_are_on_by_default_on_the_mcp_listener() {
        let c = parse("").unwrap();
        assert_eq!(c.metrics, MetricsConfig::default());
        assert!(c.metrics.enabled);
        assert_eq!(c.metrics.listen, None);
        assert_eq!(c.telemetry, TelemetryConfig::default());
        let c = parse("[metrics]\nenabled = false\nlisten = \"127.0.0.1:9464\"\n").unwrap();
        assert!(!c.metrics.enabled);
        assert_eq!(c.metrics.listen.unwrap().port(), 9464);
    }

    #[test]
    fn telemetry_keys_are_checked_with_what_is_allowed() {
        let c = parse(
            "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318/\"\nservice_name = \"gw-1\"\nsample_ratio = 0.25\n",
        )
        .unwrap();
        assert_eq!(
            c.telemetry.otlp_endpoint.as_deref(),
            Some("http://127.0.0.1:4318")
        );
        assert_eq!(c.telemetry.service_name, "gw-1");
        assert_eq!(c.telemetry.sample_ratio, 0.25);
        let e = parse(
            "[metrics]\nlisten = \"9464\"\n[telemetry]\notlp_endpoint = \"collector:4318\"\nservice_name = \"has space\"\nsample_ratio = 1.5\n",
        )
        .unwrap_err();
        assert_eq!(
            e,
            [
                "metrics.listen: \"9464\" is not an IP:port address (e.g. \"127.0.0.1:8787\")",
                "telemetry.otlp_endpoint: \"collector:4318\" is not an http(s) URL of an OTLP/HTTP collector (e.g. \"http://127.0.0.1:4318\")",
                "telemetry.service_name: \"has space\": must be 1 to 64 visible ASCII characters",
                "telemetry.sample_ratio: 1.5 is out of range (allowed: 0 to 1)",
            ]
        );
    }
}
