//! Bolts that anchor and ack automatically.

use crate::{
    BasicOutputCollector, Bolt, FailedException, OutputCollector, OutputFieldsDeclarer, Stateful,
    TopologyContext, Tuple,
};

/// A bolt with Storm's `IBasicBolt` semantics: every emit is anchored to the input tuple,
/// and the input is acked when `execute` returns `Ok` and failed when it returns `Err`.
///
/// Register it with [`TopologyBuilder::set_basic_bolt`](crate::TopologyBuilder::set_basic_bolt).
///
/// ```
/// use heron_api::{values, BasicBolt, BasicOutputCollector, FailedException, Fields,
///                 OutputFieldsDeclarer, Tuple};
///
/// struct Upper;
///
/// impl BasicBolt for Upper {
///     fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
///         d.declare(Fields::new(["word"]));
///     }
///     fn execute(&mut self, input: &Tuple, c: &mut BasicOutputCollector)
///         -> Result<(), FailedException>
///     {
///         let w = input.get_str(0).ok_or_else(|| FailedException::new("not a string"))?;
///         c.emit(values![w.to_uppercase()]);
///         Ok(())
///     }
/// }
/// ```
pub trait BasicBolt: Send {
    /// Declares the streams this bolt emits on (none by default).
    fn declare_output_fields(&self, _d: &mut OutputFieldsDeclarer) {}

    /// Called once, before the first `execute`, with this task's context.
    fn prepare(&mut self, _ctx: &TopologyContext) {}

    /// Processes one input tuple; `Err` fails it (and reports the error if
    /// [`FailedException::reported`] built it).
    fn execute(
        &mut self,
        input: &Tuple,
        collector: &mut BasicOutputCollector,
    ) -> Result<(), FailedException>;

    /// The bolt is shutting down.
    fn cleanup(&mut self) {}

    /// This bolt's checkpointed state, if it has one, as [`Bolt::stateful`]: a stateful
    /// bolt implements [`Stateful`] and returns `Some(self)`; [`BasicBoltAdapter`] passes it
    /// on.
    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        None
    }
}

/// Runs a [`BasicBolt`] as a [`Bolt`]: anchors its emits to the input, acks on `Ok`,
/// fails on `Err`.
///
/// ```
/// use heron_api::{BasicBolt, BasicBoltAdapter, BasicOutputCollector, Bolt, FailedException, Tuple};
/// struct Nop;
/// impl BasicBolt for Nop {
///     fn execute(&mut self, _: &Tuple, _: &mut BasicOutputCollector) -> Result<(), FailedException> {
///         Ok(())
///     }
/// }
/// let bolt: Box<dyn Bolt> = Box::new(BasicBoltAdapter::new(Nop));
/// # drop(bolt);
/// ```
pub struct BasicBoltAdapter<B> {
    inner: B,
}

impl<B: BasicBolt> BasicBoltAdapter<B> {
    /// Wraps `bolt`.
    pub fn new(bolt: B) -> Self {
        BasicBoltAdapter { inner: bolt }
    }

    /// The wrapped bolt.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// The wrapped bolt, mutably.
    pub fn inner_mut(&mut self) -> &mut B {
        &mut self.inner
    }
}

impl<B: BasicBolt> Bolt for BasicBoltAdapter<B> {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        self.inner.declare_output_fields(d)
    }

    fn prepare(&mut self, ctx: &TopologyContext) {
        self.inner.prepare(ctx)
    }

    fn execute(&mut self, input: &Tuple, collector: &mut OutputCollector) {
        let result = {
            let mut basic = BasicOutputCollector::new(collector.emitter_mut(), input);
            self.inner.execute(input, &mut basic)
        };
        match result {
            Ok(()) => collector.ack(input),
            Err(e) => {
                if e.is_reported() {
                    collector.report_error(e.message());
                }
                collector.fail(input);
            }
        }
    }

    fn cleanup(&mut self) {
        self.inner.cleanup()
    }

    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        self.inner.stateful()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{State, TwoPhaseStateful};

    #[derive(Default)]
    struct Counting {
        n: i64,
        committed: Vec<String>,
    }

    impl BasicBolt for Counting {
        fn execute(
            &mut self,
            _: &Tuple,
            _: &mut BasicOutputCollector,
        ) -> Result<(), FailedException> {
            self.n += 1;
            Ok(())
        }
        fn stateful(&mut self) -> Option<&mut dyn Stateful> {
            Some(self)
        }
    }

    impl Stateful for Counting {
        fn init_state(&mut self, state: &State) {
            self.n = state.get_i64("n").unwrap_or(0);
        }
        fn pre_save(&mut self, _: &str, state: &mut State) {
            state.put("n", self.n);
        }
        fn two_phase(&mut self) -> Option<&mut dyn TwoPhaseStateful> {
            Some(self)
        }
    }

    impl TwoPhaseStateful for Counting {
        fn post_save(&mut self, id: &str) {
            self.committed.push(id.to_owned());
        }
        fn pre_restore(&mut self, _: &str) {}
    }

    struct Plain;
    impl BasicBolt for Plain {
        fn execute(
            &mut self,
            _: &Tuple,
            _: &mut BasicOutputCollector,
        ) -> Result<(), FailedException> {
            Ok(())
        }
    }

    #[test]
    fn the_adapter_and_box_pass_stateful_on() {
        let mut bolt: Box<dyn Bolt> = Box::new(BasicBoltAdapter::new(Counting::default()));
        let mut restored = State::new();
        restored.put("n", 41);
        bolt.stateful().expect("stateful").init_state(&restored);
        let mut saved = State::new();
        bolt.stateful().unwrap().pre_save("c1", &mut saved);
        assert_eq!(saved.get_i64("n"), Some(41));
        bolt.stateful()
            .unwrap()
            .two_phase()
            .expect("two-phase")
            .post_save("c1");

        let mut adapter = BasicBoltAdapter::new(Counting::default());
        adapter
            .stateful()
            .unwrap()
            .two_phase()
            .unwrap()
            .post_save("c2");
        assert_eq!(adapter.inner().committed, ["c2"]);

        let mut plain: Box<dyn Bolt> = Box::new(BasicBoltAdapter::new(Plain));
        assert!(plain.stateful().is_none());
    }
}
