use super::*;

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

#[test]
fn claims_hold_for_their_ttl_and_drop_what_does_not_parse() {
    let ttl = Duration::from_secs(60);
    let text = "20001 1000\n20002 941\nnot a claim\n20003 940\n20004 1059\n20005 1060\n\
                20006 1000 extra\n70000 1000\n";
    let c = Claims::parse(text, 1000, ttl);
    // 59 s old holds, 60 s old has lapsed; up to 59 s ahead (a clock set back) holds
    assert_eq!(c.held, vec![(20001, 1000), (20002, 941), (20004, 1059)]);
    assert!(c.contains(20002) && !c.contains(20003) && !c.contains(20005));
    assert_eq!(
        Claims::parse(&c.render(), 1000, ttl),
        c,
        "the file round-trips"
    );

    let mut c = c;
    c.add(20002, 1010);
    c.add(20007, 1010);
    assert_eq!(
        c.held,
        vec![(20001, 1000), (20004, 1059), (20002, 1010), (20007, 1010)]
    );
    assert_eq!(
        Claims::parse(&c.render(), 1061, ttl).held,
        vec![(20004, 1059), (20002, 1010), (20007, 1010)]
    );
}

/// The first of `n` adjacent ports that are all free (a range of `n` to pick from).
fn free_run(n: u16) -> u16 {
    for _ in 0..100 {
        let p = TcpListener::bind(("127.0.0.1", 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if p < u16::MAX - n && (p..p + n).all(|q| TcpListener::bind(("127.0.0.1", q)).is_ok()) {
            return p;
        }
    }
    panic!("no {n} adjacent free ports");
}

#[test]
fn a_pick_skips_the_ports_an_earlier_pick_claimed() {
    // From a range of two ports, one pick after another: without the claims each second
    // pick would get the first one's port back half the time (it is free again once the
    // first pick has released it), so eight rounds catch a pick that ignores them.
    for _ in 0..8 {
        let dir = scratch();
        let claims = dir.path().join("claims");
        let low = free_run(2);
        let first = free_ports_in(1, low..low + 2, &claims).unwrap();
        let second = free_ports_in(1, low..low + 2, &claims).unwrap();
        assert_ne!(first, second, "range {low}..{}", low + 2);
        let text = std::fs::read_to_string(&claims).unwrap();
        let held = Claims::parse(&text, unix_secs(SystemTime::now()), CLAIM_TTL);
        assert!(
            held.contains(first[0]) && held.contains(second[0]),
            "{text}"
        );
    }
}

#[test]
fn picks_at_the_same_time_get_distinct_ports() {
    // Eight threads (eight open file descriptions of the claims file, locked like eight
    // executors) pick two ports each from a range of twenty: all sixteen differ.
    let dir = scratch();
    let claims = dir.path().join("claims");
    let low = free_run(20);
    let picks: Vec<Vec<u16>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| s.spawn(|| free_ports_in(2, low..low + 20, &claims).unwrap()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<u16> = picks.concat();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 16, "{picks:?}");
}

#[test]
fn a_claims_file_locked_too_long_is_passed_over() {
    let dir = scratch();
    let claims = dir.path().join("claims");
    let holder = ClaimsFile::lock(&claims).unwrap();
    let start = std::time::Instant::now();
    let ports = free_ports_in(2, 20_000..30_000, &claims).unwrap();
    let waited = start.elapsed();
    assert_eq!(ports.len(), 2);
    assert!(
        waited >= LOCK_WAIT && waited < LOCK_WAIT * 5,
        "waited {waited:?}"
    );
    drop(holder);
    assert_eq!(
        std::fs::read_to_string(&claims).unwrap(),
        "",
        "nothing claimed without the lock"
    );
}

#[test]
fn a_symbolic_link_is_not_followed() {
    let dir = scratch();
    let target = dir.path().join("elsewhere");
    std::fs::write(&target, "keep me").unwrap();
    let claims = dir.path().join("claims");
    std::os::unix::fs::symlink(&target, &claims).unwrap();
    assert_eq!(free_ports_in(1, 20_000..30_000, &claims).unwrap().len(), 1);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
}

#[test]
fn without_a_claims_file_ports_are_still_picked() {
    let dir = scratch();
    let claims = dir.path().join("no-such-dir").join("claims");
    let ports = free_ports_in(3, 20_000..30_000, &claims).unwrap();
    assert_eq!(ports.len(), 3);
}

#[test]
fn free_ports_are_distinct_and_outside_the_ephemeral_range() {
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u16>().ok());
    // Each port is free when returned, so binding it at once succeeds. Other tests of this
    // binary start daemons on ports of their own at the same time and may take one in
    // between (as in CI once): then a fresh call must do it. A broken `free_ports` fails
    // every attempt.
    let mut taken = Vec::new();
    for _ in 0..3 {
        let ports = free_ports(6).unwrap();
        let mut unique = ports.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), 6, "{ports:?}");
        if let Some(low) = low {
            assert!(
                ports.iter().all(|&p| (10_000..low).contains(&p)),
                "{ports:?} (ephemeral from {low})"
            );
        }
        taken = ports
            .into_iter()
            .filter(|&p| std::net::TcpListener::bind(("127.0.0.1", p)).is_err())
            .collect();
        if taken.is_empty() {
            return;
        }
    }
    panic!("ports in use right after free_ports returned them, three times: {taken:?}");
}
