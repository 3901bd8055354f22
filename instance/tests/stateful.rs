//! An EFFECTIVELY_ONCE bolt instance against a fake stream manager over real TCP: nothing
//! runs before the restore and the start notice, the restored state is what the component
//! gets, a marker yields the state after exactly the tuples before it, a two-phase bolt holds
//! its input until its checkpoint is consistent, and a state that does not decode answers
//! NOTOK.

mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::*;
use heron_api::{
    values, Bolt, Config, Fields, OutputCollector, OutputFieldsDeclarer, ReliabilityMode, Spout,
    SpoutOutputCollector, State, Stateful, TopologyBuilder, Tuple, TwoPhaseStateful, Value,
};
use heron_proto::api::{StreamId, TopologyState};
use heron_proto::ckptmgr::{
    InitiateStatefulCheckpoint, InstanceStateCheckpoint, RestoreInstanceStateRequest,
    RestoreInstanceStateResponse, StartInstanceStatefulProcessing, StatefulConsistentCheckpoint,
    StatefulConsistentCheckpointSaved, StoreInstanceStateCheckpoint,
};
use heron_proto::system::{
    HeronDataTuple, HeronDataTupleSet2, HeronTupleSet, HeronTupleSet2, StatusCode,
};
use heron_proto::{Message, Packet};

/// What the two-phase bolt was told, in order.
static EVENTS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn event(e: String) {
    EVENTS.lock().unwrap().push(e);
}

struct Src;
impl Spout for Src {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word"]));
    }
    fn next_tuple(&mut self, _: &mut SpoutOutputCollector) {}
}

/// Counts words and emits `[word, count]`; two-phase.
#[derive(Default)]
struct Count {
    counts: std::collections::BTreeMap<String, i64>,
}

impl Bolt for Count {
    fn declare_output_fields(&self, d: &mut OutputFieldsDeclarer) {
        d.declare(Fields::new(["word", "count"]));
    }
    fn execute(&mut self, t: &Tuple, c: &mut OutputCollector) {
        let w = t.get_str(0).unwrap().to_string();
        let n = self.counts.entry(w.clone()).or_insert(0);
        *n += 1;
        c.emit(values![w, *n]);
    }
    fn stateful(&mut self) -> Option<&mut dyn Stateful> {
        Some(self)
    }
}

impl Stateful for Count {
    fn init_state(&mut self, state: &State) {
        self.counts = state
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_i64().unwrap()))
            .collect();
        event(format!("init {}", self.counts.len()));
    }
    fn pre_save(&mut self, id: &str, state: &mut State) {
        assert!(state.is_empty(), "pre_save gets an empty state");
        for (k, v) in &self.counts {
            state.put(k.clone(), *v);
        }
        event(format!("pre_save {id}"));
    }
    fn two_phase(&mut self) -> Option<&mut dyn TwoPhaseStateful> {
        Some(self)
    }
}

impl TwoPhaseStateful for Count {
    fn post_save(&mut self, id: &str) {
        event(format!("post_save {id}"));
    }
    fn pre_restore(&mut self, id: &str) {
        event(format!("pre_restore {id}"));
    }
}

fn words(ws: &[&str]) -> HeronTupleSet2 {
    HeronTupleSet2 {
        data: Some(HeronDataTupleSet2 {
            stream: StreamId {
                id: "default".into(),
                component_name: "src".into(),
            },
            tuples: ws
                .iter()
                .map(|w| {
                    let mut b = Vec::new();
                    Value::from(*w).encode(&mut b);
                    HeronDataTuple {
                        key: 0,
                        roots: vec![],
                        values: vec![b.into()],
                        dest_task_ids: vec![],
                    }
                    .encode_to_vec()
                    .into()
                })
                .collect(),
        }),
        control: None,
        src_task_id: 1,
    }
}

/// The `[word, count]` tuples of a data set.
fn emitted(p: &Packet) -> Vec<(String, i64)> {
    let set: HeronTupleSet = p.decode().unwrap();
    set.data
        .iter()
        .flat_map(|d| &d.tuples)
        .map(|t| {
            let w = Value::decode(&t.values[0]).unwrap();
            let n = Value::decode(&t.values[1]).unwrap();
            (w.as_str().unwrap().to_string(), n.as_i64().unwrap())
        })
        .collect()
}

fn restore(sm: &mut FakeStmgr, id: &str, state: Vec<u8>) -> RestoreInstanceStateResponse {
    sm.send(&RestoreInstanceStateRequest {
        state: InstanceStateCheckpoint {
            checkpoint_id: id.into(),
            state: Some(state.into()),
            state_location: None,
        },
    });
    sm.read().decode().expect("a RestoreInstanceStateResponse")
}

#[test]
fn a_two_phase_bolt_restores_saves_and_holds_its_input_until_the_checkpoint_is_consistent() {
    let mut b = TopologyBuilder::new();
    b.set_spout("src", || Src, 1);
    b.set_bolt("count", Count::default, 1)
        .shuffle_grouping("src");
    let mut conf = Config::new();
    conf.set_reliability_mode(ReliabilityMode::EffectivelyOnce);
    let t = b.build("test", conf).unwrap();
    let (listener, port) = listen();
    let plan = pplan(
        &t,
        &[(1, "src", 0), (3, "count", 0)],
        TopologyState::Running,
    );
    let _done = spawn_instance(t, instance_config(port, "count", 3, None), fast_options());
    let mut sm = FakeStmgr::accept(&listener);
    sm.register(StatusCode::Ok, Some(plan));

    // before the restore and the start notice nothing is executed
    sm.send(&words(&["early"]));
    let mut saved = State::new();
    saved.put("a", 5);
    let r = restore(&mut sm, "c0", saved.encode());
    assert_eq!(
        (r.status.status, r.checkpoint_id.as_str()),
        (StatusCode::Ok as i32, "c0")
    );
    sm.send(&StartInstanceStatefulProcessing {
        checkpoint_id: "c0".into(),
    });
    sm.send(&words(&["a", "b"]));
    let out = emitted(&sm.read());
    assert_eq!(
        out,
        vec![("a".into(), 6), ("b".into(), 1)],
        "counting goes on from the state"
    );

    // the marker: the state after exactly the tuples before it
    sm.send(&InitiateStatefulCheckpoint {
        checkpoint_id: "c1".into(),
    });
    let stored: StoreInstanceStateCheckpoint = sm.read().decode().expect("the stored state");
    assert_eq!(stored.state.checkpoint_id, "c1");
    let state = State::decode(stored.state.state.as_deref().unwrap()).unwrap();
    assert_eq!((state.get_i64("a"), state.get_i64("b")), (Some(6), Some(1)));

    // two-phase: input waits for "saved"
    sm.send(&words(&["a"]));
    assert!(
        sm.try_read(Duration::from_millis(300)).is_none(),
        "a two-phase bolt executes nothing before its checkpoint is consistent"
    );
    sm.send(&StatefulConsistentCheckpointSaved {
        consistent_checkpoint: StatefulConsistentCheckpoint {
            checkpoint_id: "c1".into(),
            packing_plan_id: "p".into(),
        },
    });
    assert_eq!(emitted(&sm.read()), vec![("a".into(), 7)]);

    // a state that does not decode is refused
    let r = restore(&mut sm, "c2", b"not a state".to_vec());
    assert_eq!(r.status.status, StatusCode::Notok as i32);
    assert_eq!(
        *EVENTS.lock().unwrap(),
        vec!["pre_restore c0", "init 1", "pre_save c1", "post_save c1",]
    );
}
