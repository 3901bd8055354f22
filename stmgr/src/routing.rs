//! The routing table a physical plan implies: who consumes each stream, with which grouping,
//! and where every task runs. Pure and synchronous.
//!
//! Tasks are numbered by *slot*, their index among the plan's task ids sorted ascending, so
//! the data path can keep per-task state in vectors.

use crate::grouping::{Grouping, LOCAL_OR_SHUFFLE};
use bytes::{BufMut, Bytes, BytesMut};
use heron_proto::api::{self, StreamSchema};
use heron_proto::grouping::Modulus;
use heron_proto::system::PhysicalPlan;
use heron_proto::tuple::TupleScan;
use heron_proto::Message;
use std::collections::HashMap;

/// Why a physical plan cannot be routed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Two instances claim one task id.
    #[error("task {0} appears twice in the physical plan")]
    DuplicateTask(i32),
    /// An input has a grouping number outside Heron's enum.
    #[error("bolt {bolt} subscribes to {producer}/{stream} with unknown grouping {gtype}")]
    UnknownGrouping {
        /// The consuming bolt.
        bolt: String,
        /// The producing component.
        producer: String,
        /// The stream.
        stream: String,
        /// The grouping number.
        gtype: i32,
    },
    /// A fields grouping names a field the producer's stream does not declare.
    #[error("bolt {bolt} groups {producer}/{stream} by field {field:?}, which that stream does not declare")]
    UnknownField {
        /// The consuming bolt.
        bolt: String,
        /// The producing component.
        producer: String,
        /// The stream.
        stream: String,
        /// The field.
        field: String,
    },
}

/// Where one task runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskInfo {
    /// The task id.
    pub task_id: i32,
    /// The instance id (`container_<c>_<component>_<task>`).
    pub instance_id: String,
    /// The stream manager the instance belongs to.
    pub stmgr_id: String,
    /// `true` when that stream manager is this one.
    pub local: bool,
}

/// Everything about one (producer component, stream) that has subscribers.
#[derive(Debug, Clone)]
struct StreamRoute {
    /// `HeronDataTupleSet2.stream` encoded with its tag and length, ready to copy.
    stream_field: Bytes,
    /// One grouping per subscribing bolt (with tasks); their targets are concatenated.
    groupings: Vec<Grouping>,
}

/// Routes tuples by the physical plan.
#[derive(Debug, Clone)]
pub struct Router {
    tasks: Vec<TaskInfo>,
    /// producer component -> stream id -> index into `routes`
    streams: HashMap<String, HashMap<String, u32>>,
    routes: Vec<StreamRoute>,
}

impl Router {
    /// The routing table of `pplan`, seen from the stream manager `my_stmgr`.
    pub fn new(pplan: &PhysicalPlan, my_stmgr: &str) -> Result<Router, PlanError> {
        let mut tasks: Vec<TaskInfo> = pplan
            .instances
            .iter()
            .map(|i| TaskInfo {
                task_id: i.info.task_id,
                instance_id: i.instance_id.clone(),
                stmgr_id: i.stmgr_id.clone(),
                local: i.stmgr_id == my_stmgr,
            })
            .collect();
        tasks.sort_by_key(|t| t.task_id);
        if let Some(w) = tasks.windows(2).find(|w| w[0].task_id == w[1].task_id) {
            return Err(PlanError::DuplicateTask(w[0].task_id));
        }
        let slot_of = |task_id: i32| {
            tasks
                .binary_search_by_key(&task_id, |t| t.task_id)
                .expect("task from the plan") as u32
        };
        let mut by_component: HashMap<&str, Vec<u32>> = HashMap::new();
        for i in &pplan.instances {
            by_component
                .entry(&i.info.component_name)
                .or_default()
                .push(slot_of(i.info.task_id));
        }
        for slots in by_component.values_mut() {
            slots.sort_unstable();
        }

        let topology = &pplan.topology;
        let outputs = topology
            .spouts
            .iter()
            .map(|s| (&s.comp.name, &s.outputs))
            .chain(topology.bolts.iter().map(|b| (&b.comp.name, &b.outputs)));
        let mut schemas: HashMap<(&str, &str), &StreamSchema> = HashMap::new();
        for (component, outs) in outputs {
            for o in outs.iter() {
                schemas.insert((component.as_str(), o.stream.id.as_str()), &o.schema);
            }
        }

        let mut router = Router {
            tasks: Vec::new(),
            streams: HashMap::new(),
            routes: Vec::new(),
        };
        for bolt in &topology.bolts {
            let consumer = bolt.comp.name.as_str();
            let slots = by_component.get(consumer).map_or(&[][..], Vec::as_slice);
            for input in &bolt.inputs {
                let index = router.stream_entry(&input.stream);
                if slots.is_empty() {
                    continue;
                }
                let grouping = build_grouping(consumer, input, slots, &tasks, &schemas)?;
                router.routes[index as usize].groupings.push(grouping);
            }
        }
        router.tasks = tasks;
        Ok(router)
    }

    fn stream_entry(&mut self, stream: &api::StreamId) -> u32 {
        let by_stream = self
            .streams
            .entry(stream.component_name.clone())
            .or_default();
        if let Some(&i) = by_stream.get(&stream.id) {
            return i;
        }
        let i = self.routes.len() as u32;
        by_stream.insert(stream.id.clone(), i);
        let mut field = BytesMut::new();
        field.put_u8(0x0a); // HeronDataTupleSet2.stream: field 1, length-delimited
        stream
            .encode_length_delimited(&mut field)
            .expect("BytesMut grows");
        self.routes.push(StreamRoute {
            stream_field: field.freeze(),
            groupings: Vec::new(),
        });
        i
    }

    /// The index of the stream `component`/`stream`, if any bolt subscribes to it.
    pub fn stream_index(&self, component: &str, stream: &str) -> Option<u32> {
        self.streams.get(component)?.get(stream).copied()
    }

    /// The encoded `HeronDataTupleSet2.stream` field of a stream.
    pub fn stream_field(&self, stream: u32) -> &Bytes {
        &self.routes[stream as usize].stream_field
    }

    /// Appends the destination slots of an encoded, checked tuple on `stream`.
    pub fn route(&mut self, stream: u32, tuple: &[u8], scan: &TupleScan, out: &mut Vec<u32>) {
        for g in &mut self.routes[stream as usize].groupings {
            g.route(tuple, scan, out);
        }
    }

    /// The slot of `task` when a set its sender addressed to `task` goes there and nowhere
    /// else: the stream's one consumer has that task and reads the stream direct (or by a
    /// custom grouping; the emitter chose the task either way), by fields (the emitter
    /// computed the hash this router would, [`heron_proto::grouping`]) or by shuffle (the
    /// emitter kept a round robin of its own). `None` otherwise (the set is routed tuple by
    /// tuple).
    pub fn sole_addressed_slot(&self, stream: u32, task: i32) -> Option<u32> {
        match &self.routes[stream as usize].groupings[..] {
            [Grouping::Direct { tasks, slots }] => {
                tasks.binary_search(&task).ok().map(|i| slots[i])
            }
            [Grouping::Fields { slots, .. }] => {
                let slot = self.slot_of(task)?;
                slots.binary_search(&slot).is_ok().then_some(slot)
            }
            // a round robin of the emitter's own; any task of the consumer, as for a pinned
            // tuple (local-or-shuffle included)
            [Grouping::Shuffle {
                tasks, task_slots, ..
            }] => tasks.binary_search(&task).ok().map(|i| task_slots[i]),
            _ => None,
        }
    }

    /// Every task, by slot.
    pub fn tasks(&self) -> &[TaskInfo] {
        &self.tasks
    }

    /// The task in `slot`.
    #[cfg(test)]
    pub fn task(&self, slot: u32) -> &TaskInfo {
        &self.tasks[slot as usize]
    }

    /// The slot of a task id.
    pub fn slot_of(&self, task_id: i32) -> Option<u32> {
        self.tasks
            .binary_search_by_key(&task_id, |t| t.task_id)
            .ok()
            .map(|s| s as u32)
    }
}

fn build_grouping(
    bolt: &str,
    input: &api::InputStream,
    slots: &[u32],
    tasks: &[TaskInfo],
    schemas: &HashMap<(&str, &str), &StreamSchema>,
) -> Result<Grouping, PlanError> {
    let producer = input.stream.component_name.as_str();
    let stream = input.stream.id.as_str();
    let gtype = api::Grouping::try_from(input.gtype).map_err(|_| PlanError::UnknownGrouping {
        bolt: bolt.to_string(),
        producer: producer.to_string(),
        stream: stream.to_string(),
        gtype: input.gtype,
    })?;
    // The consumer's task ids, ascending like its slots.
    let task_ids = || slots.iter().map(|&s| tasks[s as usize].task_id).collect();
    Ok(match gtype {
        api::Grouping::Shuffle
            if input.custom_grouping_object.as_deref() == Some(LOCAL_OR_SHUFFLE) =>
        {
            let local: Vec<u32> = slots
                .iter()
                .copied()
                .filter(|&s| tasks[s as usize].local)
                .collect();
            let candidates = if local.is_empty() {
                slots.to_vec()
            } else {
                local
            };
            // a pinned tuple may name any of the consumer's tasks, local or not
            Grouping::shuffle(candidates, task_ids(), slots.to_vec())
        }
        api::Grouping::Shuffle | api::Grouping::None => {
            Grouping::shuffle(slots.to_vec(), task_ids(), slots.to_vec())
        }
        api::Grouping::Fields => {
            let keys = schemas
                .get(&(producer, stream))
                .map_or(&[][..], |s| &s.keys[..]);
            let wanted = input
                .grouping_fields
                .as_ref()
                .map_or(&[][..], |s| &s.keys[..]);
            let mut indices = wanted
                .iter()
                .map(|f| {
                    keys.iter().position(|k| k.key == f.key).ok_or_else(|| {
                        PlanError::UnknownField {
                            bolt: bolt.to_string(),
                            producer: producer.to_string(),
                            stream: stream.to_string(),
                            field: f.key.clone(),
                        }
                    })
                })
                .collect::<Result<Vec<usize>, PlanError>>()?;
            indices.sort_unstable();
            indices.dedup();
            Grouping::Fields {
                slots: slots.to_vec(),
                indices,
                modulus: Modulus::new(slots.len()),
            }
        }
        api::Grouping::All => Grouping::All {
            slots: slots.to_vec(),
        },
        api::Grouping::Lowest => Grouping::Lowest { slot: slots[0] },
        api::Grouping::Direct | api::Grouping::Custom => Grouping::Direct {
            tasks: task_ids(),
            slots: slots.to_vec(),
        },
    })
}

#[cfg(test)]
mod tests;
