//! The bolt trait: a consumer (and producer) of tuples.

use std::time::Instant;

use crate::{OutputCollector, OutputFieldsDeclarer, Stateful, TopologyContext, Tuple};

/// A tuple processor (Storm's `IBolt` + `IComponent`).
///
/// `prepare` is called once, then `execute` for every input tuple (and for tick tuples when
/// `topology.tick.tuple.freq.ms` is set), then `cleanup` at shutdown (not guaranteed).
/// In `ATLEAST_ONCE` mode a bolt must [`ack`](OutputCollector::ack) or
/// [`fail`](OutputCollector::fail) every input tuple, and anchors its emits to the inputs
/// they derive from; [`BasicBolt`](crate::BasicBolt) does both automatically.
///
/// ```
/// use heron_api::{values, Bolt, Fields, OutputCollector, OutputFieldsDeclarer, Tuple};
///
/// struct Split;
///
/// impl Bolt for Split {
///     fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
///         d.declare(Fields::new(["word"]));
///     }
///     fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
///         for w in input.get_str(0).unwrap_or("").split_whitespace() {
///             collector.emit_anchored(&[input], values![w]);
///         }
///         collector.ack(input);
///     }
/// }
/// ```
pub trait Bolt: Send {
    /// Declares the streams this bolt emits on (none by default).
    fn declare_output_fields(&self, _d: &mut OutputFieldsDeclarer) {}

    /// Called once, before the first `execute`, with this task's context.
    fn prepare(&mut self, _ctx: &TopologyContext) {}

    /// Processes one input tuple.
    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector);

    /// The bolt is shutting down.
    fn cleanup(&mut self) {}

    /// `true` when this bolt produces output outside `execute` and wants
    /// [`poll_async`](Self::poll_async) calls. The runtime asks once, after `prepare`; a
    /// bolt that says `false` (the default) costs nothing extra per tuple.
    fn has_async_output(&self) -> bool {
        false
    }

    /// Processes output that arrived outside `execute` (emits, acks, fails through
    /// `collector`). The runtime calls it, on the executor thread, soon after the bolt's
    /// [`AsyncWaker`](crate::AsyncWaker) (from
    /// [`TopologyContext::async_waker`](crate::TopologyContext::async_waker)) is woken, and
    /// when the deadline this method last returned has passed. Returns the next deadline
    /// (`None`: only when woken). Called only when
    /// [`has_async_output`](Self::has_async_output) is `true`.
    fn poll_async(&mut self, _collector: &mut OutputCollector, _now: Instant) -> Option<Instant> {
        None
    }

    /// This bolt's checkpointed state, if it has one: a stateful bolt implements
    /// [`Stateful`] and returns `Some(self)`. Used in `EFFECTIVELY_ONCE` mode; see
    /// [`Stateful`] for the calls and an example (a counting bolt).
    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        None
    }

    /// The task's event-time watermark advanced to `watermark` (ms): the minimum over its
    /// input tasks of what they sent on [`WATERMARK_STREAM_ID`](crate::window::WATERMARK_STREAM_ID)
    /// (see [`window`](crate::window)). Called by the runtime, which then forwards the
    /// watermark downstream; windowed bolts fire their windows here. Default: nothing.
    fn on_watermark(&mut self, _watermark: i64, _collector: &mut OutputCollector) {}
}

impl<B: Bolt + ?Sized> Bolt for Box<B> {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        (**self).declare_output_fields(d)
    }
    fn prepare(&mut self, ctx: &TopologyContext) {
        (**self).prepare(ctx)
    }
    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        (**self).execute(input, collector)
    }
    fn cleanup(&mut self) {
        (**self).cleanup()
    }
    fn has_async_output(&self) -> bool {
        (**self).has_async_output()
    }
    fn poll_async(&mut self, collector: &mut OutputCollector, now: Instant) -> Option<Instant> {
        (**self).poll_async(collector, now)
    }
    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        (**self).stateful()
    }
    fn on_watermark(&mut self, watermark: i64, collector: &mut OutputCollector) {
        (**self).on_watermark(watermark, collector)
    }
}
