//! The emit that continues the open run of addressed tuples: the steady state of a word
//! count's split and of any spout or bolt whose stream has one FIELDS, SHUFFLE or NONE
//! consumer. [`Emitter::push`] handles every emit; this is the few checks and the write that
//! such an emit needs, in a function small enough to stay in the instruction cache beside the
//! user's code.

use heron_proto::tuple::{put_data_tuple_keyed, put_data_tuple_plain};

use super::{same_name, Emitter, MAX_TUPLE_BYTES};
use crate::Value;

impl Emitter {
    /// Whether a grouped emit may continue an open run of addressed tuples: the first test
    /// of [`Emitter::push_to_open_run`], cheap enough to inline into every emit so that the
    /// others do not pay a call for it.
    #[inline(always)]
    pub(super) fn may_continue_open_run(&self) -> bool {
        self.open_addressed && self.open == Some(self.last_stream)
    }

    /// Queues a grouped emit on `stream` with `roots` (`bolt`: a bolt's, else a spout's) when
    /// it continues the open run of addressed tuples of that stream (after
    /// [`Emitter::may_continue_open_run`]), and returns the stream's index; `None` (nothing
    /// done) for any other emit, which [`Emitter::push`] then handles. With acking, an
    /// anchored tuple is keyed here and its emit queued, as [`Emitter::push`] does.
    #[inline]
    pub(super) fn push_to_open_run(
        &mut self,
        stream: &str,
        values: &[Value],
        roots: &[(i32, i64)],
        bolt: bool,
    ) -> Option<usize> {
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
        if roots.is_empty() {
            // key 0: no emit to queue
            put_data_tuple_plain(buf, values);
            self.by_dest.pushed();
        } else {
            let key = self.rng.tuple_key(self.mode.is_acking(), roots);
            put_data_tuple_keyed(buf, key, roots, values, &[]);
            self.by_dest.pushed();
            self.keyed_emit(key, roots, bolt);
        }
        self.streams[si].emitted += 1;
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
        routed_in(ReliabilityMode::AtMostOnce, tasks)
    }

    fn routed_in(mode: ReliabilityMode, tasks: &[i32]) -> Emitter {
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
        let mut e = Emitter::new("split", 1, mode, &streams);
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
    fn with_acking_a_routed_runs_anchored_tuples_are_keyed_and_their_emits_queued() {
        use crate::{Tuple, TupleSource};
        use heron_proto::system::HeronTupleSet;
        use std::sync::Arc;
        let mut e = routed_in(ReliabilityMode::AtLeastOnce, &[4, 5]);
        let source = Arc::new(TupleSource::new("up", "default", Fields::new(["x"])));
        let a = Tuple::from_runtime(source.clone(), 1, values!["s"], 3, &[(1, 10)]);
        let b = Tuple::from_runtime(source, 1, values!["t"], 4, &[(1, 10), (2, 20)]);
        for i in 0..20i64 {
            e.emit_bolt(
                "default",
                None,
                &[&a],
                &values![format!("w{i}").as_str(), i],
            );
        }
        e.emit_bolt("default", None, &[&b], &values!["w-b", 20]);
        e.emit_bolt("default", None, &[], &values!["w-none", 21]);
        e.ack(&a);
        let mut frames = BytesMut::from(&e.take_frames()[..]);
        let (mut keys, mut control) = (Vec::new(), Vec::new());
        while let Some(p) = HeronCodec::new(0).decode_packet(&mut frames).unwrap() {
            let set: HeronTupleSet = p.decode().unwrap();
            match (set.data, set.control) {
                (Some(d), None) => keys.extend(d.tuples.iter().map(|t| (t.key, t.roots.len()))),
                (None, Some(c)) => control.push(c),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(keys.len(), 22);
        let one_root: Vec<i64> = keys.iter().filter(|k| k.1 == 1).map(|k| k.0).collect();
        assert_eq!(one_root.len(), 20);
        assert!(
            one_root.iter().all(|&k| k != 0),
            "anchored tuples are keyed"
        );
        let two_roots: Vec<i64> = keys.iter().filter(|k| k.1 == 2).map(|k| k.0).collect();
        assert!(keys.contains(&(0, 0)), "the unanchored tuple keeps key 0");
        // the emits anchored to `a` alone ride in a's ack; b's, with two roots, go as an emit
        assert_eq!(control.len(), 1);
        let xor = one_root.iter().fold(3, |x, k| x ^ k);
        assert_eq!(control[0].acks.len(), 1);
        assert_eq!(control[0].acks[0].ackedtuple, xor);
        assert_eq!(control[0].emits.len(), 1);
        assert_eq!(control[0].emits[0].ackedtuple, two_roots[0]);
        assert_eq!(control[0].emits[0].roots.len(), 2);
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
