//! The requests each operation sends, recorded by a small HTTP server standing in for the
//! API server (this checks the calls' methods, paths and bodies; it is no Kubernetes).

use super::*;
use crate::{ManifestInput, Manifests};
use heron_proto::api::Topology;
use heron_proto::system::PackingPlan;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

/// (method, path, body) of every request.
type Log = Arc<Mutex<Vec<(String, String, String)>>>;

/// Answers every request: a create echoes the object, a delete of `missing` is a 404, the
/// rest get a small object.
fn server(missing: &'static str) -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let uri = format!("http://{}", listener.local_addr().unwrap());
    let log: Log = Arc::default();
    let seen = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or("").to_string();
            let path = parts.next().unwrap_or("").to_string();
            let mut length = 0;
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                if h.trim().is_empty() {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let body = String::from_utf8(body).unwrap();
            seen.lock()
                .unwrap()
                .push((method.clone(), path.clone(), body.clone()));
            let (status, answer) = match method.as_str() {
                "POST" => ("201 Created", body),
                "DELETE" if path.ends_with(missing) => (
                    "404 Not Found",
                    r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"not found"}"#.to_string(),
                ),
                "DELETE" => (
                    "200 OK",
                    r#"{"kind":"Status","apiVersion":"v1","status":"Success"}"#.to_string(),
                ),
                _ => (
                    "200 OK",
                    r#"{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"x"}}"#
                        .to_string(),
                ),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    (uri, log)
}

fn settings(uri: &str) -> Kubernetes {
    let mut k = Kubernetes::from_config(&BTreeMap::new()).unwrap();
    k.namespace = "streaming".into();
    k.uri = Some(uri.into());
    k
}

fn calls(log: &Log) -> Vec<String> {
    log.lock()
        .unwrap()
        .iter()
        .map(|(m, p, _)| format!("{m} {}", p.split('?').next().unwrap()))
        .collect()
}

#[test]
fn create_scale_restart_and_delete_send_heron_schedulers_requests() {
    let (uri, log) = server("/secrets/wordcount-auth");
    let k = settings(&uri);
    let topology = Topology {
        name: "WordCount".into(),
        id: "WordCount-1".into(),
        ..Topology::default()
    };
    let m = Manifests::build(&ManifestInput {
        topology: &topology,
        plan: &PackingPlan::default(),
        settings: &k,
        executor_args: vec!["heron-role".into(), "executor".into()],
        secret: Some(b"s\n".to_vec()),
    })
    .unwrap();
    create(&k, &m).unwrap();
    assert_eq!(
        calls(&log),
        [
            "POST /api/v1/namespaces/streaming/secrets",
            "POST /api/v1/namespaces/streaming/services",
            "POST /apis/apps/v1/namespaces/streaming/statefulsets",
            "POST /apis/apps/v1/namespaces/streaming/statefulsets",
        ]
    );
    let posted: serde_json::Value = serde_json::from_str(&log.lock().unwrap()[3].2).unwrap();
    assert_eq!(posted["metadata"]["name"], "wordcount-executors");
    log.lock().unwrap().clear();

    scale(&k, "wordcount", 3).unwrap();
    restart(&k, "wordcount", &[0, 2]).unwrap();
    // the Secret is already gone: a 404 is not an error
    delete(&k, "wordcount").unwrap();
    assert_eq!(
        calls(&log),
        [
            "PATCH /apis/apps/v1/namespaces/streaming/statefulsets/wordcount-executors",
            "DELETE /api/v1/namespaces/streaming/pods/wordcount-manager-0",
            "DELETE /api/v1/namespaces/streaming/pods/wordcount-executors-1",
            "DELETE /apis/apps/v1/namespaces/streaming/statefulsets/wordcount-executors",
            "DELETE /apis/apps/v1/namespaces/streaming/statefulsets/wordcount-manager",
            "DELETE /api/v1/namespaces/streaming/services/wordcount",
            "DELETE /api/v1/namespaces/streaming/secrets/wordcount-auth",
        ]
    );
    let patch: serde_json::Value = serde_json::from_str(&log.lock().unwrap()[0].2).unwrap();
    assert_eq!(patch, serde_json::json!({"spec": {"replicas": 3}}));
}

#[test]
fn an_unreachable_api_is_an_error_naming_it_and_no_uri_is_refused() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let uri = format!("http://127.0.0.1:{port}");
    let e = scale(&settings(&uri), "wordcount", 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains(&uri), "{e}");
    let mut k = settings(&uri);
    k.uri = None;
    assert!(matches!(scale(&k, "w", 1), Err(KubernetesError::NoApi)));
}
