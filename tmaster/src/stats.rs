//! The stats HTTP server on `stats_port`, what Heron's tracker asks the TManager: every route
//! is a POST whose body is a serialized request proto and whose answer is a serialized
//! response proto.
//!
//! * `/stats`: `MetricRequest` → `MetricResponse`. `interval` > 0 means the last that many
//!   seconds; `explicit_interval` a range of unix seconds; neither (or -1) everything, where
//!   counters give their total since the tmaster started. `minutely` asks for every bucket
//!   too (ours are [`crate::metrics::BUCKET_SECS`] wide, not a minute).
//! * `/exceptions` and `/exceptionsummary`: `ExceptionLogRequest` → `ExceptionLogResponse`
//!   (the summary folds the exceptions of one stack trace's first line).
//! * `/stmgrsregistrationsummary`: `StmgrsRegistrationSummaryRequest` →
//!   `StmgrsRegistrationSummaryResponse`.

use crate::metrics::{now_secs, MetricsStore, Range};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use heron_proto::system::StatusCode as HeronStatus;
use heron_proto::tmanager::metric_response::individual_metric::IntervalValue;
use heron_proto::tmanager::metric_response::{IndividualMetric, TaskMetric};
use heron_proto::tmanager::{
    ExceptionLogRequest, ExceptionLogResponse, MetricInterval, MetricRequest, MetricResponse,
    StmgrsRegistrationSummaryResponse, TmanagerExceptionLog,
};
use heron_proto::Message;
use std::collections::BTreeMap;
use tokio::net::TcpListener;
use tracing::warn;

/// The stats routes over `store`.
pub fn router(store: MetricsStore) -> Router {
    Router::new()
        .route("/stats", post(stats))
        .route("/exceptions", post(exceptions))
        .route("/exceptionsummary", post(exception_summary))
        .route("/stmgrsregistrationsummary", post(registration))
        .with_state(store)
}

/// Serves the stats routes on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, store: MetricsStore) {
    if let Err(e) = axum::serve(listener, router(store)).await {
        warn!(error = %e, "the stats server stopped");
    }
}

fn proto<M: Message>(msg: &M) -> Response {
    (
        [(header::CONTENT_TYPE, "application/octet-stream")],
        msg.encode_to_vec(),
    )
        .into_response()
}

fn bad_request(what: &str, e: impl std::fmt::Display) -> Response {
    (StatusCode::BAD_REQUEST, format!("bad {what}: {e}\n")).into_response()
}

/// The range a request asks for, and the seconds it spans (`None`: everything).
pub fn requested_range(req: &MetricRequest, now: i64) -> (Range, i64) {
    if let Some(MetricInterval { start, end }) = req.explicit_interval {
        return (Some((start, end)), end - start);
    }
    match req.interval {
        Some(i) if i > 0 => (Some((now - i, now)), i),
        _ => (None, -1),
    }
}

async fn stats(State(store): State<MetricsStore>, body: Bytes) -> Response {
    let req = match MetricRequest::decode(body) {
        Ok(r) => r,
        Err(e) => return bad_request("MetricRequest", e),
    };
    let (range, interval) = requested_range(&req, now_secs());
    let values = store.values(&req.component_name, &req.instance_id, &req.metric, range);
    let timeline = if req.minutely.unwrap_or(false) {
        store.timeline(&req.component_name, &req.instance_id, &req.metric, range)
    } else {
        Default::default()
    };
    let mut per_instance: BTreeMap<String, Vec<IndividualMetric>> = BTreeMap::new();
    for (name, by_instance) in values {
        for (instance, v) in by_instance {
            let interval_values = timeline
                .get(&name)
                .and_then(|t| t.get(&instance))
                .map(|points| {
                    points
                        .iter()
                        .map(|(ts, v)| IntervalValue {
                            value: v.to_string(),
                            interval: MetricInterval {
                                start: *ts,
                                end: *ts + crate::metrics::BUCKET_SECS,
                            },
                        })
                        .collect()
                })
                .unwrap_or_default();
            per_instance
                .entry(instance)
                .or_default()
                .push(IndividualMetric {
                    name: name.clone(),
                    value: Some(v.to_string()),
                    interval_values,
                });
        }
    }
    proto(&MetricResponse {
        status: heron_proto::status(HeronStatus::Ok, None),
        metric: per_instance
            .into_iter()
            .map(|(instance_id, metric)| TaskMetric {
                instance_id,
                metric,
            })
            .collect(),
        interval: Some(interval),
    })
}

async fn exceptions(State(store): State<MetricsStore>, body: Bytes) -> Response {
    match ExceptionLogRequest::decode(body) {
        Ok(req) => proto(&ExceptionLogResponse {
            status: heron_proto::status(HeronStatus::Ok, None),
            exceptions: store.exceptions(&req.component_name, &req.instances),
        }),
        Err(e) => bad_request("ExceptionLogRequest", e),
    }
}

/// The first line of a stack trace: the exception's class and message.
pub fn class_of(stacktrace: &str) -> &str {
    stacktrace.lines().next().unwrap_or("").trim()
}

async fn exception_summary(State(store): State<MetricsStore>, body: Bytes) -> Response {
    let req = match ExceptionLogRequest::decode(body) {
        Ok(r) => r,
        Err(e) => return bad_request("ExceptionLogRequest", e),
    };
    let mut by_class: BTreeMap<String, TmanagerExceptionLog> = BTreeMap::new();
    for e in store.exceptions(&req.component_name, &req.instances) {
        let class = class_of(&e.stacktrace).to_string();
        by_class
            .entry(class.clone())
            .and_modify(|s| {
                s.count += e.count;
                s.lasttime = e.lasttime.clone().max(s.lasttime.clone());
                s.firsttime = e.firsttime.clone().min(s.firsttime.clone());
            })
            .or_insert(TmanagerExceptionLog {
                stacktrace: class,
                ..e
            });
    }
    proto(&ExceptionLogResponse {
        status: heron_proto::status(HeronStatus::Ok, None),
        exceptions: by_class.into_values().collect(),
    })
}

async fn registration(State(store): State<MetricsStore>) -> Response {
    let (registered_stmgrs, absent_stmgrs) = store.registration();
    proto(&StmgrsRegistrationSummaryResponse {
        registered_stmgrs,
        absent_stmgrs,
    })
}

/// Binds `host:port` (0: any free port) and serves the stats routes on it in a task. A port
/// that cannot be bound is logged, not fatal: the topology runs without stats. Returns the
/// task and the port to advertise.
pub async fn start(
    host: &str,
    port: u16,
    store: MetricsStore,
) -> (Option<tokio::task::JoinHandle<()>>, u16) {
    match TcpListener::bind((host, port)).await {
        Ok(listener) => {
            let bound = listener.local_addr().map(|a| a.port()).unwrap_or(port);
            tracing::info!(port = bound, "stats server listening");
            (Some(tokio::spawn(serve(listener, store))), bound)
        }
        Err(e) => {
            warn!(host, port, error = %e, "cannot bind the stats port; serving no stats");
            (None, port)
        }
    }
}
