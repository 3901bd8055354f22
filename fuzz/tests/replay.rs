//! Every fuzz target over its kept inputs (seeds and the inputs of crashes once found and
//! fixed): none may panic. Also writes the seeds (`--ignored write_seeds`).

#[test]
fn every_target_runs_its_kept_inputs_without_panicking() {
    for (name, entry) in heron_fuzz::TARGETS {
        let n = heron_fuzz::replay(name, entry);
        assert!(
            n > 0,
            "target {name} has no kept inputs in fuzz/corpus/{name}"
        );
    }
}

#[test]
fn every_target_has_seeds() {
    let seeds = heron_fuzz::seeds::seeds();
    for (name, _) in heron_fuzz::TARGETS {
        let s = seeds.iter().find(|(n, _)| *n == name);
        assert!(s.is_some_and(|(_, s)| !s.is_empty()), "no seeds for {name}");
    }
}

/// Writes the seeds into `fuzz/corpus/<target>/seed-<n>` (run by hand when they change).
#[test]
#[ignore]
fn write_seeds() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    for (name, seeds) in heron_fuzz::seeds::seeds() {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for (i, s) in seeds.iter().enumerate() {
            std::fs::write(dir.join(format!("seed-{i}")), s).unwrap();
        }
    }
}
