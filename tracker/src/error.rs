//! Errors, and how the HTTP API reports them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// What can go wrong in the tracker.
#[derive(Debug, thiserror::Error)]
pub enum TrackerError {
    /// A state manager could not be opened or read.
    #[error("state manager of cluster {cluster}: {why}")]
    State {
        /// The cluster.
        cluster: String,
        /// What failed.
        why: String,
    },
    /// A tmaster's stats port did not answer as expected.
    #[error("tmaster stats at {addr}: {why}")]
    Tmaster {
        /// `host:port`.
        addr: String,
        /// What failed.
        why: String,
    },
    /// The listening address could not be bound.
    #[error("cannot bind {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The server failed.
    #[error("serving: {0}")]
    Serve(std::io::Error),
    /// A bug or a panicked task.
    #[error("internal error: {0}")]
    Internal(String),
}

/// An HTTP error answer: a status and a message, sent as
/// `{"status": "failure", "message": ...}`.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong.
    pub message: String,
}

impl ApiError {
    /// 400.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
        }
    }
}

impl From<TrackerError> for ApiError {
    fn from(e: TrackerError) -> ApiError {
        let status = match e {
            TrackerError::State { .. } | TrackerError::Tmaster { .. } => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError {
            status,
            message: e.to_string(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({"status": "failure", "message": self.message})),
        )
            .into_response()
    }
}
