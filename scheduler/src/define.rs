//! Step 1 of submit: run the binary's `define` role and read the `Topology` it writes.

use crate::SchedulerError;
use heron_proto::{api, Message};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long `define` may take before it is killed.
const DEFINE_TIMEOUT: Duration = Duration::from_secs(60);

/// How much of the binary's stderr goes into an error.
const STDERR_TAIL: usize = 4000;

/// Runs `<binary> heron-role define --output <tmp> -- <user_args>` and decodes the
/// `Topology` it wrote. A failure carries the binary's stderr.
pub fn define_topology(
    binary: &Path,
    user_args: &[String],
) -> Result<api::Topology, SchedulerError> {
    let scratch = Scratch::new()?;
    let output = scratch.dir.join("topology.defn");
    let stdout_path = scratch.dir.join("stdout");
    let stderr_path = scratch.dir.join("stderr");
    let fail = |reason: String| SchedulerError::Define {
        binary: binary.to_path_buf(),
        reason,
    };
    let create = |p: &Path| {
        std::fs::File::create(p).map_err(SchedulerError::io(format!("creating {}", p.display())))
    };
    let mut child = Command::new(binary)
        .arg("heron-role")
        .arg("define")
        .arg("--output")
        .arg(&output)
        .arg("--")
        .args(user_args)
        .stdin(Stdio::null())
        .stdout(create(&stdout_path)?)
        .stderr(create(&stderr_path)?)
        .spawn()
        .map_err(|e| fail(format!("cannot run it: {e}")))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > DEFINE_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(fail(format!(
                    "it did not finish within {}s (does its main call \
                     heron::run_role_if_requested first?){}",
                    DEFINE_TIMEOUT.as_secs(),
                    stderr_suffix(&stderr_path)
                )));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(fail(format!("waiting for it: {e}"))),
        }
    };
    if !status.success() {
        return Err(fail(format!(
            "it failed with {}{}",
            crate::process::describe_exit(status),
            stderr_suffix(&stderr_path)
        )));
    }
    let bytes = match std::fs::read(&output) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(fail(format!(
                "it exited successfully but wrote no topology definition; its main must call \
                 heron::run_role_if_requested first{}",
                stderr_suffix(&stderr_path)
            )))
        }
        Err(e) => return Err(fail(format!("reading {}: {e}", output.display()))),
    };
    let topology = api::Topology::decode(&bytes[..])
        .map_err(|e| fail(format!("its definition is not a Topology proto: {e}")))?;
    if topology.name.is_empty() {
        return Err(fail("its topology has no name".to_string()));
    }
    heron_statemgr::validate_name(&topology.name).map_err(|_| SchedulerError::InvalidName {
        what: "topology name",
        value: topology.name.clone(),
    })?;
    Ok(topology)
}

/// "\n--- stderr ---\n<last lines>" or "" when the binary printed nothing.
fn stderr_suffix(path: &Path) -> String {
    let text = std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let text = text.trim_end();
    if text.is_empty() {
        return String::new();
    }
    let start = text
        .char_indices()
        .map(|(i, _)| i)
        .find(|&i| text.len() - i <= STDERR_TAIL)
        .unwrap_or(0);
    let cut = if start > 0 { "...\n" } else { "" };
    format!("\n--- its stderr ---\n{cut}{}", &text[start..])
}

/// A private temporary directory, removed on drop.
struct Scratch {
    dir: PathBuf,
}

impl Scratch {
    fn new() -> Result<Scratch, SchedulerError> {
        let dir = std::env::temp_dir().join(format!("heron-define-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir)
            .map_err(SchedulerError::io(format!("creating {}", dir.display())))?;
        Ok(Scratch { dir })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, body: &str) -> PathBuf {
        let path = dir.join("topo.sh");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    fn tempdir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("heron-define-test-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn failing_define_reports_its_stderr() {
        let d = tempdir();
        let bin = script(&d, "echo 'bolt count has no input' >&2; exit 2");
        let err = define_topology(&bin, &[]).unwrap_err().to_string();
        assert!(err.contains("exit code 2"), "{err}");
        assert!(err.contains("bolt count has no input"), "{err}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn define_that_writes_nothing_is_explained() {
        let d = tempdir();
        let bin = script(&d, "exit 0");
        let err = define_topology(&bin, &[]).unwrap_err().to_string();
        assert!(err.contains("run_role_if_requested"), "{err}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn define_passes_user_args_and_reads_the_topology() {
        let d = tempdir();
        let topo = api::Topology {
            name: "T1".into(),
            ..Default::default()
        };
        let defn = d.join("defn");
        std::fs::write(&defn, topo.encode_to_vec()).unwrap();
        // $1=heron-role $2=define $3=--output $4=<file> $5=-- $6..=user args
        let bin = script(
            &d,
            &format!(
                "[ \"$1 $2 $3 $5 $6 $7\" = 'heron-role define --output -- a --b' ] || exit 9\n\
                 cp {} \"$4\"",
                defn.display()
            ),
        );
        let got = define_topology(&bin, &["a".into(), "--b".into()]).unwrap();
        assert_eq!(got.name, "T1");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
