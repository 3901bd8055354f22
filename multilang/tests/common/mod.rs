//! Drives shell components in-process through the public Spout / Bolt traits with a real
//! Emitter and TopologyContext, against real pystorm subprocesses.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use heron_api::{
    AsyncWaker, Bolt, Config, Emitter, Fields, GroupingKind, OutputCollector, OutputFieldsDeclarer,
    ReliabilityMode, StreamDecl, TopologyContext, Tuple, TupleSource, Value,
};
use heron_multilang::{ShellBolt, ShellSpec};

pub const LONG: Duration = Duration::from_secs(20);

/// The python that has pystorm: `HERONRS_PYTHON`, else `python3` on PATH if it imports
/// pystorm. `None` (skip) when neither; under `CI=true` a panic instead.
pub fn python() -> Option<String> {
    let candidates: Vec<String> = std::env::var("HERONRS_PYTHON")
        .ok()
        .into_iter()
        .chain(["python3".to_string()])
        .collect();
    for p in &candidates {
        let ok = Command::new(p)
            .args(["-c", "import pystorm"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(p.clone());
        }
    }
    let msg = "skipping: no python with pystorm (set HERONRS_PYTHON to a python that can `import pystorm`; \
               pip install pystorm==3.1.4 streamparse==5.0.1 msgpack)";
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}");
    }
    eprintln!("{msg}");
    None
}

pub fn scripts_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python")
}

pub fn script(python: &str, name: &str) -> Vec<String> {
    vec![python.to_string(), name.to_string()]
}

/// An emitted data tuple.
#[derive(Debug, Clone)]
pub struct Out {
    pub stream: String,
    pub values: Vec<Value>,
    pub roots: Vec<(i32, i64)>,
    pub dests: Vec<i32>,
}

/// Everything a task put out.
#[derive(Debug, Default)]
pub struct Seen {
    pub emitted: Vec<Out>,
    /// Keys of acked / failed input tuples.
    pub acked: Vec<i64>,
    pub failed: Vec<i64>,
    pub errors: Vec<String>,
}

impl Seen {
    pub fn take(&mut self, emitter: &mut Emitter) {
        self.errors.extend(emitter.take_errors());
        for set in emitter.take_output() {
            if let Some(d) = set.data {
                for t in d.tuples {
                    self.emitted.push(Out {
                        stream: d.stream.id.clone(),
                        values: t.values.iter().map(|v| Value::decode(v).unwrap()).collect(),
                        roots: t.roots.iter().map(|r| (r.taskid, r.key)).collect(),
                        dests: t.dest_task_ids.clone(),
                    });
                }
            }
            if let Some(c) = set.control {
                self.acked.extend(c.acks.iter().map(|a| a.ackedtuple));
                self.failed.extend(c.fails.iter().map(|a| a.ackedtuple));
            }
        }
    }

    pub fn on(&self, stream: &str) -> Vec<&Out> {
        self.emitted.iter().filter(|o| o.stream == stream).collect()
    }
}

/// A shell bolt with its emitter, woken like the instance wakes it.
pub struct BoltHarness {
    pub bolt: ShellBolt,
    pub emitter: Emitter,
    pub ctx: TopologyContext,
    pub waker: AsyncWaker,
    pub seen: Seen,
    deadline: Option<Instant>,
    source: Arc<TupleSource>,
    next_key: i64,
}

pub fn streams_of(spec: &ShellSpec) -> Vec<StreamDecl> {
    let mut d = OutputFieldsDeclarer::new();
    heron_api::Bolt::declare_output_fields(&ShellBolt::from_spec(spec.clone()), &mut d);
    d.into_streams()
}

/// A context for task 2 of `component`, fed by `spout` (task 1, stream default, field
/// `sentence`), its streams consumed by `sink` (tasks 10, 11) with `grouping`.
pub fn bolt_context(
    component: &str,
    spec: &ShellSpec,
    conf: Config,
    grouping: GroupingKind,
    waker: AsyncWaker,
) -> TopologyContext {
    let mut b = TopologyContext::builder("multilang-test", component, 2)
        .component_tasks("spout", [1])
        .component_tasks("sink", [10, 11])
        .stream("spout", "default", Fields::new(["sentence"]))
        .subscription(component, "spout", "default", GroupingKind::Shuffle);
    for (s, f, _) in &spec.streams {
        b = b
            .stream(component, s, f.clone())
            .subscription("sink", component, s, grouping.clone());
    }
    b.config(conf).async_waker(waker).build()
}

impl BoltHarness {
    pub fn new(bolt: ShellBolt, conf: Config) -> BoltHarness {
        Self::with_grouping(bolt, conf, GroupingKind::Shuffle)
    }

    pub fn with_grouping(
        mut bolt: ShellBolt,
        mut conf: Config,
        grouping: GroupingKind,
    ) -> BoltHarness {
        conf.set_reliability_mode(ReliabilityMode::AtLeastOnce);
        let me = std::thread::current();
        let waker = AsyncWaker::new(move || me.unpark());
        let spec = bolt.spec().clone();
        let ctx = bolt_context("shell", &spec, conf, grouping, waker.clone());
        let emitter = Emitter::new("shell", 2, ReliabilityMode::AtLeastOnce, &streams_of(&spec));
        bolt.prepare(&ctx);
        BoltHarness {
            bolt,
            emitter,
            ctx,
            waker,
            seen: Seen::default(),
            deadline: Some(Instant::now()),
            source: Arc::new(TupleSource::new(
                "spout",
                "default",
                Fields::new(["sentence"]),
            )),
            next_key: 100,
        }
    }

    /// An input tuple with a fresh key, rooted at (1, key * 7).
    pub fn input(&mut self, value: impl Into<Value>) -> Tuple {
        self.next_key += 1;
        let k = self.next_key;
        Tuple::from_runtime(self.source.clone(), 1, vec![value.into()], k, &[(1, k * 7)])
    }

    pub fn execute(&mut self, t: &Tuple) {
        self.bolt
            .execute(t, &mut OutputCollector::new(&mut self.emitter));
        self.seen.take(&mut self.emitter);
    }

    /// Runs the executor's idle loop (poll_async when woken or due) until `cond` holds.
    pub fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        cond: impl Fn(&Seen, &ShellBolt) -> bool,
    ) {
        let end = Instant::now() + timeout;
        loop {
            let now = Instant::now();
            if self.waker.take() || self.deadline.is_some_and(|d| now >= d) {
                self.deadline = self
                    .bolt
                    .poll_async(&mut OutputCollector::new(&mut self.emitter), now);
                self.seen.take(&mut self.emitter);
            }
            if cond(&self.seen, &self.bolt) {
                return;
            }
            if now >= end {
                panic!("timed out waiting for {what}: {:#?}", self.seen);
            }
            if !self.waker.is_pending() {
                let until = self.deadline.map_or(end, |d| d.min(end));
                std::thread::park_timeout(until.saturating_duration_since(Instant::now()));
            }
        }
    }
}

impl Drop for BoltHarness {
    fn drop(&mut self) {
        self.bolt.cleanup();
    }
}

/// `true` while process `pid` exists.
pub fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc_kill(pid, 0) == 0 }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

pub fn kill9(pid: i32) {
    // SAFETY: SIGKILL to a test subprocess we started.
    unsafe {
        libc_kill(pid, 9);
    }
}
