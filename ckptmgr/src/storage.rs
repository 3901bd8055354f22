//! The storage interface the checkpoint manager writes instance state through.
//!
//! One [`Storage`] holds the saved state of every task of every checkpoint of a topology,
//! addressed by a [`CheckpointKey`]. The bytes are opaque to it (the checkpoint manager
//! stores serialized `InstanceStateCheckpoint` protos). Backends: [`LocalFsStorage`]
//! (Heron's `LocalFileSystemStorage` layout).
//!
//! [`LocalFsStorage`]: crate::LocalFsStorage

use std::path::PathBuf;

/// Where one task's state of one checkpoint lives.
///
/// Every part becomes a path component of a backend, so each must be a valid name (see
/// [`validate_name`]); backends refuse keys that are not with [`StorageError::InvalidName`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CheckpointKey {
    /// The topology's name.
    pub topology: String,
    /// The checkpoint id (compared as a string: newer ids are greater).
    pub checkpoint_id: String,
    /// The component the task belongs to.
    pub component: String,
    /// The task id.
    pub task_id: i32,
}

impl CheckpointKey {
    /// A key from its parts.
    ///
    /// ```
    /// use heron_ckptmgr::CheckpointKey;
    /// let key = CheckpointKey::new("wordcount", "0-1700000000", "split", 3);
    /// assert_eq!(key.to_string(), "wordcount/0-1700000000/split/3");
    /// ```
    pub fn new(
        topology: impl Into<String>,
        checkpoint_id: impl Into<String>,
        component: impl Into<String>,
        task_id: i32,
    ) -> CheckpointKey {
        CheckpointKey {
            topology: topology.into(),
            checkpoint_id: checkpoint_id.into(),
            component: component.into(),
            task_id,
        }
    }

    /// Checks every part: each must be a valid name (see [`validate_name`]).
    pub fn validate(&self) -> Result<(), StorageError> {
        validate_name("topology", &self.topology)?;
        validate_name("checkpoint id", &self.checkpoint_id)?;
        validate_name("component", &self.component)
    }
}

impl std::fmt::Display for CheckpointKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}",
            self.topology, self.checkpoint_id, self.component, self.task_id
        )
    }
}

/// Refuses a name that could not be one path component on its own: empty, `.`, `..`, or
/// holding a `/`, a `\` or a NUL. `what` names the part in the error.
///
/// ```
/// use heron_ckptmgr::storage::validate_name;
/// assert!(validate_name("component", "split").is_ok());
/// assert!(validate_name("checkpoint id", "../../etc").is_err());
/// assert!(validate_name("topology", "").is_err());
/// ```
pub fn validate_name(what: &'static str, value: &str) -> Result<(), StorageError> {
    let reason = if value.is_empty() {
        "it is empty"
    } else if value == "." || value == ".." {
        "it is a relative directory"
    } else if value.contains(['/', '\\']) {
        "it holds a path separator"
    } else if value.contains('\0') {
        "it holds a NUL byte"
    } else {
        return Ok(());
    };
    Err(StorageError::InvalidName {
        what,
        value: value.to_string(),
        reason,
    })
}

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// A key part cannot be used as a name.
    #[error("invalid {what} {value:?}: {reason}")]
    InvalidName {
        /// Which part (`topology`, `checkpoint id`, `component`).
        what: &'static str,
        /// The refused value.
        value: String,
        /// Why.
        reason: &'static str,
    },
    /// Nothing is stored under the key.
    #[error("no saved state at {}", path.display())]
    NotFound {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// What is stored under the key is damaged (truncated, bit flips, not ours).
    #[error("corrupt saved state at {}: {reason}", path.display())]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The backend failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// A place to keep checkpointed instance state. Implementations are shared between
/// connections, so they are `Send + Sync`; their calls may block on I/O.
pub trait Storage: Send + Sync {
    /// Stores `bytes` under `key`, replacing what was there. When this returns `Ok`, the
    /// bytes are durable: a crash afterwards restores them, and a crash during the call leaves
    /// either the old value or the new one, never a mix.
    fn store(&self, key: &CheckpointKey, bytes: &[u8]) -> Result<(), StorageError>;

    /// The bytes stored under `key`: [`StorageError::NotFound`] if none,
    /// [`StorageError::Corrupt`] if they are damaged.
    fn restore(&self, key: &CheckpointKey) -> Result<Vec<u8>, StorageError>;

    /// Removes `topology`'s checkpoints: all of them when `all`, else every checkpoint whose
    /// id is older (compares less, as a string) than `oldest_preserved`; with neither, none.
    /// Returns the removed checkpoint ids, sorted.
    fn dispose(
        &self,
        topology: &str,
        oldest_preserved: Option<&str>,
        all: bool,
    ) -> Result<Vec<String>, StorageError>;
}

impl<S: Storage + ?Sized> Storage for std::sync::Arc<S> {
    fn store(&self, key: &CheckpointKey, bytes: &[u8]) -> Result<(), StorageError> {
        (**self).store(key, bytes)
    }

    fn restore(&self, key: &CheckpointKey) -> Result<Vec<u8>, StorageError> {
        (**self).restore(key)
    }

    fn dispose(
        &self,
        topology: &str,
        oldest_preserved: Option<&str>,
        all: bool,
    ) -> Result<Vec<String>, StorageError> {
        (**self).dispose(topology, oldest_preserved, all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_escape_or_collapse_are_refused() {
        for bad in ["", ".", "..", "a/b", "/abs", "a\\b", "a\0b", "../x"] {
            let e = validate_name("component", bad).unwrap_err();
            assert!(matches!(e, StorageError::InvalidName { .. }), "{bad:?}");
        }
        for good in ["split", "0-1700000000", "...", ".hidden", "a b", "ünï"] {
            validate_name("component", good).unwrap();
        }
    }

    #[test]
    fn a_key_checks_every_part() {
        CheckpointKey::new("T", "1-2", "word", 1)
            .validate()
            .unwrap();
        let e = CheckpointKey::new("T", "..", "word", 1)
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("checkpoint id"), "{e}");
        let e = CheckpointKey::new("T/U", "1", "word", 1)
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("topology"), "{e}");
    }
}
