//! `/metrics`: every running topology's metrics in the Prometheus text format, through the
//! `metrics` facade and `metrics-exporter-prometheus`. Counters are totals since the tmaster
//! started, gauges and latencies their latest value.
//!
//! A metric `__emit-count/default` of instance `container_1_word_2` of component `word`
//! becomes `heron_emit_count{cluster="local",environ="default",topology="WordCount",
//! component="word",instance="container_1_word_2",stream="default"} 1234`.

use crate::clusters::Clusters;
use crate::metrics_routes::{query, STMGR_COMPONENT};
use crate::query::Params;
use crate::routes::listed;
use axum::extract::{RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use heron_proto::tmanager::MetricRequest;
use metrics::Label;
use metrics_exporter_prometheus::PrometheusBuilder;

/// A Prometheus metric name and the stream label (if any) for a Heron metric name.
pub fn prometheus_name(heron: &str) -> (String, Option<&str>) {
    let (base, stream) = match heron.split_once('/') {
        Some((b, s)) if !b.starts_with("__server") && !b.starts_with("__client") => (b, Some(s)),
        _ => (heron, None),
    };
    let mut name = String::from("heron_");
    let mut last_sep = true;
    for c in base.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c.to_ascii_lowercase());
            last_sep = false;
        } else if !last_sep {
            name.push('_');
            last_sep = true;
        }
    }
    while name.ends_with('_') {
        name.pop();
    }
    (name, stream)
}

/// Heron counts (`*-count`, `*tuples*`, `*bytes*`, time spent in back pressure) are
/// Prometheus counters; everything else (latencies, gauges) are gauges.
pub fn is_counter(heron: &str) -> bool {
    heron.contains("-count")
        || heron.contains("tuples")
        || heron.contains("bytes")
        || heron.contains("time_spent")
}

/// `/metrics`: every topology's metrics recorded through the `metrics` facade into a
/// Prometheus recorder made for this answer, then rendered.
pub async fn metrics(State(clusters): State<Clusters>, RawQuery(q): RawQuery) -> Response {
    let params = match Params::parse(q.as_deref()) {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    let topologies = match listed(&clusters, &params).await {
        Ok(t) => t,
        Err(e) => return e.into_response(),
    };
    let recorder = PrometheusBuilder::new().build_recorder();
    for (cluster, t) in topologies {
        let Some(tmaster) = &t.info.tmanager else {
            continue;
        };
        let Some(topology) = &t.info.topology else {
            continue;
        };
        let components = topology
            .spouts
            .iter()
            .map(|s| s.comp.name.clone())
            .chain(topology.bolts.iter().map(|b| b.comp.name.clone()))
            .chain([STMGR_COMPONENT.to_string()]);
        for component in components {
            let request = MetricRequest {
                component_name: component.clone(),
                interval: Some(-1),
                ..Default::default()
            };
            let Ok(answer) = query(tmaster, &request).await else {
                continue;
            };
            for task in answer.metric {
                for m in task.metric {
                    let Some(value) = m.value.as_deref().and_then(|v| v.parse::<f64>().ok()) else {
                        continue;
                    };
                    let (name, stream) = prometheus_name(&m.name);
                    let mut labels = vec![
                        Label::new("cluster", cluster.clone()),
                        Label::new("environ", t.environ.clone()),
                        Label::new("topology", t.name.clone()),
                        Label::new("component", component.clone()),
                        Label::new("instance", task.instance_id.clone()),
                    ];
                    if let Some(s) = stream {
                        labels.push(Label::new("stream", s.to_string()));
                    }
                    metrics::with_local_recorder(&recorder, || {
                        if is_counter(&m.name) {
                            metrics::counter!(name, labels).absolute(value as u64);
                        } else {
                            metrics::gauge!(name, labels).set(value);
                        }
                    });
                }
            }
        }
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        recorder.handle().render(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            prometheus_name("__emit-count/default"),
            ("heron_emit_count".into(), Some("default"))
        );
        assert_eq!(
            prometheus_name("__server/__time_spent_back_pressure_initiated"),
            (
                "heron_server_time_spent_back_pressure_initiated".into(),
                None
            )
        );
        assert_eq!(
            prometheus_name("__lost_tuples"),
            ("heron_lost_tuples".into(), None)
        );
    }
}
