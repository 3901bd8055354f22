use super::*;
use crate::grouping::fields_hash;
use crate::testutil::*;
use api::Grouping as G;
use heron_proto::system::HeronDataTupleSet2;

/// spout (tasks 1, 2 on stmgr-1) emits words; bolts on both stmgrs subscribe.
fn plan(inputs: Vec<api::InputStream>) -> PhysicalPlan {
    Plan::new()
        .spout(
            "spout",
            vec![
                output("spout", "default", &["id", "word"]),
                output("spout", "other", &["x"]),
            ],
        )
        .bolt("bolt", inputs, vec![])
        .stmgr("stmgr-1", 1)
        .stmgr("stmgr-2", 2)
        .instance("stmgr-1", "spout", 1)
        .instance("stmgr-1", "spout", 2)
        // deliberately out of order: lists must come out sorted
        .instance("stmgr-2", "bolt", 7)
        .instance("stmgr-1", "bolt", 5)
        .instance("stmgr-2", "bolt", 3)
        .instance("stmgr-1", "bolt", 4)
        .build()
}

fn targets(r: &mut Router, stream: &str, t: &[u8]) -> Vec<i32> {
    let s = r
        .stream_index("spout", stream)
        .expect("stream has consumers");
    let mut out = Vec::new();
    let scan = heron_proto::tuple::scan_tuple(t).expect("a well-formed tuple");
    r.route(s, t, &scan, &mut out);
    out.into_iter().map(|slot| r.task(slot).task_id).collect()
}

fn word(w: &str) -> Vec<u8> {
    tuple(&[&str_value("id-1"), &str_value(w)], &[])
}

#[test]
fn slots_follow_sorted_task_ids_and_know_what_is_local() {
    let r = Router::new(&plan(vec![]), "stmgr-2").unwrap();
    let ids: Vec<i32> = r.tasks().iter().map(|t| t.task_id).collect();
    assert_eq!(ids, vec![1, 2, 3, 4, 5, 7]);
    let local: Vec<i32> = r
        .tasks()
        .iter()
        .filter(|t| t.local)
        .map(|t| t.task_id)
        .collect();
    assert_eq!(local, vec![3, 7]);
    assert_eq!(r.slot_of(5), Some(4));
    assert_eq!(r.slot_of(6), None);
    assert_eq!(r.task(2).instance_id, "container_2_bolt_3");
}

#[test]
fn streams_without_subscribers_have_no_route() {
    let r = Router::new(
        &plan(vec![input("spout", "default", G::Shuffle)]),
        "stmgr-1",
    )
    .unwrap();
    assert!(r.stream_index("spout", "default").is_some());
    assert!(r.stream_index("spout", "other").is_none());
    assert!(r.stream_index("bolt", "default").is_none());
}

#[test]
fn the_stream_field_is_an_encoded_stream_id() {
    let r = Router::new(
        &plan(vec![input("spout", "default", G::Shuffle)]),
        "stmgr-1",
    )
    .unwrap();
    let field = r.stream_field(r.stream_index("spout", "default").unwrap());
    let set = HeronDataTupleSet2::decode(&field[..]).unwrap();
    assert_eq!(set.stream.id, "default");
    assert_eq!(set.stream.component_name, "spout");
    assert!(set.tuples.is_empty());
}

#[test]
fn shuffle_and_none_round_robin_over_all_consumer_tasks() {
    for g in [G::Shuffle, G::None] {
        let mut r = Router::new(&plan(vec![input("spout", "default", g)]), "stmgr-1").unwrap();
        let picks: Vec<i32> = (0..8)
            .flat_map(|_| targets(&mut r, "default", &word("a")))
            .collect();
        let mut first4 = picks[..4].to_vec();
        first4.sort_unstable();
        assert_eq!(first4, vec![3, 4, 5, 7], "{g:?}: {picks:?}");
        assert_eq!(picks[..4], picks[4..], "{g:?}: a fixed cycle");
    }
}

#[test]
fn fields_grouping_hashes_the_grouping_values_into_the_sorted_task_list() {
    let p = plan(vec![fields_input("spout", "default", &["word"])]);
    let mut r = Router::new(&p, "stmgr-1").unwrap();
    for w in ["apple", "pear", "fig", "kiwi", "plum"] {
        let v = str_value(w);
        let h = fields_hash([&v[..]]);
        let sorted = [3, 4, 5, 7];
        assert_eq!(
            targets(&mut r, "default", &word(w)),
            vec![sorted[(h % 4) as usize]]
        );
    }
}

#[test]
fn fields_grouping_agrees_between_two_stream_managers() {
    let p = plan(vec![fields_input("spout", "default", &["word"])]);
    let mut a = Router::new(&p, "stmgr-1").unwrap();
    let mut b = Router::new(&p, "stmgr-2").unwrap();
    let mut used = std::collections::HashSet::new();
    for i in 0..200 {
        let w = format!("w{}", i % 50);
        // the id field differs; only the word decides
        let ta = tuple(&[&str_value(&format!("a{i}")), &str_value(&w)], &[]);
        let tb = tuple(&[&str_value(&format!("b{i}")), &str_value(&w)], &[]);
        let (x, y) = (
            targets(&mut a, "default", &ta),
            targets(&mut b, "default", &tb),
        );
        assert_eq!(x, y, "word {w}");
        used.insert(x[0]);
    }
    assert_eq!(used.len(), 4, "50 words reach every task: {used:?}");
}

#[test]
fn fields_grouping_uses_schema_order_whatever_order_the_fields_are_named_in() {
    let p1 = plan(vec![fields_input("spout", "default", &["id", "word"])]);
    let p2 = plan(vec![fields_input("spout", "default", &["word", "id"])]);
    let mut r1 = Router::new(&p1, "stmgr-1").unwrap();
    let mut r2 = Router::new(&p2, "stmgr-1").unwrap();
    for i in 0..20 {
        let t = tuple(&[&str_value(&i.to_string()), &str_value("w")], &[]);
        assert_eq!(
            targets(&mut r1, "default", &t),
            targets(&mut r2, "default", &t)
        );
    }
}

#[test]
fn fields_grouping_on_an_undeclared_field_is_a_plan_error() {
    let p = plan(vec![fields_input("spout", "default", &["nope"])]);
    assert!(matches!(
        Router::new(&p, "stmgr-1"),
        Err(PlanError::UnknownField { field, .. }) if field == "nope"
    ));
}

#[test]
fn all_and_lowest() {
    let mut r = Router::new(&plan(vec![input("spout", "default", G::All)]), "stmgr-1").unwrap();
    assert_eq!(targets(&mut r, "default", &word("a")), vec![3, 4, 5, 7]);
    let mut r = Router::new(&plan(vec![input("spout", "default", G::Lowest)]), "stmgr-1").unwrap();
    for _ in 0..3 {
        assert_eq!(targets(&mut r, "default", &word("a")), vec![3]);
    }
}

#[test]
fn direct_and_custom_keep_only_the_consumers_tasks() {
    for g in [G::Direct, G::Custom] {
        let mut r = Router::new(&plan(vec![input("spout", "default", g)]), "stmgr-1").unwrap();
        // 1 is the spout itself, 9 does not exist
        let t = tuple(&[&str_value("x")], &[7, 1, 9, 4]);
        assert_eq!(targets(&mut r, "default", &t), vec![7, 4], "{g:?}");
        let none = tuple(&[&str_value("x")], &[]);
        assert!(targets(&mut r, "default", &none).is_empty());
    }
}

#[test]
fn local_or_shuffle_prefers_this_stream_managers_tasks() {
    let p = plan(vec![local_or_shuffle_input("spout", "default")]);
    let mut r1 = Router::new(&p, "stmgr-1").unwrap();
    let mut r2 = Router::new(&p, "stmgr-2").unwrap();
    let mut s1 = std::collections::BTreeSet::new();
    let mut s2 = std::collections::BTreeSet::new();
    for _ in 0..10 {
        s1.extend(targets(&mut r1, "default", &word("a")));
        s2.extend(targets(&mut r2, "default", &word("a")));
    }
    assert_eq!(s1.into_iter().collect::<Vec<_>>(), vec![4, 5]);
    assert_eq!(s2.into_iter().collect::<Vec<_>>(), vec![3, 7]);
    // a stream manager with no consumer task shuffles over all of them
    let mut r3 = Router::new(&p, "stmgr-3").unwrap();
    let mut s3 = std::collections::BTreeSet::new();
    for _ in 0..10 {
        s3.extend(targets(&mut r3, "default", &word("a")));
    }
    assert_eq!(s3.into_iter().collect::<Vec<_>>(), vec![3, 4, 5, 7]);
}

#[test]
fn several_subscribers_concatenate_their_targets() {
    let p = Plan::new()
        .spout("spout", vec![output("spout", "default", &["w"])])
        .bolt("a", vec![input("spout", "default", G::All)], vec![])
        .bolt("b", vec![input("spout", "default", G::Lowest)], vec![])
        .bolt("c", vec![input("spout", "default", G::Shuffle)], vec![])
        .stmgr("stmgr-1", 1)
        .instance("stmgr-1", "spout", 1)
        .instance("stmgr-1", "a", 2)
        .instance("stmgr-1", "a", 3)
        .instance("stmgr-1", "b", 4)
        .instance("stmgr-1", "b", 5)
        .build();
    // "c" has no instances: it adds nothing
    let mut r = Router::new(&p, "stmgr-1").unwrap();
    assert_eq!(
        targets(&mut r, "default", &tuple(&[b"\x04x"], &[])),
        vec![2, 3, 4]
    );
}

#[test]
fn duplicate_tasks_and_unknown_groupings_are_plan_errors() {
    let mut p = plan(vec![input("spout", "default", G::Shuffle)]);
    p.instances.push(instance("stmgr-2", "bolt", 4));
    assert_eq!(
        Router::new(&p, "stmgr-1").unwrap_err(),
        PlanError::DuplicateTask(4)
    );
    let mut bad = input("spout", "default", G::Shuffle);
    bad.gtype = 42;
    assert!(matches!(
        Router::new(&plan(vec![bad]), "stmgr-1"),
        Err(PlanError::UnknownGrouping { gtype: 42, .. })
    ));
}
