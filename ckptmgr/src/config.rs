//! What the checkpoint manager is started with, and where its storage root comes from.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// The topology config key that picks the storage backend.
pub const STORAGE_CLASSNAME_KEY: &str = "heron.statefulstorage.classname";
/// Heron's local file system backend: the only one this build has ([`LocalFsStorage`]).
///
/// [`LocalFsStorage`]: crate::LocalFsStorage
pub const LOCALFS_CLASSNAME: &str =
    "org.apache.heron.statefulstorage.localfs.LocalFileSystemStorage";
/// The topology config key of the local file system backend's root directory.
pub const LOCALFS_ROOT_PATH_KEY: &str = "heron.statefulstorage.localfs.root.path";
/// The root when [`LOCALFS_ROOT_PATH_KEY`] is unset, under `$HOME`.
pub const DEFAULT_LOCALFS_ROOT: &str = "~/.herondata/checkpoints";
/// The largest packet accepted (Heron's checkpoint manager limit, 10 MiB).
pub const MAX_PACKET_SIZE: usize = 10 * 1024 * 1024;

/// What the `ckptmgr` role passes to [`run`](crate::run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CkptmgrConfig {
    /// The topology's name.
    pub topology_name: String,
    /// The topology's id; registrations naming another are refused.
    pub topology_id: String,
    /// This checkpoint manager's id, `ckptmgr-<container>` (for logs).
    pub ckptmgr_id: String,
    /// The port to listen on, on 127.0.0.1 (0: an ephemeral one, see
    /// [`Server::local_addr`](crate::Server::local_addr)).
    pub port: u16,
    /// The local file system storage root (see [`storage_root`]).
    pub root: PathBuf,
    /// The largest packet accepted (a larger one closes its connection; default
    /// [`MAX_PACKET_SIZE`]).
    pub max_packet_size: usize,
    /// The topology's secret: a connection must pass its handshake (`heron_auth`) before
    /// anything it sends is read. `None` only for `heron-rs.auth.required=false`.
    pub auth: Option<heron_auth::Secret>,
}

/// Why the checkpoint manager could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum CkptmgrError {
    /// The topology asks for a storage backend this build does not have.
    #[error(
        "{STORAGE_CLASSNAME_KEY} {classname:?} is not supported: heron-rs stores checkpoints \
         only with {LOCALFS_CLASSNAME} (the local file system)"
    )]
    UnsupportedStorage {
        /// The configured class name.
        classname: String,
    },
    /// The storage configuration cannot be used.
    #[error("storage configuration: {0}")]
    Config(String),
    /// The tokio runtime could not be built.
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// The port could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// The storage root from the topology's config: refuses any backend but the local file
/// system one, then takes `root_path` (the value of [`LOCALFS_ROOT_PATH_KEY`]) or
/// [`DEFAULT_LOCALFS_ROOT`]. A leading `~` means `home` (`$HOME`).
///
/// ```
/// use heron_ckptmgr::storage_root;
/// use std::path::{Path, PathBuf};
/// let home = Some(Path::new("/home/u"));
/// assert_eq!(
///     storage_root(None, None, home).unwrap(),
///     PathBuf::from("/home/u/.herondata/checkpoints")
/// );
/// assert_eq!(storage_root(None, Some("/data/ckpt"), None).unwrap(), PathBuf::from("/data/ckpt"));
/// assert!(storage_root(Some("org.apache.heron.statefulstorage.hdfs.HDFSStorage"), None, home).is_err());
/// ```
pub fn storage_root(
    classname: Option<&str>,
    root_path: Option<&str>,
    home: Option<&Path>,
) -> Result<PathBuf, CkptmgrError> {
    match classname.map(str::trim) {
        None | Some(LOCALFS_CLASSNAME) => {}
        Some(other) => {
            return Err(CkptmgrError::UnsupportedStorage {
                classname: other.to_string(),
            })
        }
    }
    let raw = root_path.map(str::trim).unwrap_or(DEFAULT_LOCALFS_ROOT);
    if raw.is_empty() {
        return Err(CkptmgrError::Config(format!(
            "{LOCALFS_ROOT_PATH_KEY} is empty"
        )));
    }
    let rest = match raw.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest.trim_start_matches('/'),
        _ => return Ok(PathBuf::from(raw)),
    };
    let home = home.filter(|h| !h.as_os_str().is_empty()).ok_or_else(|| {
        CkptmgrError::Config(format!(
            "the storage root {raw:?} is under the home directory, but $HOME is not set \
             (set {LOCALFS_ROOT_PATH_KEY})"
        ))
    })?;
    Ok(if rest.is_empty() {
        home.to_path_buf()
    } else {
        home.join(rest)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_root_is_under_home() {
        let home = Path::new("/h");
        assert_eq!(
            storage_root(None, None, Some(home)).unwrap(),
            Path::new("/h/.herondata/checkpoints")
        );
        assert_eq!(
            storage_root(Some(LOCALFS_CLASSNAME), Some("~/c"), Some(home)).unwrap(),
            Path::new("/h/c")
        );
        assert_eq!(
            storage_root(None, Some("~"), Some(home)).unwrap(),
            Path::new("/h")
        );
        assert_eq!(
            storage_root(None, Some("~other/c"), Some(home)).unwrap(),
            Path::new("~other/c"),
            "only a bare ~ is the home directory"
        );
        let e = storage_root(None, None, None).unwrap_err();
        assert!(e.to_string().contains("$HOME is not set"), "{e}");
        assert!(storage_root(None, Some("  "), Some(home)).is_err());
    }

    #[test]
    fn other_backends_are_refused_by_name() {
        let e = storage_root(
            Some("org.apache.heron.statefulstorage.dlog.DlogStorage"),
            Some("/x"),
            None,
        )
        .unwrap_err();
        assert!(matches!(e, CkptmgrError::UnsupportedStorage { .. }));
        let msg = e.to_string();
        assert!(
            msg.contains("DlogStorage") && msg.contains(LOCALFS_CLASSNAME),
            "{msg}"
        );
        assert!(storage_root(Some(""), Some("/x"), None).is_err());
    }
}
