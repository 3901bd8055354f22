//! What the shell may read and how (pure file-system logic, no HTTP).

use serde::Serialize;
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

/// The only directory of a container's working directory the shell serves: its logs. The
/// rest (the topology's secret under `auth/`, state, packages) stays private.
pub const SERVED_DIR: &str = "log-files";
/// The largest page one request returns.
pub const MAX_PAGE: u64 = 1024 * 1024;

/// Why a file cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The path leaves the served directory or is malformed.
    #[error("path {path:?} is not under {SERVED_DIR}/ (relative, without '..')")]
    Forbidden {
        /// The path asked for.
        path: String,
    },
    /// No such file or directory.
    #[error("{path}: no such file or directory")]
    NotFound {
        /// The path asked for.
        path: String,
    },
    /// Reading failed.
    #[error("{path}: {source}")]
    Io {
        /// The path asked for.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// Maps `rel` (as the client wrote it, e.g. `log-files/x.log`) to a path under `root`,
/// refusing anything outside [`SERVED_DIR`].
///
/// ```
/// use heron_shell::files::resolve;
/// use std::path::Path;
/// let root = Path::new("/w");
/// assert_eq!(resolve(root, "log-files/a.log").unwrap(), Path::new("/w/log-files/a.log"));
/// assert!(resolve(root, "auth/secret").is_err());
/// assert!(resolve(root, "log-files/../auth/secret").is_err());
/// ```
pub fn resolve(root: &Path, rel: &str) -> Result<PathBuf, FileError> {
    let forbidden = || FileError::Forbidden {
        path: rel.to_string(),
    };
    let rel_path = Path::new(rel.trim_end_matches('/'));
    let mut parts = rel_path.components();
    if parts.next() != Some(Component::Normal(SERVED_DIR.as_ref())) {
        return Err(forbidden());
    }
    if !parts.all(|c| matches!(c, Component::Normal(_))) {
        return Err(forbidden());
    }
    Ok(root.join(rel_path))
}

/// [`FileError::NotFound`] or [`FileError::Io`] for `source`, about `rel`.
fn io_error(rel: &str, source: std::io::Error) -> FileError {
    if source.kind() == std::io::ErrorKind::NotFound {
        FileError::NotFound {
            path: rel.to_string(),
        }
    } else {
        FileError::Io {
            path: rel.to_string(),
            source,
        }
    }
}

/// One page of a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Page {
    /// The bytes read, as text (invalid UTF-8 replaced).
    pub data: String,
    /// Where they start in the file.
    pub offset: u64,
    /// How many bytes were read.
    pub length: u64,
    /// The file's size now.
    pub size: u64,
}

/// Reads up to `length` bytes (at most [`MAX_PAGE`]) of `path` from `offset`; a negative
/// `offset` reads the last `length` bytes (Heron shell's tail).
pub fn read_page(path: &Path, rel: &str, offset: i64, length: u64) -> Result<Page, FileError> {
    let io = |source| io_error(rel, source);
    let mut f = fs::File::open(path).map_err(io)?;
    let size = f.metadata().map_err(io)?.len();
    let length = length.min(MAX_PAGE);
    let start = match u64::try_from(offset) {
        Ok(o) => o.min(size),
        Err(_) => size.saturating_sub(length),
    };
    f.seek(SeekFrom::Start(start)).map_err(io)?;
    let mut buf = Vec::with_capacity(usize::try_from(length).unwrap_or(0));
    f.take(length).read_to_end(&mut buf).map_err(io)?;
    Ok(Page {
        data: String::from_utf8_lossy(&buf).into_owned(),
        offset: start,
        length: buf.len() as u64,
        size,
    })
}

/// One entry of a directory listing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// File name.
    pub name: String,
    /// Size in bytes (0 for directories).
    pub size: u64,
    /// Whether it is a directory.
    pub is_dir: bool,
}

/// The entries of directory `path`, sorted by name (a file gives itself).
pub fn list(path: &Path, rel: &str) -> Result<Vec<Entry>, FileError> {
    let io = |source| io_error(rel, source);
    let meta = fs::metadata(path).map_err(io)?;
    let entry = |name: String, m: &fs::Metadata| Entry {
        name,
        size: if m.is_dir() { 0 } else { m.len() },
        is_dir: m.is_dir(),
    };
    if !meta.is_dir() {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        return Ok(vec![entry(name, &meta)]);
    }
    let mut out = Vec::new();
    for e in fs::read_dir(path).map_err(io)? {
        let e = e.map_err(io)?;
        if let Ok(m) = e.metadata() {
            out.push(entry(e.file_name().to_string_lossy().into_owned(), &m));
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("heron-shell-files-{}", std::process::id()));
        fs::create_dir_all(d.join(SERVED_DIR)).unwrap();
        d
    }

    #[test]
    fn pages_from_an_offset_and_from_the_end() {
        let root = dir();
        let p = root.join("log-files/a.log");
        fs::write(&p, "0123456789").unwrap();
        let page = read_page(&p, "a", 2, 3).unwrap();
        assert_eq!((page.data.as_str(), page.offset, page.size), ("234", 2, 10));
        let tail = read_page(&p, "a", -1, 4).unwrap();
        assert_eq!((tail.data.as_str(), tail.offset), ("6789", 6));
        let past = read_page(&p, "a", 50, 4).unwrap();
        assert_eq!((past.data.as_str(), past.offset, past.length), ("", 10, 0));
        let all = read_page(&p, "a", -1, 100).unwrap();
        assert_eq!(all.offset, 0);
        assert!(matches!(
            read_page(&root.join("log-files/none"), "none", 0, 1),
            Err(FileError::NotFound { .. })
        ));
        let names: Vec<String> = list(&root.join(SERVED_DIR), "log-files")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["a.log"]);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn only_the_log_directory_is_served() {
        let root = Path::new("/w");
        for bad in [
            "",
            "/etc/passwd",
            "auth/secret",
            "log-files/../auth",
            "./log-files/x",
        ] {
            assert!(resolve(root, bad).is_err(), "{bad}");
        }
        assert!(resolve(root, "log-files/").is_ok());
    }
}
