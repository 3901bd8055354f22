//! [`SourceSpout`]: any [`Source`] as a stateful spout.

use std::path::PathBuf;

use heron_api::{
    Fields, OutputFieldsDeclarer, Spout, SpoutOutputCollector, State, Stateful, TopologyContext,
    Value,
};

use crate::{FileSource, Offsets, Source, SourceError};

/// The prefix of the [`State`] keys a [`SourceSpout`] keeps its offsets under: the key of a
/// partition is the prefix followed by the partition's name (for example
/// `source.offset.file:/data/a.txt`), its value the offset as an integer (see
/// [`Offsets::to_state`]).
pub const OFFSETS_PREFIX: &str = "source.offset.";

/// The one field of the tuples a [`SourceSpout`] emits on the default stream.
pub const LINE_FIELD: &str = "line";

/// How many records a [`SourceSpout`] emits per `next_tuple` call at most, unless
/// [`max_per_call`](SourceSpout::max_per_call) says otherwise.
pub const DEFAULT_MAX_PER_CALL: usize = 1024;

/// What a [`SourceSpout`] has done since its task started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceSpoutCounters {
    /// Records emitted (a record replayed after a rollback counts again).
    pub emitted: u64,
    /// Bytes of the records emitted.
    pub emitted_bytes: u64,
    /// States restored (`init_state` calls, the first included).
    pub restores: u64,
    /// States saved (`pre_save` calls).
    pub saves: u64,
}

type Build<S> = Box<dyn FnMut(&TopologyContext) -> Result<S, SourceError> + Send>;

/// A stateful spout that emits every record of a [`Source`] as one tuple.
///
/// Each record becomes a tuple with the one field [`LINE_FIELD`] (`line`), a string (bytes
/// that are not UTF-8 are replaced by U+FFFD), on the `default` stream, unanchored: in
/// `EFFECTIVELY_ONCE` mode nothing is acked, and a rollback replays instead. The spout keeps
/// the source's offsets in its [`State`] under [`OFFSETS_PREFIX`];
/// [`init_state`](Stateful::init_state) seeks the source to the saved offsets (an empty
/// state: to the start).
///
/// The source is built in `open`, by the closure given to [`SourceSpout::new`], when the
/// task's index and parallelism are known. A state restored before `open` is applied to the
/// source as soon as it is built.
///
/// A failing source (a file that cannot be read, saved offsets that do not fit it) panics
/// the task with the error: the runtime restarts it and rolls the topology back.
///
/// ```
/// use heron_api::*;
/// use heron_sources::{FileSource, SourceSpout};
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("in.txt");
/// std::fs::write(&path, "a\nb\nc\n").unwrap();
///
/// let mut spout = SourceSpout::files(vec![path]).max_per_call(2);
/// let ctx = TopologyContext::builder("t", "lines", 1).build();
/// let streams = [StreamDecl { id: "default".into(), fields: Fields::new(["line"]), direct: false }];
/// let mut emitter = Emitter::new("lines", 1, ReliabilityMode::EffectivelyOnce, &streams);
///
/// spout.stateful().unwrap().init_state(&State::new()); // a clean start
/// spout.open(&ctx);
/// spout.next_tuple(&mut SpoutOutputCollector::new(&mut emitter));
/// assert_eq!(spout.counters().emitted, 2);
///
/// let mut saved = State::new();
/// spout.stateful().unwrap().pre_save("1-1", &mut saved);
/// spout.next_tuple(&mut SpoutOutputCollector::new(&mut emitter));
/// assert!(spout.exhausted());
///
/// // Rolled back: "c" is emitted again.
/// spout.stateful().unwrap().init_state(&State::decode(&saved.encode()).unwrap());
/// assert!(!spout.exhausted());
/// spout.next_tuple(&mut SpoutOutputCollector::new(&mut emitter));
/// assert_eq!(spout.counters().emitted, 4);
/// ```
pub struct SourceSpout<S> {
    build: Option<Build<S>>,
    source: Option<S>,
    /// Offsets restored before the source was built.
    restored: Option<Offsets>,
    max_per_call: usize,
    counters: SourceSpoutCounters,
}

impl<S: Source> SourceSpout<S> {
    /// A spout whose source `build` makes in `open`, from the task's context.
    ///
    /// `build` is called once per task, in `open`; an error panics the task.
    pub fn new(
        build: impl FnMut(&TopologyContext) -> Result<S, SourceError> + Send + 'static,
    ) -> SourceSpout<S> {
        SourceSpout {
            build: Some(Box::new(build)),
            source: None,
            restored: None,
            max_per_call: DEFAULT_MAX_PER_CALL,
            counters: SourceSpoutCounters::default(),
        }
    }

    /// A spout reading `source`, already built (for a single task, or tests).
    pub fn from_source(source: S) -> SourceSpout<S> {
        SourceSpout {
            build: None,
            source: Some(source),
            restored: None,
            max_per_call: DEFAULT_MAX_PER_CALL,
            counters: SourceSpoutCounters::default(),
        }
    }

    /// Emits at most `n` records (at least 1) per `next_tuple` call.
    pub fn max_per_call(mut self, n: usize) -> SourceSpout<S> {
        self.max_per_call = n.max(1);
        self
    }

    /// The source, once built.
    pub fn source(&self) -> Option<&S> {
        self.source.as_ref()
    }

    /// The source, mutably, once built.
    pub fn source_mut(&mut self) -> Option<&mut S> {
        self.source.as_mut()
    }

    /// What the spout has done so far.
    pub fn counters(&self) -> SourceSpoutCounters {
        self.counters
    }

    /// `true` once the source is built and [exhausted](Source::exhausted).
    pub fn exhausted(&self) -> bool {
        self.source.as_ref().is_some_and(Source::exhausted)
    }

    fn seek(source: &mut S, offsets: &Offsets) {
        if let Err(e) = source.seek(offsets) {
            panic!("source spout: cannot seek its source to the restored offsets: {e}");
        }
    }
}

impl SourceSpout<FileSource> {
    /// A spout reading `paths` with a [`FileSource`], split across the component's tasks.
    pub fn files<P: Into<PathBuf>>(paths: impl IntoIterator<Item = P>) -> SourceSpout<FileSource> {
        let paths: Vec<PathBuf> = paths.into_iter().map(Into::into).collect();
        SourceSpout::new(move |ctx| FileSource::for_task(paths.iter().cloned(), ctx))
    }
}

impl<S: Source> Spout for SourceSpout<S> {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new([LINE_FIELD]));
    }

    fn open(&mut self, ctx: &TopologyContext) {
        if let Some(mut build) = self.build.take() {
            match build(ctx) {
                Ok(source) => self.source = Some(source),
                Err(e) => panic!(
                    "source spout {} (task {}): cannot build its source: {e}",
                    ctx.component_id(),
                    ctx.task_id()
                ),
            }
        }
        if let (Some(source), Some(offsets)) = (self.source.as_mut(), self.restored.take()) {
            Self::seek(source, &offsets);
        }
    }

    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector) {
        let Some(source) = self.source.as_mut() else {
            return;
        };
        for _ in 0..self.max_per_call {
            let record = match source.next() {
                Ok(Some(record)) => record,
                Ok(None) => break,
                Err(e) => panic!("source spout: reading its source failed: {e}"),
            };
            self.counters.emitted += 1;
            self.counters.emitted_bytes += record.value.len() as u64;
            let line = String::from_utf8(record.value)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            collector.emit(vec![Value::Str(line)]);
        }
    }

    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        Some(self)
    }
}

impl<S: Source> Stateful for SourceSpout<S> {
    fn init_state(&mut self, state: &State) {
        self.counters.restores += 1;
        let offsets = Offsets::from_state(state, OFFSETS_PREFIX)
            .unwrap_or_else(|e| panic!("source spout: the restored state is not offsets: {e}"));
        match self.source.as_mut() {
            Some(source) => Self::seek(source, &offsets),
            None => self.restored = Some(offsets),
        }
    }

    fn pre_save(&mut self, _checkpoint_id: &str, state: &mut State) {
        self.counters.saves += 1;
        let offsets = match &self.source {
            Some(source) => source.offsets(),
            None => self.restored.clone().unwrap_or_default(),
        };
        offsets.to_state(OFFSETS_PREFIX, state);
    }
}
