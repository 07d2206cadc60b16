//! What `sluice serve` starts for operators besides the gateway: the
//! Prometheus recorder and its own listener (`[metrics]`), and the
//! OpenTelemetry trace exporter (`[telemetry]`, with the `otel` feature).

use anyhow::Context;
use sluice_core::config::Config;
use sluice_gateway::ops::metrics;

/// Installs the metrics recorder when `[metrics]` is enabled, keeps its
/// histograms drained, and serves `/metrics` on `[metrics] listen` when
/// set (for as long as the process runs).
pub async fn start_metrics(config: &Config) -> anyhow::Result<()> {
    if !config.metrics.enabled {
        return Ok(());
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
        return Ok(());
    };
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("[metrics] listen: cannot listen on {listen}"))?;
    let local = listener.local_addr().context("reading the bound address")?;
    if !local.ip().is_loopback() {
        tracing::warn!(
            "serving /metrics without auth on {local}: anyone who reaches it reads upstream and tool names and call rates"
        );
    }
    eprintln!("sluice metrics on http://{local}/metrics");
    tokio::spawn(async move {
        if let Err(e) = sluice_gateway::downstream::http::serve_metrics(listener).await {
            tracing::warn!("the metrics listener ended with an error: {e}");
        }
    });
    Ok(())
}
