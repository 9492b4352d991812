//! kernel/sched/core.c: the entry points the engine calls — `try_to_wake_up()`,
//! `wake_up_new_task()`, `__schedule()`, `scheduler_tick()`, exit — around the
//! fair class. Pure state machine: every entry takes `now` explicitly and
//! returns what the hardware must do next (which CPU must reschedule).

use crate::cpumask::CpuMask;
use crate::fair::flags::*;
use crate::features::SchedFeatures;
use crate::profile::{EffectiveTunables, ForkPlacement, KernelProfile, PickAlgo};
use crate::sched::{task_weight, CfsRq, Policy, Rq, SchedEntity, Task, TaskId, TaskState};
use crate::topology::{SchedDomains, SD_BALANCE_EXEC, SD_BALANCE_FORK, SD_BALANCE_WAKE};
use schedlab_topology::{CpuId, CpuTopology};

/// Wake flags (spec §3.1, v5.8+ values).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct WakeFlags(pub u32);

impl WakeFlags {
    pub const EXEC: WakeFlags = WakeFlags(0x02);
    pub const FORK: WakeFlags = WakeFlags(0x04);
    pub const TTWU: WakeFlags = WakeFlags(0x08);
    pub const SYNC: WakeFlags = WakeFlags(0x10);
    pub const MIGRATED: WakeFlags = WakeFlags(0x20);
    #[inline]
    pub fn contains(self, o: WakeFlags) -> bool {
        self.0 & o.0 == o.0
    }
    #[inline]
    pub fn union(self, o: WakeFlags) -> WakeFlags {
        WakeFlags(self.0 | o.0)
    }
    /// The SD_BALANCE_* flag sharing the low nibble.
    #[inline]
    pub fn sd_flag(self) -> u32 {
        let f = self.0 & 0xF;
        debug_assert!(f & !(SD_BALANCE_EXEC | SD_BALANCE_FORK | SD_BALANCE_WAKE) == 0);
        f
    }
}

/// Parameters of a new task.
#[derive(Clone, Debug, Default)]
pub struct TaskParams {
    pub nice: i8,
    pub policy: Policy,
    /// Process id: threads of one process share their mm.
    pub mm: u32,
    /// CPU affinity; None = all CPUs.
    pub cpus_allowed: Option<Vec<CpuId>>,
}

/// What a wakeup did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeResult {
    /// The CPU the task was enqueued on.
    pub cpu: CpuId,
    /// The task changed CPU (`WF_MIGRATED`).
    pub migrated: bool,
    /// `cpu` has TIF_NEED_RESCHED set (idle target or wakeup preemption).
    pub resched: bool,
}

/// Why `schedule()` is called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchReason {
    /// The current task blocks (voluntary switch; `prev_state != TASK_RUNNING`).
    Block,
    /// The current task exits.
    Exit,
    /// Preemption or an idle CPU picking up work (need_resched).
    Preempt,
}

/// What `schedule()` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchResult {
    pub prev: Option<TaskId>,
    pub next: Option<TaskId>,
    /// How long `next` waited on the runqueue for this switch-in (sched_info run delay).
    pub next_run_delay: Option<u64>,
}

/// The modelled kernel: runqueues, tasks, sched domains, for one profile.
pub struct Kernel {
    pub profile: KernelProfile,
    pub feats: SchedFeatures,
    pub tun: EffectiveTunables,
    pub sd: SchedDomains,
    pub rqs: Vec<Rq>,
    pub tasks: Vec<Task>,
    nr_cpus: usize,
}

impl Kernel {
    pub fn new(topo: &CpuTopology, profile: KernelProfile) -> Kernel {
        let n = topo.nr_cpus();
        let tun = EffectiveTunables::new(&profile, n);
        let sd = SchedDomains::build(topo, &profile);
        let rqs = (0..n)
            .map(|c| Rq {
                cpu: CpuId(c as u16),
                curr: None,
                cfs: CfsRq::default(),
                need_resched: false,
                idle_stamp: 0,
                avg_idle: 2 * tun.migration_cost_ns,
                max_idle_balance_cost: tun.migration_cost_ns,
                idle_since: Some(0),
                nr_switches: 0,
                ttwu_count: 0,
                ttwu_local: 0,
                sched_goidle: 0,
            })
            .collect();
        Kernel {
            feats: profile.features,
            profile,
            tun,
            sd,
            rqs,
            tasks: Vec::new(),
            nr_cpus: n,
        }
    }

    pub fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    /// Create a task (`copy_process()` / `sched_fork()`); it is not runnable
    /// until `wake_up_new_task()`. `cpu` is where it is created (the parent's CPU).
    pub fn sched_fork(
        &mut self,
        params: &TaskParams,
        parent: Option<TaskId>,
        cpu: CpuId,
        now: u64,
    ) -> TaskId {
        let id = TaskId(self.tasks.len() as u32);
        let weight = task_weight(params.nice, params.policy);
        let cpus_allowed = params
            .cpus_allowed
            .as_ref()
            .map(|v| CpuMask::from_cpus(self.nr_cpus, v.iter().copied()));
        let mut se = SchedEntity {
            weight,
            slice: self.tun.base_slice_ns,
            ..Default::default()
        };
        se.avg.last_update_time = now;
        // init_entity_runnable_average(): a new task starts at its full weight.
        se.avg.load_avg = weight;
        self.tasks.push(Task {
            id,
            se,
            nice: params.nice,
            policy: params.policy,
            cpu,
            state: TaskState::New,
            cpus_allowed,
            mm: params.mm,
            wakee_flips: 0,
            wakee_flip_decay_ts: 0,
            last_wakee: None,
            recent_used_cpu: cpu,
            nvcsw: 0,
            nivcsw: 0,
            nr_migrations: 0,
            run_delay: 0,
            pcount: 0,
            last_queued: None,
        });
        // task_fork_fair(): placement relative to the parent's cfs_rq.
        match self.profile.fork_placement {
            ForkPlacement::CfsTaskFork => {
                self.update_curr(cpu, now);
                if let Some(pp) = parent.filter(|&pp| self.rqs[cpu.idx()].cfs.curr == Some(pp)) {
                    self.tasks[id.idx()].se.vruntime = self.tasks[pp.idx()].se.vruntime;
                }
                self.place_entity_fork_cfs(cpu, id);
                let min = self.rqs[cpu.idx()].cfs.min_vruntime;
                let se = &mut self.tasks[id.idx()].se;
                se.vruntime = se.vruntime.wrapping_sub(min);
                se.vruntime_relative = true;
            }
            ForkPlacement::EevdfTaskFork | ForkPlacement::EevdfWakeUpNew => {}
        }
        id
    }

    fn place_entity_fork_cfs(&mut self, cpu: CpuId, p: TaskId) {
        // place_entity(cfs_rq, se, initial = 1): START_DEBIT.
        let min = self.rqs[cpu.idx()].cfs.min_vruntime;
        let mut v = min;
        if self.feats.has(crate::features::SchedFeat::START_DEBIT) {
            let w = self.tasks[p.idx()].se.weight;
            v = v.wrapping_add(crate::fair::calc_delta_fair(self.sched_slice(cpu, p), w));
        }
        let se = &mut self.tasks[p.idx()].se;
        if crate::fair::vdiff(v, se.vruntime) > 0 {
            se.vruntime = v;
        }
    }

    /// `post_init_entity_util_avg()` (spec §6.1 "New task").
    fn post_init_entity_util_avg(&mut self, cpu: CpuId, p: TaskId) {
        let cfs = &self.rqs[cpu.idx()].cfs;
        let cap = (1024i64 - cfs.avg.util_avg as i64) / 2;
        let w = self.tasks[p.idx()].se.weight;
        let util = if cap > 0 {
            if cfs.avg.util_avg != 0 {
                (cfs.avg.util_avg * w / (cfs.avg.load_avg + 1)).min(cap as u64)
            } else {
                cap as u64
            }
        } else {
            0
        };
        let divider = crate::pelt::PELT_MIN_DIVIDER;
        let sa = &mut self.tasks[p.idx()].se.avg;
        sa.util_avg = util;
        sa.util_sum = util * divider;
        sa.runnable_avg = util;
        sa.runnable_sum = util * divider;
    }

    /// `wake_up_new_task()`: fork balancing through `select_task_rq(WF_FORK)`
    /// (the slow path), enqueue, and the wakeup preemption check.
    pub fn wake_up_new_task(&mut self, p: TaskId, this_cpu: CpuId, now: u64) -> WakeResult {
        debug_assert_eq!(self.tasks[p.idx()].state, TaskState::New);
        let prev = self.tasks[p.idx()].cpu;
        let cpu = self.select_task_rq(p, prev, this_cpu, WakeFlags::FORK);
        // __set_task_cpu(): placing a new task is not a migration.
        self.tasks[p.idx()].cpu = cpu;
        self.post_init_entity_util_avg(cpu, p);
        self.attach_entity_load_avg(cpu, p);
        self.tasks[p.idx()].se.avg.last_update_time = now;
        let flags = match self.profile.fork_placement {
            ForkPlacement::EevdfWakeUpNew => ENQUEUE_INITIAL,
            _ => 0,
        };
        self.activate_task(cpu, p, flags, now);
        self.check_preempt_wakeup(cpu, p, true, now);
        WakeResult {
            cpu,
            migrated: cpu != prev,
            resched: self.rqs[cpu.idx()].need_resched,
        }
    }

    /// `select_task_rq()`: the class hook unless the task may run on one CPU only.
    fn select_task_rq(&mut self, p: TaskId, prev: CpuId, this_cpu: CpuId, wf: WakeFlags) -> CpuId {
        let allowed = self.tasks[p.idx()].cpus_allowed.clone();
        let cpu = match &allowed {
            Some(m) if m.weight() == 1 => m.first().unwrap(),
            _ => self.select_task_rq_fair(p, prev, this_cpu, wf),
        };
        match &allowed {
            Some(m) if !m.test(cpu) => m.first().expect("validated non-empty affinity"),
            _ => cpu,
        }
    }

    /// `set_task_cpu()`: migrate accounting (PELT detach/attach, nr_migrations).
    fn set_task_cpu(&mut self, p: TaskId, cpu: CpuId) {
        let old = self.tasks[p.idx()].cpu;
        if old == cpu {
            return;
        }
        self.detach_entity_load_avg(old, p);
        self.attach_entity_load_avg(cpu, p);
        let t = &mut self.tasks[p.idx()];
        t.cpu = cpu;
        t.nr_migrations += 1;
    }

    /// `activate_task()` → `enqueue_task_fair()`; starts the run-delay clock.
    fn activate_task(&mut self, cpu: CpuId, p: TaskId, flags: u32, now: u64) {
        self.enqueue_entity(cpu, p, flags, now);
        let rq = &mut self.rqs[cpu.idx()];
        // update_avg_idle: the CPU was idle since idle_stamp (spec §3.5).
        if rq.idle_stamp != 0 {
            let delta = now - rq.idle_stamp;
            let max = 2 * rq.max_idle_balance_cost;
            let ai = rq.avg_idle as i64 + (delta as i64 - rq.avg_idle as i64) / 8;
            rq.avg_idle = (ai.max(0) as u64).min(max);
            rq.idle_stamp = 0;
        }
        let t = &mut self.tasks[p.idx()];
        t.state = TaskState::Runnable;
        t.last_queued = Some(now);
    }

    /// `try_to_wake_up()` for a sleeping task, woken by `waker` running on
    /// `this_cpu` (or from interrupt context on `this_cpu` when `waker` is None).
    ///
    /// Kernel: `try_to_wake_up()` + `ttwu_runnable()` (v6.12 delayed tasks are
    /// re-queued in place) + `ttwu_do_activate()`, kernel/sched/core.c.
    ///
    /// Fidelity: F-004 — TTWU_QUEUE wake lists are not modelled: the enqueue is
    /// done at once by the waker; the engine charges the IPI and idle exit.
    pub fn try_to_wake_up(
        &mut self,
        p: TaskId,
        this_cpu: CpuId,
        waker: Option<TaskId>,
        wf: WakeFlags,
        now: u64,
    ) -> WakeResult {
        let _ = waker;
        let t = &self.tasks[p.idx()];
        debug_assert_eq!(
            t.state,
            TaskState::Sleeping,
            "waking a task that is not asleep"
        );
        let prev = t.cpu;
        if t.se.on_rq {
            // ttwu_runnable(): a sched_delayed task is still queued: requeue, no CPU selection.
            debug_assert!(t.se.sched_delayed);
            self.requeue_delayed_entity(prev, p, now);
            let t = &mut self.tasks[p.idx()];
            t.state = TaskState::Runnable;
            t.last_queued = Some(now);
            self.account_ttwu(prev, this_cpu);
            self.check_preempt_wakeup(prev, p, false, now);
            return WakeResult {
                cpu: prev,
                migrated: false,
                resched: self.rqs[prev.idx()].need_resched,
            };
        }
        if !self.eevdf() {
            // task_waking_fair(): vruntime relative to the old cfs_rq.
            let min = self.rqs[prev.idx()].cfs.min_vruntime;
            let se = &mut self.tasks[p.idx()].se;
            se.vruntime = se.vruntime.wrapping_sub(min);
            se.vruntime_relative = true;
        }
        let cpu = self.select_task_rq(p, prev, this_cpu, wf.union(WakeFlags::TTWU));
        let migrated = cpu != prev;
        if migrated {
            // Bring PELT up to date on the old CPU before detaching (migrate_task_rq_fair).
            let se = &mut self.tasks[p.idx()].se;
            se.avg.update(now, 0, se.weight, 0, false);
            self.set_task_cpu(p, cpu);
        }
        self.activate_task(
            cpu,
            p,
            ENQUEUE_WAKEUP | if migrated { ENQUEUE_MIGRATED } else { 0 },
            now,
        );
        self.account_ttwu(cpu, this_cpu);
        self.check_preempt_wakeup(cpu, p, false, now);
        WakeResult {
            cpu,
            migrated,
            resched: self.rqs[cpu.idx()].need_resched,
        }
    }

    fn account_ttwu(&mut self, cpu: CpuId, this_cpu: CpuId) {
        let rq = &mut self.rqs[cpu.idx()];
        rq.ttwu_count += 1;
        if cpu == this_cpu {
            rq.ttwu_local += 1;
        }
    }

    /// The end of a delayed dequeue (`__block_task()`).
    pub(crate) fn finish_delayed_dequeue(&mut self, p: TaskId) {
        let t = &mut self.tasks[p.idx()];
        debug_assert_eq!(t.state, TaskState::Sleeping);
        debug_assert!(!t.se.on_rq);
        let _ = t;
    }

    /// `__schedule()` on `cpu`: handle `prev` according to `reason`, pick the
    /// next task, switch. Returns prev and next (None = idle).
    pub fn schedule(&mut self, cpu: CpuId, reason: SwitchReason, now: u64) -> SwitchResult {
        let prev = self.rqs[cpu.idx()].curr;
        self.rqs[cpu.idx()].need_resched = false;
        if let Some(pv) = prev {
            match reason {
                SwitchReason::Block | SwitchReason::Exit => {
                    // deactivate_task(): DEQUEUE_SLEEP (may be delayed in v6.12).
                    let dequeued = self.dequeue_entity(cpu, pv, DEQUEUE_SLEEP, now);
                    let t = &mut self.tasks[pv.idx()];
                    t.state = if reason == SwitchReason::Exit {
                        TaskState::Dead
                    } else {
                        TaskState::Sleeping
                    };
                    if !dequeued && reason == SwitchReason::Exit {
                        // An exiting task never stays delayed.
                        self.dequeue_entity(cpu, pv, DEQUEUE_SLEEP | DEQUEUE_DELAYED, now);
                    }
                }
                SwitchReason::Preempt => {}
            }
        }
        let next = self.pick_next_task_fair(cpu, now);
        let rq = &mut self.rqs[cpu.idx()];
        rq.curr = next;
        let mut next_run_delay = None;
        if prev != next {
            rq.nr_switches += 1;
            if let Some(pv) = prev {
                let t = &mut self.tasks[pv.idx()];
                if reason == SwitchReason::Preempt {
                    t.nivcsw += 1;
                    t.state = TaskState::Runnable;
                    t.last_queued = Some(now);
                } else {
                    t.nvcsw += 1;
                }
            }
            if let Some(nx) = next {
                let t = &mut self.tasks[nx.idx()];
                t.state = TaskState::Running;
                if let Some(q) = t.last_queued.take() {
                    t.run_delay += now - q;
                    t.pcount += 1;
                    next_run_delay = Some(now - q);
                }
            }
        } else if let Some(nx) = next {
            self.tasks[nx.idx()].state = TaskState::Running;
        }
        let rq = &mut self.rqs[cpu.idx()];
        if next.is_none() && prev.is_some() {
            rq.idle_stamp = now.max(1);
            rq.sched_goidle += 1;
        }
        SwitchResult {
            prev,
            next,
            next_run_delay,
        }
    }

    /// `scheduler_tick()` → `task_tick_fair()`. Returns true if the current task must be preempted.
    pub fn scheduler_tick(&mut self, cpu: CpuId, now: u64) -> bool {
        self.task_tick_fair(cpu, now);
        if self.rqs[cpu.idx()].curr.is_none() {
            self.update_load_avg(cpu, None, now);
        }
        self.rqs[cpu.idx()].need_resched
    }

    /// `idle_cpu()` (spec §3.4).
    #[inline]
    pub fn idle_cpu(&self, c: CpuId) -> bool {
        let rq = &self.rqs[c.idx()];
        rq.curr.is_none() && rq.nr_running() == 0
    }

    /// `task_cpu(p)`
    #[inline]
    pub fn task_cpu(&self, p: TaskId) -> CpuId {
        self.tasks[p.idx()].cpu
    }

    #[inline]
    pub fn need_resched(&self, cpu: CpuId) -> bool {
        self.rqs[cpu.idx()].need_resched
    }

    pub fn pick_algo(&self) -> PickAlgo {
        self.profile.pick
    }
}
