//! [`LocalFsStorage`]: checkpoints as files on the local file system, in Heron's
//! `LocalFileSystemStorage` layout `<root>/<topology>/<checkpoint_id>/<component>/<task_id>`.
//!
//! Each file holds one [`frame`](crate::frame) around the stored bytes. A write goes to a
//! temporary file beside the final one (`.<task_id>.tmp.<pid>.<n>`), which is fsynced, renamed
//! over the final name, and then the directory is fsynced (and so is the parent of every
//! directory the write created), so a crash leaves the old file or the new one.

use crate::frame;
use crate::storage::{validate_name, CheckpointKey, Storage, StorageError};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use tracing::{debug, warn};

/// Checkpoints under a root directory (Heron's `heron.statefulstorage.localfs.root.path`).
///
/// ```
/// use heron_ckptmgr::{CheckpointKey, LocalFsStorage, Storage};
/// let dir = tempfile::tempdir().unwrap();
/// let storage = LocalFsStorage::new(dir.path());
/// let key = CheckpointKey::new("T", "0-100", "word", 1);
/// storage.store(&key, b"state").unwrap();
/// assert!(dir.path().join("T/0-100/word/1").is_file());
/// assert_eq!(storage.restore(&key).unwrap(), b"state");
/// assert_eq!(storage.dispose("T", None, true).unwrap(), ["0-100"]);
/// ```
#[derive(Debug)]
pub struct LocalFsStorage {
    root: PathBuf,
    /// Tells apart the temporary files of concurrent writes.
    next_temp: AtomicU64,
}

impl LocalFsStorage {
    /// Storage under `root` (created on the first write).
    pub fn new(root: impl Into<PathBuf>) -> LocalFsStorage {
        LocalFsStorage {
            root: root.into(),
            next_temp: AtomicU64::new(0),
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where `key`'s file is: `<root>/<topology>/<checkpoint_id>/<component>/<task_id>`.
    /// Refuses keys whose parts are not valid names.
    pub fn path_of(&self, key: &CheckpointKey) -> Result<PathBuf, StorageError> {
        key.validate()?;
        Ok(self
            .root
            .join(&key.topology)
            .join(&key.checkpoint_id)
            .join(&key.component)
            .join(key.task_id.to_string()))
    }

    /// Creates `dir` (under the root) and any missing parent, fsyncing the parent of each
    /// directory it created so the new entries survive a crash.
    fn create_dirs(&self, dir: &Path) -> Result<(), StorageError> {
        if dir.is_dir() {
            return Ok(());
        }
        let mut missing = Vec::new();
        let mut at = dir;
        while !at.is_dir() {
            missing.push(at);
            match at.parent() {
                Some(p) => at = p,
                None => break,
            }
        }
        for d in missing.into_iter().rev() {
            match fs::create_dir(d) {
                Ok(()) => {
                    if let Some(parent) = d.parent() {
                        sync_dir(parent)?;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(source) => {
                    return Err(StorageError::Io {
                        what: "creating directory",
                        path: d.to_path_buf(),
                        source,
                    })
                }
            }
        }
        Ok(())
    }
}

impl Storage for LocalFsStorage {
    fn store(&self, key: &CheckpointKey, bytes: &[u8]) -> Result<(), StorageError> {
        let path = self.path_of(key)?;
        let dir = path.parent().expect("a key's path has a parent");
        self.create_dirs(dir)?;
        let n = self.next_temp.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(".{}.tmp.{}.{n}", key.task_id, std::process::id()));
        let framed = frame::encode(bytes);
        let written = write_synced(&temp, &framed).and_then(|()| fs::rename(&temp, &path));
        if let Err(source) = written {
            if let Err(e) = fs::remove_file(&temp) {
                if e.kind() != io::ErrorKind::NotFound {
                    warn!(path = %temp.display(), error = %e, "cannot remove a temporary file");
                }
            }
            return Err(StorageError::Io {
                what: "writing",
                path,
                source,
            });
        }
        sync_dir(dir)?;
        debug!(key = %key, bytes = bytes.len(), "state stored");
        Ok(())
    }

    fn restore(&self, key: &CheckpointKey) -> Result<Vec<u8>, StorageError> {
        let path = self.path_of(key)?;
        let file = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(StorageError::NotFound { path })
            }
            Err(source) => {
                return Err(StorageError::Io {
                    what: "reading",
                    path,
                    source,
                })
            }
        };
        match frame::decode(&file) {
            Ok(payload) => Ok(payload.to_vec()),
            Err(e) => Err(StorageError::Corrupt {
                path,
                reason: e.to_string(),
            }),
        }
    }

    fn dispose(
        &self,
        topology: &str,
        oldest_preserved: Option<&str>,
        all: bool,
    ) -> Result<Vec<String>, StorageError> {
        validate_name("topology", topology)?;
        let dir = self.root.join(topology);
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(StorageError::Io {
                    what: "listing",
                    path: dir,
                    source,
                })
            }
        };
        let io_err = |what, path: &Path| {
            let path = path.to_path_buf();
            move |source| StorageError::Io { what, path, source }
        };
        let mut doomed = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_err("listing", &dir))?;
            let Ok(id) = entry.file_name().into_string() else {
                continue;
            };
            let older = oldest_preserved.is_some_and(|oldest| id.as_str() < oldest);
            if (all || older) && entry.path().is_dir() {
                doomed.push(id);
            }
        }
        doomed.sort();
        for id in &doomed {
            let path = dir.join(id);
            fs::remove_dir_all(&path).map_err(io_err("removing", &path))?;
        }
        // Only checkpoint directories were removed: anything else keeps the topology's.
        let dir_removed = all && fs::remove_dir(&dir).is_ok();
        if dir_removed {
            sync_dir(&self.root)?;
        } else if !doomed.is_empty() {
            sync_dir(&dir)?;
        }
        debug!(topology, removed = ?doomed, "checkpoints disposed");
        Ok(doomed)
    }
}

/// Writes `bytes` to a new file at `path` and fsyncs it.
fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut f = File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Fsyncs a directory, making the entries created, renamed or removed in it durable.
fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| StorageError::Io {
            what: "syncing directory",
            path: dir.to_path_buf(),
            source,
        })
}

#[cfg(test)]
mod tests;
