//! The result of one run as a typed value with one serialisation: the
//! CLI's `run --json` document is `serde_json` of `RunReport`, and the
//! Python package's `Result.json` is the same text.

use crate::scenario::Prepared;
use schedlab_engine::RunResult;
use schedlab_kernel::stats::LevelStats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub value: f64,
    pub unit: String,
    pub higher_is_better: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextSwitches {
    pub voluntary: u64,
    pub involuntary: u64,
}

/// Run delay (runnable -> running) percentiles, ns.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunDelay {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTime {
    pub cpu: usize,
    pub busy_ns: u64,
    pub idle_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tasks {
    pub created: u64,
    pub exited: u64,
    /// Only when it happened: normal runs' JSON has no such key.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub blocked_forever: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// Machine-model counters.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MachineCounters {
    pub name: String,
    /// Lines of L1 hot sets refilled from the L2 at switch-in (F-026).
    #[serde(default)]
    pub l1_refills: u64,
    pub l2_misses: u64,
    pub llc_misses: u64,
    pub dram_bytes: u64,
    pub remote_bytes: u64,
    pub rq_lock_wait_ns: u64,
    /// Time CPUs spent waiting for and moving task groups' `tg->load_avg`
    /// lines; absent when no group line moved (root-group runs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tg_line_ns: u64,
    pub idle_exit_ns: u64,
    pub mm_switches: u64,
    /// The machine's background (tick and interrupt time, per-CPU kernel threads).
    pub noise: Noise,
    /// Open-loop requests from the network; absent in closed-loop runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_loop: Option<OpenLoop>,
}

/// Blocking channel operations (`schedlab_engine::ChanWaits`): reads that
/// found their channel empty, writes that found it full, and of those the
/// pipe writers back from a wait that found the slots still full.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelWaits {
    pub reads: u64,
    pub writes: u64,
    pub pipe_rewaits: u64,
}

/// Requests offered from the network (`rate=` of the request/response built-ins).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenLoop {
    pub arrived: u64,
    pub dropped: u64,
    pub wakeups: u64,
}

/// What the machine's background did (`--machine-model NO_NOISE` turns it off).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Noise {
    pub kthread_wakeups: u64,
    pub kthread_ns: u64,
    pub kthread_switches: u64,
    /// Migrations of the background's tasks (the unbound one moves; per-CPU ones are pinned).
    #[serde(default)]
    pub kthread_migrations: u64,
    pub irqs: u64,
    pub irq_ns: u64,
    pub tick_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub name: String,
    pub shares: u64,
    pub tasks: u64,
    pub runtime_ns: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latency {
    pub hist: u32,
    pub count: u64,
    pub mean_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p95_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

/// schedstat per domain level (bottom-up): the engine's counters (the one
/// `LevelStats` type, its fields inline: `level`, `ttwu_wake_remote`, ...,
/// `alb_pushed`) with shares of all try_to_wake_up() calls.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Level {
    #[serde(flatten)]
    pub counters: LevelStats,
    pub wake_remote_share: f64,
    pub affine_share: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Schedstat {
    pub ttwu_count: u64,
    pub ttwu_local: u64,
    pub local_share: f64,
    pub levels: Vec<Level>,
}

/// One run's result. Serialised, its keys come out sorted (as every
/// schedlab JSON document: `serde_json::Value` keeps maps sorted).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub schedlab_version: String,
    pub kernel: String,
    /// The `--features` string as given ("" for none).
    pub features: String,
    pub workload: String,
    pub params: BTreeMap<String, String>,
    pub seed: u64,
    pub metric: Metric,
    /// Why the metric is not valid (its end was never reached); the CLI
    /// refuses such a run, a sweep records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated: Option<String>,
    pub simulated_ns: u64,
    pub context_switches: ContextSwitches,
    pub migrations: u64,
    pub wakeups: u64,
    pub run_delay_ns: RunDelay,
    pub cpus: Vec<CpuTime>,
    pub tasks: Tasks,
    pub machine: MachineCounters,
    pub group_switches: u64,
    /// Blocking channel reads and writes; absent when no channel op blocked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel_waits: Option<ChannelWaits>,
    pub groups: Vec<Group>,
    pub latencies: Vec<Latency>,
    pub schedstat: Schedstat,
    pub events: u64,
}

impl Level {
    /// A level's counters with their shares of `ttwu_count` try_to_wake_up()
    /// calls (a run's, or a real kernel's: `schedlab oracle --json`).
    pub fn new(counters: &LevelStats, ttwu_count: u64) -> Level {
        Level {
            counters: counters.clone(),
            wake_remote_share: share(counters.ttwu_wake_remote, ttwu_count),
            affine_share: share(counters.ttwu_move_affine, ttwu_count),
        }
    }
}

fn share(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64 / 100.0
    }
}

impl RunReport {
    pub fn new(p: &Prepared, r: &RunResult) -> RunReport {
        RunReport {
            schedlab_version: env!("CARGO_PKG_VERSION").into(),
            kernel: p.kernel.name.to_string(),
            features: p.spec.features.clone().unwrap_or_default(),
            workload: p.workload.name.clone(),
            params: p.workload.params.iter().cloned().collect(),
            seed: p.cfg.seed,
            metric: Metric {
                name: r.metric_name.clone(),
                value: r.metric_value,
                unit: r.metric_unit.clone(),
                higher_is_better: r.higher_is_better,
            },
            truncated: r.metric_missing.clone(),
            simulated_ns: r.simulated_ns,
            context_switches: ContextSwitches { voluntary: r.voluntary_switches, involuntary: r.involuntary_switches },
            migrations: r.migrations,
            wakeups: r.wakeups,
            run_delay_ns: RunDelay { p50: r.run_delay_p50, p90: r.run_delay_p90, p99: r.run_delay_p99, max: r.run_delay_max },
            cpus: r.cpus.iter().enumerate().map(|(cpu, &(busy_ns, idle_ns))| CpuTime { cpu, busy_ns, idle_ns }).collect(),
            tasks: Tasks { created: r.tasks_created, exited: r.tasks_exited, blocked_forever: r.blocked_forever },
            machine: MachineCounters {
                name: p.machine.name.clone(),
                l1_refills: r.l1_refills,
                l2_misses: r.l2_misses,
                llc_misses: r.llc_misses,
                dram_bytes: r.dram_bytes,
                remote_bytes: r.remote_bytes,
                rq_lock_wait_ns: r.rq_lock_wait_ns,
                tg_line_ns: r.tg_line_ns,
                idle_exit_ns: r.idle_exit_ns,
                mm_switches: r.mm_switches,
                noise: Noise {
                    kthread_wakeups: r.noise.kthread_wakeups,
                    kthread_ns: r.noise.kthread_ns,
                    kthread_switches: r.noise.switches,
                    kthread_migrations: r.noise.migrations,
                    irqs: r.noise.irqs,
                    irq_ns: r.noise.irq_ns,
                    tick_ns: r.noise.tick_ns,
                },
                open_loop: (r.arrivals.arrived > 0).then_some(OpenLoop {
                    arrived: r.arrivals.arrived,
                    dropped: r.arrivals.dropped,
                    wakeups: r.arrivals.wakeups,
                }),
            },
            group_switches: r.group_switches,
            channel_waits: (r.chan_waits != Default::default()).then_some(ChannelWaits {
                reads: r.chan_waits.reads,
                writes: r.chan_waits.writes,
                pipe_rewaits: r.chan_waits.pipe_rewaits,
            }),
            groups: r
                .groups
                .iter()
                .map(|g| Group { name: g.name.clone(), shares: g.shares, tasks: g.tasks, runtime_ns: g.runtime_ns })
                .collect(),
            latencies: r
                .latencies
                .iter()
                .map(|l| Latency {
                    hist: l.hist,
                    count: l.count,
                    mean_ns: l.mean,
                    p50_ns: l.p50,
                    p90_ns: l.p90,
                    p95_ns: l.p95,
                    p99_ns: l.p99,
                    p999_ns: l.p999,
                    max_ns: l.max,
                })
                .collect(),
            schedstat: Schedstat {
                ttwu_count: r.ttwu_count,
                ttwu_local: r.ttwu_local,
                local_share: share(r.ttwu_local, r.ttwu_count),
                levels: r.levels.iter().map(|l| Level::new(l, r.ttwu_count)).collect(),
            },
            events: r.events,
        }
    }

    /// The JSON document (sorted keys, as `schedlab run --json` prints it).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a RunReport always serialises")
    }
}
