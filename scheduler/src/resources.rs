//! The topology's resources folder (Storm's `resources/`, Heron's unpacked topology package):
//! copied into the working directory as `resources/`, where shell components run.

use std::fs;
use std::io;
use std::path::Path;

use crate::SchedulerError;

/// The name of the copy inside the working directory.
pub const RESOURCES_DIR: &str = "resources";

/// Replaces `<working_dir>/resources` with a copy of `source` (a directory; symlinks are
/// followed). A previous copy of the same topology is removed first.
pub fn install(source: &Path, working_dir: &Path) -> Result<(), SchedulerError> {
    let dest = working_dir.join(RESOURCES_DIR);
    let what = || {
        format!(
            "copying the resources folder {} to {}",
            source.display(),
            dest.display()
        )
    };
    if !source.is_dir() {
        return Err(SchedulerError::io(what())(io::Error::new(
            io::ErrorKind::NotFound,
            "not a directory",
        )));
    }
    if dest.exists() {
        fs::remove_dir_all(&dest).map_err(SchedulerError::io(what()))?;
    }
    copy_dir(source, &dest, working_dir).map_err(SchedulerError::io(what()))
}

/// Copies `src` into `dst` recursively, skipping `skip` (the working directory, when the
/// resources folder contains it).
fn copy_dir(src: &Path, dst: &Path, skip: &Path) -> io::Result<()> {
    fs::create_dir_all(dst)?;
    for entry in fs::read_dir(src)? {
        let entry = entry?;
        let from = entry.path();
        if from == skip {
            continue;
        }
        let to = dst.join(entry.file_name());
        if fs::metadata(&from)?.is_dir() {
            copy_dir(&from, &to, skip)?;
        } else {
            fs::copy(&from, &to)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_a_tree_and_replaces_an_old_copy() {
        let src = tempfile::tempdir().unwrap();
        let wd = tempfile::tempdir().unwrap();
        fs::create_dir_all(src.path().join("pkg")).unwrap();
        fs::write(src.path().join("topology.yaml"), "name: t\n").unwrap();
        fs::write(src.path().join("pkg/split.py"), "print()\n").unwrap();
        fs::create_dir_all(wd.path().join("resources")).unwrap();
        fs::write(wd.path().join("resources/stale.py"), "").unwrap();

        install(src.path(), wd.path()).unwrap();
        let res = wd.path().join(RESOURCES_DIR);
        assert_eq!(
            fs::read_to_string(res.join("topology.yaml")).unwrap(),
            "name: t\n"
        );
        assert_eq!(
            fs::read_to_string(res.join("pkg/split.py")).unwrap(),
            "print()\n"
        );
        assert!(!res.join("stale.py").exists(), "the old copy is replaced");
    }

    #[test]
    fn a_missing_folder_is_an_error_naming_it() {
        let wd = tempfile::tempdir().unwrap();
        let err = install(Path::new("/no/such/folder"), wd.path()).unwrap_err();
        assert!(err.to_string().contains("/no/such/folder"), "{err}");
    }
}
