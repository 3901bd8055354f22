//! The local file-system state manager: one file per node, written atomically.

use crate::watch::{poll_node, NodeWatch, DEFAULT_POLL_INTERVAL};
use crate::{validate_name, StateDir, StateError, StateManager};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Nodes as files `<root>/<dir>/<topology>`. A write goes to a temporary file in the same
/// directory, is synced, and is renamed over the node, so a crash never leaves a torn node.
///
/// There are no sessions here: an "ephemeral" node is a plain file, replaced by whoever
/// creates it next (a restarted tmaster overwrites its predecessor's location).
/// [`watch`](StateManager::watch) polls the file (every [`DEFAULT_POLL_INTERVAL`] unless set
/// with [`with_poll_interval`](Self::with_poll_interval)) and never reports `SessionLost`.
#[derive(Clone, Debug)]
pub struct LocalFsStateManager {
    root: PathBuf,
    poll_interval: Duration,
}

impl LocalFsStateManager {
    /// A state manager rooted at `root` (created on first write).
    pub fn new(root: impl Into<PathBuf>) -> LocalFsStateManager {
        LocalFsStateManager {
            root: root.into(),
            poll_interval: DEFAULT_POLL_INTERVAL,
        }
    }

    /// Sets how often watches read their node.
    pub fn with_poll_interval(mut self, interval: Duration) -> LocalFsStateManager {
        self.poll_interval = interval;
        self
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, dir: StateDir, topology: &str) -> Result<PathBuf, StateError> {
        validate_name(topology)?;
        Ok(self.root.join(dir.name()).join(topology))
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StateError + '_ {
    move |source| StateError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl StateManager for LocalFsStateManager {
    fn get(&self, dir: StateDir, topology: &str) -> Result<Option<Vec<u8>>, StateError> {
        let path = self.path(dir, topology)?;
        match std::fs::read(&path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&path)(e)),
        }
    }

    fn set(&self, dir: StateDir, topology: &str, data: &[u8]) -> Result<(), StateError> {
        let path = self.path(dir, topology)?;
        let parent = path.parent().expect("node has a parent");
        std::fs::create_dir_all(parent).map_err(io(parent))?;
        let tmp = parent.join(format!(
            ".{topology}.tmp-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        let write = || -> std::io::Result<()> {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(data)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io(&path)(e)
        })
    }

    fn create(
        &self,
        dir: StateDir,
        topology: &str,
        data: &[u8],
        ephemeral: bool,
    ) -> Result<(), StateError> {
        if !ephemeral && self.get(dir, topology)?.is_some() {
            return Err(StateError::AlreadyExists {
                dir: dir.name(),
                topology: topology.to_string(),
            });
        }
        self.set(dir, topology, data)
    }

    fn delete(&self, dir: StateDir, topology: &str) -> Result<(), StateError> {
        let path = self.path(dir, topology)?;
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io(&path)(e)),
        }
    }

    fn list(&self, dir: StateDir) -> Result<Vec<String>, StateError> {
        let path = self.root.join(dir.name());
        let entries = match std::fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&path)(e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io(&path))?;
            if let Some(name) = entry.file_name().to_str() {
                if !name.starts_with('.') {
                    names.push(name.to_string());
                }
            }
        }
        names.sort();
        Ok(names)
    }

    fn describe(&self) -> String {
        format!("local:{}", self.root.display())
    }

    fn watch(&self, dir: StateDir, topology: &str) -> Result<NodeWatch, StateError> {
        let path = self.path(dir, topology)?;
        let me = self.clone();
        let topology = topology.to_string();
        poll_node(path.display().to_string(), self.poll_interval, move || {
            me.get(dir, &topology)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StateManagerExt;
    use heron_proto::system::ExecutionState;

    fn tmp() -> (tempfile::TempDir, LocalFsStateManager) {
        let d = tempfile::tempdir().unwrap();
        let s = LocalFsStateManager::new(d.path().join("state"));
        (d, s)
    }

    #[test]
    fn layout_is_root_dir_topology() {
        let (_d, s) = tmp();
        s.set(StateDir::PackingPlans, "wc", b"abc").unwrap();
        assert_eq!(
            std::fs::read(s.root().join("packingplans/wc")).unwrap(),
            b"abc"
        );
        assert_eq!(s.list(StateDir::PackingPlans).unwrap(), vec!["wc"]);
        assert!(s.list(StateDir::PPlans).unwrap().is_empty());
    }

    #[test]
    fn create_refuses_existing_non_ephemeral_node() {
        let (_d, s) = tmp();
        s.create(StateDir::Topologies, "wc", b"1", false).unwrap();
        assert!(matches!(
            s.create(StateDir::Topologies, "wc", b"2", false),
            Err(StateError::AlreadyExists { .. })
        ));
        s.create(StateDir::TManagers, "wc", b"1", true).unwrap();
        s.create(StateDir::TManagers, "wc", b"2", true).unwrap();
        assert_eq!(s.get(StateDir::TManagers, "wc").unwrap().unwrap(), b"2");
    }

    #[test]
    fn typed_round_trip_and_delete_topology() {
        let (_d, s) = tmp();
        let es = ExecutionState {
            topology_name: "wc".into(),
            topology_id: "wc-1".into(),
            submission_time: Some(5),
            submission_user: None,
            cluster: "local".into(),
            environ: "default".into(),
            role: "me".into(),
            release_state: None,
        };
        s.set_proto(StateDir::ExecutionState, "wc", &es).unwrap();
        assert_eq!(s.get_execution_state("wc").unwrap(), Some(es));
        s.set(StateDir::PPlans, "wc", b"").unwrap();
        s.delete_topology("wc").unwrap();
        assert!(s.get(StateDir::ExecutionState, "wc").unwrap().is_none());
        assert!(s.get(StateDir::PPlans, "wc").unwrap().is_none());
        // leaves no temporary files behind
        assert!(std::fs::read_dir(s.root().join("pplans"))
            .unwrap()
            .next()
            .is_none());
    }

    #[test]
    fn corrupted_node_is_reported() {
        let (_d, s) = tmp();
        s.set(StateDir::Topologies, "wc", b"\xff\xff\xff").unwrap();
        assert!(matches!(
            s.get_topology("wc"),
            Err(StateError::Corrupted { .. })
        ));
    }

    #[test]
    fn watch_polls_the_file() {
        use crate::NodeEvent;
        let (_d, s) = tmp();
        let s = s.with_poll_interval(Duration::from_millis(20));
        let w = s.watch(StateDir::TManagers, "wc").unwrap();
        let t = Duration::from_secs(5);
        assert_eq!(w.recv_timeout(t).unwrap(), NodeEvent::Changed(None));
        s.set(StateDir::TManagers, "wc", b"loc-1").unwrap();
        assert_eq!(
            w.recv_timeout(t).unwrap(),
            NodeEvent::Changed(Some(b"loc-1".to_vec()))
        );
        s.delete(StateDir::TManagers, "wc").unwrap();
        assert_eq!(w.recv_timeout(t).unwrap(), NodeEvent::Changed(None));
        assert!(matches!(
            s.watch(StateDir::TManagers, "a/b"),
            Err(StateError::InvalidName(_))
        ));
    }

    #[test]
    fn bad_names_are_refused() {
        let (_d, s) = tmp();
        for bad in ["", "..", "a/b", "x y"] {
            assert!(matches!(
                s.set(StateDir::Topologies, bad, b""),
                Err(StateError::InvalidName(_))
            ));
        }
    }
}
