//! The windowed-bolt adapter's checkpointed state (`EFFECTIVELY_ONCE`): the pending windows
//! under [`WINDOW_STATE_KEY`], the bolt's own state beside them.

use super::{Machine, WindowedBolt, WindowedBoltAdapter};
use crate::window::aligned::AlignedWindows;
use crate::window::config::Shape;
use crate::window::count::CountWindows;
use crate::window::session::SessionWindows;
use crate::window::snapshot::{Reader, SnapshotError, Writer, MAGIC, VERSION};
use crate::window::WINDOW_STATE_KEY;
use crate::{State, Stateful, Tuple, TwoPhaseStateful, Value};

const COUNT: u8 = 0;
const ALIGNED: u8 = 1;
const SESSION: u8 = 2;

fn tuple(w: &mut Writer, t: &Tuple) {
    w.tuple(t);
}

fn read_tuple(r: &mut Reader<'_>) -> Result<Tuple, SnapshotError> {
    r.tuple()
}

impl<B: WindowedBolt> WindowedBoltAdapter<B> {
    /// The pending windows as bytes ([`crate::window::snapshot`] describes the layout).
    fn snapshot(&mut self) -> Vec<u8> {
        let mut w = Writer::default();
        w.buf.extend_from_slice(&MAGIC);
        w.u8(VERSION);
        match self
            .machine
            .get_or_insert_with(|| Machine::new(&self.config))
        {
            Machine::Count(m) => {
                w.u8(COUNT);
                m.save(&mut w, tuple);
            }
            Machine::Aligned(m) => {
                w.u8(ALIGNED);
                m.save(&mut w, tuple);
            }
            Machine::Session { windows, .. } => {
                w.u8(SESSION);
                windows.save(&mut w, |w, k| w.str(k), tuple);
            }
        }
        w.tuples(self.expired.iter());
        w.u64(self.late_dropped);
        w.buf
    }

    /// Pending windows from [`snapshot`](Self::snapshot) bytes, checked against this bolt's
    /// window configuration.
    fn restore_windows(&mut self, bytes: &[u8]) -> Result<(), SnapshotError> {
        let mut r = Reader::new(bytes);
        r.header()?;
        let tag = r.u8("machine")?;
        let machine = match (&self.config.shape, tag) {
            (Shape::Sliding { length, slide }, COUNT | ALIGNED) => {
                match (length.as_ms(), slide.as_ms(), tag) {
                    (Some(len), Some(sl), ALIGNED) => {
                        Machine::Aligned(AlignedWindows::load(len, sl, &mut r, read_tuple)?)
                    }
                    (Some(_), Some(_), _) | (_, _, ALIGNED) => return Err(mismatch(tag, self)),
                    _ => Machine::Count(CountWindows::load(*length, *slide, &mut r, read_tuple)?),
                }
            }
            (Shape::Session { gap, key }, SESSION) => Machine::Session {
                windows: SessionWindows::load(
                    super::session_gap_ms(*gap),
                    &mut r,
                    |r| r.str("session key").map(str::to_owned),
                    read_tuple,
                )?,
                key: key.clone(),
            },
            _ => return Err(mismatch(tag, self)),
        };
        let expired = r.tuples()?;
        let late_dropped = r.u64("late dropped")?;
        r.finish()?;
        self.machine = Some(machine);
        self.expired = expired;
        self.late_dropped = late_dropped;
        Ok(())
    }
}

fn mismatch<B>(tag: u8, a: &WindowedBoltAdapter<B>) -> SnapshotError {
    let found = match tag {
        COUNT => "count windows",
        ALIGNED => "windows by time",
        SESSION => "session windows",
        _ => "of an unknown kind",
    };
    SnapshotError::Mismatch {
        expected: format!("{:?}", a.config.shape),
        found: found.to_owned(),
    }
}

impl<B: WindowedBolt> Stateful for WindowedBoltAdapter<B> {
    fn init_state(&mut self, state: &State) {
        if let Err(e) = self.try_init_state(state) {
            tracing::error!("windowed bolt: {e}; its windows start empty");
        }
    }

    fn try_init_state(&mut self, state: &State) -> Result<(), String> {
        match state.get(WINDOW_STATE_KEY) {
            Some(Value::Bytes(b)) => self.restore_windows(b).map_err(|e| e.to_string())?,
            Some(other) => {
                return Err(format!(
                    "{WINDOW_STATE_KEY} holds a {}, not window bytes",
                    other.type_name()
                ))
            }
            // a clean start
            None => {
                self.machine = Some(Machine::new(&self.config));
                self.expired.clear();
                self.late_dropped = 0;
            }
        }
        // a processing-time timer may be due: the runtime polls when woken
        self.timer_set = false;
        if let Some(w) = &self.waker {
            w.wake();
        }
        match self.bolt.stateful() {
            Some(user) if state.contains_key(WINDOW_STATE_KEY) => {
                let mut own = state.clone();
                own.remove(WINDOW_STATE_KEY);
                user.try_init_state(&own)
            }
            Some(user) => user.try_init_state(state),
            None => Ok(()),
        }
    }

    fn pre_save(&mut self, checkpoint_id: &str, state: &mut State) {
        if let Some(user) = self.bolt.stateful() {
            user.pre_save(checkpoint_id, state);
        }
        let bytes = self.snapshot();
        if state.put(WINDOW_STATE_KEY, Value::Bytes(bytes)).is_some() {
            tracing::error!(
                "a windowed bolt's own state used the reserved key {WINDOW_STATE_KEY}; \
                 the windows overwrote it"
            );
        }
    }

    fn two_phase(&mut self) -> Option<&mut dyn TwoPhaseStateful> {
        self.bolt.stateful()?.two_phase()
    }
}
