//! The traits of components whose state the runtime checkpoints.

use crate::State;

/// A spout or bolt whose state the runtime checkpoints (Heron's `IStatefulComponent`).
///
/// A component opts in by implementing this trait and returning `Some(self)` from
/// [`Spout::stateful`](crate::Spout::stateful) or [`Bolt::stateful`](crate::Bolt::stateful)
/// (or [`BasicBolt::stateful`](crate::BasicBolt::stateful)). The runtime uses it only in
/// `EFFECTIVELY_ONCE` mode; in the other modes these methods are never called.
///
/// The contract, call by call:
///
/// - [`init_state`](Stateful::init_state) comes before the first `next_tuple` / `execute`,
///   with the state of the checkpoint the task starts from (empty on a clean start), and
///   again at every rollback, with the state of the checkpoint rolled back to. It may come
///   before or after `open` / `prepare` (Heron calls `initState` first), so keep what it
///   hands you until `open` / `prepare` needs it.
/// - [`pre_save`](Stateful::pre_save) comes when a checkpoint is taken, between two tuples.
///   The `state` it is handed is **empty**: write your whole current state into it. (The
///   runtime may reuse one [`State`] it [cleared](State::clear).) Everything emitted before
///   the call belongs to the checkpoint; everything after, to the next one.
/// - Between the two, only the component holds its state; the runtime keeps nothing of it.
///
/// A counting bolt:
///
/// ```
/// use std::collections::HashMap;
/// use heron_api::*;
///
/// #[derive(Default)]
/// struct WordCount {
///     counts: HashMap<String, i64>,
/// }
///
/// impl Bolt for WordCount {
///     fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
///         d.declare(Fields::new(["word", "count"]));
///     }
///     fn execute(&mut self, input: &Tuple, c: &mut OutputCollector) {
///         let word = input.get_str(0).unwrap_or_default();
///         let n = self.counts.entry(word.to_owned()).or_insert(0);
///         *n += 1;
///         c.emit(values![word, *n]);
///     }
///     fn stateful(&mut self) -> Option<&mut dyn Stateful> {
///         Some(self)
///     }
/// }
///
/// impl Stateful for WordCount {
///     fn init_state(&mut self, state: &State) {
///         // Replace what we hold: after a rollback, counts since the checkpoint are undone.
///         self.counts = state
///             .iter()
///             .filter_map(|(word, n)| Some((word.to_owned(), n.as_i64()?)))
///             .collect();
///     }
///     fn pre_save(&mut self, _checkpoint_id: &str, state: &mut State) {
///         for (word, n) in &self.counts {
///             state.put(word, *n);
///         }
///     }
/// }
///
/// // What the runtime does, by hand:
/// let streams = [StreamDecl { id: "default".into(), fields: Fields::new(["word", "count"]), direct: false }];
/// let mut emitter = Emitter::new("count", 1, ReliabilityMode::EffectivelyOnce, &streams);
/// let word = |w: &str| Tuple::new("split", "default", 2, Fields::new(["word"]), values![w]);
///
/// let mut bolt = WordCount::default();
/// bolt.stateful().unwrap().init_state(&State::new()); // a clean start
/// bolt.execute(&word("cow"), &mut OutputCollector::new(&mut emitter));
///
/// let mut saved = State::new();
/// bolt.stateful().unwrap().pre_save("1-1700000000", &mut saved);
/// let checkpoint = saved.encode(); // what the checkpoint manager stores
///
/// bolt.execute(&word("cow"), &mut OutputCollector::new(&mut emitter));
/// assert_eq!(bolt.counts["cow"], 2);
///
/// // A failure: roll back to the checkpoint.
/// bolt.stateful().unwrap().init_state(&State::decode(&checkpoint).unwrap());
/// assert_eq!(bolt.counts["cow"], 1);
/// ```
pub trait Stateful {
    /// Called before the first tuple and again at every restore, with the state of the
    /// checkpoint restored (empty on a clean start). Replace what you hold with it.
    fn init_state(&mut self, state: &State);

    /// What the runtime calls to restore: like [`init_state`](Stateful::init_state), but
    /// may refuse a state the component cannot take (one written by another version or
    /// configuration of it), with the reason. The runtime then answers the restore NOTOK,
    /// and the topology falls back to the checkpoint before (in the end, a clean start).
    /// The default calls `init_state` and takes every state.
    ///
    /// ```
    /// use heron_api::{State, Stateful};
    /// struct Counter(i64);
    /// impl Stateful for Counter {
    ///     fn init_state(&mut self, s: &State) {
    ///         self.0 = s.get_i64("n").unwrap_or(0);
    ///     }
    ///     fn try_init_state(&mut self, s: &State) -> Result<(), String> {
    ///         match s.get("n") {
    ///             Some(v) if v.as_i64().is_none() => Err(format!("n is a {}", v.type_name())),
    ///             _ => Ok(self.init_state(s)),
    ///         }
    ///     }
    ///     fn pre_save(&mut self, _id: &str, s: &mut State) {
    ///         s.put("n", self.0);
    ///     }
    /// }
    /// let mut c = Counter(0);
    /// let mut bad = State::new();
    /// bad.put("n", "three");
    /// assert!(c.try_init_state(&bad).is_err());
    /// ```
    fn try_init_state(&mut self, state: &State) -> Result<(), String> {
        self.init_state(state);
        Ok(())
    }

    /// Called when checkpoint `checkpoint_id` is taken: write your current state into
    /// `state`, which is empty when this is called.
    fn pre_save(&mut self, checkpoint_id: &str, state: &mut State);

    /// Two-phase components (Heron's `ITwoPhaseStatefulComponent`) return `Some(self)`.
    fn two_phase(&mut self) -> Option<&mut dyn TwoPhaseStateful> {
        None
    }
}

/// A stateful component that commits output only once a checkpoint covering it is
/// globally consistent (Heron's `ITwoPhaseStatefulComponent`): a sink writing to an
/// external system buffers or stages what it writes, makes it visible in
/// [`post_save`](TwoPhaseStateful::post_save), and throws it away in
/// [`pre_restore`](TwoPhaseStateful::pre_restore).
///
/// After its [`pre_save`](Stateful::pre_save) a two-phase component gets no tuples until
/// `post_save` of that checkpoint (or a rollback), so what it staged is exactly what the
/// checkpoint covers.
///
/// ```
/// use heron_api::{State, Stateful, TwoPhaseStateful};
///
/// #[derive(Default)]
/// struct Sink {
///     staged: Vec<String>,            // written since the last checkpoint
///     pending: Option<(String, Vec<String>)>, // covered by a checkpoint not yet consistent
///     committed: Vec<String>,         // visible to the outside world
/// }
///
/// impl Stateful for Sink {
///     fn init_state(&mut self, _state: &State) {}
///     fn pre_save(&mut self, checkpoint_id: &str, _state: &mut State) {
///         self.pending = Some((checkpoint_id.to_owned(), std::mem::take(&mut self.staged)));
///     }
///     fn two_phase(&mut self) -> Option<&mut dyn TwoPhaseStateful> {
///         Some(self)
///     }
/// }
///
/// impl TwoPhaseStateful for Sink {
///     fn post_save(&mut self, checkpoint_id: &str) {
///         if let Some((id, lines)) = self.pending.take() {
///             if id == checkpoint_id {
///                 self.committed.extend(lines);
///             }
///         }
///     }
///     fn pre_restore(&mut self, _checkpoint_id: &str) {
///         self.staged.clear();
///         self.pending = None;
///     }
/// }
///
/// let mut sink = Sink::default();
/// sink.staged.push("a".into());
/// sink.pre_save("1-1", &mut State::new());
/// sink.two_phase().unwrap().post_save("1-1");
/// sink.staged.push("b".into());
/// sink.two_phase().unwrap().pre_restore("1-1");
/// assert_eq!(sink.committed, ["a"]);
/// assert!(sink.staged.is_empty());
/// ```
pub trait TwoPhaseStateful {
    /// The checkpoint `checkpoint_id` is globally consistent: commit output it covers.
    fn post_save(&mut self, checkpoint_id: &str);

    /// The topology is about to be rolled back to `checkpoint_id`: discard uncommitted
    /// output. [`Stateful::init_state`] with that checkpoint's state follows.
    fn pre_restore(&mut self, checkpoint_id: &str);
}
