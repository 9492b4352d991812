//! kernel/sched/core.c: the entry points the engine calls — `try_to_wake_up()`,
//! `wake_up_new_task()`, `__schedule()`, `scheduler_tick()`, exit — around the
//! fair class. Pure state machine: every entry takes `now` explicitly and
//! returns what the hardware must do next (which CPU must reschedule).

use crate::cpumask::{CpuMask, SummaryMask};
use crate::fair::balance::IdleType;
use crate::fair::flags::*;
use crate::features::SchedFeatures;
use crate::profile::TtwuQueueVariant;
use crate::profile::{EffectiveTunables, ForkPlacement, KernelProfile, PickAlgo};
use crate::sched::{task_weight, CfsId, CfsRq, Ent, Policy, Rq, SchedEntity, Task, TaskGroup, TaskId, TaskState};
use crate::stats::{LbStats, LlcShared, PerCpuLevels, SdStats};
use crate::topology::{SchedDomains, SD_BALANCE_EXEC, SD_BALANCE_FORK, SD_BALANCE_WAKE};
use schedlab_topology::{CpuId, CpuTopology};

/// Wake flags (`WF_*` of kernel/sched/sched.h, v5.8+ values).
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
    /// Task group (from `Kernel::create_group`); 0 = the root group.
    pub group: u32,
}

/// What a wakeup did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeResult {
    /// The CPU the task was (or will be) enqueued on.
    pub cpu: CpuId,
    /// The task changed CPU (`WF_MIGRATED`).
    pub migrated: bool,
    /// `cpu` has TIF_NEED_RESCHED set (idle target or wakeup preemption).
    pub resched: bool,
    /// TTWU_QUEUE: the task went on `cpu`'s wake list; the target must run
    /// `sched_ttwu_pending()` (after the IPI) to enqueue it.
    pub queued: bool,
    /// The wake list of `cpu` was empty before: an IPI must be sent.
    pub ipi: bool,
    /// CPUs examined by the idle search for this wakeup (the machine model charges for them).
    pub scanned: u64,
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

/// What a tick did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TickResult {
    /// The current task of this CPU must be preempted.
    pub resched: bool,
    /// Kick this idle CPU to run nohz idle balancing for all idle CPUs.
    pub nohz_kick: Option<CpuId>,
    /// Remote CPUs that must reschedule (active balance).
    pub kicks: Vec<CpuId>,
    /// CPUs examined by balancing (charged by the hardware).
    pub balance_examined: u64,
}

/// What `schedule()` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwitchResult {
    pub prev: Option<TaskId>,
    pub next: Option<TaskId>,
    /// Active balance moved a task from this CPU to that one, which must reschedule.
    pub kick: Option<CpuId>,
    /// Busiest CPUs whose stopper newly idle balancing kicked (they must reschedule).
    pub balance_kicks: Vec<CpuId>,
    /// CPUs examined by newly-idle balancing (the hardware charges for it).
    pub balance_examined: u64,
    /// How long `next` waited on the runqueue for this switch-in (sched_info run delay).
    pub next_run_delay: Option<u64>,
}

/// What the entry points did besides their answer, for the engine to charge
/// or record: each entry point (`try_to_wake_up`, `wake_up_new_task`,
/// `sched_ttwu_pending`, `schedule`, `scheduler_tick`, `nohz_idle_balance`)
/// appends its effects here before it returns. The caller owns the value,
/// reuses it (no allocation once its buffers have grown) and takes out what
/// it has charged or recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Runqueues whose lock a load-balance pass took to detach tasks
    /// (`rq_lock(busiest)` in sched_balance_rq()), in order: the hardware
    /// charges the lock sections.
    pub locked: Vec<CpuId>,
    /// (task, from, to) of every `set_task_cpu()` (the `sched_migrate_task`
    /// tracepoint), in order; recorded only after `record_migrations(true)`.
    pub migrations: Vec<(TaskId, CpuId, CpuId)>,
    /// Accesses to a task group's `tg->load_avg` line, in order, as (group,
    /// write): `update_tg_load_avg()`'s atomic add (a write) and
    /// `calc_group_shares()`'s read, on the CPU that ran the entry point. One
    /// line per group, which every CPU running the group's tasks writes: the
    /// hardware charges the transfers (`CostModel::tg_line`).
    pub tg_lines: Vec<(u32, bool)>,
}

/// The modelled kernel: runqueues, tasks, sched domains, for one profile.
pub struct Kernel {
    pub profile: KernelProfile,
    pub feats: SchedFeatures,
    pub tun: EffectiveTunables,
    pub sd: SchedDomains,
    pub rqs: crate::sched::Rqs,
    /// Indexed by `TaskId` (a [`crate::maskvec::MaskVec`]: no bounds test per access).
    pub tasks: crate::maskvec::MaskVec<Task>,
    /// Task groups; `tgs[0]` is the root group (its cfs_rqs are `rqs[c].cfs`).
    pub tgs: Vec<TaskGroup>,
    /// Group cfs_rqs and group entities, slot `(group - 1) * nr_cpus + cpu`.
    pub grq: Vec<CfsRq>,
    pub gse: Vec<SchedEntity>,
    /// `cfs_rq->last_update_tg_load_avg` of each group cfs_rq (slot as `grq`;
    /// v6.7+, 1528c661c24b): when it last added to `tg->load_avg`, for the
    /// once-per-ms rate limit; none yet (the kernel's first update comes long
    /// after the clock's zero). Beside `grq`: the root cfs_rqs never use it.
    pub grq_tg_update: Vec<Option<u64>>,
    /// schedstat per CPU per domain level (parallel to `sd.per_cpu`).
    pub sd_stats: PerCpuLevels<SdStats>,
    /// Load-balance schedstat per CPU per domain level per idle type (busy, idle, newidle).
    pub lb_stats: PerCpuLevels<[LbStats; 3]>,
    /// `sched_domain_shared` per LLC, indexed by the LLC's first CPU (`sd_llc_id`).
    pub llc_shared: Vec<LlcShared>,
    /// SIS_PROP `avg_scan_cost` of each CPU's LLC domain (ns).
    pub avg_scan_cost: Vec<u64>,
    /// What the hardware charges per CPU examined by an idle search (ns): the
    /// kernel measures its scan time with the clock; the engine tells it.
    pub scan_cost_per_cpu_ns: u64,
    /// CPUs examined by the current wakeup's idle search.
    pub(crate) last_scan: u64,
    pub(crate) cur_this_cpu: CpuId,
    pub(crate) cur_now: u64,
    /// `sched_smt_active()`
    pub smt_active: bool,
    /// Per CPU per level balancing state (one allocation: newly idle
    /// balancing reads a CPU's row at nearly every switch to idle).
    pub sd_lb: PerCpuLevels<crate::fair::balance::SdLbState>,
    /// `rd->overload`: some CPU has more than one runnable task.
    pub rd_overload: bool,
    /// `nohz.next_balance`
    pub nohz_next_balance: u64,
    pub(crate) mru_seq: u64,
    /// Runqueue entries examined by the cfs_rq tree and cfs_tasks operations
    /// (enqueue, dequeue, leftmost, pick, detach): a structural cost measure
    /// whose growth with the queue length tests that these stay logarithmic.
    pub rq_steps: std::cell::Cell<u64>,
    /// The last `jiffies()` answer: (the jiffy's start, tick length, jiffies).
    jiffy_at: std::cell::Cell<(u64, u64, u64)>,
    /// schedstat alb_pushed, summed.
    pub alb_pushed: u64,
    /// Time between a waker's idle check in select_task_rq() and its
    /// ttwu_pending store becoming visible to other CPUs (hardware-dependent;
    /// the engine sets it from the machine model). 0 = no race.
    pub ttwu_pending_window_ns: u64,
    /// Boxed: taken and put back per wakeup without copying its masks.
    pub(crate) sis_scratch: Option<Box<crate::fair::select::SisScratch>>,
    /// CPUs that may be idle or SCHED_IDLE-only (a superset): set where a CPU
    /// can become one (curr cleared, a task dequeued, a SCHED_IDLE task
    /// enqueued; `schedule()` leaving it idle or SCHED_IDLE-only), cleared when
    /// `schedule()` leaves it running with no SCHED_IDLE task queued and by
    /// select_idle_cpu()'s walk when it finds the CPU busy, or idle with a
    /// wakeup pending that every CPU sees (`sis_visit`). The walk checks
    /// only these CPUs and counts the others by word
    /// operations, so its cost follows the idle CPUs it examines, not the LLC
    /// size (a simulator index: the kernel's walk reads every rq).
    pub(crate) idle_hint: SummaryMask,
    nr_cpus: usize,
    /// Prefetch hints on (a machine of at least `prefetch::MIN_CPUS` CPUs).
    pub prefetch: bool,
    /// `profile.delayed_accounting()`, asked at every PELT update: kept
    /// here so that it is one load (the profile does not change in a run).
    pub(crate) delayed_acct: bool,
    /// `profile.version` as one number (major in the high half), for the
    /// version tests of the switch path: [`Kernel::at_least`] is one
    /// comparison instead of the tuple's two (the profile does not change
    /// in a run).
    ver: u64,
    /// Runqueues locked by balancing during the current entry point, handed
    /// over in its [`Effects`].
    pub(crate) lb_locked: Vec<CpuId>,
    /// `tg->load_avg` accesses of the current entry point (see `Effects::tg_lines`).
    pub(crate) tg_lines: Vec<(u32, bool)>,
    /// When Some (`record_migrations`), `set_task_cpu()` appends (task, from,
    /// to) here during the current entry point, handed over in its [`Effects`].
    pub(crate) migration_log: Option<Vec<(TaskId, CpuId, CpuId)>>,
    /// Decision records (issue 20), when `enable_explain()` asked for them; None costs one branch per hook.
    pub explain: Option<Box<crate::explain::Explain>>,
    /// NUMA balancing and process memory (fair/numa.rs); None when the
    /// workload declares no memory or the machine has one node.
    pub numa: Option<Box<crate::fair::numa::NumaState>>,
    /// Balancer summaries of the wide single-CPU-group domains
    /// (update_sd_lb_stats(); a simulator index, see fair/lb_index.rs).
    /// Boxed, so that a pass takes it out of the kernel and puts it back
    /// as one pointer (`Kernel::with_lb_index`); None only meanwhile.
    pub(crate) lb_index: Option<Box<crate::fair::lb_index::LbIndex>>,
    /// Check the walks' fast forms against the kernel's walks on every call
    /// (on in the kernel's tests): every indexed balance pass against
    /// `lb_singleton_walk`, every single-CPU-group find_idlest_group() pass
    /// against the group walk.
    pub lb_index_check: bool,
}

impl Kernel {
    pub fn new(topo: &CpuTopology, profile: KernelProfile) -> Kernel {
        let n = topo.nr_cpus();
        let delayed_acct = profile.delayed_accounting();
        let ver = (profile.version.0 as u64) << 32 | profile.version.1 as u64;
        let tun = EffectiveTunables::new(&profile, n);
        let sd = SchedDomains::build(topo, &profile);
        let rqs: Vec<Rq> = (0..n)
            .map(|c| Rq {
                cpu: CpuId(c as u16),
                curr: None,
                cfs: CfsRq::default(),
                cfs_tasks: Default::default(),
                need_resched: false,
                idle_stamp: 0,
                avg_idle: 2 * tun.migration_cost_ns,
                max_idle_balance_cost: tun.migration_cost_ns,
                nr_switches: 0,
                ttwu_count: 0,
                ttwu_local: 0,
                sched_goidle: 0,
                ttwu_pending: 0,
                wake_list: Vec::new(),
                wake_avg_idle: tun.migration_cost_ns,
                wake_stamp: 0,
                next_balance: 0,
                active_balance: None,
                ttwu_pending_visible_at: 0,
                ttwu_pending_owner: CpuId(0),
                cpu_load: [0; 5],
                last_load_update_tick: 0,
                enq_visible_at: 0,
                enq_unseen: 0,
                enq_owner: CpuId(0),
                enq_last: CpuId(0),
            })
            .collect();
        let sd_stats = PerCpuLevels::new(sd.per_cpu.iter().map(|l| l.len()), SdStats::default());
        let lb_stats = PerCpuLevels::new(sd.per_cpu.iter().map(|l| l.len()), [LbStats::default(); 3]);
        // The simulated machine has been up and idle before the benchmark
        // starts, as a real test box is: its last periodic LLC balance ran
        // update_idle_cpu_scan() (v6.0+) at zero utilisation, which gives
        // nr_idle_scan = sd_llc_size. (At boot sched_domain_shared is
        // zero-allocated and nr_idle_scan is 0 until that first balance, which
        // on a 112-CPU LLC comes ~112 ms later: modelling the boot value made
        // every short run scan nothing at all.)
        // FIDELITY(F-646): the warm-machine starting value, not the boot value.
        let mut llc_shared = vec![LlcShared::default(); n];
        for c in 0..n {
            llc_shared[sd.sd_llc_id[c] as usize].nr_idle_scan = sd.sd_llc_size[c];
        }
        let smt_active = topo.threads_per_core() > 1;
        let sd_lb = PerCpuLevels::from_rows(
            sd.per_cpu
                .iter()
                .map(|l| {
                    l.iter()
                        .map(|&id| crate::fair::balance::SdLbState {
                            balance_interval: sd.domains[id as usize].min_interval as u64,
                            ..Default::default()
                        })
                        .collect()
                })
                .collect(),
        );
        let mut k = Kernel {
            feats: profile.features,
            profile,
            tun,
            sd,
            rqs: crate::sched::Rqs::new(rqs),
            tasks: crate::maskvec::MaskVec::new(Task::placeholder()),
            tgs: vec![TaskGroup { name: "/".into(), parent: 0, shares: crate::sched::NICE_0_LOAD, depth: 0, load_avg: 0 }],
            grq: Vec::new(),
            gse: Vec::new(),
            grq_tg_update: Vec::new(),
            sd_stats,
            lb_stats,
            llc_shared,
            avg_scan_cost: vec![0; n],
            scan_cost_per_cpu_ns: 0,
            last_scan: 0,
            cur_this_cpu: CpuId(0),
            cur_now: 0,
            smt_active,
            sd_lb,
            rd_overload: false,
            nohz_next_balance: 0,
            mru_seq: 0,
            rq_steps: std::cell::Cell::new(0),
            jiffy_at: std::cell::Cell::new((0, 0, 0)),
            alb_pushed: 0,
            ttwu_pending_window_ns: 0,
            sis_scratch: Some(Box::new(crate::fair::select::SisScratch::new(n))),
            idle_hint: SummaryMask::new(CpuMask::from_cpus(n, (0..n).map(|c| CpuId(c as u16)))),
            lb_locked: Vec::new(),
            tg_lines: Vec::new(),
            nr_cpus: n,
            prefetch: n >= crate::prefetch::MIN_CPUS,
            delayed_acct,
            ver,
            migration_log: None,
            explain: None,
            numa: None,
            lb_index: None,
            lb_index_check: cfg!(test),
        };
        let ix = crate::fair::lb_index::LbIndex::new(&k.sd);
        k.rqs.set_tracking(ix.used());
        k.lb_index = Some(Box::new(ix));
        k
    }

    /// `profile.version >= (major, minor)`, in one comparison.
    #[inline(always)]
    pub fn at_least(&self, major: u32, minor: u32) -> bool {
        self.ver >= (major as u64) << 32 | minor as u64
    }

    /// `jiffies` at `now`: `now / tick_ns`, without the division while
    /// `now` is in the jiffy of the last answer (wakeups ask several times
    /// per jiffy). Exact: the cached jiffy is used only inside its bounds.
    #[inline]
    pub(crate) fn jiffies(&self, now: u64) -> u64 {
        let tick = self.tun.tick_ns;
        let (start, t, j) = self.jiffy_at.get();
        if t == tick && now >= start && now - start < tick {
            return j;
        }
        let j = now / tick;
        self.jiffy_at.set((j * tick, tick, j));
        j
    }

    pub fn nr_cpus(&self) -> usize {
        self.nr_cpus
    }

    /// Clear a SD_* flag on every domain (what writing the domain's `flags` in
    /// debugfs does; e.g. SD_BALANCE_FORK to switch fork balancing off).
    pub fn clear_sd_flag(&mut self, flag: u32) {
        for d in &mut self.sd.domains {
            d.flags &= !flag;
        }
    }

    /// Create a task (`copy_process()` / `sched_fork()`); it is not runnable
    /// until `wake_up_new_task()`. `cpu` is where it is created (the parent's CPU).
    pub fn sched_fork(&mut self, params: &TaskParams, parent: Option<TaskId>, cpu: CpuId, now: u64) -> TaskId {
        let id = TaskId(self.tasks.len() as u32);
        let weight = task_weight(params.nice, params.policy);
        let cpus_allowed = params.cpus_allowed.as_ref().map(|v| Box::new(CpuMask::from_cpus(self.nr_cpus, v.iter().copied())));
        assert!((params.group as usize) < self.tgs.len(), "task group {} was not created", params.group);
        let depth = if params.group == 0 { 0 } else { self.tgs[params.group as usize].depth + 1 };
        let mut se = SchedEntity { weight, depth, slice: self.tun.base_slice_ns, ..Default::default() };
        se.avg.last_update_time = now;
        // init_entity_runnable_average(): a new task starts at its full weight.
        se.avg.load_avg = weight;
        // dup_task_struct() copies the parent and __sched_fork() (v2.6.x-v6.x)
        // does not reset the wakee history: a child starts with its parent's
        // wakee_flips, their decay stamp and last_wakee.
        let (wakee_flips, wakee_flip_decay_ts, last_wakee) = parent.map_or((0, 0, None), |q| {
            (self.tasks[q.idx()].wakee_flips, self.tasks[q.idx()].wakee_flip_decay_ts, self.tasks[q.idx()].last_wakee)
        });
        self.tasks.push(Task {
            id,
            se,
            nice: params.nice,
            policy: params.policy,
            cpu,
            state: TaskState::New,
            cpus_allowed,
            mm: params.mm,
            group: params.group,
            wakee_flips,
            wakee_flip_decay_ts,
            last_wakee,
            recent_used_cpu: cpu,
            nvcsw: 0,
            nivcsw: 0,
            nr_migrations: 0,
            run_delay: 0,
            pcount: 0,
            last_queued: crate::sched::OptU64::NONE,
            mru: 0,
            mru_listed: None,
            cfs_link: (crate::sched::NO_TASK, crate::sched::NO_TASK),
            util_est_queued: crate::sched::OptU32::NONE,
        });
        // task_fork_fair(): placement relative to the parent's cfs_rq.
        match self.profile.fork_placement {
            ForkPlacement::CfsTaskFork => {
                // The child is placed on its own group's cfs_rq of this CPU.
                let q = self.cfs_of(Ent::task(id));
                self.update_curr(q, now);
                if let Some(pp) = parent.filter(|&pp| self.cfs(q).curr == Some(Ent::task(pp))) {
                    self.tasks[id.idx()].se.vruntime = self.tasks[pp.idx()].se.vruntime;
                }
                self.place_entity_fork_cfs(q, id);
                let min = self.cfs(q).min_vruntime;
                let se = &mut self.tasks[id.idx()].se;
                se.vruntime = se.vruntime.wrapping_sub(min);
                se.vruntime_relative = true;
            }
            ForkPlacement::EevdfTaskFork | ForkPlacement::EevdfWakeUpNew => {}
        }
        id
    }

    fn place_entity_fork_cfs(&mut self, q: CfsId, p: TaskId) {
        // place_entity(cfs_rq, se, initial = 1): START_DEBIT.
        let min = self.cfs(q).min_vruntime;
        let mut v = min;
        if self.feats.has(crate::features::SchedFeat::START_DEBIT) {
            let w = self.tasks[p.idx()].se.weight;
            v = v.wrapping_add(crate::fair::calc_delta_fair(self.sched_slice(Ent::task(p)), w));
        }
        let se = &mut self.tasks[p.idx()].se;
        if crate::fair::vdiff(v, se.vruntime) > 0 {
            se.vruntime = v;
        }
    }

    /// `post_init_entity_util_avg()` (kernel/sched/fair.c, v4.x+).
    fn post_init_entity_util_avg(&mut self, cpu: CpuId, p: TaskId) {
        let cfs = self.cfs(self.tg_cfs(self.tasks[p.idx()].group, cpu));
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
    pub fn wake_up_new_task(&mut self, p: TaskId, this_cpu: CpuId, now: u64, fx: &mut Effects) -> WakeResult {
        let r = self.wake_up_new_task_inner(p, this_cpu, now);
        self.hand_over(fx);
        r
    }

    fn wake_up_new_task_inner(&mut self, p: TaskId, this_cpu: CpuId, now: u64) -> WakeResult {
        debug_assert_eq!(self.tasks[p.idx()].state, TaskState::New);
        let prev = self.tasks[p.idx()].cpu;
        self.last_scan = 0;
        self.xw_begin(crate::explain::WakeKind::Fork, p, None, prev, this_cpu, now);
        let cpu = self.select_task_rq(p, prev, this_cpu, None, WakeFlags::FORK, now);
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
        self.xw_finish(cpu, false);
        let scanned = std::mem::take(&mut self.last_scan);
        WakeResult { cpu, migrated: cpu != prev, resched: self.rqs[cpu.idx()].need_resched, queued: false, ipi: false, scanned }
    }

    /// `select_task_rq()`: the class hook unless the task may run on one CPU only.
    #[inline(always)]
    fn select_task_rq(&mut self, p: TaskId, prev: CpuId, this_cpu: CpuId, waker: Option<TaskId>, wf: WakeFlags, now: u64) -> CpuId {
        self.cur_this_cpu = this_cpu;
        self.cur_now = now;
        // No copy of the mask per wakeup.
        let pinned = self.tasks[p.idx()].cpus_allowed.as_ref().filter(|m| m.weight() == 1).and_then(|m| m.first());
        let cpu = match pinned {
            Some(c) => {
                self.xw(|r| r.path = crate::explain::Path::Pinned);
                c
            }
            None => self.select_task_rq_fair(p, prev, this_cpu, waker, wf, now),
        };
        match &self.tasks[p.idx()].cpus_allowed {
            Some(m) if !m.test(cpu) => m.first().expect("validated non-empty affinity"),
            _ => cpu,
        }
    }

    /// Record every migration into [`Effects::migrations`] (the tracepoint
    /// recorder); off by default (one branch per migration).
    pub fn record_migrations(&mut self, on: bool) {
        self.migration_log = on.then(Vec::new);
    }

    /// The end of an entry point: its effects go to the caller's `fx`.
    #[inline]
    pub(crate) fn hand_over(&mut self, fx: &mut Effects) {
        if !self.lb_locked.is_empty() {
            fx.locked.append(&mut self.lb_locked);
        }
        if !self.tg_lines.is_empty() {
            fx.tg_lines.append(&mut self.tg_lines);
        }
        if let Some(log) = &mut self.migration_log {
            fx.migrations.append(log);
        }
    }

    /// `set_task_cpu()`: migrate accounting (PELT detach/attach, nr_migrations).
    fn set_task_cpu(&mut self, p: TaskId, cpu: CpuId) {
        let old = self.tasks[p.idx()].cpu;
        if old == cpu {
            return;
        }
        if let Some(log) = &mut self.migration_log {
            log.push((p, old, cpu)); // trace_sched_migrate_task()
        }
        self.detach_entity_load_avg(old, p);
        self.attach_entity_load_avg(cpu, p);
        let t = &mut self.tasks[p.idx()];
        t.cpu = cpu;
        t.nr_migrations += 1;
        // migrate_task_rq_fair(): a migrated task is cache-cold for task_hot().
        t.se.exec_start = 0;
    }

    pub(crate) fn set_task_cpu_pub(&mut self, p: TaskId, cpu: CpuId) {
        self.set_task_cpu(p, cpu);
    }

    /// `add_nr_running()`: a CPU with two or more tasks marks the root domain overloaded.
    pub(crate) fn note_nr_running(&mut self, cpu: CpuId) {
        if self.rqs[cpu.idx()].nr_running() >= 2 {
            self.rd_overload = true;
        }
    }

    /// `activate_task()` → `enqueue_task_fair()`; starts the run-delay clock.
    #[inline(always)]
    fn activate_task(&mut self, cpu: CpuId, p: TaskId, flags: u32, now: u64) {
        debug_assert_eq!(self.tasks[p.idx()].cpu, cpu);
        self.enqueue_task_fair(p, flags, now);
        self.note_nr_running(cpu);
        let t = &mut self.tasks[p.idx()];
        t.state = TaskState::Runnable;
        t.last_queued.set(Some(now));
    }

    /// `try_to_wake_up()` for a sleeping task, woken by `waker` running on
    /// `this_cpu` (or from interrupt context on `this_cpu` when `waker` is None).
    ///
    /// Kernel: `try_to_wake_up()` + `ttwu_runnable()` (v6.12 delayed tasks are
    /// re-queued in place) + `ttwu_do_activate()`, kernel/sched/core.c.
    ///
    /// TTWU_QUEUE: when ttwu_queue_cond() holds the task goes on the target's
    /// wake list and the target activates it after the IPI
    /// (`sched_ttwu_pending()`); otherwise the waker enqueues it at once under
    /// the target's rq lock. F-004: the ttwu_pending visibility window.
    pub fn try_to_wake_up(
        &mut self,
        p: TaskId,
        this_cpu: CpuId,
        waker: Option<TaskId>,
        wf: WakeFlags,
        now: u64,
        fx: &mut Effects,
    ) -> WakeResult {
        let r = self.try_to_wake_up_inner(p, this_cpu, waker, wf, now);
        self.hand_over(fx);
        r
    }

    #[inline(always)]
    fn try_to_wake_up_inner(&mut self, p: TaskId, this_cpu: CpuId, waker: Option<TaskId>, wf: WakeFlags, now: u64) -> WakeResult {
        if self.prefetch {
            self.prefetch_ttwu_stat(this_cpu);
        }
        let t = &self.tasks[p.idx()];
        debug_assert_eq!(t.state, TaskState::Sleeping, "waking a task that is not asleep");
        let prev = t.cpu;
        self.xw_begin(crate::explain::WakeKind::Wakeup, p, waker, prev, this_cpu, now);
        if t.se.on_rq {
            // ttwu_runnable(): a sched_delayed task is still queued: requeue, no CPU selection.
            debug_assert!(t.se.sched_delayed);
            // enqueue_task_fair(ENQUEUE_DELAYED): util_est_enqueue() (it left at
            // the sleep), then requeue_delayed_entity().
            self.util_est_enqueue(p);
            self.requeue_delayed_entity(Ent::task(p), now);
            let t = &mut self.tasks[p.idx()];
            t.state = TaskState::Runnable;
            t.last_queued.set(Some(now));
            self.ttwu_stat(prev, this_cpu);
            self.check_preempt_wakeup(prev, p, false, now);
            self.xw(|r| r.path = crate::explain::Path::DelayedRequeue);
            self.xw_finish(prev, false);
            return WakeResult {
                cpu: prev,
                migrated: false,
                resched: self.rqs[prev.idx()].need_resched,
                queued: false,
                ipi: false,
                scanned: 0,
            };
        }
        if !self.eevdf() {
            // task_waking_fair(): vruntime relative to the old cfs_rq.
            let min = self.cfs(self.cfs_of(Ent::task(p))).min_vruntime;
            let se = &mut self.tasks[p.idx()].se;
            se.vruntime = se.vruntime.wrapping_sub(min);
            se.vruntime_relative = true;
        }
        if self.profile.wake_wide == crate::profile::WakeWideVariant::V3_12 {
            // task_waking_fair() -> record_wakee() (v3.12-v4.6): every full
            // wakeup of a fair task, pinned wakees included (a per-CPU kworker
            // woken from an interrupt counts in the interrupted task's flips).
            if let Some(w) = waker {
                self.record_wakee(w, p, now);
            }
        }
        self.last_scan = 0;
        let cpu = self.select_task_rq(p, prev, this_cpu, waker, wf.union(WakeFlags::TTWU), now);
        let scanned = std::mem::take(&mut self.last_scan);
        let migrated = cpu != prev;
        if migrated && self.prefetch {
            self.prefetch_rq(cpu);
        }
        if migrated {
            // Bring PELT up to date on the old CPU before detaching (migrate_task_rq_fair).
            let se = &mut self.tasks[p.idx()].se;
            se.avg.update(now, 0, se.weight, 0, false);
            self.set_task_cpu(p, cpu);
        }
        self.ttwu_stat(cpu, this_cpu);
        if self.feats.has(crate::features::SchedFeat::TTWU_QUEUE) && self.ttwu_queue_cond(this_cpu, cpu) {
            // ttwu_queue_wakelist(): the target activates the task itself after the IPI.
            let rq = &mut self.rqs[cpu.idx()];
            let ipi = rq.wake_list.is_empty();
            rq.wake_list.push(p);
            if rq.ttwu_pending == 0 {
                // Other CPUs see the flag only once the waker's store reaches them.
                rq.ttwu_pending_visible_at = now + self.ttwu_pending_window_ns;
                rq.ttwu_pending_owner = this_cpu;
            }
            rq.ttwu_pending += 1;
            let t = &mut self.tasks[p.idx()];
            t.state = TaskState::Waking;
            t.last_queued.set(Some(now));
            self.xw_finish(cpu, true);
            return WakeResult { cpu, migrated, resched: false, queued: true, ipi, scanned };
        }
        if cpu != this_cpu && self.ttwu_pending_window_ns > 0 {
            self.enq_unseen_note(cpu, this_cpu, now);
        }
        self.ttwu_do_activate(cpu, p, migrated, now);
        self.xw_finish(cpu, false);
        WakeResult { cpu, migrated, resched: self.rqs[cpu.idx()].need_resched, queued: false, ipi: false, scanned }
    }

    /// `ttwu_do_activate()`: enqueue a woken task and check wakeup preemption.
    #[inline(always)]
    fn ttwu_do_activate(&mut self, cpu: CpuId, p: TaskId, migrated: bool, now: u64) {
        let queued_at = self.tasks[p.idx()].last_queued.get();
        self.activate_task(cpu, p, ENQUEUE_WAKEUP | if migrated { ENQUEUE_MIGRATED } else { 0 }, now);
        if let Some(q) = queued_at {
            // The run delay of a wake-list wakeup starts at the wakeup, not at activation.
            self.tasks[p.idx()].last_queued.set(Some(q.min(now)));
        }
        self.check_preempt_wakeup(cpu, p, false, now);
        self.update_avg_idle(cpu, now);
    }

    /// The idle-time average at the end of a wakeup onto an idle CPU; only a
    /// wakeup does this (`wake_up_new_task()` and load-balance attaches leave
    /// `idle_stamp` alone).
    ///
    /// Kernel: the `rq->idle_stamp` block of ttwu_do_wakeup() (v3.10-v5.x) /
    /// ttwu_do_activate() (v6.x), kernel/sched/core.c:
    /// - before v3.13: `max = 2 * sysctl_sched_migration_cost`, and a delta
    ///   above max sets avg_idle to max instead of averaging;
    /// - v3.13+ (Jason Low, "sched: Reduce overestimating rq->avg_idle"):
    ///   `update_avg(&rq->avg_idle, delta)`, then clamp to `2 * max_idle_balance_cost`;
    /// - v5.14+ (94aafc3ee31d): `wake_stamp = jiffies; wake_avg_idle = avg_idle / 2`
    ///   together, so select_idle_cpu()'s per-jiffy aging starts from now.
    #[inline(always)]
    fn update_avg_idle(&mut self, cpu: CpuId, now: u64) {
        let old_form = !self.at_least(3, 13);
        let migration_cost = self.tun.migration_cost_ns;
        let jiffies = self.jiffies(now);
        let rq = &mut self.rqs[cpu.idx()];
        if rq.idle_stamp == 0 {
            return;
        }
        let delta = now.saturating_sub(rq.idle_stamp);
        if old_form {
            let max = 2 * migration_cost;
            if delta > max {
                rq.avg_idle = max;
            } else {
                rq.avg_idle = (rq.avg_idle as i64 + (delta as i64 - rq.avg_idle as i64) / 8).max(0) as u64;
            }
        } else {
            let max = 2 * rq.max_idle_balance_cost;
            let ai = rq.avg_idle as i64 + (delta as i64 - rq.avg_idle as i64) / 8;
            rq.avg_idle = (ai.max(0) as u64).min(max);
        }
        rq.idle_stamp = 0;
        rq.wake_stamp = jiffies;
        rq.wake_avg_idle = rq.avg_idle / 2;
    }

    /// `ttwu_queue_cond()` per version (kernel/sched/core.c: cross-LLC v3.0+, idle same-LLC target v6.0+).
    fn ttwu_queue_cond(&self, this_cpu: CpuId, cpu: CpuId) -> bool {
        match self.profile.ttwu_queue {
            TtwuQueueVariant::None => false,
            TtwuQueueVariant::CrossLlc => !self.sd.cpus_share_cache(this_cpu, cpu),
            TtwuQueueVariant::IdleTarget => {
                if !self.sd.cpus_share_cache(this_cpu, cpu) {
                    return true;
                }
                if cpu == this_cpu {
                    return false;
                }
                self.rqs[cpu.idx()].nr_running() == 0
            }
        }
    }

    /// `sched_ttwu_pending()`: the target CPU (after the IPI) activates the tasks
    /// on its wake list. Returns true if it must reschedule.
    pub fn sched_ttwu_pending(&mut self, cpu: CpuId, now: u64, fx: &mut Effects) -> bool {
        let r = self.sched_ttwu_pending_inner(cpu, now);
        self.hand_over(fx);
        r
    }

    fn sched_ttwu_pending_inner(&mut self, cpu: CpuId, now: u64) -> bool {
        self.cur_now = now;
        self.cur_this_cpu = cpu;
        if self.prefetch {
            self.prefetch_timeline(cpu);
        }
        let list = std::mem::take(&mut self.rqs[cpu.idx()].wake_list);
        for &p in &list {
            self.rqs[cpu.idx()].ttwu_pending -= 1;
            // WF_MIGRATED was already accounted by set_task_cpu at selection.
            self.ttwu_do_activate(cpu, p, false, now);
        }
        let mut l = list;
        l.clear();
        self.rqs[cpu.idx()].wake_list = l;
        self.rqs[cpu.idx()].need_resched
    }

    /// `ttwu_stat()`: counted on the waker's CPU (ecosystem reference §2.2).
    #[inline(always)]
    fn ttwu_stat(&mut self, cpu: CpuId, this_cpu: CpuId) {
        let rq = &mut self.rqs[this_cpu.idx()];
        rq.ttwu_count += 1;
        if cpu == this_cpu {
            rq.ttwu_local += 1;
            return;
        }
        for (k, &id) in self.sd.per_cpu[this_cpu.idx()].iter().enumerate() {
            if self.sd.domains[id as usize].span.test(cpu) {
                self.sd_stats[this_cpu.idx()][k].ttwu_wake_remote += 1;
                break;
            }
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
    pub fn schedule(&mut self, cpu: CpuId, reason: SwitchReason, now: u64, fx: &mut Effects) -> SwitchResult {
        self.schedule_inner(cpu, reason, now, fx)
    }

    /// The body of [`Self::schedule`]; it hands the effects over itself, just
    /// before its result is built (no copy of the result on the way out).
    #[inline(always)]
    fn schedule_inner(&mut self, cpu: CpuId, reason: SwitchReason, now: u64, fx: &mut Effects) -> SwitchResult {
        self.cur_now = now;
        self.cur_this_cpu = cpu;
        if self.prefetch {
            self.prefetch_timeline(cpu);
        }
        let prev = self.rqs[cpu.idx()].curr;
        self.rqs[cpu.idx()].need_resched = false;
        if let Some(pv) = prev {
            match reason {
                SwitchReason::Block | SwitchReason::Exit => {
                    // deactivate_task(): DEQUEUE_SLEEP (may be delayed in v6.12).
                    let dequeued = self.dequeue_task_fair(cpu, pv, DEQUEUE_SLEEP, now);
                    let t = &mut self.tasks[pv.idx()];
                    t.state = if reason == SwitchReason::Exit { TaskState::Dead } else { TaskState::Sleeping };
                    if !dequeued && reason == SwitchReason::Exit {
                        // An exiting task never stays delayed.
                        self.dequeue_task_fair(cpu, pv, DEQUEUE_SLEEP | DEQUEUE_DELAYED, now);
                    }
                }
                SwitchReason::Preempt => {}
            }
        }
        let mut kick = None;
        if let Some(dst) = self.rqs[cpu.idx()].active_balance.take() {
            // The stopper runs first (active_load_balance_cpu_stop()): prev,
            // if still queued, goes back to the queue; the stopper then moves
            // the least recently run movable task, which is prev only when
            // nothing else is queued.
            if let Some(pv) = prev.filter(|&pv| self.tasks[pv.idx()].se.on_rq && self.task_is_cfs_curr(pv)) {
                self.put_prev_task_fair(pv, now);
                self.rqs[cpu.idx()].curr = None;
                self.idle_hint.set(cpu);
                if self.active_load_balance_cpu_stop(cpu, dst, now).is_some() {
                    kick = Some(dst);
                }
            } else if self.active_load_balance_cpu_stop(cpu, dst, now).is_some() {
                kick = Some(dst);
            }
        }
        let mut numa_kick = None;
        if self.numa.is_some() {
            // migrate_task_to() / migrate_swap(): this CPU's stopper moves
            // the task NUMA balancing asked it to move (fair/numa.rs).
            if let Some(pv) =
                prev.filter(|&pv| self.rqs[cpu.idx()].curr == Some(pv) && self.tasks[pv.idx()].se.on_rq && self.task_is_cfs_curr(pv))
            {
                if self.numa.as_deref().unwrap().stop_pending(cpu, pv) {
                    self.put_prev_task_fair(pv, now);
                    self.rqs[cpu.idx()].curr = None;
                }
            }
            numa_kick = self.numa_stopper(cpu, now);
        }
        if prev.is_none() {
            // tick_nohz_idle_exit() → update_cpu_load_nohz(): the idle ticks decay at load 0.
            self.update_cpu_load(cpu, now, true);
        }
        let mut next = self.pick_next_task_fair(cpu, now);
        let mut balance_examined = 0;
        let mut balance_kicks = Vec::new();
        if next.is_none() {
            // pick_next_task_fair(): no task → sched_balance_newidle(), then retry.
            let r = self.sched_balance_newidle(cpu, now);
            balance_examined = r.examined;
            balance_kicks = r.kicks;
            if r.pulled > 0 {
                next = self.pick_next_task_fair(cpu, now);
            }
        }
        let rq = &mut self.rqs[cpu.idx()];
        rq.curr = next;
        if next.is_none() || rq.nr_running() == rq.cfs.h_nr_idle {
            self.idle_hint.set(cpu); // idle, or SCHED_IDLE tasks only
        } else if rq.cfs.h_nr_idle == 0 {
            // Running with no SCHED_IDLE task queued: busy until a schedule()
            // here leaves it idle or SCHED_IDLE-only (both set the hint
            // again), so the walk need not find this out itself.
            self.idle_hint.clear(cpu);
        }
        let mut next_run_delay = None;
        if prev != next {
            rq.nr_switches += 1;
            if let Some(pv) = prev {
                let t = &mut self.tasks[pv.idx()];
                if reason == SwitchReason::Preempt {
                    t.nivcsw += 1;
                    t.state = TaskState::Runnable;
                    t.last_queued.set(Some(now));
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
            self.update_idle_core(cpu);
        }
        if let Some(k) = numa_kick {
            balance_kicks.push(k);
        }
        self.hand_over(fx);
        SwitchResult { prev, next, kick, balance_kicks, balance_examined, next_run_delay }
    }

    /// `scheduler_tick()` → `task_tick_fair()`. Returns true if the current task must be preempted.
    pub fn scheduler_tick(&mut self, cpu: CpuId, now: u64, fx: &mut Effects) -> TickResult {
        let r = self.scheduler_tick_inner(cpu, now);
        self.hand_over(fx);
        r
    }

    fn scheduler_tick_inner(&mut self, cpu: CpuId, now: u64) -> TickResult {
        self.cur_now = now;
        self.cur_this_cpu = cpu;
        self.task_tick_fair(cpu, now);
        let mut numa_kicks = Vec::new();
        if self.numa.is_some() {
            // task_tick_fair() → task_tick_numa() (fair/numa.rs).
            self.numa_tick(cpu, now);
            numa_kicks = std::mem::take(&mut self.numa.as_deref_mut().unwrap().kicks);
        }
        // update_cpu_load_active() (v2.6.x-v4.x cpu_load[] indices).
        self.update_cpu_load(cpu, now, false);
        if self.rqs[cpu.idx()].curr.is_none() {
            self.update_root_load_avg(cpu, now);
        }
        let mut res = TickResult::default();
        // sched_balance_trigger(): periodic balancing in the softirq after the tick.
        if now >= self.rqs[cpu.idx()].next_balance {
            let idle = if self.rqs[cpu.idx()].curr.is_some() { IdleType::Busy } else { IdleType::Idle };
            let r = self.sched_balance_domains(cpu, idle, now);
            res.kicks = r.kicks;
            res.balance_examined = r.examined;
        }
        if self.rqs[cpu.idx()].curr.is_some() {
            res.nohz_kick = self.nohz_balancer_kick(cpu, now);
        }
        res.kicks.extend(numa_kicks);
        res.resched = self.rqs[cpu.idx()].need_resched;
        res
    }

    /// `__update_idle_core()`: a CPU entering idle marks its LLC as having an
    /// idle core if all its SMT siblings are idle (kernel/sched/fair.c, v4.9+).
    fn update_idle_core(&mut self, cpu: CpuId) {
        if !self.smt_active {
            return;
        }
        let id = self.sd.sd_llc_id[cpu.idx()] as usize;
        if self.llc_shared[id].has_idle_cores {
            return;
        }
        if self.sd.smt_mask[cpu.idx()].iter().all(|s| s == cpu || self.available_idle_cpu(s)) {
            self.llc_shared[id].has_idle_cores = true;
        }
    }

    /// Ask the CPU to fetch the fields of `c`'s runqueue that the balancer's
    /// group statistics read, ahead of the walk reaching it: a walk over many
    /// runqueues then waits for memory once per several CPUs, not per CPU.
    /// A hint only: no effect on any result.
    #[inline(always)]
    pub(crate) fn prefetch_rq_stats(&self, c: CpuId) {
        #[cfg(target_arch = "x86_64")]
        if let Some(rq) = self.rqs.get(c.idx()) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // Those fields are the runqueue's first cache line (`Rq`'s layout).
            // SAFETY: a prefetch is a hint to the cache; it reads nothing
            // architecturally and cannot fault, and the pointer is a live `Rq`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(rq as *const Rq as *const i8) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = c;
    }

    /// Ask the CPU to fetch task `p`'s four cache lines at once (the engine
    /// calls this when an event names the task, before the kernel reads
    /// them one after the other). A hint only: no effect on any result.
    #[inline]
    pub fn prefetch_task(&self, p: TaskId) {
        if let Some(t) = self.tasks.get(p.idx()) {
            crate::prefetch::all(t);
        }
    }

    /// Ask the CPU to fetch what an enqueue, a dequeue, a pick, a switch or a
    /// wakeup touch of `c`'s runqueue: its first five lines (`Rq`'s layout).
    /// A hint only: no effect on any result. (The root timeline's nodes are
    /// not asked for: their address is in the runqueue, a load that would
    /// wait for the line this asks for.)
    #[inline]
    pub fn prefetch_rq(&self, c: CpuId) {
        if let Some(rq) = self.rqs.get(c.idx()) {
            crate::prefetch::lines(rq, 5);
        }
    }

    /// Ask the CPU to fetch the first nodes of `c`'s root timeline, for an
    /// entry point about to enqueue, dequeue or pick there (the runqueue's
    /// own lines are asked for by the engine, [`Self::prefetch_rq`], ahead of
    /// the event). A hint only: no effect on any result.
    #[inline]
    fn prefetch_timeline(&self, c: CpuId) {
        if let Some(rq) = self.rqs.get(c.idx()) {
            rq.cfs.queue.prefetch();
        }
    }

    /// Ask the CPU to fetch the waker CPU's wakeup counters that
    /// `ttwu_stat()` updates at the end of a wakeup (its runqueue's fifth
    /// line and its domains' schedstat row). A hint only.
    #[inline]
    fn prefetch_ttwu_stat(&self, this_cpu: CpuId) {
        if let (Some(rq), Some(row)) = (self.rqs.get(this_cpu.idx()), self.sd_stats.get(this_cpu.idx())) {
            crate::prefetch::range(&rq.ttwu_count as *const u64 as *const u8, 8);
            crate::prefetch::range(row.as_ptr() as *const u8, std::mem::size_of_val(row));
        }
    }

    /// `idle_cpu()` (kernel/sched/core.c: curr is idle, no queued task, no pending wakeup).
    #[inline]
    pub fn idle_cpu(&self, c: CpuId) -> bool {
        let rq = &self.rqs[c.idx()];
        rq.curr.is_none() && (rq.nr_running() == 0 || self.enq_unseen(rq)) && !self.ttwu_pending_seen(rq)
    }

    /// Whether every task queued on idle `rq` was enqueued there by a remote
    /// waker whose store the current CPU cannot see yet.
    #[inline]
    pub(crate) fn enq_unseen(&self, rq: &Rq) -> bool {
        // FIDELITY(F-004): a remote enqueue onto an idle CPU becomes visible
        // to other CPUs a window after the waker's idle check (its store and
        // the rq lock's line): wakers inside it take the same idle CPU.
        rq.enq_unseen > 0
            && rq.nr_running() == rq.enq_unseen
            && self.cur_now < rq.enq_visible_at
            && self.cur_this_cpu != rq.enq_owner
            && self.cur_this_cpu != rq.enq_last
    }

    /// A remote waker `this_cpu` enqueues onto `cpu` (ttwu_do_activate() under
    /// its rq lock) at `now`: if `cpu` was empty, the enqueue reaches other
    /// CPUs a window later; a second waker that still saw it idle adds to
    /// the unseen tasks without moving the first store's visibility.
    fn enq_unseen_note(&mut self, cpu: CpuId, this_cpu: CpuId, now: u64) {
        let seen_idle = self.idle_cpu(cpu);
        let rq = &mut self.rqs[cpu.idx()];
        if rq.curr.is_some() {
            return;
        }
        if rq.nr_running() == 0 {
            rq.enq_unseen = 1;
            rq.enq_visible_at = now + self.ttwu_pending_window_ns;
            rq.enq_owner = this_cpu;
            rq.enq_last = this_cpu;
        } else if seen_idle {
            rq.enq_unseen += 1;
            rq.enq_last = this_cpu;
        }
    }

    /// The engine's rq-lock model says the waker on `this_cpu` that enqueued
    /// onto `cpu` at the start of the present wakeup holds the lock until
    /// `until`: its enqueue is seen no earlier (F-004).
    pub fn enq_visible_no_sooner(&mut self, cpu: CpuId, this_cpu: CpuId, until: u64) {
        let rq = &mut self.rqs[cpu.idx()];
        if rq.enq_unseen > 0 && rq.enq_owner == this_cpu && rq.enq_visible_at > self.cur_now {
            rq.enq_visible_at = rq.enq_visible_at.max(until);
        }
    }

    /// `rq->ttwu_pending` as the current CPU sees it now.
    #[inline]
    pub(crate) fn ttwu_pending_seen(&self, rq: &Rq) -> bool {
        // FIDELITY(F-004): ttwu_pending set by another CPU less than the
        // visibility window ago is not seen yet (the stacking race).
        rq.ttwu_pending > 0 && (self.cur_now >= rq.ttwu_pending_visible_at || self.cur_this_cpu == rq.ttwu_pending_owner)
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

#[cfg(test)]
mod tests {
    use super::*;

    // `Kernel::at_least` is the tuple comparison `profile.version >= (major,
    // minor)`, for every profile and the versions the switch path asks about
    // (and their neighbours on either side).
    #[test]
    fn at_least_is_the_version_tuple_comparison() {
        let topo = schedlab_topology::CpuTopology::new(
            (0..2u32).map(|c| schedlab_topology::CpuInfo { core: c, cluster: 0, llc: 0, node: 0, package: 0 }).collect(),
            vec![vec![10]],
        )
        .unwrap();
        for p in crate::profile::profiles() {
            let version = p.version;
            let k = Kernel::new(&topo, p);
            for major in 2..8 {
                for minor in 0..40 {
                    assert_eq!(k.at_least(major, minor), version >= (major, minor), "{version:?} vs ({major}, {minor})");
                }
            }
            assert!(k.at_least(version.0, version.1));
            assert!(!k.at_least(version.0, version.1 + 1));
        }
    }
}
