//! The XOR ack tracker (ATLEAST_ONCE) of the spouts' stream manager: updates per tuple tree
//! and bucket rotation. Four local spout tasks, Heron's 3 buckets, time passed in.
//!
//! * `xor/tree/word_count`: 1000 trees of the word-count shape: the spout's sentence goes to
//!   one split task (emit), split emits 5 words (one `emits` entry, the XOR of their keys) and
//!   acks the sentence, each count task acks its word: 8 tracker updates per tree, the last
//!   completes it. All spout emits of the batch come first, so 1000 trees are live at once.
//! * `xor/tree/one_hop_with_live/<L>`: 1000 one-hop trees (emit, ack) while `L` other trees are
//!   live (spread over the buckets): the cost of a bigger map.
//! * `xor/ack/oldest_bucket`: 1000 acks of trees that sit in the oldest bucket (each lookup
//!   misses the two newer buckets first).
//! * `xor/rotate/<n>`: one rotation that drops `n` expired trees.
//!
//! Run: `cargo bench -p heron-stmgr --bench xor`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use heron_stmgr::bench_api::{XorTracker, DEFAULT_NBUCKETS};

const TREES: usize = 1000;
const SPOUT_TASKS: [i32; 4] = [1, 2, 3, 4];
const TIMEOUT: Duration = Duration::from_secs(30);

/// Distinct, non-zero, uniformly spread keys (splitmix64).
struct Keys(u64);

impl Keys {
    fn next(&mut self) -> i64 {
        loop {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let k = (z ^ (z >> 31)) as i64;
            if k != 0 {
                return k;
            }
        }
    }
}

fn tracker() -> XorTracker {
    XorTracker::new(&SPOUT_TASKS, TIMEOUT, DEFAULT_NBUCKETS, Instant::now())
}

fn task(i: usize) -> i32 {
    SPOUT_TASKS[i % SPOUT_TASKS.len()]
}

/// One word-count tree: root, the sentence's key, the 5 words' keys.
struct WordCountTree {
    task: i32,
    root: i64,
    sentence: i64,
    words: [i64; 5],
}

fn bench_trees(c: &mut Criterion) {
    let mut g = c.benchmark_group("xor/tree");
    g.throughput(Throughput::Elements(TREES as u64));

    let mut keys = Keys(1);
    let trees: Vec<WordCountTree> = (0..TREES)
        .map(|i| WordCountTree {
            task: task(i),
            root: keys.next(),
            sentence: keys.next(),
            words: [(); 5].map(|_| keys.next()),
        })
        .collect();
    let mut t = tracker();
    g.bench_function("word_count", |b| {
        b.iter(|| {
            let mut completed = 0;
            for tr in &trees {
                t.emit(tr.task, tr.root, tr.sentence);
            }
            for tr in &trees {
                let words = tr.words.iter().fold(0, |x, k| x ^ k);
                t.emit(tr.task, tr.root, words);
                t.ack(tr.task, tr.root, tr.sentence);
                for &w in &tr.words {
                    completed += usize::from(t.ack(tr.task, tr.root, black_box(w)));
                }
            }
            assert_eq!(completed, TREES);
            completed
        })
    });
    assert!(t.is_empty());

    for live in [1_000usize, 100_000] {
        let mut t = tracker();
        // `live` trees that never complete, a third in each bucket.
        for b in 0..3 {
            for i in 0..live / 3 {
                t.emit(task(i), keys.next(), keys.next());
            }
            if b < 2 {
                t.on_time(t.deadline());
            }
        }
        let trees: Vec<(i32, i64, i64)> = (0..TREES)
            .map(|i| (task(i), keys.next(), keys.next()))
            .collect();
        g.bench_function(BenchmarkId::new("one_hop_with_live", live), |b| {
            b.iter(|| {
                let mut completed = 0;
                for &(task, root, k) in &trees {
                    t.emit(task, root, k);
                }
                for &(task, root, k) in &trees {
                    completed += usize::from(t.ack(task, root, black_box(k)));
                }
                completed
            })
        });
    }
    g.finish();
}

fn bench_old_acks(c: &mut Criterion) {
    let mut g = c.benchmark_group("xor/ack");
    g.throughput(Throughput::Elements(TREES as u64));
    let mut keys = Keys(2);
    let trees: Vec<(i32, i64, i64)> = (0..TREES)
        .map(|i| (task(i), keys.next(), keys.next()))
        .collect();
    let mut t = tracker();
    g.bench_function("oldest_bucket", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                for &(task, root, k) in &trees {
                    t.emit(task, root, k);
                }
                // Two rotations: the trees are now in the oldest of the 3 buckets.
                t.on_time(t.deadline());
                t.on_time(t.deadline());
                let start = Instant::now();
                for &(task, root, k) in &trees {
                    black_box(t.ack(task, root, black_box(k)));
                }
                total += start.elapsed();
            }
            total
        })
    });
    assert!(t.is_empty());
    g.finish();
}

fn bench_rotate(c: &mut Criterion) {
    let mut g = c.benchmark_group("xor/rotate");
    let mut keys = Keys(3);
    for n in [10_000usize, 100_000] {
        g.throughput(Throughput::Elements(n as u64));
        let roots: Vec<(i32, i64, i64)> = (0..n)
            .map(|i| (task(i), keys.next(), keys.next()))
            .collect();
        let mut t = tracker();
        g.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    for &(task, root, k) in &roots {
                        t.emit(task, root, k);
                    }
                    t.on_time(t.deadline());
                    t.on_time(t.deadline());
                    let before = t.expired;
                    let start = Instant::now();
                    t.on_time(black_box(t.deadline()));
                    total += start.elapsed();
                    assert_eq!(t.expired - before, n as u64);
                }
                total
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_trees, bench_old_acks, bench_rotate);
criterion_main!(benches);
