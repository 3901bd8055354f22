//! Every fuzz target over its kept inputs (seeds and the inputs of crashes once found and
//! fixed): none may panic; the kept seeds are the current ones.

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

/// The seeds in `fuzz/corpus/<target>/seed-<n>` are what [`heron_fuzz::seeds`] makes now;
/// `HERONRS_WRITE_FUZZ_SEEDS=1 cargo test -p heron-fuzz --test replay` rewrites them.
#[test]
fn the_kept_seeds_are_the_current_ones() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let write = std::env::var_os("HERONRS_WRITE_FUZZ_SEEDS").is_some();
    for (name, seeds) in heron_fuzz::seeds::seeds() {
        let dir = root.join(name);
        for (i, s) in seeds.iter().enumerate() {
            let file = dir.join(format!("seed-{i}"));
            if write {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&file, s).unwrap();
            } else {
                let kept = std::fs::read(&file).unwrap_or_default();
                // count windows run on the wall clock: their snapshots differ run to run
                let clocked = name == "state" && !kept.is_empty();
                assert!(
                    kept == *s || clocked,
                    "{} is not the current seed: rewrite the seeds with \
                     HERONRS_WRITE_FUZZ_SEEDS=1 cargo test -p heron-fuzz --test replay",
                    file.display()
                );
            }
        }
    }
}
