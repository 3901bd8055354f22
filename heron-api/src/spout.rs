//! The spout trait: a source of tuples.

use crate::{MessageId, OutputFieldsDeclarer, SpoutOutputCollector, Stateful, TopologyContext};

/// A source of tuples (Storm's `ISpout` + `IComponent`).
///
/// The runtime calls every method on one thread: `open` once, then `next_tuple`, `ack` and
/// `fail` in a loop (`next_tuple` must not block), `activate`/`deactivate` when the topology
/// is activated or deactivated, and `close` at shutdown (not guaranteed).
///
/// A tuple emitted with a message id is tracked: in `ATLEAST_ONCE` mode `ack(id)` is called
/// once every tuple of its tree is acked and `fail(id)` when one fails or the tree times out;
/// in `ATMOST_ONCE` mode `ack(id)` is called right after it is emitted.
///
/// ```
/// use heron_api::{values, Fields, OutputFieldsDeclarer, Spout, SpoutOutputCollector};
///
/// struct Numbers { next: i64 }
///
/// impl Spout for Numbers {
///     fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
///         d.declare(Fields::new(["n"]));
///     }
///     fn next_tuple(&mut self, collector: &mut SpoutOutputCollector) {
///         self.next += 1;
///         collector.emit_with_id(values![self.next], self.next);
///     }
/// }
/// ```
pub trait Spout: Send {
    /// Declares the streams this spout emits on.
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer);

    /// Called once, before any other call, with this task's context.
    fn open(&mut self, _ctx: &TopologyContext) {}

    /// Emits zero or more tuples. Must not block; emitting nothing lets the runtime back off.
    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector);

    /// The tuple tree of `msg_id` completed.
    fn ack(&mut self, _msg_id: MessageId) {}

    /// The tuple tree of `msg_id` failed or timed out.
    fn fail(&mut self, _msg_id: MessageId) {}

    /// The topology was activated: `next_tuple` will be called.
    fn activate(&mut self) {}

    /// The topology was deactivated: `next_tuple` will not be called until `activate`.
    fn deactivate(&mut self) {}

    /// The spout is shutting down.
    fn close(&mut self) {}

    /// This spout's checkpointed state, if it has one: a stateful spout (for example one
    /// reading a replayable source, which saves its read offsets) implements [`Stateful`]
    /// and returns `Some(self)`. Used in `EFFECTIVELY_ONCE` mode; see [`Stateful`] for the
    /// calls and an example.
    ///
    /// ```
    /// use heron_api::*;
    ///
    /// struct Counter { next: i64 }
    /// impl Spout for Counter {
    ///     fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
    ///         d.declare(Fields::new(["n"]));
    ///     }
    ///     fn next_tuple(&mut self, c: &mut SpoutOutputCollector) {
    ///         c.emit(values![self.next]);
    ///         self.next += 1;
    ///     }
    ///     fn stateful(&mut self) -> Option<&mut dyn Stateful> {
    ///         Some(self)
    ///     }
    /// }
    /// impl Stateful for Counter {
    ///     fn init_state(&mut self, state: &State) {
    ///         self.next = state.get_i64("next").unwrap_or(0);
    ///     }
    ///     fn pre_save(&mut self, _checkpoint_id: &str, state: &mut State) {
    ///         state.put("next", self.next);
    ///     }
    /// }
    ///
    /// let mut spout: Box<dyn Spout> = Box::new(Counter { next: 0 });
    /// let mut saved = State::new();
    /// spout.stateful().unwrap().pre_save("1-1", &mut saved);
    /// assert_eq!(saved.get_i64("next"), Some(0));
    /// ```
    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        None
    }
}

impl<S: Spout + ?Sized> Spout for Box<S> {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        (**self).declare_output_fields(d)
    }
    fn open(&mut self, ctx: &TopologyContext) {
        (**self).open(ctx)
    }
    fn next_tuple(&mut self, collector: &mut SpoutOutputCollector) {
        (**self).next_tuple(collector)
    }
    fn ack(&mut self, msg_id: MessageId) {
        (**self).ack(msg_id)
    }
    fn fail(&mut self, msg_id: MessageId) {
        (**self).fail(msg_id)
    }
    fn activate(&mut self) {
        (**self).activate()
    }
    fn deactivate(&mut self) {
        (**self).deactivate()
    }
    fn close(&mut self) {
        (**self).close()
    }
    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        (**self).stateful()
    }
}
