//! The executor: waits for the physical plan, then runs the spout or bolt loop.

use std::time::{Duration, Instant};

use bytes::Bytes;
use heron_api::{Emitter, HeronTopology, TopologyContext};
use heron_proto::api::TopologyState;
use heron_proto::system::PhysicalPlan;

use crate::gateway::Gateway;
use crate::inbound::InMsg;
use crate::inbox::Inbox;
use crate::metrics::MetricsWriter;
use crate::outbound::Outbound;
use crate::stream_metrics::StreamCounter;
use crate::{bolt_loop, spout_loop, InstanceConfig, InstanceError, RunOptions};

/// How long the executor waits on an idle queue before looking at its timers again.
pub(crate) const IDLE_WAIT: Duration = Duration::from_millis(1);
/// Output is flushed once it reaches about this many bytes (about 500 sentences or 1,500
/// words: small enough that a batch is not a latency of its own, large enough that
/// a flush costs little per tuple).
pub(crate) const FLUSH_BYTES: usize = 32 << 10;

/// What both loops share: the inbox, the way out and the counters file.
pub(crate) struct Shared<'a> {
    pub config: &'a InstanceConfig,
    pub inbox: &'a Inbox,
    out: Outbound<'a>,
    /// `__emit-count/<stream>`: the emitter's per-stream totals, taken at each flush.
    emits: StreamCounter,
    pub metrics: MetricsWriter,
    /// Every task of the plan the component started with, and its component: a plan that
    /// changes them (`heron update`) means a restart, so the component opens with the new one.
    tasks: std::cell::OnceCell<Vec<(i32, String)>>,
}

/// The tasks of a plan and their components, sorted.
fn plan_tasks(pplan: &PhysicalPlan) -> Vec<(i32, String)> {
    let mut t: Vec<(i32, String)> = pplan
        .instances
        .iter()
        .map(|i| (i.info.task_id, i.info.component_name.clone()))
        .collect();
    t.sort_unstable();
    t
}

impl Shared<'_> {
    /// `true` when the out-queue has room for another batch.
    pub fn out_has_room(&self) -> bool {
        self.out.has_room()
    }

    /// Sleeps until the out-queue has room, or at most until `deadline`.
    pub fn wait_for_out_room(&self, deadline: Instant) {
        self.out.wait_for_room(deadline);
    }

    /// Takes the emitter's output (Heron packets: data sets before the control set) and queues
    /// it for the writer as one chunk; blocks while the out-queue is full. Also logs reported errors.
    pub fn flush(&mut self, emitter: &mut Emitter) -> Result<(), InstanceError> {
        self.flush_errors(emitter);
        if !emitter.has_output() {
            return Ok(());
        }
        self.emits.totals(emitter.stream_emits());
        self.send_frames(emitter.take_frames())
    }

    /// Logs and reports the errors the component reported, without sending its output.
    pub fn flush_errors(&mut self, emitter: &mut Emitter) {
        for e in emitter.take_errors() {
            tracing::error!(
                component = emitter.component(),
                task = emitter.task_id(),
                "reported error: {e}"
            );
            crate::stream_metrics::report_exception(&e.to_string());
        }
    }

    /// Sends already framed packets (the emitter's output, stateful-processing messages)
    /// after everything sent before: through the socket when it takes them at once, else
    /// through the writer's queue, blocking while that is full (`outbound.rs`).
    pub fn send_frames(&mut self, frames: Bytes) -> Result<(), InstanceError> {
        self.out.send(frames)
    }

    /// Checks that the plan still assigns our task to our component and has the tasks of the
    /// first plan; returns whether the topology is running.
    pub fn check_plan(&self, pplan: &PhysicalPlan) -> Result<bool, InstanceError> {
        let ok = pplan.instances.iter().any(|i| {
            i.info.task_id == self.config.task_id
                && i.info.component_name == self.config.component_name
        });
        if !ok {
            return Err(InstanceError::AssignmentChanged {
                task_id: self.config.task_id,
                component: self.config.component_name.clone(),
            });
        }
        let tasks = plan_tasks(pplan);
        if *self.tasks.get_or_init(|| tasks.clone()) != tasks {
            return Err(InstanceError::PlanChanged);
        }
        Ok(pplan.topology.state == TopologyState::Running as i32)
    }
}

/// Runs the executor until the connection is lost or a fatal error.
pub(crate) fn run(
    config: &InstanceConfig,
    topology: &HeronTopology,
    options: &RunOptions,
    gateway: &Gateway,
) -> Result<(), InstanceError> {
    let mut shared = Shared {
        config,
        inbox: &gateway.inbox,
        out: Outbound::new(&gateway.out_tx, gateway.socket(), gateway.written.clone()),
        emits: StreamCounter::new(crate::stream_metrics::current(), "emit"),
        metrics: MetricsWriter::new(
            config.metrics_dir.clone(),
            &config.instance_id,
            options.metrics_interval,
            topology.is_spout(&config.component_name),
        ),
        tasks: std::cell::OnceCell::new(),
    };
    // Wait for the first physical plan; keep whatever follows it for the loop.
    let mut pending: Vec<InMsg> = Vec::new();
    let mut pplan = None;
    while pplan.is_none() {
        let batch = shared
            .inbox
            .recv()
            .map_err(|_| InstanceError::Disconnected)?;
        for msg in batch {
            match msg {
                InMsg::Plan(p) if pplan.is_none() => pplan = Some(p),
                other => pending.push(other),
            }
        }
    }
    let pplan = pplan.expect("loop ends with a plan");
    let running = shared.check_plan(&pplan)?;
    let ctx = TopologyContext::from_physical_plan(&pplan, config.task_id)?;
    tracing::info!(
        component = %config.component_name,
        task = config.task_id,
        running,
        mode = %ctx.config().reliability_mode(),
        "physical plan received; starting the component"
    );
    if topology.is_spout(&config.component_name) {
        let spout = topology
            .create_spout(&config.component_name)
            .ok_or_else(|| InstanceError::UnknownComponent(config.component_name.clone()))?;
        let emitter = Emitter::for_task(topology, &ctx);
        spout_loop::run(&mut shared, spout, emitter, &ctx, running, pending)
    } else {
        let bolt = topology
            .create_bolt(&config.component_name)
            .ok_or_else(|| InstanceError::UnknownComponent(config.component_name.clone()))?;
        let emitter = Emitter::for_task(topology, &ctx);
        bolt_loop::run(&mut shared, bolt, emitter, &ctx, pending)
    }
}

/// The earliest of some optional instants.
pub(crate) fn earliest(times: impl IntoIterator<Item = Option<Instant>>) -> Option<Instant> {
    times.into_iter().flatten().min()
}
