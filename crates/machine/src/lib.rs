//! schedlab-machine: machine descriptions.
//!
//! A [`Machine`] is what schedlab knows about a piece of hardware: the firmware's
//! view of its CPUs ([`CpuTopology`], the only part the kernel model sees) plus the
//! constants the cost model charges for the kernel's decisions ([`CacheSizes`],
//! [`Costs`], [`IdleState`]).
//!
//! Machines come from four places, all through [`load`]:
//! - built-in presets ([`presets`]), stored as TOML files under `presets/` and
//!   embedded in the binary, so every preset is also an example of the file format
//!   (docs/machine-format.md); their constants and sources are in docs/CALIBRATION.md;
//! - a schedlab TOML file ([`from_toml_str`]);
//! - an hwloc XML file from `lstopo --of xml` ([`from_hwloc_xml_str`]);
//! - the machine schedlab runs on, from Linux sysfs ([`from_sysfs`]).
//!
//! Validation happens here, at the edge: a `Machine` that exists is consistent.

use std::fmt;
use std::path::Path;

pub mod cost;

pub use schedlab_topology::{cpulist, parse_cpulist, CpuId, CpuInfo, CpuTopology, CpuVendor};

mod format;
mod hwloc;
mod sysfs;

/// A modelled machine: topology plus the hardware constants of the cost model.
#[derive(Clone, Debug, PartialEq)]
pub struct Machine {
    /// Preset name or file stem.
    pub name: String,
    /// One line, e.g. "AMD EPYC 7763 Milan 2x64C/128T, NPS4".
    pub description: String,
    /// One line: where the layout and constants come from.
    pub source: String,
    pub topology: CpuTopology,
    pub caches: CacheSizes,
    pub costs: Costs,
    /// Shallowest first; at least one (POLL or C1).
    pub idle_states: Vec<IdleState>,
    /// The machine's background: tick and interrupt time, per-CPU kernel threads.
    pub noise: Noise,
}

/// The background every real machine has (the `[noise]` section of a machine
/// file; docs/CALIBRATION.md "Machine noise"): the scheduler tick's interrupt and
/// other interrupts and softirqs take time from the running task, and per-CPU
/// kernel threads (kworker, kcompactd, rcu, migration, ksoftirqd) wake on every
/// CPU now and then, run briefly and sleep again. Rates are per CPU; times are
/// means of exponential distributions drawn from the run's seeded RNG.
/// `--machine-model NO_NOISE` turns all of it off.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Noise {
    /// CPU time the tick interrupt (hrtimer, scheduler_tick(), softirq raise)
    /// takes from the task it interrupts, at every tick of a busy CPU.
    pub tick_ns: u64,
    /// Other interrupts and softirqs (device, RCU, TIMER) per CPU per second.
    pub irq_per_s: f64,
    /// Mean time one of them takes from the interrupted task.
    pub irq_ns: u64,
    /// Wakeups of per-CPU kernel threads per CPU per second.
    pub kthread_per_s: f64,
    /// Mean CPU time of one kernel-thread activation.
    pub kthread_run_ns: u64,
    /// Wakeups of unbound background tasks (the RCU grace-period kthread, a
    /// daemon's timer, an unbound kworker) from interrupt context, per CPU per
    /// second: `try_to_wake_up()` runs with the interrupted task as `current`,
    /// so its wakee_flips count them (record_wakee()). Absent from a file: the
    /// measured default.
    #[serde(default = "default_unbound_per_s")]
    pub unbound_per_s: f64,
    /// Mean CPU time of one unbound background activation.
    #[serde(default = "default_unbound_run_ns")]
    pub unbound_run_ns: u64,
    /// How many distinct unbound tasks share those wakeups: task i takes a
    /// share proportional to 2^-i (three tasks: 57 / 29 / 14 %). What counts
    /// for record_wakee() is how often consecutive wakeups in one task's
    /// context wake different tasks: with one task never, with the guest's
    /// measured mix 58-60 % of the time (`UNBOUND_TASKS_MEASURED`). Absent
    /// from a file: 1 (docs/CALIBRATION.md "Machine noise" says why).
    #[serde(default = "default_unbound_tasks")]
    pub unbound_tasks: u32,
}

/// Unbound background wakeups measured on the 2-vCPU guest (tracefs, idle 3 s
/// and during pgbench 1 s: 34 and 36 per second for the machine: its agent's
/// timer thread, rcu_preempt, unbound kworkers, kdamond, kcompactd;
/// docs/CALIBRATION.md "Machine noise").
pub const UNBOUND_PER_S: f64 = 17.0;
/// Their mean run: 28 us (agent thread), 6 us (rcu_preempt), 16 us (kworker/u) in
/// the pgbench trace, 20 us over all.
pub const UNBOUND_RUN_NS: u64 = 20_000;
/// Distinct unbound tasks woken from interrupt context, by default: one (the
/// model of session 14).
pub const UNBOUND_TASKS: u32 = 1;
/// What the guest has: its idle trace (tracefs sched_waking in hard or soft
/// interrupt context, 5 s, session 28) wakes the agent's timer thread 57 %,
/// rcu_preempt 27 % and four others (tokio, kcompactd, kdamond, unbound
/// kworkers) 16 % of the time, so two consecutive wakeups differ with
/// probability 1 - sum(p^2) = 0.60; three tasks with halving shares (57 / 29
/// / 14 %) give 0.57 (docs/CALIBRATION.md "Machine noise"). Not the default:
/// on its own it moves no calibrated figure toward the real one.
pub const UNBOUND_TASKS_MEASURED: u32 = 3;
/// The most distinct unbound tasks a machine file may ask for.
pub const MAX_UNBOUND_TASKS: u32 = 16;
fn default_unbound_tasks() -> u32 {
    UNBOUND_TASKS
}
fn default_unbound_per_s() -> f64 {
    UNBOUND_PER_S
}
fn default_unbound_run_ns() -> u64 {
    UNBOUND_RUN_NS
}

impl Noise {
    /// No background at all (what `NO_NOISE` means).
    pub const NONE: Noise = Noise {
        tick_ns: 0,
        irq_per_s: 0.0,
        irq_ns: 0,
        kthread_per_s: 0.0,
        kthread_run_ns: 0,
        unbound_per_s: 0.0,
        unbound_run_ns: 0,
        unbound_tasks: 1,
    };

    /// Measured on the 2-vCPU KVM guest schedlab is developed on
    /// (docs/CALIBRATION.md "Machine noise"): used for `local` when it is a
    /// virtual machine. The tick and the interrupts are what a busy task loses
    /// (scripts/calib-src/cpugaps.c, session 26, pooled over 18 runs): the
    /// guest's tick with its VM exits takes 26.4 us on average (the guest's irq
    /// tracepoints see 5 us of it), and the host's exits and work on the vCPU
    /// come 694 times a second for 6.7 us on average (253-2,182 per second
    /// between runs, with the host's load); the kernel threads from tracefs.
    /// The same figures as tests/data/local-guest.toml.
    pub const GUEST_MEASURED: Noise = Noise {
        tick_ns: 26_400,
        irq_per_s: 694.0,
        irq_ns: 6_700,
        kthread_per_s: 5.0,
        kthread_run_ns: 12_000,
        unbound_per_s: UNBOUND_PER_S,
        unbound_run_ns: UNBOUND_RUN_NS,
        unbound_tasks: UNBOUND_TASKS,
    };

    /// Bare-metal default for machines whose file has no `[noise]` section: the
    /// kernel's own activity measured on the guest with tracefs (softirqs and
    /// device interrupts 20 per second for 5 us, the kernel threads, the
    /// unbound background), with the tick at the cost of a bare-metal timer
    /// interrupt [assumed, see docs/CALIBRATION.md]; none of the hypervisor's
    /// share that [`Noise::GUEST_MEASURED`] carries.
    pub const BARE_METAL_DEFAULT: Noise = Noise { tick_ns: 2_000, irq_per_s: 20.0, irq_ns: 5_000, ..Noise::GUEST_MEASURED };
}

impl Default for Noise {
    fn default() -> Self {
        Noise::BARE_METAL_DEFAULT
    }
}

/// Cache sizes. L1d and L2 are per core; the LLC size is per LLC instance.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSizes {
    pub l1d_kib: u32,
    /// Per core.
    pub l2_kib: u32,
    /// Per LLC instance.
    pub llc_kib: u32,
    /// Whether the LLC holds a copy of every line in the L1/L2 below it.
    pub llc_inclusive: bool,
}

/// Hardware and software-path costs, all in nanoseconds unless named otherwise.
/// Values and their sources per preset: docs/CALIBRATION.md.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Costs {
    /// Nominal (base) core frequency.
    pub freq_mhz: u32,
    /// One context switch between tasks of the same mm.
    pub context_switch_ns: u64,
    /// Extra cost of switching to another process's mm (CR3 write + TLB refill at
    /// a small footprint).
    pub mm_switch_ns: u64,
    /// IPI send -> handler entry on the target.
    pub ipi_ns: u64,
    /// CPU time the sender spends sending one IPI, charged to the task that
    /// wakes a task on another CPU when the wakeup needs an IPI. Bare metal:
    /// the APIC ICR write, ~0.1 us, left at 0 (FIDELITY F-448); a guest
    /// without IPI virtualization exits to the host on the write (measured
    /// 8 us on the EPYC KVM guest, docs/CALIBRATION.md "local"). Optional in
    /// machine files (default 0).
    #[serde(default)]
    pub ipi_send_ns: u64,
    /// Data of other programs that enters the caches of a CPU while it halts
    /// (MB/s, i.e. bytes per microsecond of halt): a virtual machine's vCPU
    /// halts to the host, which runs other work on that core and LLC (or
    /// resumes the vCPU thread on another core), so a halted vCPU comes back
    /// with its tasks' working sets partly evicted. Bare metal: 0 (an idle
    /// core's caches keep their contents; FIDELITY F-450). Optional in
    /// machine files (default 0); measured 7,000 on the EPYC KVM guest
    /// (docs/CALIBRATION.md "local").
    #[serde(default)]
    pub halt_evict_mbps: u64,
    /// One-way cache-line transfer between SMT siblings.
    pub c2c_smt_ns: u64,
    /// One-way cache-line transfer between cores sharing an LLC.
    pub c2c_llc_ns: u64,
    /// Same package, other LLC.
    pub c2c_cross_llc_ns: u64,
    /// Other package.
    pub c2c_cross_package_ns: u64,
    /// Load-to-use latency of an L1 miss served by the L2. Optional in
    /// machine files: 0 or absent means 14 core cycles at `freq_mhz`
    /// [assumed] (`Costs::l2_hit_ns()`).
    #[serde(default)]
    pub l2_hit_ns: u64,
    /// Load-to-use latency of an L2 miss served by the LLC.
    pub llc_hit_ns: u64,
    /// Idle load-to-use latency of local DRAM.
    pub dram_local_ns: u64,
    /// Idle load-to-use latency of the farthest node's DRAM.
    pub dram_remote_ns: u64,
    /// Throughput of a thread while its SMT sibling is busy, percent of solo.
    pub smt_factor_pct: u32,
    /// Sustainable memory bandwidth of one LLC instance (MB/s).
    pub mem_bw_llc_mbps: u64,
    /// Sustainable memory bandwidth of one NUMA node (MB/s).
    pub mem_bw_node_mbps: u64,
    /// Streaming bandwidth one core reaches alone (MB/s, STREAM's counting):
    /// a core's outstanding misses bound it below the LLC's and node's share.
    /// Optional in machine files: 15,000 [assumed] when absent.
    #[serde(default = "default_core_bw")]
    pub mem_bw_core_mbps: u64,
    /// Hold time of a remote enqueue under rq->lock.
    pub rq_lock_hold_ns: u64,
    /// Cost of examining one CPU in an idle search.
    pub idle_scan_ns_per_cpu: u64,
}

/// One cpuidle state as the governor sees it.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleState {
    pub name: String,
    pub exit_latency_ns: u64,
    pub target_residency_ns: u64,
}

/// A machine description that cannot be used; the message names the problem and
/// the fix.
#[derive(Debug)]
pub struct MachineError(pub String);

impl fmt::Display for MachineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for MachineError {}

/// A built-in machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PresetInfo {
    pub name: &'static str,
    pub description: &'static str,
}

struct Preset {
    info: PresetInfo,
    toml: &'static str,
}

macro_rules! presets {
    ($($name:literal => $desc:literal,)*) => {
        const PRESETS: &[Preset] = &[$(Preset {
            info: PresetInfo { name: $name, description: $desc },
            toml: include_str!(concat!("../presets/", $name, ".toml")),
        },)*];
        static PRESET_INFOS: &[PresetInfo] = &[$(PresetInfo { name: $name, description: $desc },)*];
    };
}

// The descriptions must equal the `description` key of each file (pinned by a test).
presets! {
    "x86-12" => "2x Intel Xeon X5650-class Westmere-EP 6C, HT off: 12 CPUs, 2 nodes (the 2013 wakee_flips test box)",
    "skylake-2s" => "2x Intel Xeon Platinum 8180 Skylake-SP 28C/56T: 112 CPUs, non-inclusive L3 per socket, 2 nodes",
    "zen3-2s-nps1" => "2x AMD EPYC 7763 Milan 64C/128T, NPS1: 256 CPUs, 16 CCX LLCs of 16 CPUs, 2 nodes",
    "zen3-2s-nps2" => "2x AMD EPYC 7763 Milan 64C/128T, NPS2: 256 CPUs, 16 CCX LLCs of 16 CPUs, 4 nodes",
    "zen3-2s-nps4" => "2x AMD EPYC 7763 Milan 64C/128T, NPS4: 256 CPUs, 16 CCX LLCs of 16 CPUs, 8 nodes",
    "spr-112" => "1x Intel Xeon Platinum 8480+ Sapphire Rapids 56C/112T: 112 CPUs in one LLC, 1 node",
    "numa-2n-96" => "2x Intel Xeon Cascade Lake 24C/48T: 96 CPUs, 2 nodes, SLIT 10/21",
    "laptop-4c8t" => "Intel Tiger Lake-class laptop, 4C/8T: 8 CPUs, one LLC, 1 node",
    "ivb-2s-40" => "2x Intel Xeon E5-2680 v2 Ivy Bridge-EP 10C/20T: 40 CPUs, 2 nodes (PeterZ's 2023 tbench box)",
}

/// The built-in presets, in a stable order.
pub fn presets() -> &'static [PresetInfo] {
    PRESET_INFOS
}

fn preset_names() -> String {
    PRESETS.iter().map(|p| p.info.name).collect::<Vec<_>>().join(", ")
}

/// Load a machine. `spec` is a preset name (see [`presets`]); `local` for the
/// machine schedlab runs on (Linux sysfs under `/`); or a path ending in `.toml`
/// (schedlab format, docs/machine-format.md) or `.xml` (hwloc, `lstopo --of xml`).
pub fn load(spec: &str) -> Result<Machine, MachineError> {
    if let Some(p) = PRESETS.iter().find(|p| p.info.name == spec) {
        return from_toml_str(p.toml, p.info.name);
    }
    if spec == "local" {
        return from_sysfs(Path::new("/"));
    }
    let lower = spec.to_ascii_lowercase();
    let is_toml = lower.ends_with(".toml");
    let is_xml = lower.ends_with(".xml");
    if !is_toml && !is_xml {
        return Err(MachineError(format!(
            "unknown machine {spec:?}: not a preset, not \"local\", and not a file path ending in .toml or .xml; \
             valid presets: {}; use \"local\" for this machine, a schedlab machine file (*.toml, see docs/machine-format.md) \
             or an hwloc file from `lstopo --of xml` (*.xml)",
            preset_names()
        )));
    }
    let path = Path::new(spec);
    let text = std::fs::read_to_string(path)
        .map_err(|e| MachineError(format!("cannot read machine file {spec:?}: {e}; check the path (presets: {})", preset_names())))?;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or(spec);
    if is_toml {
        from_toml_str(&text, stem)
    } else {
        from_hwloc_xml_str(&text, stem)
    }
}

/// Parse a schedlab machine file. `name` becomes [`Machine::name`] (if empty, the
/// file's `name` key is used). Errors name the field and, where known, the line.
pub fn from_toml_str(text: &str, name: &str) -> Result<Machine, MachineError> {
    format::from_toml_str(text, name)
}

/// Import an hwloc 2.x (or 1.x) XML topology. Costs are generic ([assumed]).
pub fn from_hwloc_xml_str(text: &str, name: &str) -> Result<Machine, MachineError> {
    hwloc::from_hwloc_xml_str(text, name)
}

/// Read the machine described by Linux sysfs under `root` (`/` normally):
/// `sys/devices/system/cpu` and `sys/devices/system/node`. Costs are generic
/// ([assumed]).
pub fn from_sysfs(root: &Path) -> Result<Machine, MachineError> {
    sysfs::from_sysfs(root)
}

impl Machine {
    /// The machine in schedlab's TOML format; `from_toml_str(&m.to_toml(), &m.name)`
    /// gives back `m`. Uses the compact topology form when the topology is regular
    /// and the explicit per-CPU list otherwise.
    pub fn to_toml(&self) -> String {
        format::to_toml(self)
    }

    /// Check the constants (the topology is checked by `CpuTopology::new`).
    /// Field names in messages are those of the TOML format.
    pub fn validate(&self) -> Result<(), MachineError> {
        validate_parts(&self.caches, &self.costs, &self.idle_states)
            .and_then(|()| validate_noise(&self.noise))
            .map_err(|(field, msg)| MachineError(format!("machine {:?}: {field}: {msg}", self.name)))
    }
}

/// Checks of a `[noise]` section: (field, message naming the fix).
pub(crate) fn validate_noise(n: &Noise) -> Result<(), (String, String)> {
    for (f, v) in [("noise.irq_per_s", n.irq_per_s), ("noise.kthread_per_s", n.kthread_per_s), ("noise.unbound_per_s", n.unbound_per_s)] {
        if !v.is_finite() || !(0.0..=100_000.0).contains(&v) {
            return Err((f.into(), format!("is {v}; give a rate per CPU per second between 0 and 100000 (0 turns this source off)")));
        }
    }
    for (f, v) in [
        ("noise.tick_ns", n.tick_ns),
        ("noise.irq_ns", n.irq_ns),
        ("noise.kthread_run_ns", n.kthread_run_ns),
        ("noise.unbound_run_ns", n.unbound_run_ns),
    ] {
        if v > 1_000_000 {
            return Err((
                f.into(),
                format!("is {v} ns; background activations longer than 1 ms are not noise: give the mean time in ns (e.g. 5000)"),
            ));
        }
    }
    if !(1..=MAX_UNBOUND_TASKS).contains(&n.unbound_tasks) {
        return Err((
            "noise.unbound_tasks".into(),
            format!("is {}; give the number of distinct unbound background tasks, 1 to {MAX_UNBOUND_TASKS} ({UNBOUND_TASKS_MEASURED} is the guest's measured mix)", n.unbound_tasks),
        ));
    }
    Ok(())
}

/// Range checks on everything but the topology. Returns (field path, message with fix).
pub(crate) fn validate_parts(caches: &CacheSizes, costs: &Costs, idle: &[IdleState]) -> Result<(), (String, String)> {
    let e = |f: &str, m: String| Err((f.to_string(), m));
    for (f, v) in [("caches.l1d_kib", caches.l1d_kib), ("caches.l2_kib", caches.l2_kib), ("caches.llc_kib", caches.llc_kib)] {
        if v == 0 {
            return e(f, "is 0; give the size in KiB (e.g. 32 for a 32 KiB L1d)".into());
        }
        // The cost model keeps a task's warm part of a cache in 32 bits.
        if v >= 4 << 20 {
            return e(f, format!("is {v} KiB; a cache must be smaller than 4 GiB (4194304 KiB)"));
        }
    }

    if costs.freq_mhz == 0 {
        return e("costs.freq_mhz", "is 0; give the nominal core clock in MHz (e.g. 2450)".into());
    }
    if costs.smt_factor_pct == 0 || costs.smt_factor_pct > 100 {
        return e(
            "costs.smt_factor_pct",
            format!(
                "is {}; it must be 1..=100: the throughput of a thread while its SMT sibling is busy, in percent of \
                 running alone (typically 55-65; use 100 for no SMT penalty)",
                costs.smt_factor_pct
            ),
        );
    }
    if costs.context_switch_ns == 0 {
        return e("costs.context_switch_ns", "is 0; a context switch costs ~600-700 ns (calibration §3, L5)".into());
    }
    if costs.c2c_llc_ns == 0 {
        return e("costs.c2c_llc_ns", "is 0; give the one-way cache-line transfer time between cores of one LLC".into());
    }
    if costs.dram_local_ns == 0 {
        return e("costs.dram_local_ns", "is 0; give the idle local DRAM latency (~70-120 ns)".into());
    }
    if costs.l2_hit_ns > costs.llc_hit_ns {
        return e(
            "costs.l2_hit_ns",
            format!(
                "is {} but llc_hit_ns is {}; an L2 hit cannot be slower than an LLC hit (leave l2_hit_ns out for 14 core cycles)",
                costs.l2_hit_ns, costs.llc_hit_ns
            ),
        );
    }
    if costs.dram_remote_ns < costs.dram_local_ns {
        return e(
            "costs.dram_remote_ns",
            format!(
                "is {} but dram_local_ns is {}; remote memory cannot be faster than local (on a one-node machine set them equal)",
                costs.dram_remote_ns, costs.dram_local_ns
            ),
        );
    }
    if costs.mem_bw_llc_mbps == 0 {
        return e("costs.mem_bw_llc_mbps", "is 0; give the sustainable bandwidth of one LLC in MB/s".into());
    }
    if costs.mem_bw_core_mbps == 0 {
        return e("costs.mem_bw_core_mbps", "is 0; give one core's streaming bandwidth in MB/s (or leave the key out for 15000)".into());
    }
    if costs.mem_bw_node_mbps == 0 {
        return e("costs.mem_bw_node_mbps", "is 0; give the sustainable bandwidth of one NUMA node in MB/s".into());
    }
    if idle.is_empty() {
        return e(
            "idle_states",
            "is empty; give at least one state, e.g. name = \"POLL\", exit_latency_ns = 0, target_residency_ns = 0".into(),
        );
    }
    for (i, s) in idle.iter().enumerate() {
        if s.name.trim().is_empty() {
            return e(&format!("idle_states[{i}].name"), "is empty; name the state as cpuidle does (POLL, C1, C1E, C6...)".into());
        }
        if idle[..i].iter().any(|o| o.name == s.name) {
            return e(&format!("idle_states[{i}].name"), format!("{:?} appears twice; state names must be unique", s.name));
        }
        if i > 0 && s.exit_latency_ns < idle[i - 1].exit_latency_ns {
            return e(
                &format!("idle_states[{i}].exit_latency_ns"),
                format!(
                    "{} is below the previous state's {}; list states shallowest first (non-decreasing exit latency)",
                    s.exit_latency_ns,
                    idle[i - 1].exit_latency_ns
                ),
            );
        }
    }
    Ok(())
}

/// L2 hit latency in core cycles when a machine does not give `l2_hit_ns`
/// [assumed]: 14 is Skylake-SP/Cascade Lake's and Zen 4's, between Westmere's
/// 10 and Sapphire Rapids' 16 (machine-calibration P1-P5).
pub const DEFAULT_L2_HIT_CYCLES: u64 = 14;

impl Costs {
    /// Latency of an L1 miss served by the L2: `l2_hit_ns`, or
    /// `DEFAULT_L2_HIT_CYCLES` at `freq_mhz` when that is 0.
    pub fn l2_hit_ns(&self) -> u64 {
        if self.l2_hit_ns > 0 {
            self.l2_hit_ns
        } else {
            let f = self.freq_mhz.max(1) as u64;
            ((DEFAULT_L2_HIT_CYCLES * 1000 + f / 2) / f).max(1)
        }
    }
}

fn default_core_bw() -> u64 {
    cost::CostModel::CORE_BW_MBPS
}

/// Generic costs for imported machines whose constants are unknown ([assumed],
/// docs/CALIBRATION.md "local and imported machines"): a Skylake/Cascade Lake-class
/// 2-socket server. As a guest, the context switch and the IPI sender's cost
/// are the ones measured on the 2-vCPU EPYC KVM guest with `perf bench sched
/// pipe` pinned and unpinned (docs/CALIBRATION.md "local"; checked by
/// crates/engine/tests/local_calibration.rs).
/// A context switch in the EPYC KVM guest: `perf bench sched pipe` pinned to
/// one vCPU, measured without perf counters on it (session 13: 5.26 / 5.43 us
/// of CPU per round trip, processes / threads, 3 runs each; 6.54 / 6.74 under
/// the per-task counters used before) less two pipe writes and reads at the
/// cost `hackbench -p` pinned to one vCPU gives (0.685 us per message),
/// halved: the modelled round trip is then within 3 % of both;
/// docs/CALIBRATION.md "local".
pub const GUEST_CONTEXT_SWITCH_NS: u64 = 1800;
/// The waker's VM exit on an IPI in the EPYC KVM guest: unpinned `perf bench
/// sched pipe` takes 28.5 / 28.2 us of CPU per round trip (processes /
/// threads, without perf counters, session 13) against 5.3 / 5.4 pinned,
/// 11.6 / 11.4 us more per cross-vCPU wakeup; 11 us puts the modelled round
/// trip within 1 % (it was 10 us from the same rows measured under per-task
/// perf counters, 17-27 us per round trip).
pub const GUEST_IPI_SEND_NS: u64 = 11_000;
/// A halted vCPU of the EPYC KVM guest back to running after an IPI: the host
/// wakes the vCPU thread and re-enters the guest (unpinned pipe: 43-58 us per
/// round trip of which ~12 us is CPU on each side).
pub const GUEST_HLT_EXIT_NS: u64 = 15_000;

/// Foreign data entering a halted vCPU's L2 and LLC on the EPYC KVM guest: a
/// pointer chase over 64 KiB / 256 KiB re-run after a halt of 50 us - 10 ms
/// (scripts/calib-src/haltcache.c): the L2 copy is mostly gone after
/// 50-200 us and the LLC copy after 3-10 ms; one rate for both levels fits
/// the LLC loss at 1-10 ms within 0.1 (docs/CALIBRATION.md "local").
pub const GUEST_HALT_EVICT_MBPS: u64 = 7_000;

/// One-way cache-line transfer between two vCPUs of the EPYC KVM guest (one
/// CCX): a token passed through one line, 64 ns per round trip
/// (scripts/calib-src/c2c.c; docs/CALIBRATION.md "local").
pub const GUEST_C2C_LLC_NS: u64 = 32;

pub(crate) fn generic_costs(freq_mhz: u32, guest: bool) -> Costs {
    Costs {
        freq_mhz,
        context_switch_ns: if guest { GUEST_CONTEXT_SWITCH_NS } else { 600 },
        mm_switch_ns: 60,
        ipi_ns: if guest { 5000 } else { 1000 },
        ipi_send_ns: if guest { GUEST_IPI_SEND_NS } else { 0 },
        halt_evict_mbps: if guest { GUEST_HALT_EVICT_MBPS } else { 0 },
        c2c_smt_ns: 8,
        c2c_llc_ns: if guest { GUEST_C2C_LLC_NS } else { 40 },
        c2c_cross_llc_ns: 110,
        c2c_cross_package_ns: 140,
        l2_hit_ns: 0,
        llc_hit_ns: 20,
        dram_local_ns: 90,
        dram_remote_ns: 140,
        smt_factor_pct: 60,
        mem_bw_llc_mbps: 40_000,
        mem_bw_node_mbps: 80_000,
        mem_bw_core_mbps: default_core_bw(),
        rq_lock_hold_ns: 300,
        idle_scan_ns_per_cpu: 40,
    }
}

/// The vendor from a CPUID vendor string, as in `/proc/cpuinfo` `vendor_id` or
/// hwloc's `CPUVendor` info: `GenuineIntel` -> Intel, `AuthenticAMD` and
/// `HygonGenuine` (Hygon Dhyana, a Zen derivative the kernel treats like AMD) ->
/// Amd, anything else -> Other.
pub(crate) fn vendor_from_cpuid(s: &str) -> CpuVendor {
    match s.trim() {
        "GenuineIntel" => CpuVendor::Intel,
        "AuthenticAMD" | "HygonGenuine" => CpuVendor::Amd,
        _ => CpuVendor::Other,
    }
}

/// Assign dense ids to keys in first-seen order (callers visit CPUs ascending, so
/// ids follow the first CPU of each group, deterministically).
pub(crate) struct Renumber<K: Ord> {
    map: std::collections::BTreeMap<K, u32>,
}

impl<K: Ord> Default for Renumber<K> {
    fn default() -> Self {
        Renumber { map: std::collections::BTreeMap::new() }
    }
}

impl<K: Ord> Renumber<K> {
    pub(crate) fn id(&mut self, k: K) -> u32 {
        let n = self.map.len() as u32;
        *self.map.entry(k).or_insert(n)
    }
}

/// Summary like "256 CPUs, 2 packages, 16 LLCs, 8 nodes, 2 threads/core".
pub(crate) fn shape(t: &CpuTopology) -> String {
    let n = |k: usize, what: &str| format!("{k} {what}{}", if k == 1 { "" } else { "s" });
    format!(
        "{}, {}, {}, {}, {} threads/core",
        n(t.nr_cpus(), "CPU"),
        n(t.nr_packages(), "package"),
        n(t.nr_llcs(), "LLC"),
        n(t.nr_nodes(), "node"),
        t.threads_per_core()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: impl Iterator<Item = CpuId>) -> Vec<u16> {
        v.map(|c| c.0).collect()
    }

    #[test]
    fn every_preset_loads_and_matches_its_description() {
        for p in presets() {
            let m = load(p.name).unwrap_or_else(|e| panic!("{}: {e}", p.name));
            assert_eq!(m.name, p.name);
            assert_eq!(m.description, p.description, "{}: presets! description differs from the file", p.name);
            assert!(!m.source.is_empty() && !m.source.contains('\n'));
            assert!(!m.description.contains('\n'));
            m.validate().unwrap();
        }
        assert_eq!(presets().len(), 9);
    }

    #[test]
    fn preset_counts() {
        let counts = |n: &str| {
            let t = load(n).unwrap().topology;
            (t.nr_cpus(), t.nr_packages(), t.nr_nodes(), t.nr_llcs(), t.threads_per_core())
        };
        assert_eq!(counts("x86-12"), (12, 2, 2, 2, 1));
        assert_eq!(counts("skylake-2s"), (112, 2, 2, 2, 2));
        assert_eq!(counts("zen3-2s-nps1"), (256, 2, 2, 16, 2));
        assert_eq!(counts("zen3-2s-nps2"), (256, 2, 4, 16, 2));
        assert_eq!(counts("zen3-2s-nps4"), (256, 2, 8, 16, 2));
        assert_eq!(counts("spr-112"), (112, 1, 1, 1, 2));
        assert_eq!(counts("numa-2n-96"), (96, 2, 2, 2, 2));
        assert_eq!(counts("laptop-4c8t"), (8, 1, 1, 1, 2));
        assert_eq!(counts("ivb-2s-40"), (40, 2, 2, 2, 2));
    }

    #[test]
    fn zen3_nps4_layout() {
        let t = load("zen3-2s-nps4").unwrap().topology;
        assert_eq!(cpulist(t.ids_where(|c| c.node == 0)), "0-15,128-143");
        assert_eq!(cpulist(t.ids_where(|c| c.node == 7)), "112-127,240-255");
        assert_eq!(ids(t.smt_siblings(CpuId(5))), vec![5, 133]);
        assert_eq!(cpulist(t.ids_where(|c| c.llc == 0)), "0-7,128-135");
        assert_eq!(cpulist(t.ids_where(|c| c.package == 1)), "64-127,192-255");
        assert_eq!(t.node_distance(0, 1), 12);
        assert_eq!(t.node_distance(0, 3), 12);
        assert_eq!(t.node_distance(0, 4), 32);
        assert_eq!(t.nr_clusters(), 16);
    }

    #[test]
    fn zen3_nps1_nps2_nodes() {
        let t = load("zen3-2s-nps1").unwrap().topology;
        assert_eq!(cpulist(t.ids_where(|c| c.node == 1)), "64-127,192-255");
        assert_eq!(t.distance_matrix(), &[vec![10, 32], vec![32, 10]]);
        let t = load("zen3-2s-nps2").unwrap().topology;
        assert_eq!(cpulist(t.ids_where(|c| c.node == 1)), "32-63,160-191");
        assert_eq!(t.node_distance(0, 1), 12);
        assert_eq!(t.node_distance(1, 2), 32);
    }

    #[test]
    fn spr_one_llc_of_112() {
        let t = load("spr-112").unwrap().topology;
        assert_eq!(t.ids_where(|c| c.llc == 0).count(), 112);
        assert_eq!(ids(t.smt_siblings(CpuId(3))), vec![3, 59]);
    }

    #[test]
    fn x86_12_two_nodes_of_six_no_smt() {
        let m = load("x86-12").unwrap();
        let t = &m.topology;
        assert_eq!(cpulist(t.ids_where(|c| c.node == 0)), "0-5");
        assert_eq!(cpulist(t.ids_where(|c| c.node == 1)), "6-11");
        assert_eq!(t.threads_per_core(), 1);
        assert_eq!(t.nr_cores(), 12);
        assert_eq!(t.node_distance(0, 1), 20);
        assert!(m.caches.llc_inclusive);
    }

    #[test]
    fn numa_96_and_laptop_numbering() {
        let t = load("numa-2n-96").unwrap().topology;
        assert_eq!(cpulist(t.ids_where(|c| c.package == 0)), "0-23,48-71");
        assert_eq!(ids(t.smt_siblings(CpuId(30))), vec![30, 78]);
        assert_eq!(t.node_distance(0, 1), 21);
        let t = load("laptop-4c8t").unwrap().topology;
        assert_eq!(ids(t.smt_siblings(CpuId(2))), vec![2, 3]);
        assert_eq!(t.nr_cores(), 4);
    }

    #[test]
    fn skylake_numbering() {
        let t = load("skylake-2s").unwrap().topology;
        assert_eq!(cpulist(t.ids_where(|c| c.node == 0)), "0-27,56-83");
        assert_eq!(t.node_distance(0, 1), 21);
    }

    #[test]
    fn every_preset_round_trips() {
        for p in presets() {
            let m = load(p.name).unwrap();
            let text = m.to_toml();
            let back = from_toml_str(&text, p.name).unwrap_or_else(|e| panic!("{}: {e}\n{text}", p.name));
            assert_eq!(back, m, "{}", p.name);
            // compact form chosen for regular topologies
            assert!(!text.contains("cpu = ["), "{}", p.name);
        }
    }

    #[test]
    fn preset_vendors() {
        assert_eq!(load("zen3-2s-nps4").unwrap().topology.vendor(), CpuVendor::Amd);
        assert_eq!(load("spr-112").unwrap().topology.vendor(), CpuVendor::Intel);
        for p in presets() {
            let want = if p.name.starts_with("zen3-") { CpuVendor::Amd } else { CpuVendor::Intel };
            assert_eq!(load(p.name).unwrap().topology.vendor(), want, "{}", p.name);
        }
    }

    #[test]
    fn cpuid_vendor_strings() {
        assert_eq!(vendor_from_cpuid("GenuineIntel"), CpuVendor::Intel);
        assert_eq!(vendor_from_cpuid("AuthenticAMD"), CpuVendor::Amd);
        assert_eq!(vendor_from_cpuid("HygonGenuine"), CpuVendor::Amd);
        assert_eq!(vendor_from_cpuid("CentaurHauls"), CpuVendor::Other);
        assert_eq!(vendor_from_cpuid(""), CpuVendor::Other);
    }

    #[test]
    fn unknown_preset_lists_presets() {
        let e = load("zen4").unwrap_err().0;
        for p in presets() {
            assert!(e.contains(p.name), "{e}");
        }
        assert!(e.contains(".toml") && e.contains(".xml"), "{e}");
    }

    #[test]
    fn missing_file_is_reported() {
        let e = load("/nonexistent/dir/m.toml").unwrap_err().0;
        assert!(e.contains("cannot read machine file"), "{e}");
    }

    #[test]
    fn example_files_load() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/machines/");
        let m = load(&format!("{dir}numa-8cpu-2s-smt2.toml")).unwrap();
        assert_eq!(m.name, "numa-8cpu-2s-smt2");
        assert_eq!(m.topology.nr_cpus(), 8);
        assert_eq!(m.topology.nr_nodes(), 2);
        assert_eq!(m.topology.threads_per_core(), 2);
        assert_eq!(m.topology.node_distance(0, 1), 20);
        assert_eq!(m.topology.vendor(), CpuVendor::Intel);
    }

    #[test]
    fn local_machine_loads() {
        if !Path::new("/sys/devices/system/cpu").exists() {
            return;
        }
        let m = load("local").unwrap();
        assert!(m.topology.nr_cpus() >= 1);
        assert_eq!(m.name, "local");
        let back = from_toml_str(&m.to_toml(), "local").unwrap();
        assert_eq!(back, m);
    }
}
