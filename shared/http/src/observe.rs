//! Per-request telemetry: a span with request id, route, tenant and cold start; a log line
//! with status and latency; and a CloudWatch EMF metric line (count, latency) when enabled.

use std::{
    io::Write,
    sync::atomic::{AtomicBool, Ordering},
    time::{Instant, SystemTime, UNIX_EPOCH},
};

use axum::{
    extract::{MatchedPath, Request, State},
    middleware::Next,
    response::Response,
};
use lambda_http::RequestExt;
use tracing::Instrument;

static WARM: AtomicBool = AtomicBool::new(false);

/// Where per-request metrics go.
#[derive(Debug, Clone)]
pub enum Metrics {
    /// Nowhere.
    Off,
    /// CloudWatch Embedded Metric Format lines on stdout (Lambda turns them into metrics).
    Emf {
        /// The CloudWatch namespace.
        namespace: String,
        /// The `service` dimension.
        service: String,
    },
}

impl Metrics {
    /// Adds `value` to the count `name` of the service (an EMF line on stdout; nothing when
    /// off): what happened outside a request, e.g. a training run that failed.
    pub fn count(&self, name: &str, value: u64) {
        self.record(name, value as f64, "Count");
    }

    /// Records `value` (in CloudWatch `unit`, e.g. `None` for a score) as the metric `name` of
    /// the service: an EMF line on stdout; nothing when off.
    pub fn record(&self, name: &str, value: f64, unit: &str) {
        if let Self::Emf { namespace, service } = self {
            let line = metric_line(namespace, service, name, value, unit);
            let _ = writeln!(std::io::stdout().lock(), "{line}");
        }
    }
}

/// One CloudWatch Embedded Metric Format record of one metric with the `service` dimension.
fn metric_line(
    namespace: &str,
    service: &str,
    name: &str,
    value: f64,
    unit: &str,
) -> serde_json::Value {
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    serde_json::json!({
        "_aws": {
            "Timestamp": timestamp,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [["service"]],
                "Metrics": [{"Name": name, "Unit": unit}]
            }]
        },
        "service": service,
        name: value,
    })
}

pub(crate) async fn observe(State(metrics): State<Metrics>, req: Request, next: Next) -> Response {
    let cold_start = !WARM.swap(true, Ordering::Relaxed);
    let request_id = req
        .lambda_context_ref()
        .map(|c| c.request_id.clone())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_owned();
    let method = req.method().clone();
    let span = tracing::info_span!(
        "request",
        request_id = %request_id,
        method = %method,
        route = %route,
        tenant = tracing::field::Empty,
        cold_start,
    );
    let started = Instant::now();
    let response = next.run(req).instrument(span.clone()).await;
    let latency_ms = started.elapsed().as_secs_f64() * 1_000.0;
    let status = response.status().as_u16();
    span.in_scope(|| tracing::info!(status, latency_ms, "request handled"));
    if let Metrics::Emf { namespace, service } = &metrics {
        let route = format!("{method} {route}");
        let line = emf_line(namespace, service, &route, status, latency_ms, cold_start);
        // A metrics line that cannot be written must not fail the request.
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }
    response
}

/// One CloudWatch Embedded Metric Format record for a request.
fn emf_line(
    namespace: &str,
    service: &str,
    route: &str,
    status: u16,
    latency_ms: f64,
    cold: bool,
) -> serde_json::Value {
    let timestamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    serde_json::json!({
        "_aws": {
            "Timestamp": timestamp,
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [["service", "route"]],
                "Metrics": [
                    {"Name": "requests", "Unit": "Count"},
                    {"Name": "errors", "Unit": "Count"},
                    {"Name": "latency", "Unit": "Milliseconds"},
                    {"Name": "cold_start", "Unit": "Count"}
                ]
            }]
        },
        "service": service,
        "route": route,
        "status": status,
        "requests": 1,
        "errors": u8::from(status >= 500),
        "latency": latency_ms,
        "cold_start": u8::from(cold),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emf_records_declare_every_metric_they_carry() {
        let line = emf_line("agentrl", "budget", "POST /v1/budgets", 503, 12.5, true);
        let declared = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(declared["Namespace"], "agentrl");
        assert_eq!(
            declared["Dimensions"][0],
            serde_json::json!(["service", "route"])
        );
        for metric in declared["Metrics"].as_array().unwrap() {
            let name = metric["Name"].as_str().unwrap();
            assert!(line[name].is_number(), "{name} is declared but not set");
        }
        assert_eq!(
            (line["errors"].as_u64(), line["cold_start"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(line["latency"], 12.5);
        assert!(line["_aws"]["Timestamp"].as_u64().unwrap() > 1_700_000_000_000);
    }

    #[test]
    fn a_metric_is_one_declared_value_with_its_unit() {
        let line = metric_line("agentrl", "training", "training_runs_failed", 2.0, "Count");
        let declared = &line["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(declared["Dimensions"], serde_json::json!([["service"]]));
        assert_eq!(
            declared["Metrics"][0],
            serde_json::json!({"Name": "training_runs_failed", "Unit": "Count"})
        );
        assert_eq!(
            (
                line["service"].as_str(),
                line["training_runs_failed"].as_f64()
            ),
            (Some("training"), Some(2.0))
        );
    }
}
