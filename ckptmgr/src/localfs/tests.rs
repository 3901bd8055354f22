use super::*;

fn key(ckpt: &str, component: &str, task: i32) -> CheckpointKey {
    CheckpointKey::new("T", ckpt, component, task)
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_layout_is_herons() {
    let dir = tempfile::tempdir().unwrap();
    let s = LocalFsStorage::new(dir.path());
    s.store(&key("0-1", "word", 1), b"a").unwrap();
    s.store(&key("0-1", "count", 2), b"b").unwrap();
    s.store(&key("0-2", "word", 1), b"c").unwrap();
    assert_eq!(
        files_under(dir.path()),
        ["T/0-1/count/2", "T/0-1/word/1", "T/0-2/word/1"],
        "no temporary file is left behind"
    );
    assert_eq!(
        s.path_of(&key("0-1", "word", 1)).unwrap(),
        dir.path().join("T").join("0-1").join("word").join("1")
    );
    assert_eq!(s.restore(&key("0-1", "count", 2)).unwrap(), b"b");
    let on_disk = fs::read(dir.path().join("T/0-2/word/1")).unwrap();
    assert_eq!(frame::decode(&on_disk).unwrap(), b"c", "the file is framed");
}

#[test]
fn a_store_replaces_the_previous_state() {
    let dir = tempfile::tempdir().unwrap();
    let s = LocalFsStorage::new(dir.path());
    let k = key("0-1", "word", 1);
    s.store(&k, b"first, longer value").unwrap();
    s.store(&k, b"second").unwrap();
    assert_eq!(s.restore(&k).unwrap(), b"second");
    s.store(&k, b"").unwrap();
    assert_eq!(s.restore(&k).unwrap(), b"");
}

#[test]
fn missing_and_damaged_files_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let s = LocalFsStorage::new(dir.path());
    let k = key("0-1", "word", 1);
    assert!(matches!(s.restore(&k), Err(StorageError::NotFound { .. })));
    s.store(&k, b"some state bytes").unwrap();
    let path = s.path_of(&k).unwrap();
    let good = fs::read(&path).unwrap();

    fs::write(&path, &good[..good.len() - 3]).unwrap();
    let e = s.restore(&k).unwrap_err();
    let StorageError::Corrupt { path: p, reason } = &e else {
        panic!("{e}")
    };
    assert_eq!(p, &path);
    assert!(reason.contains("payload bytes"), "{reason}");

    let mut flipped = good.clone();
    *flipped.last_mut().unwrap() ^= 0x01;
    fs::write(&path, &flipped).unwrap();
    assert!(matches!(s.restore(&k), Err(StorageError::Corrupt { .. })));

    fs::write(&path, b"").unwrap();
    assert!(matches!(s.restore(&k), Err(StorageError::Corrupt { .. })));
}

#[test]
fn bad_names_cannot_escape_the_root() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let s = LocalFsStorage::new(&root);
    for k in [
        CheckpointKey::new("..", "1", "c", 1),
        CheckpointKey::new("T", "../../x", "c", 1),
        CheckpointKey::new("T", "1", "/etc", 1),
        CheckpointKey::new("T", "", "c", 1),
    ] {
        assert!(matches!(
            s.store(&k, b"x"),
            Err(StorageError::InvalidName { .. })
        ));
        assert!(matches!(
            s.restore(&k),
            Err(StorageError::InvalidName { .. })
        ));
    }
    assert!(s.dispose("..", None, true).is_err());
    assert!(!root.exists(), "nothing was written anywhere");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn dispose_removes_checkpoints_older_than_the_oldest_preserved() {
    let dir = tempfile::tempdir().unwrap();
    let s = LocalFsStorage::new(dir.path());
    for ckpt in ["0-10", "0-11", "0-12", "0-9", "1-5"] {
        s.store(&key(ckpt, "word", 1), ckpt.as_bytes()).unwrap();
    }
    // strings: "0-10" < "0-11" < "0-12" < "0-9" < "1-5"
    assert_eq!(
        s.dispose("T", Some("0-12"), false).unwrap(),
        ["0-10", "0-11"]
    );
    let mut left: Vec<String> = fs::read_dir(dir.path().join("T"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["0-12", "0-9", "1-5"]);
    assert_eq!(s.restore(&key("0-12", "word", 1)).unwrap(), b"0-12");
    assert!(s.dispose("T", Some("0-12"), false).unwrap().is_empty());
    assert!(s.dispose("T", None, false).unwrap().is_empty(), "no bound");
    assert!(s.dispose("T", Some(""), false).unwrap().is_empty());
}

#[test]
fn dispose_all_removes_the_topology_and_only_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = LocalFsStorage::new(dir.path());
    s.store(&key("0-1", "word", 1), b"x").unwrap();
    s.store(&key("0-2", "word", 1), b"y").unwrap();
    s.store(&CheckpointKey::new("U", "0-1", "word", 1), b"z")
        .unwrap();
    assert_eq!(s.dispose("T", None, true).unwrap(), ["0-1", "0-2"]);
    assert!(!dir.path().join("T").exists());
    assert_eq!(
        s.restore(&CheckpointKey::new("U", "0-1", "word", 1))
            .unwrap(),
        b"z"
    );
    assert!(s.dispose("T", None, true).unwrap().is_empty(), "idempotent");
    assert!(s.dispose("never", Some("9"), false).unwrap().is_empty());
}

#[test]
fn dispose_leaves_stray_files_in_the_topology_directory() {
    let dir = tempfile::tempdir().unwrap();
    let s = LocalFsStorage::new(dir.path());
    s.store(&key("0-1", "word", 1), b"x").unwrap();
    fs::write(dir.path().join("T/0-0-not-a-dir"), b"").unwrap();
    assert_eq!(s.dispose("T", Some("0-5"), false).unwrap(), ["0-1"]);
    assert_eq!(s.dispose("T", None, true).unwrap(), Vec::<String>::new());
    assert!(dir.path().join("T/0-0-not-a-dir").exists());
}

#[test]
fn concurrent_stores_of_one_key_leave_one_whole_value() {
    let dir = tempfile::tempdir().unwrap();
    let s = std::sync::Arc::new(LocalFsStorage::new(dir.path()));
    let k = key("0-1", "word", 1);
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let (s, k) = (s.clone(), k.clone());
            std::thread::spawn(move || {
                for _ in 0..20 {
                    s.store(&k, &vec![t; 1000 + usize::from(t)]).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let v = s.restore(&k).unwrap();
    assert_eq!(v.len(), 1000 + usize::from(v[0]));
    assert!(v.iter().all(|b| *b == v[0]));
    assert_eq!(files_under(dir.path()), ["T/0-1/word/1"]);
}
