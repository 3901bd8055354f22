//! The emit that continues the open run of addressed tuples: the steady state of a word
//! count's split and of any spout or bolt whose stream has one FIELDS, SHUFFLE or NONE
//! consumer. [`Emitter::push`] handles every emit; this is the few checks and the write that
//! such an emit needs, in a function small enough to stay in the instruction cache beside the
//! user's code.

use heron_proto::tuple::put_data_tuple_plain;

use super::{same_name, Emitter, MAX_TUPLE_BYTES};
use crate::Value;

impl Emitter {
    /// Whether a grouped emit, `anchored` or not, may continue an open run of addressed
    /// tuples: the first test of [`Emitter::push_to_open_run`], cheap enough to inline into
    /// every emit so that the others do not pay a call for it.
    #[inline(always)]
    pub(super) fn may_continue_open_run(&self, anchored: bool) -> bool {
        self.open_addressed && !anchored && self.open == Some(self.last_stream)
    }

    /// Queues a grouped, unanchored (or unacked) emit on `stream` when it continues the open
    /// run of addressed tuples of that stream (after [`Emitter::may_continue_open_run`]), and
    /// returns the stream's index; `None` (nothing done) for any other emit, which
    /// [`Emitter::push`] then handles.
    #[inline]
    pub(super) fn push_to_open_run(&mut self, stream: &str, values: &[Value]) -> Option<usize> {
        let si = self.last_stream;
        let out = self.streams.get_mut(si)?;
        if !out.custom.is_empty()
            || values.len() != out.decl.fields.len()
            || !same_name(&out.decl.id, stream)
        {
            return None;
        }
        let route = out.route.as_mut()?;
        let mut size = 0;
        for v in values {
            size += v.encoded_len();
        }
        if size > MAX_TUPLE_BYTES {
            return None;
        }
        let (slot, task) = route.slot(values);
        let buf = self.by_dest.buffer_at(
            slot,
            task,
            &mut self.frames,
            &out.stream_field,
            self.task_id,
        );
        put_data_tuple_plain(buf, values);
        self.by_dest.pushed();
        self.counters.emitted += 1;
        Some(si)
    }
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use heron_proto::grouping::value_hash;
    use heron_proto::tuple::{split_data_set, split_tuple_set, values as encoded_values};
    use heron_proto::HeronCodec;

    use super::super::dest_sets::{FieldsRoute, Route};
    use super::*;
    use crate::{values, Fields, ReliabilityMode, StreamDecl};

    fn routed(tasks: &[i32]) -> Emitter {
        let fields = Fields::new(["w", "n"]);
        let streams = [
            StreamDecl {
                id: "default".into(),
                fields: fields.clone(),
                direct: false,
            },
            StreamDecl {
                id: "other".into(),
                fields: Fields::new(["x"]),
                direct: false,
            },
        ];
        let mut e = Emitter::new("split", 1, ReliabilityMode::AtMostOnce, &streams);
        e.streams[0].route =
            FieldsRoute::new(&fields, &Fields::new(["w"]), tasks).map(Route::Fields);
        e
    }

    /// (addressed task, encoded first values) of every data set in the emitter's frames.
    fn sets(e: &mut Emitter) -> Vec<(Option<i32>, Vec<Vec<u8>>)> {
        let mut frames = BytesMut::from(&e.take_frames()[..]);
        let mut out = Vec::new();
        while let Some(p) = HeronCodec::new(0).decode_packet(&mut frames).unwrap() {
            let set = split_data_set(split_tuple_set(&p.payload).unwrap().data.unwrap()).unwrap();
            let mut firsts = Vec::new();
            set.for_each_tuple(|t| {
                firsts.push(encoded_values(t).next().unwrap().to_vec());
                Ok(())
            })
            .unwrap();
            out.push((set.dest_task, firsts));
        }
        out
    }

    #[test]
    fn a_routed_run_puts_each_tuple_in_its_tasks_set_in_emit_order() {
        let tasks = [9, 4, 6]; // not a power of two, and not ascending
        let mut e = routed(&tasks);
        let words: Vec<String> = (0..60).map(|i| format!("w{}", i * 7 % 23)).collect();
        let mut expected: Vec<Vec<u8>> = Vec::new();
        for (i, w) in words.iter().enumerate() {
            e.emit_bolt("default", None, &[], &values![w.as_str(), i as i64]);
            let mut enc = Vec::new();
            Value::from(w.as_str()).encode(&mut enc);
            expected.push(enc);
            if i % 20 == 19 {
                // another stream ends the run: its sets close, the next run reopens them
                e.emit_bolt("other", None, &[], &values!["x"]);
            }
        }
        let got = sets(&mut e);
        let sorted = [4, 6, 9];
        let task_of = |enc: &[u8]| sorted[(value_hash(enc) % 3) as usize];
        let mut per_task: std::collections::BTreeMap<i32, Vec<Vec<u8>>> = Default::default();
        let mut others = 0;
        for (task, firsts) in got {
            match task {
                Some(t) => {
                    assert!(firsts.iter().all(|v| task_of(v) == t), "{t}: {firsts:?}");
                    per_task.entry(t).or_default().extend(firsts);
                }
                None => others += 1,
            }
        }
        assert_eq!(others, 3);
        for (t, got) in per_task {
            let want: Vec<_> = expected
                .iter()
                .filter(|v| task_of(v) == t)
                .cloned()
                .collect();
            assert_eq!(got, want, "task {t}: every tuple, in emit order");
        }
        assert_eq!(e.counters().emitted, 63);
    }

    #[test]
    #[should_panic(expected = "the limit is")]
    fn an_oversized_tuple_in_a_routed_run_still_panics() {
        let mut e = routed(&[1, 2]);
        e.emit_bolt("default", None, &[], &values!["a", 1]);
        let big = "x".repeat(MAX_TUPLE_BYTES);
        e.emit_bolt("default", None, &[], &values![big.as_str(), 2]);
    }

    #[test]
    #[should_panic(expected = "emitted 1 values")]
    fn a_wrong_value_count_in_a_routed_run_still_panics() {
        let mut e = routed(&[1, 2]);
        e.emit_bolt("default", None, &[], &values!["a", 1]);
        e.emit_bolt("default", None, &[], &values!["b"]);
    }
}
