//! The Streamlet API end to end through the local scheduler (2 containers, real processes):
//! `streamlet_word_count` must count a generated file exactly, and `streamlet_join` must join
//! generated orders with their users (outer left) exactly as computed here.

mod support;

use rand::{RngExt, SeedableRng};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::{fresh_example, TestEnv};

/// Runs an example with `args` (flag, value pairs) in `env`'s HOME.
fn run(env: &TestEnv, example: &str, args: &[&Path]) {
    let mut cmd = Command::new(fresh_example(example));
    cmd.args(args);
    support::run_to_success(env, &mut cmd, example, Duration::from_secs(300));
}

#[test]
fn streamlet_word_count_is_exact() {
    word_count_is_exact(&[]);
}

/// The same word count over `(word, ())` pairs, counted by the pairs' own keys
/// (`count_by_window`).
#[test]
fn streamlet_word_count_over_pairs_is_exact() {
    word_count_is_exact(&["--pairs".as_ref()]);
}

fn word_count_is_exact(extra: &[&Path]) {
    let env = TestEnv::new();
    let dir = env.home().join("wc");
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let vocab: Vec<String> = (0..120).map(|i| format!("w{i:03}")).collect();
    let mut want: BTreeMap<String, i64> = BTreeMap::new();
    let mut text = String::new();
    for _ in 0..20_000 {
        let n = rng.random_range(1..12);
        let line: Vec<&str> = (0..n)
            .map(|_| vocab[rng.random_range(0..vocab.len())].as_str())
            .collect();
        for w in &line {
            *want.entry((*w).to_owned()).or_default() += 1;
        }
        text.push_str(&line.join(" "));
        text.push('\n');
    }
    let (input, output) = (dir.join("words.txt"), dir.join("counts.tsv"));
    std::fs::write(&input, text).unwrap();
    run(
        &env,
        "streamlet_word_count",
        &[
            &[
                "--input".as_ref(),
                input.as_path(),
                "--output".as_ref(),
                &output,
            ][..],
            extra,
        ]
        .concat(),
    );
    let got: BTreeMap<String, i64> = std::fs::read_to_string(&output)
        .unwrap()
        .lines()
        .map(|l| {
            let (w, n) = l.split_once('\t').expect("word<TAB>count");
            (w.to_owned(), n.parse().expect("a count"))
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn streamlet_outer_left_join_is_exact() {
    let env = TestEnv::new();
    let dir = env.home().join("join");
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(12);
    // users 0..400 except every 9th: their orders join with "-"
    let users: BTreeMap<i64, String> = (0..400)
        .filter(|u| u % 9 != 4)
        .map(|u| (u, format!("user-{u}")))
        .collect();
    let orders: Vec<(i64, i64, i64)> = (0..3_000)
        .map(|i| (i, rng.random_range(0..400), rng.random_range(1..10_000)))
        .collect();
    let (o, u, out) = (
        dir.join("orders.tsv"),
        dir.join("users.tsv"),
        dir.join("joined.tsv"),
    );
    std::fs::write(
        &o,
        orders
            .iter()
            .map(|(i, u, a)| format!("{i}\t{u}\t{a}\n"))
            .collect::<String>(),
    )
    .unwrap();
    std::fs::write(
        &u,
        users
            .iter()
            .map(|(id, n)| format!("{id}\t{n}\n"))
            .collect::<String>(),
    )
    .unwrap();
    run(
        &env,
        "streamlet_join",
        &[
            "--orders".as_ref(),
            &o,
            "--users".as_ref(),
            &u,
            "--output".as_ref(),
            &out,
        ],
    );
    let want: Vec<String> = orders
        .iter()
        .map(|(i, user, a)| {
            let name = users.get(user).map_or("-", String::as_str);
            format!("{i}\t{user}\t{a}\t{name}")
        })
        .collect();
    let got: Vec<String> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(
        want.iter().any(|l| l.ends_with("\t-")),
        "some orders have no user"
    );
    assert_eq!(got, want);
}
