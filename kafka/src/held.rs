//! The effectively-once KafkaBolt's held output (a synchronous state machine, no I/O).
//!
//! Records made between two checkpoints are held back. When checkpoint N is taken, what was
//! held since N-1 becomes batch N and every batch not yet produced goes into N's state; when
//! N is globally consistent, every batch up to N is released for producing; a restore from N
//! releases N's stored batches again. Each record carries a sink id `task:checkpoint:seq`
//! that is the same every time it is released, so a consumer that drops repeated ids sees
//! each record once. This is the one place that decides what is committed when: Kafka
//! transactions (one per checkpoint, committed on release) would replace the sink ids here.

use heron_api::{State, Value};

/// The state key prefix of held records: `kafka-held/<checkpoint>/<seq>`.
pub const HELD_STATE_PREFIX: &str = "kafka-held/";

/// The record header that carries a record's sink id.
pub const SINK_ID_HEADER: &str = "heron-sink-id";

/// A record waiting to be produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldRecord {
    /// The topic.
    pub topic: String,
    /// The key.
    pub key: Option<Vec<u8>>,
    /// The value.
    pub value: Option<Vec<u8>>,
}

/// A record released for producing, with its sink id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Released {
    /// `task:checkpoint:seq`, the same on every release of this record.
    pub sink_id: String,
    /// The record.
    pub record: HeldRecord,
}

/// The held output of one bolt task.
///
/// ```
/// use heron_api::State;
/// use heron_kafka::{HeldOutput, HeldRecord};
///
/// let rec = |v: &str| HeldRecord { topic: "out".into(), key: None, value: Some(v.into()) };
/// let mut h = HeldOutput::new(7);
/// h.hold(rec("a"));
/// let mut state = State::new();
/// h.checkpoint("1", &mut state);
/// h.hold(rec("b")); // after the checkpoint: waits for the next one
/// let out = h.consistent("1");
/// assert_eq!(out.len(), 1);
/// assert_eq!(out[0].sink_id, "7:1:0");
/// // a restore from checkpoint 1 releases its records again, with the same ids
/// let mut again = HeldOutput::new(7);
/// assert_eq!(again.restore(&state), out);
/// ```
#[derive(Debug)]
pub struct HeldOutput {
    task: i32,
    current: Vec<HeldRecord>,
    /// Batches taken at a checkpoint and not yet released, oldest first.
    batches: Vec<(String, Vec<HeldRecord>)>,
}

impl HeldOutput {
    /// Nothing held, for task `task`.
    pub fn new(task: i32) -> HeldOutput {
        HeldOutput {
            task,
            current: Vec::new(),
            batches: Vec::new(),
        }
    }

    /// Holds a record until a checkpoint covering it is consistent.
    pub fn hold(&mut self, r: HeldRecord) {
        self.current.push(r);
    }

    /// Records held in all.
    pub fn len(&self) -> usize {
        self.current.len() + self.batches.iter().map(|(_, b)| b.len()).sum::<usize>()
    }

    /// `true` when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checkpoint `id` is taken: what was held becomes its batch, and every unreleased batch
    /// is written to `state` (replacing what it held before).
    pub fn checkpoint(&mut self, id: &str, state: &mut State) {
        let batch = std::mem::take(&mut self.current);
        self.batches.push((id.to_string(), batch));
        state.remove_prefix(HELD_STATE_PREFIX);
        for (ckpt, batch) in &self.batches {
            for (seq, r) in batch.iter().enumerate() {
                state.put(
                    format!("{HELD_STATE_PREFIX}{ckpt}/{seq:010}"),
                    Value::Bytes(encode(r)),
                );
            }
        }
    }

    /// Checkpoint `id` is globally consistent: releases every batch up to it, oldest first.
    /// An unknown id releases nothing.
    pub fn consistent(&mut self, id: &str) -> Vec<Released> {
        let Some(i) = self.batches.iter().position(|(c, _)| c == id) else {
            return Vec::new();
        };
        let task = self.task;
        self.batches
            .drain(..=i)
            .flat_map(|(ckpt, batch)| {
                batch
                    .into_iter()
                    .enumerate()
                    .map(move |(seq, record)| Released {
                        sink_id: format!("{task}:{ckpt}:{seq}"),
                        record,
                    })
            })
            .collect()
    }

    /// The topology rolled back: what was held since the restored checkpoint is dropped
    /// (it will be made again by the replay).
    pub fn rolled_back(&mut self) {
        self.current.clear();
        self.batches.clear();
    }

    /// Restores from a consistent checkpoint's state: drops what is held and releases the
    /// records the checkpoint stored (they may have been produced already; their sink ids
    /// are the ones they had then). Entries that do not decode are skipped and logged.
    pub fn restore(&mut self, state: &State) -> Vec<Released> {
        self.rolled_back();
        let mut out = Vec::new();
        for (k, v) in state.iter_prefix(HELD_STATE_PREFIX) {
            let rest = &k[HELD_STATE_PREFIX.len()..];
            let parsed = rest.rsplit_once('/').and_then(|(ckpt, seq)| {
                let seq: u64 = seq.parse().ok()?;
                let record = decode(v.as_bytes()?)?;
                Some(Released {
                    sink_id: format!("{}:{ckpt}:{seq}", self.task),
                    record,
                })
            });
            match parsed {
                Some(r) => out.push(r),
                None => tracing::error!(
                    key = k,
                    "KafkaBolt: a held record in the state does not decode; skipped"
                ),
            }
        }
        out
    }
}

fn put_part(out: &mut Vec<u8>, part: Option<&[u8]>) {
    match part {
        None => out.push(0),
        Some(b) => {
            out.push(1);
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(b);
        }
    }
}

fn take_part<'a>(input: &mut &'a [u8]) -> Option<Option<&'a [u8]>> {
    let (&flag, rest) = input.split_first()?;
    *input = rest;
    match flag {
        0 => Some(None),
        1 => {
            let len = u32::from_le_bytes(input.get(..4)?.try_into().ok()?) as usize;
            let part = input.get(4..4 + len)?;
            *input = &input[4 + len..];
            Some(Some(part))
        }
        _ => None,
    }
}

/// `topic`, key and value, each as a presence byte then a little-endian u32 length and bytes.
fn encode(r: &HeldRecord) -> Vec<u8> {
    let mut out = Vec::new();
    put_part(&mut out, Some(r.topic.as_bytes()));
    put_part(&mut out, r.key.as_deref());
    put_part(&mut out, r.value.as_deref());
    out
}

fn decode(mut b: &[u8]) -> Option<HeldRecord> {
    let topic = String::from_utf8(take_part(&mut b)??.to_vec()).ok()?;
    let key = take_part(&mut b)?.map(<[u8]>::to_vec);
    let value = take_part(&mut b)?.map(<[u8]>::to_vec);
    b.is_empty().then_some(HeldRecord { topic, key, value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(v: &str) -> HeldRecord {
        HeldRecord {
            topic: "out".into(),
            key: Some(v.as_bytes().to_vec()),
            value: Some(v.as_bytes().to_vec()),
        }
    }

    #[test]
    fn records_round_trip_and_garbage_is_refused() {
        for r in [
            rec("x"),
            HeldRecord {
                topic: "t".into(),
                key: None,
                value: None,
            },
        ] {
            assert_eq!(decode(&encode(&r)), Some(r));
        }
        let good = encode(&rec("abc"));
        for cut in 0..good.len() {
            assert_eq!(decode(&good[..cut]), None, "cut at {cut}");
        }
        let mut extra = good.clone();
        extra.push(0);
        assert_eq!(decode(&extra), None);
    }

    #[test]
    fn a_consistent_checkpoint_releases_every_batch_up_to_it() {
        let mut h = HeldOutput::new(3);
        let mut state = State::new();
        h.hold(rec("a"));
        h.checkpoint("c1", &mut state);
        h.hold(rec("b"));
        h.hold(rec("c"));
        h.checkpoint("c2", &mut state);
        h.hold(rec("d"));
        // c2's state holds c1's and c2's batches (c1 was never confirmed)
        assert_eq!(state.iter_prefix(HELD_STATE_PREFIX).count(), 3);
        let out = h.consistent("c2");
        let ids: Vec<&str> = out.iter().map(|r| r.sink_id.as_str()).collect();
        assert_eq!(ids, ["3:c1:0", "3:c2:0", "3:c2:1"]);
        assert_eq!(h.len(), 1); // "d" waits for the next checkpoint
        assert!(h.consistent("c1").is_empty());
        // a restore from c2 gives the same records with the same ids, and drops "d"
        let again = h.restore(&state);
        assert_eq!(again, out);
        assert!(h.is_empty());
    }

    #[test]
    fn a_rollback_drops_what_was_held() {
        let mut h = HeldOutput::new(1);
        let mut state = State::new();
        h.hold(rec("a"));
        h.checkpoint("c1", &mut state);
        h.hold(rec("b"));
        h.rolled_back();
        assert!(h.is_empty());
        assert!(h.consistent("c1").is_empty());
    }
}
