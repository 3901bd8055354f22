use super::*;
use heron_proto::tmanager::MetricDatum;

fn datum(comp: &str, inst: &str, name: &str, value: &str) -> MetricDatum {
    MetricDatum {
        component_name: comp.into(),
        instance_id: inst.into(),
        name: name.into(),
        value: value.into(),
        timestamp: 0,
    }
}

fn msg(metrics: Vec<MetricDatum>) -> PublishMetrics {
    PublishMetrics {
        metrics,
        exceptions: vec![],
    }
}

fn exception(inst: &str, trace: &str, count: i32) -> TmanagerExceptionLog {
    TmanagerExceptionLog {
        component_name: "c".into(),
        hostname: "h".into(),
        instance_id: inst.into(),
        stacktrace: trace.into(),
        lasttime: "1".into(),
        firsttime: "0".into(),
        count,
        logging: None,
    }
}

#[test]
fn aggregation_follows_heron_names() {
    assert_eq!(Aggregation::of("__emit-count/default"), Aggregation::Sum);
    assert_eq!(
        Aggregation::of("__complete-latency/default"),
        Aggregation::Avg
    );
    assert_eq!(
        Aggregation::of("__server/__time_spent_back_pressure_initiated"),
        Aggregation::Sum
    );
    assert_eq!(Aggregation::of("__jvm-uptime-secs"), Aggregation::Last);
    for gauge in ["__memory-rss-kb", "__restarts", "__uptime-secs"] {
        assert_eq!(Aggregation::of(gauge), Aggregation::Last, "{gauge}");
    }
    for avg in ["__execute-latency/words", "__process-latency/marks"] {
        assert_eq!(Aggregation::of(avg), Aggregation::Avg, "{avg}");
    }
    for sum in [
        "__ack-count/marks",
        "__fail-count/default",
        "__server/__bytes_to_workers",
        "__server/__bytes_from_stmgrs",
        "__time_spent_back_pressure_by_compid/container_1_slow_3",
        "__cpu-time-ms",
        "__execute-time-ns/default",
    ] {
        assert_eq!(Aggregation::of(sum), Aggregation::Sum, "{sum}");
    }
}

#[test]
fn counts_add_up_per_bucket_and_in_total() {
    let s = MetricsStore::new();
    let e = "__emit-count/default".to_string();
    s.publish_at(
        msg(vec![
            datum("word", "i1", &e, "5"),
            datum("word", "i2", &e, "7"),
        ]),
        100,
    );
    s.publish_at(msg(vec![datum("word", "i1", &e, "3")]), 100);
    s.publish_at(msg(vec![datum("word", "i1", &e, "4")]), 102);
    s.publish_at(
        msg(vec![datum("word", "i1", "__execute-latency/default", "x")]),
        102,
    );
    let all = s.values("word", &[], &[], None);
    assert_eq!(all[&e]["i1"], 12.0);
    assert_eq!(all[&e]["i2"], 7.0);
    assert!(!all.contains_key("__execute-latency/default"));
    let recent = s.values(
        "word",
        &["i1".into()],
        std::slice::from_ref(&e),
        Some((101, 200)),
    );
    assert_eq!(recent[&e].len(), 1);
    assert_eq!(recent[&e]["i1"], 4.0);
    let tl = s.timeline("word", &[], std::slice::from_ref(&e), None);
    assert_eq!(
        tl[&e]["i1"]
            .iter()
            .map(|(k, v)| (*k, *v))
            .collect::<Vec<_>>(),
        vec![(100, 8.0), (102, 4.0)]
    );
    assert!(s.values("nope", &[], &[], None).is_empty());
}

#[test]
fn latencies_average_and_old_buckets_go() {
    let s = MetricsStore::new();
    let l = "__execute-latency/default";
    s.publish_at(
        msg(vec![datum("c", "i", l, "2"), datum("c", "i", l, "4")]),
        10,
    );
    assert_eq!(s.values("c", &[], &[], Some((0, 20)))[l]["i"], 3.0);
    s.publish_at(msg(vec![datum("c", "i", l, "9")]), 12);
    assert_eq!(s.values("c", &[], &[], Some((11, 20)))[l]["i"], 9.0);
    assert_eq!(
        s.values("c", &[], &[], None)[l]["i"],
        5.0,
        "all time: the mean"
    );
    s.publish_at(msg(vec![datum("c", "i", l, "8")]), 10 + RETENTION_SECS + 5);
    let tl = s.timeline("c", &[], &[], None);
    assert_eq!(tl[l]["i"].len(), 1);
}

#[test]
fn exceptions_are_deduplicated_and_bounded() {
    let mut s = MetricsStore::new();
    s.publish(PublishMetrics {
        metrics: vec![],
        exceptions: vec![exception("i1", "boom", 1), exception("i1", "boom", 3)],
    });
    let counts: Vec<i32> = s.exceptions("", &[]).iter().map(|e| e.count).collect();
    assert_eq!(counts, vec![3]);
    let many = (0..MAX_EXCEPTIONS + 10)
        .map(|n| exception("i2", &format!("t{n}"), 1))
        .collect();
    s.publish(PublishMetrics {
        metrics: vec![],
        exceptions: many,
    });
    let all = s.exceptions("c", &[]);
    assert_eq!(all.len(), MAX_EXCEPTIONS);
    assert_eq!(
        all.last().unwrap().stacktrace,
        format!("t{}", MAX_EXCEPTIONS + 9)
    );
    assert!(s.exceptions("other", &[]).is_empty());
}

#[test]
fn a_three_hour_window_is_answered_from_the_minute_ring() {
    let s = MetricsStore::new();
    let c = "__execute-count/default";
    // one value of 1 every 10 s for 3 hours
    let (t0, end) = (1_000_000, 1_000_000 + 3 * 3600);
    let mut t = t0;
    while t < end {
        s.publish_at(msg(vec![datum("c", "i", c, "1")]), t);
        t += 10;
    }
    let now = end - 10;
    // the fine ring only holds the last 30 minutes
    let half_hour = s.values("c", &[], &[], Some((now - 600, now)))[c]["i"];
    assert_eq!(half_hour, 61.0, "10 minutes from the 1-s ring");
    let three_hours = s.values("c", &[], &[], Some((now - 3 * 3600, now)))[c]["i"];
    assert!(
        (1078.0..=1080.0).contains(&three_hours),
        "3 hours from the minute ring: {three_hours}"
    );
    assert_eq!(s.values("c", &[], &[], None)[c]["i"], 1080.0, "all time");
    // beyond the minute ring's reach: still only what it keeps
    s.publish_at(
        msg(vec![datum("c", "i", c, "1")]),
        end + LONG_RETENTION_SECS,
    );
    let later = end + LONG_RETENTION_SECS;
    assert_eq!(
        s.values("c", &[], &[], Some((later - 3 * 3600, later)))[c]["i"],
        1.0
    );
}
