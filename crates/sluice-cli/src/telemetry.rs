//! What `sluice serve` starts for operators besides the gateway: the
//! Prometheus recorder and its own listener (`[metrics]`), and the
//! OpenTelemetry trace exporter (`[telemetry]`, with the `otel` feature).

use std::sync::Arc;

use anyhow::Context;
use sluice_core::config::Config;
use sluice_core::connection::ConnectionLimits;
use sluice_gateway::Gateway;
use sluice_gateway::console::Console;
use sluice_gateway::ops::metrics;
use tokio::net::TcpListener;

/// Installs the metrics recorder when `[metrics]` is enabled, keeps its
/// histograms drained, and binds `[metrics] listen` when set: the listener
/// is returned for [`serve_metrics`], which needs the gateway when the
/// console is served there.
pub async fn start_metrics(config: &Config) -> anyhow::Result<Option<TcpListener>> {
    if !config.metrics.enabled {
        return Ok(None);
    }
    metrics::install().context("installing the metrics recorder")?;
    tokio::spawn(async {
        let mut every = tokio::time::interval(std::time::Duration::from_secs(5));
        loop {
            every.tick().await;
            metrics::upkeep();
        }
    });
    let Some(listen) = config.metrics.listen else {
        return Ok(None);
    };
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("[metrics] listen: cannot listen on {listen}"))?;
    Ok(Some(listener))
}

/// Serves `/metrics` (and the console, when `[console]` puts it there) on
/// the listener [`start_metrics`] bound, for as long as the process runs.
pub fn serve_metrics(
    listener: TcpListener,
    limits: ConnectionLimits,
    console: Option<(Arc<Gateway>, Arc<Console>)>,
) -> anyhow::Result<()> {
    let local = listener.local_addr().context("reading the bound address")?;
    if !local.ip().is_loopback() {
        tracing::warn!(
            "serving /metrics without auth on {local}: anyone who reaches it reads upstream and tool names and call rates"
        );
    }
    eprintln!("sluice metrics on http://{local}/metrics");
    tokio::spawn(async move {
        if let Err(e) =
            sluice_gateway::downstream::http::serve_metrics(listener, limits, console).await
        {
            tracing::warn!("the metrics listener ended with an error: {e}");
        }
    });
    Ok(())
}

/// What the subscriber sends spans to, besides the log.
pub type TraceLayer =
    Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Exports traces while it lives; [`Traces::shutdown`] sends what is left.
pub struct Traces {
    #[cfg(feature = "otel")]
    provider: opentelemetry_sdk::trace::SdkTracerProvider,
}

impl Traces {
    /// Sends the spans still queued (bounded), then stops exporting.
    pub async fn shutdown(self) {
        #[cfg(feature = "otel")]
        {
            let provider = self.provider;
            let flushed = tokio::task::spawn_blocking(move || {
                provider.shutdown_with_timeout(std::time::Duration::from_secs(5))
            })
            .await;
            if let Ok(Err(e)) = flushed {
                tracing::warn!("the trace exporter did not shut down cleanly: {e}");
            }
        }
    }
}

/// Starts exporting traces to `[telemetry] otlp_endpoint`, when set: the
/// exporter, and the layer that feeds it. A binary built without the
/// `otel` feature refuses the key rather than drop every span silently.
pub fn start_traces(config: &Config) -> anyhow::Result<Option<(Traces, TraceLayer)>> {
    let Some(endpoint) = &config.telemetry.otlp_endpoint else {
        return Ok(None);
    };
    #[cfg(feature = "otel")]
    {
        otel::start(endpoint, &config.telemetry).map(Some)
    }
    #[cfg(not(feature = "otel"))]
    {
        anyhow::bail!(
            "[telemetry] otlp_endpoint = {endpoint:?} is set, but this sluice was built without the `otel` feature: build it with `cargo build --release --features otel`, or remove the key"
        )
    }
}

#[cfg(feature = "otel")]
mod otel {
    use anyhow::Context;
    use opentelemetry::trace::TracerProvider;
    use opentelemetry_otlp::WithExportConfig;
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
    use sluice_core::config::TelemetryConfig;
    use tracing::Level;
    use tracing_subscriber::Layer;
    use tracing_subscriber::filter::{Targets, filter_fn};

    use super::{TraceLayer, Traces};

    pub(super) fn start(
        endpoint: &str,
        config: &TelemetryConfig,
    ) -> anyhow::Result<(Traces, TraceLayer)> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(format!("{endpoint}/v1/traces"))
            .build()
            .context("[telemetry] otlp_endpoint: building the OTLP/HTTP exporter")?;
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            // A client's sampled trace is recorded; new traces by ratio.
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                config.sample_ratio,
            ))))
            .with_resource(
                Resource::builder()
                    .with_service_name(config.service_name.clone())
                    .build(),
            )
            .build();
        let layer = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("sluice"))
            // sluice's spans, not every dependency's, and no log events:
            // a log line may name a principal, which a trace must not carry.
            .with_filter(Targets::new().with_target("sluice_gateway", Level::INFO))
            .with_filter(filter_fn(|meta| meta.is_span()));
        Ok((Traces { provider }, Box::new(layer)))
    }
}
