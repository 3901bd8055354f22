//! Two stream managers over real TCP: registration with a fake tmaster, the plan reaching the
//! instances, and fields grouping routing tuples to a local bolt and, through the stmgr mesh,
//! to a remote one.

mod common;

use common::*;
use heron_proto::api::Grouping;
use heron_proto::system::{HeronDataTuple, HeronTupleSet2, PhysicalPlan};
use heron_proto::Message;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// Reads what arrived for `bolt` (task `task`) within `wait`, as (task, word) pairs.
fn drain(bolt: &mut Peer, task: i32, wait: Duration, got: &mut Vec<(i32, String)>) {
    while let Read1::Packet(p) = bolt.read(wait) {
        let set: HeronTupleSet2 = p.decode().expect("bolts get HeronTupleSet2 only");
        assert_eq!(set.src_task_id, 1, "the spout's task");
        let data = set.data.expect("a data set");
        assert_eq!(
            (data.stream.component_name.as_str(), data.stream.id.as_str()),
            ("words", "default")
        );
        for t in data.tuples {
            let t = HeronDataTuple::decode(t).expect("tuples arrive as sent");
            assert_eq!(t.values.len(), 1);
            let word = std::str::from_utf8(&t.values[0][1..]).unwrap().to_string();
            got.push((task, word));
        }
    }
}

#[test]
fn fields_grouping_across_two_stream_managers() {
    init_logs();
    with_timeout(Duration::from_secs(60), || {
        let root = tempfile::tempdir().unwrap();
        let (d1, l1, d2, l2) = (free_port(), free_port(), free_port(), free_port());
        let spout = instance("stmgr-1", "words", 1);
        let near = instance("stmgr-1", "count", 2);
        let far = instance("stmgr-2", "count", 3);
        let plan = PhysicalPlan {
            topology: topology("words", "count", Grouping::Fields),
            stmgrs: vec![stmgr_record("stmgr-1", d1), stmgr_record("stmgr-2", d2)],
            instances: vec![spout.clone(), near.clone(), far.clone()],
        };
        let tm = FakeTmaster::start(plan.clone());
        write_location(root.path(), tm.port);
        start_stmgr(stmgr_config(
            root.path(),
            "stmgr-1",
            d1,
            l1,
            &[&spout, &near],
        ));
        start_stmgr(stmgr_config(root.path(), "stmgr-2", d2, l2, &[&far]));

        let mut peers = register_all(&[(l1, &spout), (l1, &near), (l2, &far)]);
        assert!(
            peers.iter().all(|(_, p)| p == &plan),
            "every instance has the plan"
        );
        let (mut b3, _) = peers.pop().unwrap();
        let (mut b2, _) = peers.pop().unwrap();
        let (mut s, _) = peers.pop().unwrap();

        // Each stream manager registered once all its instances had, with their records.
        let mut regs = HashMap::new();
        for _ in 0..2 {
            let r = tm.next_registration();
            regs.insert(r.stmgr.id.clone(), r);
        }
        let r1 = &regs["stmgr-1"];
        assert_eq!(r1.instances, vec![spout.clone(), near.clone()]);
        assert_eq!(r1.stmgr.data_port, i32::from(d1));
        assert_eq!(r1.stmgr.local_data_port, Some(i32::from(l1)));
        assert_eq!(r1.stmgr.local_endpoint, "/unused");
        assert_eq!(r1.stmgr.pid, Some(std::process::id() as i32));
        assert_eq!(regs["stmgr-2"].instances, vec![far.clone()]);

        // Until stmgr-1's connection to stmgr-2 is up, remote tuples are dropped: warm up.
        let mut got = Vec::new();
        let deadline = Instant::now() + STEP;
        let warm: Vec<String> = (0..20).map(|i| format!("warm-{i}")).collect();
        while !got.iter().any(|(task, _)| *task == 3) {
            assert!(Instant::now() < deadline, "no tuple crossed the stmgr mesh");
            s.send(&words("words", 1, &warm));
            drain(&mut b3, 3, Duration::from_millis(100), &mut got);
        }
        drain(&mut b2, 2, Duration::from_millis(100), &mut got);
        drain(&mut b3, 3, Duration::from_millis(100), &mut got);

        // Now every tuple must arrive, each word always at the task the documented hash picks.
        let mut sent: Vec<String> = (0..100).map(|i| format!("w{i}")).collect();
        s.send(&words("words", 1, &sent));
        sent.reverse();
        s.send(&words("words", 1, &sent));
        let mut got: Vec<(i32, String)> = Vec::new();
        let deadline = Instant::now() + STEP;
        while got.iter().filter(|(_, w)| !w.starts_with("warm")).count() < 200 {
            assert!(
                Instant::now() < deadline,
                "only {} of 200 tuples arrived",
                got.len()
            );
            drain(&mut b2, 2, Duration::from_millis(20), &mut got);
            drain(&mut b3, 3, Duration::from_millis(20), &mut got);
        }
        got.retain(|(_, w)| !w.starts_with("warm"));
        let mut at: HashMap<String, Vec<i32>> = HashMap::new();
        for (task, w) in &got {
            at.entry(w.clone()).or_default().push(*task);
        }
        assert_eq!(at.len(), 100);
        for (w, tasks) in &at {
            let v = str_value(w);
            // the stream managers' fields hash: the payload, seeded with the tag
            let h = xxh3_64_with_seed(&v[1..], u64::from(v[0]));
            let want = [2, 3][(h % 2) as usize];
            assert_eq!(tasks, &vec![want, want], "word {w}");
        }
        let on_far = got.iter().filter(|(t, _)| *t == 3).count();
        assert!(
            on_far > 0 && on_far < 200,
            "both tasks get words: {on_far} on task 3"
        );
    });
}
