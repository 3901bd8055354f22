//! What a streamlet graph compiles to: one component per stage, named and sized as set,
//! keyed consumers reading direct streams whose producer picks the task by the key, shuffles
//! elsewhere.

use heron_api::window::{Length, WindowConfig};
use heron_api::{Config, Grouping};

use crate::{Builder, JoinType};

#[test]
fn every_stage_is_a_component_with_its_name_and_partitions() {
    let b = Builder::new();
    let words = b
        .new_source(|| "a b".to_string())
        .set_name("lines")
        .flat_map(|l: String| l.split(' ').map(str::to_owned).collect::<Vec<_>>())
        .set_name("split")
        .set_num_partitions(3);
    let counts = words
        .count_by_key_and_window(
            |w: &String| w.clone(),
            WindowConfig::tumbling(Length::count(10)),
        )
        .set_name("count")
        .set_num_partitions(2);
    counts.map(|kv| kv.value).filter(|n: &i64| *n > 1).log();
    let t = b.build("g", Config::new()).unwrap();
    let p = t.to_proto();
    assert_eq!(p.spouts.len(), 1);
    let names: Vec<&str> = p.bolts.iter().map(|b| b.comp.name.as_str()).collect();
    assert_eq!(names, ["split", "count", "map4", "filter5", "log6"]);
    // split feeds count through a keyed stream: direct, split picks the task by the key
    let count_in = t.inputs("count").unwrap();
    assert_eq!(count_in.len(), 1);
    assert_eq!(count_in[0].source, "split");
    assert_eq!(count_in[0].stream, "to-count-0");
    assert!(matches!(&count_in[0].grouping, Grouping::Direct));
    let split_out = t.outputs("split").unwrap();
    assert_eq!(
        split_out.len(),
        1,
        "only the keyed stream: nobody shuffles split"
    );
    assert_eq!(split_out[0].fields.len(), 1, "the element alone");
    assert!(split_out[0].direct);
    assert!(matches!(
        t.inputs("map4").unwrap()[0].grouping,
        Grouping::Shuffle
    ));
    let parallelism = |n: &str| {
        p.bolts.iter().find(|b| b.comp.name == n).map(|b| {
            b.comp
                .config
                .kvs
                .iter()
                .find(|kv| kv.key == "topology.component.parallelism")
                .and_then(|kv| kv.value.clone())
        })
    };
    assert_eq!(parallelism("split").flatten().as_deref(), Some("3"));
    assert_eq!(parallelism("count").flatten().as_deref(), Some("2"));
}

#[test]
fn a_join_reads_both_sides_keyed_and_union_clone_repartition_shuffle_or_partition() {
    let b = Builder::new();
    let left = b.new_source(|| 1i64).set_name("l");
    let right = b.new_source(|| (1i64, "x".to_string())).set_name("r");
    left.join(
        &right,
        |l: &i64| *l,
        |r: &(i64, String)| r.0,
        WindowConfig::tumbling(Length::count(4)),
        JoinType::Inner,
        |l, r| (*l.unwrap(), r.unwrap().1.clone()),
    )
    .set_name("j")
    .log();
    let doubled = left.map(|n: i64| n * 2);
    let u = left.union(&doubled).set_name("u");
    let clones = u.clone_into(2);
    clones[0]
        .repartition(4, |n: &i64, parts| vec![(*n as usize) % parts])
        .set_name("rp")
        .log();
    let t = b.build("g", Config::new()).unwrap();
    let j = t.inputs("j").unwrap();
    assert_eq!(
        j.iter()
            .map(|i| (i.source.as_str(), i.stream.as_str()))
            .collect::<Vec<_>>(),
        [("l", "to-j-0"), ("r", "to-j-1")]
    );
    assert_eq!(t.inputs("u").unwrap().len(), 2);
    assert!(matches!(
        t.inputs("rp").unwrap()[0].grouping,
        Grouping::Custom(_)
    ));
}

#[test]
fn a_name_used_twice_is_refused() {
    let b = Builder::new();
    b.new_source(|| 1i64)
        .set_name("x")
        .map(|n: i64| n + 1)
        .set_name("x")
        .log();
    let e = b
        .build("g", Config::new())
        .map(drop)
        .expect_err("refused")
        .to_string();
    assert!(e.contains("\"x\""), "{e}");
}

#[test]
fn the_key_hash_is_fixed_spreads_words_evenly_and_tells_lengths_apart() {
    use std::hash::BuildHasher;
    let h = std::hash::BuildHasherDefault::<crate::graph::KeyHasher>::default();
    let one = |s: &str| h.hash_one(s);
    assert_eq!(one("word"), one("word"), "no random seed");
    assert_ne!(one("a"), one("a\0"));
    assert_ne!(one("abcdefgh"), one("abcdefgh\0"));
    assert_ne!(h.hash_one(1i64), h.hash_one(2i64));
    // 4 000 words over 4 and 3 partitions: each gets its share within 15 %
    for n in [3u64, 4] {
        let mut buckets = vec![0u32; n as usize];
        for i in 0..4000 {
            buckets[crate::ops::key_partition(one(&format!("w{i}")) as i64, n as usize)] += 1;
        }
        let share = 4000 / n as u32;
        for b in &buckets {
            assert!(b.abs_diff(share) * 100 < share * 15, "{n}: {buckets:?}");
        }
    }
}

#[test]
fn short_keys_of_every_length_hash_apart() {
    use std::collections::HashSet;
    use std::hash::BuildHasher;
    let h = std::hash::BuildHasherDefault::<crate::graph::KeyHasher>::default();
    // every string of 0-3 bytes over a small alphabet, and 4-15 bytes with one byte changed
    let alphabet = [0u8, 1, b'a', b'b', 0xff];
    let mut keys: Vec<Vec<u8>> = vec![Vec::new()];
    for len in 1..=3 {
        let mut next = Vec::new();
        for k in keys.iter().filter(|k| k.len() == len - 1) {
            for &c in &alphabet {
                let mut k = k.clone();
                k.push(c);
                next.push(k);
            }
        }
        keys.extend(next);
    }
    for len in 4..=15 {
        for i in 0..len {
            let mut k = vec![b'x'; len];
            k[i] = b'y';
            keys.push(k);
        }
    }
    let hashes: HashSet<u64> = keys.iter().map(|k| h.hash_one(k.as_slice())).collect();
    assert_eq!(hashes.len(), keys.len());
}

#[test]
fn windowed_stages_linger_their_results_unless_the_topology_chooses() {
    use heron_api::config::OUTPUT_LINGER_MS;
    let graph = |config: Config| {
        let b = Builder::new();
        let words = b.new_source(|| "a".to_string()).set_name("words");
        let counts = words
            .count_by_key_and_window(
                |w: &String| w.clone(),
                WindowConfig::tumbling(Length::count(10)),
            )
            .set_name("count");
        let sliding = words
            .reduce_by_key_and_window(
                |w: &String| w.clone(),
                |_| 1i64,
                WindowConfig::sliding(Length::count(10), Length::count(5)),
                |a, b| a + b,
            )
            .set_name("sliding");
        counts.map(|kv| kv.value).set_name("plain").log();
        sliding.log();
        b.build("g", config).unwrap()
    };
    let linger = |t: &heron_api::HeronTopology, c: &str| {
        t.component_config(c)
            .and_then(|c| c.get(OUTPUT_LINGER_MS))
            .map(str::to_owned)
    };
    let t = graph(Config::new());
    assert_eq!(linger(&t, "count").as_deref(), Some("5"));
    assert_eq!(linger(&t, "sliding").as_deref(), Some("5"));
    assert_eq!(
        linger(&t, "plain"),
        None,
        "a stage without windows sends at once"
    );
    let mut chosen = Config::new();
    chosen.set_output_linger_ms(0.0);
    let t = graph(chosen);
    assert_eq!(linger(&t, "count"), None, "the topology's choice stands");
    assert_eq!(t.config().output_linger(), std::time::Duration::ZERO);
}
