//! The machine's background (`schedlab_machine::Noise`): what every real
//! machine runs besides the benchmark, so that placements a real machine
//! would disturb do not stay frozen.
//!
//! - The tick's interrupt takes `tick_ns` from the task it interrupts (the
//!   engine's Tick event adds it to the running task's work).
//! - Other interrupts and softirqs (devices, RCU, TIMER) arrive on each CPU as a
//!   Poisson process of `irq_per_s` and take an exponentially distributed time
//!   (mean `irq_ns`) from the running task; an idle CPU just handles them.
//! - Per-CPU kernel threads (kworker, kcompactd, rcu, migration, ksoftirqd) are
//!   one CFS task per CPU, pinned, nice 0, without an mm (lazy TLB). A Poisson
//!   process of `kthread_per_s` per CPU wakes it from that CPU's timer softirq
//!   (`try_to_wake_up()` with the task running there as `current`, not WF_SYNC,
//!   as a timer or queue_work() from interrupt context does), and it runs an
//!   exponentially distributed time (mean `kthread_run_ns`) and sleeps. An
//!   activation that finds the thread still runnable is folded into it (a
//!   kworker drains its queue in one run).
//!
//! - `unbound_tasks` unbound background tasks for the machine (the RCU
//!   grace-period kthread, a daemon's timer thread, an unbound kworker): a
//!   Poisson process of `unbound_per_s` per CPU wakes one of them, task i with
//!   a share proportional to 2^-i, from that CPU's interrupt with the task
//!   running there as `current`, not WF_SYNC. Unlike the per-CPU threads they
//!   go through select_task_rq_fair(), whose record_wakee() counts them in the
//!   interrupted task's wakee_flips, as the kernel does: a flip each time the
//!   wakee differs from that task's last one, so how many distinct tasks there
//!   are matters, not only the rate. Each runs an exponentially distributed
//!   time (mean `unbound_run_ns`) and sleeps. An activation that finds its task
//!   still runnable is folded into it.
//!
//! Draws come from a stream of their own, so the workload's jitter draws are
//! the same with and without noise. The kernel threads are not the workload's:
//! they do not keep a run alive and are left out of its switch, wakeup,
//! migration and run-delay figures (RunResult::noise counts them); they are in
//! /proc/schedstat and in traces, as on a real machine.
// FIDELITY(F-802): one merged kthread per CPU; rates and durations measured on the 2-vCPU guest (docs/CALIBRATION.md "Machine noise").

use schedlab_kernel::{TaskId, TaskParams, WakeFlags};
use schedlab_machine::cost::{Component, TaskMem};
use schedlab_topology::CpuId;

use crate::rng::Pcg32;
use crate::{EvKind, LoopStack, Sim, SimConfig, TaskRt};

/// `TaskRt::program` of a kernel thread (it has no ops; `kthread_step` runs it).
pub(crate) const KTHREAD_PROGRAM: u32 = u32::MAX;
/// Name of the first unbound background task in results and traces; the
/// others are `kthread/unbound1`, `kthread/unbound2`, ... (the per-CPU kernel
/// threads are `kthread/CPU`).
pub(crate) const UNBOUND_NAME: &str = "kthread/unbound";
/// Which background task `create_bg_task` creates.
#[derive(Clone, Copy)]
enum BgTask {
    /// The kernel thread of this CPU, pinned there.
    PerCpu(CpuId),
    /// Unbound background task number i.
    Unbound(usize),
}

/// `TaskParams::mm` of a kernel thread: no mm, the CPU keeps the last one (lazy TLB).
pub(crate) const KTHREAD_MM: u32 = u32::MAX;

/// Counts of the background, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoiseStats {
    /// Kernel-thread wakeups that found the thread asleep (each one ran),
    /// the unbound background task's included.
    pub kthread_wakeups: u64,
    /// Of those, the unbound background task's.
    pub unbound_wakeups: u64,
    /// CPU time the kernel threads ran.
    pub kthread_ns: u64,
    /// Interrupts (not the tick) that hit a running task, and the time they took.
    pub irqs: u64,
    pub irq_ns: u64,
    /// Time the tick's interrupt took from running tasks.
    pub tick_ns: u64,
    /// The kernel threads' own context switches, wakeups and migrations
    /// (left out of the workload's figures).
    pub switches: u64,
    pub migrations: u64,
}

/// Engine state of the background.
#[derive(Clone, Debug)]
pub(crate) struct NoiseRt {
    pub(crate) tick_ns: u64,
    irq_gap_ns: u64,
    irq_ns: u64,
    kthread_gap_ns: u64,
    kthread_run_ns: u64,
    rng: Pcg32,
    /// The kernel thread of each CPU, once created (at its first activation).
    pub(crate) kthread: Vec<Option<TaskId>>,
    /// The kernel thread of a CPU is runnable or running.
    active: Vec<bool>,
    unbound_gap_ns: u64,
    unbound_run_ns: u64,
    /// The unbound background tasks, each once created (at its first
    /// activation).
    pub(crate) unbound: Vec<Option<TaskId>>,
    /// Each is runnable or running.
    unbound_active: Vec<bool>,
    pub(crate) stats: NoiseStats,
    /// Event slots the background keeps armed (one per source and CPU).
    pub(crate) armed: usize,
}

fn gap_ns(per_s: f64) -> u64 {
    if per_s > 0.0 {
        (1e9 / per_s).round() as u64
    } else {
        0
    }
}

impl NoiseRt {
    pub(crate) fn new(m: &schedlab_machine::Machine, cfg: &SimConfig) -> NoiseRt {
        let on = cfg.model.on(Component::NOISE);
        let n = if on { m.noise.clone() } else { schedlab_machine::Noise::NONE };
        let cpus = m.topology.nr_cpus();
        NoiseRt {
            tick_ns: n.tick_ns,
            irq_gap_ns: if n.irq_ns > 0 { gap_ns(n.irq_per_s) } else { 0 },
            irq_ns: n.irq_ns,
            kthread_gap_ns: if n.kthread_run_ns > 0 { gap_ns(n.kthread_per_s) } else { 0 },
            kthread_run_ns: n.kthread_run_ns,
            rng: Pcg32::new(cfg.seed, 0x006e_6f69_7365),
            kthread: vec![None; cpus],
            active: vec![false; cpus],
            unbound_gap_ns: if n.unbound_run_ns > 0 { gap_ns(n.unbound_per_s) } else { 0 },
            unbound_run_ns: n.unbound_run_ns,
            unbound: vec![None; n.unbound_tasks.max(1) as usize],
            unbound_active: vec![false; n.unbound_tasks.max(1) as usize],
            stats: NoiseStats::default(),
            armed: 0,
        }
    }

    /// Which unbound task an activation wakes: task i with probability
    /// 2^(n-1-i) / (2^n - 1). With one task, no draw (the stream stays as it
    /// was).
    fn pick_unbound(&mut self) -> usize {
        let n = self.unbound.len() as u32;
        if n <= 1 {
            return 0;
        }
        let total = (1u64 << n) - 1;
        let mut u = (self.rng.next_u32() as u64 * total) >> 32;
        for i in 0..n as usize {
            let w = 1u64 << (n as usize - 1 - i);
            if u < w {
                return i;
            }
            u -= w;
        }
        n as usize - 1
    }

    /// The index of `t` among the unbound background tasks, if it is one.
    pub(crate) fn unbound_index(&self, t: TaskId) -> Option<usize> {
        self.unbound.iter().position(|&u| u == Some(t))
    }

    /// Name of `t` in results and traces if it is an unbound background task.
    pub(crate) fn unbound_name(&self, t: TaskId) -> Option<String> {
        self.unbound_index(t).map(|i| if i == 0 { UNBOUND_NAME.to_string() } else { format!("{UNBOUND_NAME}{i}") })
    }

    /// An exponentially distributed duration of mean `mean` ns (at least 1 ns).
    fn exp(&mut self, mean: u64) -> u64 {
        // Inverse transform on a 32-bit uniform in (0, 1].
        let u = (self.rng.next_u32() as f64 + 1.0) / 4_294_967_296.0;
        ((-u.ln() * mean as f64) as u64).max(1)
    }
}

impl Sim<'_> {
    /// Arm the first interrupt and kernel-thread activation of every CPU.
    pub(crate) fn noise_start(&mut self) {
        for c in 0..self.nr_cpus as u16 {
            if self.noise.irq_gap_ns > 0 {
                let at = self.noise.exp(self.noise.irq_gap_ns);
                self.push(at, EvKind::Irq { cpu: c });
                self.noise.armed += 1;
            }
            if self.noise.kthread_gap_ns > 0 {
                let at = self.noise.exp(self.noise.kthread_gap_ns);
                self.push(at, EvKind::Kthread { cpu: c });
                self.noise.armed += 1;
            }
            if self.noise.unbound_gap_ns > 0 {
                let at = self.noise.exp(self.noise.unbound_gap_ns);
                self.push(at, EvKind::Unbound { cpu: c });
                self.noise.armed += 1;
            }
        }
    }

    /// An interrupt on `c`: it takes its time from the running task.
    pub(crate) fn noise_irq(&mut self, c: CpuId) {
        let gap = self.noise.exp(self.noise.irq_gap_ns);
        self.push(self.now + gap, EvKind::Irq { cpu: c.0 });
        if let Some(t) = self.cpus[c.idx()].running {
            let d = self.noise.exp(self.noise.irq_ns);
            self.noise.stats.irqs += 1;
            self.noise.stats.irq_ns += d;
            self.steal(c, t, d);
        }
    }

    /// The tick's interrupt on busy `c` (called from the Tick event).
    #[inline]
    pub(crate) fn noise_tick(&mut self, c: CpuId, t: TaskId) {
        let d = self.noise.tick_ns;
        if d > 0 {
            self.noise.stats.tick_ns += d;
            self.steal(c, t, d);
        }
    }

    /// Interrupt time `d` (wall ns) on `c`: the running task `t` reaches the
    /// end of its segment that much later (its work is in nominal ns, or bytes
    /// in a memory phase; both progress at `rate` per 1000 ns).
    pub(crate) fn steal(&mut self, c: CpuId, t: TaskId, d: u64) {
        let rate = self.cpus[c.idx()].rate;
        self.rt[t.idx()].remaining += d * rate / 1000;
        self.reschedule_segment(c, t);
    }

    /// A kernel-thread activation on `c`: wake (or create) its kthread from the
    /// timer softirq, in the context of whatever runs on `c`.
    pub(crate) fn noise_kthread(&mut self, c: CpuId) {
        let gap = self.noise.exp(self.noise.kthread_gap_ns);
        self.push(self.now + gap, EvKind::Kthread { cpu: c.0 });
        if self.noise.active[c.idx()] {
            return; // still runnable: this work is done in the same run
        }
        self.noise.active[c.idx()] = true;
        self.noise.stats.kthread_wakeups += 1;
        match self.noise.kthread[c.idx()] {
            Some(k) => {
                let current = self.cpus[c.idx()].running;
                self.wake(k, c, current, WakeFlags::default());
                self.irq_exit_preempt(c);
            }
            None => self.create_kthread(c),
        }
    }

    /// An interrupt on `c` wakes the unbound background task, in the context of
    /// whatever runs on `c` (try_to_wake_up() from interrupt context: the
    /// interrupted task is `current`, and its wakee_flips count the wakeup).
    pub(crate) fn noise_unbound(&mut self, c: CpuId) {
        let gap = self.noise.exp(self.noise.unbound_gap_ns);
        self.push(self.now + gap, EvKind::Unbound { cpu: c.0 });
        let i = self.noise.pick_unbound();
        if self.noise.unbound_active[i] {
            return; // still runnable: this work is done in the same run
        }
        self.noise.unbound_active[i] = true;
        self.noise.stats.kthread_wakeups += 1;
        self.noise.stats.unbound_wakeups += 1;
        match self.noise.unbound[i] {
            Some(k) => {
                let current = self.cpus[c.idx()].running;
                self.wake(k, c, current, WakeFlags::default());
                self.irq_exit_preempt(c);
            }
            None => self.create_bg_task(c, BgTask::Unbound(i)),
        }
    }

    /// Create the kernel thread of `c` (pinned there, no mm) and wake it as new.
    fn create_kthread(&mut self, c: CpuId) {
        self.create_bg_task(c, BgTask::PerCpu(c));
    }

    /// Create a background task (no mm) from `c`'s interrupt and wake it as new.
    fn create_bg_task(&mut self, c: CpuId, which: BgTask) {
        let pin = match which {
            BgTask::PerCpu(p) => Some(vec![p]),
            BgTask::Unbound(_) => None,
        };
        let params = TaskParams { nice: 0, policy: Default::default(), mm: KTHREAD_MM, cpus_allowed: pin, group: 0 };
        let p = self.kernel.sched_fork(&params, None, c, self.now);
        debug_assert_eq!(p.idx(), self.rt.len());
        self.mem.push(TaskMem::default());
        self.rt.push(TaskRt {
            spec: u32::MAX,
            program: KTHREAD_PROGRAM,
            code_at: 0,
            code_len: 0,
            pc: 0,
            stage: 0,
            remaining: 0,
            loops: LoopStack::default(),
            reg: 0,
            req_stamps: Default::default(),
            mem: false,
            parent: None,
            unreaped: 0,
            waiting_child: false,
            live_children: 0,
            held_locks: 0,
            owed_refill: 0,
            pipe_waited: false,
            refill_deferred: false,
            timer_next: 0,
            // (Never read: a kernel thread runs no `Sleep` or `Timer` op.)
            timer_slack: 0,
            cpu_lock: crate::interp::NO_CPU_LOCK,
        });
        match which {
            BgTask::PerCpu(_) => self.noise.kthread[c.idx()] = Some(p),
            BgTask::Unbound(i) => self.noise.unbound[i] = Some(p),
        }
        self.kthread_ids.push(p);
        let r = self.kernel.wake_up_new_task(p, c, self.now, &mut self.fx);
        if self.trace.is_some() {
            self.tr_new_kthread(p, c, &r);
        }
        self.after_wake(r, c);
        self.irq_exit_preempt(c);
    }

    /// The kernel thread `t`'s program on `c`: run one activation, then sleep.
    /// Returns whether the caller should continue (a segment to run).
    pub(crate) fn kthread_step(&mut self, c: CpuId, t: TaskId) -> bool {
        let unbound = self.noise.unbound_index(t);
        if self.rt[t.idx()].stage == 0 {
            let mean = if unbound.is_some() { self.noise.unbound_run_ns } else { self.noise.kthread_run_ns };
            let d = self.noise.exp(mean);
            self.noise.stats.kthread_ns += d;
            let r = &mut self.rt[t.idx()];
            r.remaining = d;
            r.stage = 1;
            true
        } else {
            self.rt[t.idx()].stage = 0;
            if let Some(i) = unbound {
                self.noise.unbound_active[i] = false;
            } else {
                self.noise.active[c.idx()] = false;
            }
            self.block(c);
            false
        }
    }

    /// Whether `t` is one of the machine's kernel threads.
    #[inline]
    pub(crate) fn is_kthread(&self, t: TaskId) -> bool {
        self.rt[t.idx()].program == KTHREAD_PROGRAM
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_machine::cost::ModelSwitches;

    fn cfg(seed: u64, noise: bool) -> SimConfig {
        let mut model = ModelSwitches::default();
        model.set(Component::NOISE, noise);
        SimConfig { seed, model, schedstat: false, duration_ns: Some(1_000_000_000), switch_log: false, trace: false }
    }

    #[test]
    fn exponential_draws_have_the_mean() {
        let m = schedlab_machine::load("x86-12").unwrap();
        let mut n = NoiseRt::new(&m, &cfg(7, true));
        let k = 200_000u64;
        let sum: u64 = (0..k).map(|_| n.exp(10_000)).sum();
        let mean = sum / k;
        assert!((9_800..10_200).contains(&mean), "mean {mean}");
    }

    /// Twelve CPU hogs on x86-12 for one second: the background arrives at the
    /// machine's rates, the kernel threads' CPU time is taken from the hogs, and
    /// NO_NOISE has none of it.
    #[test]
    fn background_arrives_at_its_rates_and_takes_cpu_from_the_workload() {
        let m = schedlab_machine::load("x86-12").unwrap();
        let p = schedlab_workload::params::Params::parse("tasks=12").unwrap();
        let w = schedlab_workload::build("soaker", &p, 12, &m.topology.core_groups()).unwrap();
        let run = |noise: bool| crate::run(&m, schedlab_kernel::profile::profile("v6.12").unwrap(), &w, &cfg(3, noise));
        let (r, q) = (run(true), run(false));
        assert_eq!(q.noise, NoiseStats::default());
        let n = r.noise;
        // Poisson counts: 12 CPUs x 1 s x rate, within about 4 standard deviations.
        let per_cpu = n.kthread_wakeups - n.unbound_wakeups;
        assert!((35..=90).contains(&per_cpu), "per-CPU kthread wakeups {per_cpu}");
        assert!((150..=260).contains(&n.unbound_wakeups), "unbound wakeups {} (12 x 17 expected)", n.unbound_wakeups);
        assert!((180..=300).contains(&n.irqs), "irqs {}", n.irqs);
        let ticks = n.tick_ns / m.noise.tick_ns;
        assert!((2_900..=3_000).contains(&ticks), "ticks on 12 busy CPUs at HZ=250: {ticks}");
        // Every CPU is busy all the time: what the kthreads ran, the hogs did not.
        let hogs: u64 = r.groups.iter().map(|g| g.runtime_ns).sum();
        let total = 12 * 1_000_000_000u64;
        let missing = total - hogs;
        assert!(missing.abs_diff(n.kthread_ns) < 2_000_000, "hogs {hogs}, kthreads {}", n.kthread_ns);
        assert_eq!(q.groups.iter().map(|g| g.runtime_ns).sum::<u64>(), total);
        // The kernel threads are not the workload's.
        assert_eq!(r.tasks_created, q.tasks_created);
        // 12 per-CPU threads and the unbound one.
        assert_eq!(r.task_names.iter().filter(|(n, _)| n.starts_with("kthread/")).count(), 13);
        assert_eq!(r.task_names.iter().filter(|(n, _)| n == UNBOUND_NAME).count(), 1);
    }

    /// Twelve CPU hogs on x86-12 (its noise changed by `tweak`) under v6.12
    /// for one second: the run, the kernel, and the hogs' task indices.
    fn twelve_hogs(seed: u64, tweak: impl Fn(&mut schedlab_machine::Machine)) -> (crate::RunResult, schedlab_kernel::Kernel, Vec<usize>) {
        let mut m = schedlab_machine::load("x86-12").unwrap();
        tweak(&mut m);
        let p = schedlab_workload::params::Params::parse("tasks=12").unwrap();
        let w = schedlab_workload::build("soaker", &p, 12, &m.topology.core_groups()).unwrap();
        let c = cfg(seed, true);
        let k = schedlab_kernel::Kernel::new(&m.topology, schedlab_kernel::profile::profile("v6.12").unwrap());
        let (r, k) = crate::Sim::new(&m, k, &w, &c).run_keep_kernel(&c);
        let hogs: Vec<usize> = (0..k.tasks.len()).filter(|&i| r.task_names[i].0.starts_with("cpu-soaker")).collect();
        assert_eq!(hogs.len(), 12);
        (r, k, hogs)
    }

    /// The unbound wakeups are shared by `unbound_tasks` tasks with halving
    /// shares, and what record_wakee() counts is a change of wakee: one hog
    /// interrupted by wakeups of several distinct tasks gathers flips, where
    /// repeated wakeups of one task leave it at 1.
    #[test]
    fn distinct_unbound_wakees_give_the_interrupted_task_flips() {
        let run = |tasks: u32| {
            let (r, k, hogs) = twelve_hogs(5, |m| {
                m.noise.unbound_tasks = tasks;
                // Ten times the rate, so that every hog sees several within a
                // flip-decay second.
                m.noise.unbound_per_s *= 10.0;
            });
            let flips: u32 = hogs.iter().map(|&i| k.tasks[i].wakee_flips).sum();
            let unbound = r.task_names.iter().filter(|(n, _)| n.starts_with(UNBOUND_NAME)).count();
            (flips, unbound, r.noise.unbound_wakeups)
        };
        let (one, n1, w1) = run(1);
        let (three, n3, w3) = run(3);
        assert_eq!((n1, n3), (1, 3));
        assert!(w1 > 1_000 && w3 > 1_000, "unbound wakeups {w1} / {w3}");
        // One wakee: at most one flip per hog (its first wakeup).
        assert!(one <= 12, "one unbound task: {one} flips over 12 hogs");
        assert!(three > 5 * 12, "three unbound tasks: {three} flips over 12 hogs");
    }

    /// Task i of n gets 2^(n-1-i) / (2^n - 1) of the draws.
    #[test]
    fn unbound_shares_halve() {
        let mut m = schedlab_machine::load("x86-12").unwrap();
        assert_eq!(NoiseRt::new(&m, &cfg(9, true)).unbound.len(), 1, "one unbound task by default");
        m.noise.unbound_tasks = schedlab_machine::UNBOUND_TASKS_MEASURED;
        let mut n = NoiseRt::new(&m, &cfg(9, true));
        assert_eq!(n.unbound.len(), 3);
        let mut count = [0u32; 3];
        for _ in 0..70_000 {
            count[n.pick_unbound()] += 1;
        }
        for (i, want) in [40_000u32, 20_000, 10_000].iter().enumerate() {
            assert!(count[i].abs_diff(*want) < 800, "task {i}: {} draws, {want} expected", count[i]);
        }
    }

    /// The unbound task's wakeups go through select_task_rq_fair() from the
    /// interrupted task's context, so on a v4.7+ kernel they are the
    /// background's only contribution to a workload task's wakee_flips (a
    /// pinned kernel thread's wakeup skips record_wakee()); without them the
    /// CPU hogs (which wake nobody) have none.
    #[test]
    fn unbound_wakeups_count_in_the_interrupted_tasks_flips() {
        let flips = |unbound: bool| {
            let (r, k, hogs) = twelve_hogs(3, |m| {
                if !unbound {
                    m.noise.unbound_per_s = 0.0;
                }
            });
            assert_eq!(hogs.len(), 12);
            (hogs.iter().filter(|&&i| k.tasks[i].last_wakee.is_some()).count(), r.noise.unbound_wakeups)
        };
        let (with, n) = flips(true);
        assert!(n > 100 && with == 12, "{with} of 12 hogs woke the unbound task ({n} wakeups)");
        assert_eq!(flips(false), (0, 0), "pinned kernel threads leave no wakee history on v6.12");
    }

    #[test]
    fn no_noise_means_no_sources() {
        let m = schedlab_machine::load("x86-12").unwrap();
        let n = NoiseRt::new(&m, &cfg(1, false));
        assert_eq!((n.tick_ns, n.irq_gap_ns, n.kthread_gap_ns), (0, 0, 0));
        let n = NoiseRt::new(&m, &cfg(1, true));
        assert_eq!(n.tick_ns, m.noise.tick_ns);
        assert_eq!(n.kthread_gap_ns, 200_000_000); // 5 per second
    }
}
