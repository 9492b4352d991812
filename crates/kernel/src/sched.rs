//! The kernel's per-object state (kernel/sched/sched.h, include/linux/sched.h;
//! kernel/sched/sched.h): `task_struct` (the scheduler's part of it), `sched_entity`,
//! `cfs_rq` and `rq`.

use crate::cpumask::CpuMask;
use crate::pelt::SchedAvg;
use schedlab_topology::CpuId;

/// Dense task id (the simulator's pid).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub u32);

impl TaskId {
    #[inline]
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// A scheduling entity (`struct sched_entity *`): a task's, or a task group's
/// on one CPU (the group's slot in `Kernel::gse`, which is also the slot of
/// the cfs_rq it owns, `se->my_q`, in `Kernel::grq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ent(u32);

const GROUP_BIT: u32 = 1 << 31;

impl Ent {
    /// A task's entity. Task ids are indices into the task table, far below
    /// 2^31: the group bit is cleared (a no-op on every valid id) so that the
    /// compiler knows the entity is a task and drops the task-or-group test
    /// of `se()`/`cfs_of()` where the entity comes from a task id.
    #[inline]
    pub fn task(p: TaskId) -> Ent {
        debug_assert!(p.0 & GROUP_BIT == 0, "task id {} has the group bit", p.0);
        Ent(p.0 & !GROUP_BIT)
    }
    #[inline]
    pub fn group(slot: usize) -> Ent {
        Ent(slot as u32 | GROUP_BIT)
    }
    /// `entity_is_task()`: the task, if this is a task entity.
    #[inline]
    pub fn task_id(self) -> Option<TaskId> {
        (self.0 & GROUP_BIT == 0).then_some(TaskId(self.0))
    }
    #[inline]
    pub fn is_task(self) -> bool {
        self.0 & GROUP_BIT == 0
    }
    /// The group slot, if this is a group entity.
    #[inline]
    pub fn slot(self) -> Option<usize> {
        (self.0 & GROUP_BIT != 0).then_some((self.0 & !GROUP_BIT) as usize)
    }
}

impl From<TaskId> for Ent {
    fn from(p: TaskId) -> Ent {
        Ent::task(p)
    }
}

/// A cfs_rq: the root one of a CPU (`rq->cfs`) or a task group's on one CPU
/// (`tg->cfs_rq[cpu]`, slot in `Kernel::grq`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CfsId(u32);

impl CfsId {
    #[inline]
    pub fn root(cpu: CpuId) -> CfsId {
        CfsId(cpu.0 as u32)
    }
    #[inline]
    pub fn group(slot: usize) -> CfsId {
        CfsId(slot as u32 | GROUP_BIT)
    }
    /// The CPU, if this is a root cfs_rq.
    #[inline]
    pub fn root_cpu(self) -> Option<CpuId> {
        (self.0 & GROUP_BIT == 0).then_some(CpuId(self.0 as u16))
    }
    #[inline]
    pub fn slot(self) -> Option<usize> {
        (self.0 & GROUP_BIT != 0).then_some((self.0 & !GROUP_BIT) as usize)
    }
}

impl From<CpuId> for CfsId {
    fn from(c: CpuId) -> CfsId {
        CfsId::root(c)
    }
}

/// `struct task_group` (cpu controller): the root group is id 0.
#[derive(Clone, Debug)]
pub struct TaskGroup {
    pub name: String,
    /// Parent group id (the root group is its own parent).
    pub parent: u32,
    /// `tg->shares` (cpu.weight 100 = cpu.shares 1024 = NICE_0_LOAD).
    pub shares: u64,
    /// Depth of the group's entities (`se->depth`): children of the root are 0.
    pub depth: u32,
    /// `tg->load_avg`: sum of the per-CPU `tg_load_avg_contrib`.
    pub load_avg: i64,
}

/// `sched_prio_to_weight[]`, nice -20..19 (kernel/sched/core.c).
pub const SCHED_PRIO_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904, 3906, 3121, 2501, 1991, 1586, 1277, 1024,
    820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87, 70, 56, 45, 36, 29, 23, 18, 15,
];
/// `NICE_0_LOAD` at user scale.
pub const NICE_0_LOAD: u64 = 1024;
/// `WEIGHT_IDLEPRIO`: the weight of a SCHED_IDLE task.
pub const WEIGHT_IDLEPRIO: u64 = 3;

/// Scheduling policy of a fair task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Policy {
    #[default]
    Normal,
    Batch,
    Idle,
}

/// Weight of a task from its nice value and policy (`set_load_weight()`).
pub fn task_weight(nice: i8, policy: Policy) -> u64 {
    if policy == Policy::Idle {
        return WEIGHT_IDLEPRIO;
    }
    SCHED_PRIO_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

/// Where a task is, from the scheduler's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Created, not yet woken by `wake_up_new_task()`.
    New,
    /// On a runqueue, waiting for a CPU.
    Runnable,
    /// `rq->curr` of its CPU.
    Running,
    /// Blocked (possibly still queued as `sched_delayed`, v6.12+).
    Sleeping,
    /// Woken and on a remote CPU's wake list (TTWU_QUEUE), not yet enqueued.
    Waking,
    /// Exited.
    Dead,
}

/// `struct sched_entity` (tasks and task groups).
#[derive(Clone, Debug, Default)]
pub struct SchedEntity {
    pub weight: u64,
    /// `se->depth`: 0 for entities queued on a root cfs_rq.
    pub depth: u32,
    /// Wrapping u64 as in the kernel; compare with `(a - b) as i64`.
    pub vruntime: u64,
    pub deadline: u64,
    /// EEVDF lag at dequeue; while curr, the slice protection: a copy of the
    /// deadline at pick (v6.6-v6.16) or the bound vprot (v6.17+, a union with vlag).
    pub vlag: i64,
    pub slice: u64,
    pub on_rq: bool,
    pub sched_delayed: bool,
    /// PLACE_REL_DEADLINE: `deadline` holds deadline - vruntime.
    pub rel_deadline: bool,
    /// CFS: vruntime is relative to the old cfs_rq's min_vruntime (migration / waking).
    pub vruntime_relative: bool,
    pub exec_start: u64,
    pub sum_exec_runtime: u64,
    pub prev_sum_exec_runtime: u64,
    pub avg: SchedAvg,
}

/// The scheduler's part of `struct task_struct`.
///
/// Layout: a wakeup, an enqueue or dequeue, a pick and a switch touch nearly
/// every field of the tasks involved, so the struct is kept to four 64-byte
/// lines (a test checks the size): `repr(C)` fixes the order, the alignment
/// starts each task on a line, and the optional values are stored in the
/// width of their values ([`OptU64`], [`OptU32`], `Option<CpuId>`).
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Task {
    pub se: SchedEntity,
    /// Voluntary / involuntary context switches (`nvcsw`, `nivcsw`).
    pub nvcsw: u64,
    pub nivcsw: u64,
    /// `sched_info`: total time spent runnable but waiting, and the count of waits.
    pub run_delay: u64,
    pub pcount: u64,
    /// `sched_info.last_queued`: when the current wait started.
    pub last_queued: OptU64,
    /// Position in `rq->cfs_tasks` (most recently used at the head): larger =
    /// more recently enqueued or picked. The balancer detaches from the tail.
    pub mru: u64,
    /// `se.nr_migrations`
    pub nr_migrations: u64,
    /// On the line of `wakee_flips` and `last_wakee`: record_wakee() touches
    /// one line of the waker.
    pub wakee_flip_decay_ts: u64,
    /// `p->cpus_ptr`; `None` = all CPUs. Boxed: most tasks have none, and an
    /// inline 1024-CPU mask would double the size of every task.
    pub cpus_allowed: Option<Box<CpuMask>>,
    pub id: TaskId,
    /// `task_cpu(p)`.
    pub cpu: CpuId,
    pub recent_used_cpu: CpuId,
    /// The CPU whose `rq->cfs_tasks` lists the task, while on_rq.
    pub mru_listed: Option<CpuId>,
    pub state: TaskState,
    pub policy: Policy,
    pub nice: i8,
    pub wakee_flips: u32,
    pub last_wakee: Option<TaskId>,
    /// Links of the `rq->cfs_tasks` list while listed: (previous, next) task
    /// ids, [`NO_TASK`] at the ends.
    pub cfs_link: (u32, u32),
    /// What `util_est_enqueue()` added to the root cfs_rq's util_est for this
    /// task (None while not counted): `util_est_dequeue()` takes exactly that
    /// back, as the kernel's does (the task's util_est only changes at a sleep).
    pub util_est_queued: OptU32,
    /// Process (mm) the task belongs to: threads of one process share it.
    pub mm: u32,
    /// Task group (cpu cgroup) id; 0 = the root group.
    pub group: u32,
}

/// An `Option<u64>` in 8 bytes: `u64::MAX` stands for None (a time or a
/// count that never reaches it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptU64(u64);

impl OptU64 {
    pub const NONE: OptU64 = OptU64(u64::MAX);
    #[inline]
    pub fn get(self) -> Option<u64> {
        (self.0 != u64::MAX).then_some(self.0)
    }
    #[inline]
    pub fn is_some(self) -> bool {
        self.0 != u64::MAX
    }
    #[inline]
    pub fn set(&mut self, v: Option<u64>) {
        debug_assert!(v != Some(u64::MAX), "u64::MAX stands for None");
        self.0 = v.unwrap_or(u64::MAX);
    }
    #[inline]
    pub fn take(&mut self) -> Option<u64> {
        let v = self.get();
        self.0 = u64::MAX;
        v
    }
}

/// An `Option<u32>` in 4 bytes: `u32::MAX` stands for None (values that
/// never reach it, such as a task's utilisation, at most 1024).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptU32(u32);

impl OptU32 {
    pub const NONE: OptU32 = OptU32(u32::MAX);
    #[inline]
    pub fn get(self) -> Option<u32> {
        (self.0 != u32::MAX).then_some(self.0)
    }
    #[inline]
    pub fn is_some(self) -> bool {
        self.0 != u32::MAX
    }
    #[inline]
    pub fn set(&mut self, v: Option<u32>) {
        debug_assert!(v != Some(u32::MAX), "u32::MAX stands for None");
        self.0 = v.unwrap_or(u32::MAX);
    }
    #[inline]
    pub fn take(&mut self) -> Option<u32> {
        let v = self.get();
        self.0 = u32::MAX;
        v
    }
}

impl Task {
    /// A task that is none of the kernel's: the padding of the task table
    /// ([`crate::maskvec::MaskVec`]) before the first fork.
    pub(crate) fn placeholder() -> Task {
        Task {
            se: SchedEntity::default(),
            nvcsw: 0,
            nivcsw: 0,
            run_delay: 0,
            pcount: 0,
            last_queued: OptU64::NONE,
            mru: 0,
            nr_migrations: 0,
            wakee_flip_decay_ts: 0,
            cpus_allowed: None,
            id: TaskId(NO_TASK),
            cpu: CpuId(0),
            recent_used_cpu: CpuId(0),
            mru_listed: None,
            state: TaskState::Dead,
            policy: Policy::Normal,
            nice: 0,
            wakee_flips: 0,
            last_wakee: None,
            cfs_link: (NO_TASK, NO_TASK),
            util_est_queued: OptU32::NONE,
            mm: 0,
            group: 0,
        }
    }

    #[inline]
    pub fn allowed(&self, c: CpuId) -> bool {
        self.cpus_allowed.as_ref().is_none_or(|m| m.test(c))
    }
}

/// `struct cfs_rq`: the root one of a CPU, or a task group's on a CPU. The
/// fields the balancer and the idle scans read come first (`repr(C)` keeps the
/// order: see [`Rq`]'s layout).
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub struct CfsRq {
    /// `nr_running` / `nr_queued`: entities on this cfs_rq (v6.12: includes delayed ones).
    pub nr_running: u32,
    /// `h_nr_running` / `h_nr_queued`: tasks queued in this hierarchy (the
    /// root's is `rq->nr_running` of the fair class).
    pub h_nr_running: u32,
    /// Tasks below queued as `sched_delayed` (v6.12+).
    pub h_nr_delayed: u32,
    /// Queued SCHED_IDLE tasks below (`h_nr_idle`).
    pub h_nr_idle: u32,
    /// Sum of util_est of enqueued tasks (`avg.util_est` of the root cfs_rq).
    pub util_est_enqueued: u64,
    pub avg: SchedAvg,
    pub curr: Option<Ent>,
    /// Sum of the weights of queued entities including curr.
    pub load_weight: u64,
    pub min_vruntime: u64,
    /// EEVDF: sum of (v_i - min_vruntime) * w_i over the tree (not curr).
    pub avg_vruntime: i64,
    /// EEVDF: sum of w_i over the tree (not curr).
    pub avg_load: i64,
    pub next: Option<Ent>,
    pub last: Option<Ent>,
    pub skip: Option<Ent>,
    /// Queued entities except `curr` (the rbtree), ordered by vruntime; ties
    /// break as the rbtree breaks them (a later insert goes right).
    pub queue: crate::fair::tree::Timeline,
    /// `tg_load_avg_contrib`: this cfs_rq's share last added to `tg->load_avg`
    /// (group cfs_rqs only: last).
    pub tg_load_avg_contrib: i64,
}

// FIDELITY(F-006): fair class only; capacity 1024 at maximum frequency on every CPU.
/// `struct rq` (fair class only; other classes are not modelled).
///
/// Layout: what a balance pass or an idle scan reads of every runqueue it
/// looks at (`curr`, `ttwu_pending`, the root cfs_rq's counts, util_est and
/// load/runnable/util averages) is the first cache line; the rest of what an
/// enqueue, a dequeue or a pick touches (the cfs_rq, `cfs_tasks`) fills the
/// next three; what a switch and a wakeup add (idle stamps, switch and
/// wakeup counts) is the fifth; the fields of the periodic and idle
/// balancing and of older kernels' tick come last (seven lines in all). `repr(C)` keeps the declared
/// order, the alignment starts each runqueue on a line, and tests check the
/// offsets and the size.
#[derive(Clone, Debug)]
#[repr(C, align(64))]
pub struct Rq {
    /// `rq->curr`; `None` is the idle task.
    pub curr: Option<TaskId>,
    /// `rq->ttwu_pending`: wakeups queued on this CPU's wake list, not yet activated.
    pub ttwu_pending: u32,
    pub ttwu_pending_owner: CpuId,
    /// TIF_NEED_RESCHED of `rq->curr`.
    pub need_resched: bool,
    pub cfs: CfsRq,
    /// `rq->cfs_tasks` ordered least recently used first: (mru, task) of every
    /// task on_rq at any level of this CPU's hierarchy (detach_tasks() walks
    /// it from the tail).
    pub cfs_tasks: CfsTasks,
    /// Active balance pending: push the running task to this CPU at the next schedule().
    pub active_balance: Option<CpuId>,
    /// `rq->idle_stamp`: when the CPU last went idle (0 = not idle).
    pub idle_stamp: u64,
    pub avg_idle: u64,
    pub nr_switches: u64,
    /// schedstat: `ttwu_count` (wakeups of tasks that ended up here) and
    /// `ttwu_local` (of those, woken by this CPU).
    pub ttwu_count: u64,
    /// schedstat: `sched_goidle`.
    pub sched_goidle: u64,
    pub ttwu_local: u64,
    pub cpu: CpuId,
    /// When the first pending wake-list entry's ttwu_pending becomes visible
    /// to CPUs other than the waker that set it.
    pub ttwu_pending_visible_at: u64,
    /// The wake list (`rq->wake_list` / `llist`), in arrival order.
    pub wake_list: Vec<TaskId>,
    // What a switch or a wakeup does not touch.
    pub max_idle_balance_cost: u64,
    /// v5.13-v6.6 SIS_PROP: `wake_avg_idle` and its aging stamp (jiffies).
    pub wake_avg_idle: u64,
    pub wake_stamp: u64,
    /// `rq->next_balance` (ns).
    pub next_balance: u64,
    /// v2.6.x-v4.x `rq->cpu_load[CPU_LOAD_IDX_MAX]`: weighted_cpuload() decayed
    /// per tick with factor (2^i - 1) / 2^i (`__update_cpu_load()`).
    pub cpu_load: [u64; 5],
    /// `rq->last_load_update_tick` (jiffies).
    pub last_load_update_tick: u64,
    /// A remote waker's enqueue onto this idle runqueue (ttwu_do_activate()
    /// under its lock, not the wake list) reaches other CPUs only at
    /// `enq_visible_at`; until then the `enq_unseen` tasks enqueued since
    /// it was empty do not make it look busy to CPUs other than `enq_owner`,
    /// the waker whose store came first, and `enq_last`, the latest (each
    /// sees its own store; F-004).
    pub enq_visible_at: u64,
    pub enq_unseen: u32,
    pub enq_owner: CpuId,
    pub enq_last: CpuId,
}

/// No task: the end of a [`CfsTasks`] list.
pub const NO_TASK: u32 = u32::MAX;

/// `rq->cfs_tasks`: the CPU's on_rq fair tasks, least recently used (smallest
/// `mru`) first, linked through [`Task::cfs_link`]. A task is listed with a
/// fresh `mru` (larger than every listed one), so it always joins at the tail
/// and the list stays in `mru` order: an ordered set without allocation.
#[derive(Clone, Copy, Debug)]
pub struct CfsTasks {
    pub(crate) head: u32,
    pub(crate) tail: u32,
    pub(crate) len: u32,
}

impl Default for CfsTasks {
    fn default() -> Self {
        CfsTasks { head: NO_TASK, tail: NO_TASK, len: 0 }
    }
}

impl CfsTasks {
    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The tasks, least recently used first; `tasks` is the kernel's task table.
    pub fn iter<'a>(&self, tasks: &'a [Task]) -> impl Iterator<Item = TaskId> + 'a {
        let mut at = self.head;
        std::iter::from_fn(move || {
            if at == NO_TASK {
                return None;
            }
            let p = TaskId(at);
            at = tasks[p.idx()].cfs_link.1;
            Some(p)
        })
    }
    /// Whether `p` is the last task of the list.
    #[inline]
    pub(crate) fn is_tail(&self, p: TaskId) -> bool {
        self.tail == p.0
    }
    /// Append `p` (not listed) at the tail.
    pub(crate) fn push_tail(&mut self, tasks: &mut crate::maskvec::MaskVec<Task>, p: TaskId) {
        tasks[p.idx()].cfs_link = (self.tail, NO_TASK);
        if self.tail == NO_TASK {
            self.head = p.0;
        } else {
            tasks[self.tail as usize].cfs_link.1 = p.0;
        }
        self.tail = p.0;
        self.len += 1;
    }
    /// Unlink listed task `p`.
    pub(crate) fn remove(&mut self, tasks: &mut crate::maskvec::MaskVec<Task>, p: TaskId) {
        let (prev, next) = tasks[p.idx()].cfs_link;
        if prev == NO_TASK {
            self.head = next;
        } else {
            tasks[prev as usize].cfs_link.1 = next;
        }
        if next == NO_TASK {
            self.tail = prev;
        } else {
            tasks[next as usize].cfs_link.0 = prev;
        }
        tasks[p.idx()].cfs_link = (NO_TASK, NO_TASK);
        self.len -= 1;
    }
}

impl Rq {
    /// `rq->nr_running` (fair tasks only): the root cfs_rq's `h_nr_running`.
    #[inline]
    #[allow(clippy::misnamed_getters)] // rq->nr_running is the root's h_nr_running, not its nr_running
    pub fn nr_running(&self) -> u32 {
        self.cfs.h_nr_running
    }
}

/// The runqueues, indexed by CPU, with a record of which ones were written.
///
/// Reads go through `Deref<Target = [Rq]>` and `Index`; every write goes
/// through `IndexMut` (or [`Rqs::iter_mut`]), which marks the CPU in `dirty`.
/// The mark is a simulator index, not kernel state: the balancer's per-domain
/// summaries (`LbIndex`, serving update_sd_lb_stats()) refresh only the CPUs
/// written since their last pass instead of reading every runqueue, and give
/// the same statistics as that read.
///
/// The entry points write one runqueue many times in a row (a dequeue, a
/// pick, a wakeup's enqueue: a dozen writes each), so the CPU last marked is
/// kept: a write to it again is one comparison, without the bit's store
/// (or, tracking off, without the test of `track`).
///
/// A switch indexes the runqueues dozens of times: the storage is padded to
/// a power of two runqueues, so that an index is masked into range (`c &
/// mask`) instead of tested against the length (a load, a compare and a
/// branch to a panic, which also kept the compiler from reusing an address
/// across writes). A CPU past the last is a bug the debug builds catch; the
/// masked index keeps it inside the allocation (sound, if not meaningful).
#[derive(Clone, Debug)]
pub struct Rqs {
    /// `n` runqueues, then copies of the last up to a power of two (reached
    /// only by a CPU past the last).
    v: Vec<Rq>,
    n: usize,
    /// `v.len() - 1`, `v.len()` a power of two.
    mask: usize,
    /// One bit per entry of `v`: written since the last [`Rqs::take_dirty`].
    dirty: Vec<u64>,
    /// Marks are kept (some summary reads them); off, a write costs nothing more.
    track: bool,
    /// The CPU whose runqueue the last write went to (`usize::MAX`: none since
    /// the marks were last taken): marked already if tracking, so the next
    /// write to it need not mark it again.
    last: usize,
}

impl Rqs {
    /// The runqueues `v` (at least one).
    pub fn new(mut v: Vec<Rq>) -> Rqs {
        let n = v.len();
        assert!(n > 0, "a machine has at least one CPU");
        let size = n.next_power_of_two();
        let pad = v[n - 1].clone();
        v.resize(size, pad);
        // Every runqueue starts written: a summary built later reads them all
        // (bits past the last CPU are skipped by `take_dirty`).
        let dirty = vec![u64::MAX; size.div_ceil(64)];
        Rqs { v, n, mask: size - 1, dirty, track: true, last: usize::MAX }
    }

    /// Keep the write marks or not (no summary reads them); turning them on
    /// again marks every runqueue.
    pub(crate) fn set_tracking(&mut self, on: bool) {
        if on && !self.track {
            self.dirty.iter_mut().for_each(|w| *w = u64::MAX);
        }
        self.track = on;
    }

    /// Every runqueue, mutably (all marked written).
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Rq> {
        self.dirty.iter_mut().for_each(|w| *w = u64::MAX);
        self.v[..self.n].iter_mut()
    }

    /// Call `f` with each CPU written since the last call and its runqueue,
    /// ascending, and clear the marks.
    #[inline]
    pub(crate) fn take_dirty(&mut self, mut f: impl FnMut(usize, &Rq)) {
        // The last CPU written is no longer marked: its next write marks it.
        self.last = usize::MAX;
        let n = self.n;
        for (i, w) in self.dirty.iter_mut().enumerate() {
            let mut bits = std::mem::take(w);
            while bits != 0 {
                let c = i * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if c < n {
                    f(c, &self.v[c]);
                }
            }
        }
    }
}

impl std::ops::Deref for Rqs {
    type Target = [Rq];
    #[inline]
    fn deref(&self) -> &[Rq] {
        &self.v[..self.n]
    }
}

impl std::ops::Index<usize> for Rqs {
    type Output = Rq;
    #[inline]
    fn index(&self, c: usize) -> &Rq {
        debug_assert!(c < self.n, "CPU {c} of {}", self.n);
        // SAFETY: `v.len()` is `mask + 1` (`Rqs::new`; `v` is never resized
        // afterwards), so `c & mask` < `v.len()`.
        unsafe { self.v.get_unchecked(c & self.mask) }
    }
}

impl std::ops::IndexMut<usize> for Rqs {
    #[inline]
    fn index_mut(&mut self, c: usize) -> &mut Rq {
        debug_assert!(c < self.n, "CPU {c} of {}", self.n);
        let c = c & self.mask;
        if c != self.last {
            self.last = c;
            if self.track {
                // SAFETY: `c` <= `mask`, and `dirty` has a word for every 64
                // entries of `v` (`mask + 1` of them, rounded up; `Rqs::new`;
                // neither vector is resized afterwards), so word `c / 64` exists.
                unsafe { *self.dirty.get_unchecked_mut(c >> 6) |= 1u64 << (c & 63) };
            }
        }
        // SAFETY: as in `index`, `c` (masked) < `v.len()`.
        unsafe { self.v.get_unchecked_mut(c) }
    }
}

impl<'a> IntoIterator for &'a Rqs {
    type Item = &'a Rq;
    type IntoIter = std::slice::Iter<'a, Rq>;
    fn into_iter(self) -> Self::IntoIter {
        self.v[..self.n].iter()
    }
}

impl<'a> IntoIterator for &'a mut Rqs {
    type Item = &'a mut Rq;
    type IntoIter = std::slice::IterMut<'a, Rq>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;
    use std::mem::{align_of, offset_of, size_of};

    // Every mutable borrow marks its CPU while tracking; reads never do; off,
    // nothing is marked, and turning tracking on marks every runqueue.
    #[test]
    fn runqueue_writes_are_marked() {
        let k = crate::core::Kernel::new(
            &schedlab_topology::CpuTopology::new(
                (0..70u32).map(|c| schedlab_topology::CpuInfo { core: c, cluster: 0, llc: 0, node: 0, package: 0 }).collect(),
                vec![vec![10]],
            )
            .unwrap(),
            crate::profile::profile("v6.12").unwrap(),
        );
        let mut rqs = k.rqs.clone();
        let taken = |r: &mut Rqs| {
            let mut v = Vec::new();
            r.take_dirty(|c, _| v.push(c));
            v
        };
        assert_eq!(taken(&mut rqs).len(), 70, "all start written");
        let _ = rqs[3].curr;
        rqs[65].need_resched = true;
        rqs[3].cfs.h_nr_running += 0;
        assert_eq!(taken(&mut rqs), vec![3, 65]);
        // The last CPU written before the marks were taken is marked again
        // by its next write (taking the marks forgets it).
        rqs[3].need_resched = false;
        rqs[3].need_resched = true;
        assert_eq!(taken(&mut rqs), vec![3]);
        rqs.set_tracking(false);
        rqs[7].need_resched = true;
        assert!(taken(&mut rqs).is_empty());
        rqs.set_tracking(true);
        assert_eq!(taken(&mut rqs).len(), 70);
    }

    // What the balancer and the idle scans read of every runqueue lies in its
    // first cache line (one line fetched per CPU looked at, not five).
    #[test]
    fn balancer_fields_share_the_first_cache_line_of_a_runqueue() {
        assert_eq!(align_of::<Rq>(), 64);
        let cfs = offset_of!(Rq, cfs);
        let avg = cfs + offset_of!(CfsRq, avg);
        let hot = [
            ("curr", offset_of!(Rq, curr), size_of::<Option<TaskId>>()),
            ("ttwu_pending", offset_of!(Rq, ttwu_pending), 4),
            ("ttwu_pending_owner", offset_of!(Rq, ttwu_pending_owner), 2),
            ("nr_running", cfs + offset_of!(CfsRq, nr_running), 4),
            ("h_nr_running", cfs + offset_of!(CfsRq, h_nr_running), 4),
            ("h_nr_delayed", cfs + offset_of!(CfsRq, h_nr_delayed), 4),
            ("util_est_enqueued", cfs + offset_of!(CfsRq, util_est_enqueued), 8),
            ("load_avg", avg + offset_of!(crate::pelt::SchedAvg, load_avg), 8),
            ("runnable_avg", avg + offset_of!(crate::pelt::SchedAvg, runnable_avg), 8),
            ("util_avg", avg + offset_of!(crate::pelt::SchedAvg, util_avg), 8),
        ];
        for (name, off, len) in hot {
            assert!(off + len <= 64, "{name} at {off}..{} is past the first line", off + len);
        }
    }
    // The hot state stays in few lines (issue 21: at 4096 tasks on 1024 CPUs
    // what a switch touches must fit the L2): a task in four lines, a runqueue
    // in seven with what an enqueue, dequeue or pick touches in the first four
    // and what a switch or wakeup adds in the fifth, a sched_avg in one. A
    // field added to these must keep them so (or move a cold one out).
    #[test]
    fn hot_structs_keep_their_cache_line_budget() {
        assert_eq!(size_of::<crate::pelt::SchedAvg>(), 64);
        assert_eq!(size_of::<SchedEntity>(), 136);
        assert_eq!((size_of::<Task>(), align_of::<Task>()), (256, 64));
        assert_eq!(size_of::<CfsRq>(), 224);
        let line = |off: usize| off / 64;
        assert_eq!(line(offset_of!(Task, wakee_flip_decay_ts)), line(offset_of!(Task, wakee_flips)));
        assert_eq!(line(offset_of!(Task, last_wakee)), line(offset_of!(Task, wakee_flips)));
        assert_eq!(size_of::<Rq>(), 7 * 64);
        let enqueue_end = offset_of!(Rq, active_balance) + size_of::<Option<CpuId>>();
        assert!(enqueue_end <= 4 * 64, "the enqueue-time fields of a runqueue end at {enqueue_end}, past four lines");
        for (name, off) in [
            ("idle_stamp", offset_of!(Rq, idle_stamp)),
            ("avg_idle", offset_of!(Rq, avg_idle)),
            ("nr_switches", offset_of!(Rq, nr_switches)),
            ("ttwu_count", offset_of!(Rq, ttwu_count)),
            ("sched_goidle", offset_of!(Rq, sched_goidle)),
            ("ttwu_local", offset_of!(Rq, ttwu_local)),
        ] {
            assert_eq!(line(off), 4, "{name} at {off} is not in the fifth line");
        }
    }
}
