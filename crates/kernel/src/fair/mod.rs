//! The fair class (kernel/sched/fair.c): entity accounting, placement in virtual
//! time, picking (EEVDF v6.6+ and classic CFS <= v6.5), tick and wakeup
//! preemption, over a hierarchy of task groups (CONFIG_FAIR_GROUP_SCHED: one
//! cfs_rq per group per CPU, represented in its parent by a group entity whose
//! weight comes from `calc_group_shares()`). Wakeup CPU selection lives in
//! `select.rs`, load balancing in `balance.rs`.
//!
//! Entity-level functions (`enqueue_entity()`, `pick_eevdf()`, ...) take the
//! cfs_rq (`CfsId`) and the entity (`Ent`); task-level ones
//! (`enqueue_task_fair()`, `pick_next_task_fair()`, ...) walk the hierarchy
//! (`for_each_sched_entity()`). With no groups every task sits on its CPU's
//! root cfs_rq and the walks are one level deep.

pub mod balance;
pub mod group;
pub(crate) mod lb_index;
pub mod numa;
pub mod select;
pub mod tree;

use crate::core::Kernel;
use crate::explain::Preempt;
use crate::features::SchedFeat::*;
use crate::maskvec::MaskVec;
use crate::profile::PickAlgo;
use crate::sched::{CfsId, CfsRq, Ent, Policy, Rqs, SchedEntity, Task, TaskId, NICE_0_LOAD};
use schedlab_topology::CpuId;

/// `ENQUEUE_*` / `DEQUEUE_*` flags.
pub mod flags {
    pub const ENQUEUE_WAKEUP: u32 = 0x01;
    pub const ENQUEUE_INITIAL: u32 = 0x80;
    pub const ENQUEUE_MIGRATED: u32 = 0x100;
    pub const DEQUEUE_SLEEP: u32 = 0x01;
    pub const DEQUEUE_DELAYED: u32 = 0x200;
}
use flags::*;

/// `calc_delta_fair()`: wall delta to virtual delta for weight `w`.
#[inline]
pub fn calc_delta_fair(delta: u64, w: u64) -> u64 {
    if w == NICE_0_LOAD {
        delta
    } else {
        // The 128-bit product only when the 64-bit one overflows (same quotient).
        match delta.checked_mul(NICE_0_LOAD) {
            Some(x) => x / w,
            None => ((delta as u128 * NICE_0_LOAD as u128) / w as u128) as u64,
        }
    }
}

/// `(s64)(a - b)`: the kernel's wrap-safe comparison of u64 virtual times.
#[inline]
pub fn vdiff(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

/// The cfs_rq `q` among the runqueues and the group cfs_rqs, mutably: the
/// lookup of [`Kernel::cfs_mut`] on the two fields alone, so that a caller
/// can hold it beside an entity ([`se_in`]) and write both without looking
/// either up again (a write through one would otherwise reload the other's
/// vector).
#[inline(always)]
fn cfs_in<'a>(rqs: &'a mut Rqs, grq: &'a mut [CfsRq], q: CfsId) -> &'a mut CfsRq {
    match q.root_cpu() {
        Some(c) => &mut rqs[c.idx()].cfs,
        None => &mut grq[q.slot().unwrap()],
    }
}

/// The entity `e` among the tasks and the group entities, mutably (the
/// lookup of [`Kernel::se_mut`] on the two fields alone; see [`cfs_in`]).
#[inline(always)]
fn se_in<'a>(tasks: &'a mut MaskVec<Task>, gse: &'a mut [SchedEntity], e: Ent) -> &'a mut SchedEntity {
    match e.task_id() {
        Some(p) => &mut tasks[p.idx()].se,
        None => &mut gse[e.slot().unwrap()],
    }
}

/// The entity `e`, shared (the lookup of [`Kernel::se`] on the two fields
/// alone, to read an entity while a cfs_rq from [`cfs_in`] is held).
#[inline(always)]
fn se_of<'a>(tasks: &'a MaskVec<Task>, gse: &'a [SchedEntity], e: Ent) -> &'a SchedEntity {
    match e.task_id() {
        Some(p) => &tasks[p.idx()].se,
        None => &gse[e.slot().unwrap()],
    }
}

impl Kernel {
    #[inline]
    pub(crate) fn eevdf(&self) -> bool {
        self.profile.pick == PickAlgo::Eevdf
    }

    // ---------------------------------------------------------------- hierarchy

    /// The cfs_rq `q`.
    #[inline]
    pub fn cfs(&self, q: CfsId) -> &CfsRq {
        match q.root_cpu() {
            Some(c) => &self.rqs[c.idx()].cfs,
            None => &self.grq[q.slot().unwrap()],
        }
    }

    #[inline]
    pub(crate) fn cfs_mut(&mut self, q: CfsId) -> &mut CfsRq {
        cfs_in(&mut self.rqs, &mut self.grq, q)
    }

    /// The cfs_rq `q` and the entity `e`, mutably, each looked up once.
    #[inline(always)]
    fn cfs_se_mut(&mut self, q: CfsId, e: Ent) -> (&mut CfsRq, &mut SchedEntity) {
        (cfs_in(&mut self.rqs, &mut self.grq, q), se_in(&mut self.tasks, &mut self.gse, e))
    }

    /// The entity `e`.
    #[inline]
    pub fn se(&self, e: Ent) -> &SchedEntity {
        match e.task_id() {
            Some(p) => &self.tasks[p.idx()].se,
            None => &self.gse[e.slot().unwrap()],
        }
    }

    #[inline]
    pub(crate) fn se_mut(&mut self, e: Ent) -> &mut SchedEntity {
        se_in(&mut self.tasks, &mut self.gse, e)
    }

    /// `tg->cfs_rq[cpu]` (the root group's is `rq->cfs`).
    #[inline]
    pub fn tg_cfs(&self, g: u32, cpu: CpuId) -> CfsId {
        if g == 0 {
            CfsId::root(cpu)
        } else {
            CfsId::group((g as usize - 1) * self.nr_cpus() + cpu.idx())
        }
    }

    /// The CPU a cfs_rq belongs to (`rq_of()`).
    #[inline]
    pub fn cfs_cpu(&self, q: CfsId) -> CpuId {
        match q.root_cpu() {
            Some(c) => c,
            None => CpuId((q.slot().unwrap() % self.nr_cpus()) as u16),
        }
    }

    /// Group id and CPU of a group slot.
    #[inline]
    fn slot_group(&self, slot: usize) -> (u32, CpuId) {
        ((slot / self.nr_cpus()) as u32 + 1, CpuId((slot % self.nr_cpus()) as u16))
    }

    /// `cfs_rq_of(se)`: the cfs_rq the entity is (or would be) queued on.
    #[inline]
    pub fn cfs_of(&self, e: Ent) -> CfsId {
        match e.task_id() {
            Some(p) => {
                let t = &self.tasks[p.idx()];
                self.tg_cfs(t.group, t.cpu)
            }
            None => {
                let (g, cpu) = self.slot_group(e.slot().unwrap());
                self.tg_cfs(self.tgs[g as usize].parent, cpu)
            }
        }
    }

    /// `group_cfs_rq(se)`: the cfs_rq a group entity owns (`se->my_q`).
    #[inline]
    pub fn group_cfs_rq(&self, e: Ent) -> Option<CfsId> {
        e.slot().map(CfsId::group)
    }

    /// `parent_entity(se)`.
    #[inline]
    pub fn parent_entity(&self, e: Ent) -> Option<Ent> {
        Self::parent_of(self.cfs_of(e))
    }

    /// The parent of the entities queued on `q` (the group entity owning
    /// it; None for a root cfs_rq): `parent_entity(se)` when
    /// `q == cfs_rq_of(se)`, for the hierarchy walks that already hold
    /// `cfs_rq_of(se)` (not looked up again).
    #[inline]
    fn parent_of(q: CfsId) -> Option<Ent> {
        q.slot().map(Ent::group)
    }

    /// `se_is_idle()`: a SCHED_IDLE task (groups are never idle: no cpu.idle).
    #[inline]
    fn se_is_idle(&self, e: Ent) -> bool {
        e.task_id().is_some_and(|p| self.tasks[p.idx()].policy == Policy::Idle)
    }

    // ---------------------------------------------------------------- EEVDF math

    /// `entity_key()`: the entity's vruntime relative to the cfs_rq's min_vruntime.
    #[inline(always)]
    fn entity_key(cfs: &CfsRq, se: &SchedEntity) -> i64 {
        vdiff(se.vruntime, cfs.min_vruntime)
    }

    /// `avg_vruntime_add()`: the entity's key times its weight into the sums of `cfs`.
    #[inline(always)]
    fn avg_vruntime_add(cfs: &mut CfsRq, se: &SchedEntity) {
        let key = Self::entity_key(cfs, se);
        let w = se.weight as i64;
        cfs.avg_vruntime += key * w;
        cfs.avg_load += w;
    }

    /// `avg_vruntime_sub()`: the inverse of [`Kernel::avg_vruntime_add`].
    #[inline(always)]
    fn avg_vruntime_sub(cfs: &mut CfsRq, se: &SchedEntity) {
        let key = Self::entity_key(cfs, se);
        let w = se.weight as i64;
        cfs.avg_vruntime -= key * w;
        cfs.avg_load -= w;
    }

    /// Sum of keys*w and of w over the tree plus curr if queued.
    #[inline(always)]
    fn avg_parts(&self, q: CfsId) -> (i64, i64) {
        let cfs = self.cfs(q);
        let (mut avg, mut load) = (cfs.avg_vruntime, cfs.avg_load);
        if let Some(c) = cfs.curr {
            let se = self.se(c);
            if se.on_rq {
                let w = se.weight as i64;
                avg += vdiff(se.vruntime, cfs.min_vruntime) * w;
                load += w;
            }
        }
        (avg, load)
    }

    /// `avg_vruntime()`: V, the weighted average vruntime of the queue incl. curr (v6.6+).
    #[inline(always)]
    pub fn avg_vruntime(&self, q: impl Into<CfsId>) -> u64 {
        let q = q.into();
        let (mut avg, load) = self.avg_parts(q);
        let min = self.cfs(q).min_vruntime;
        // (avg == 0: a lone curr at min_vruntime, the usual case on a CPU
        // that runs one task; 0 / load is 0, without the division.)
        if load == 0 || avg == 0 {
            return min;
        }
        if avg < 0 {
            avg -= load - 1; // floor toward -inf
        }
        min.wrapping_add((avg / load) as u64)
    }

    /// `vruntime_eligible()`: v <= V without division.
    #[inline]
    fn vruntime_eligible(&self, q: CfsId, vruntime: u64) -> bool {
        let (avg, load) = self.avg_parts(q);
        let key = vdiff(vruntime, self.cfs(q).min_vruntime);
        (avg as i128) >= (key as i128) * (load as i128)
    }

    /// `entity_eligible()`
    #[inline(always)]
    pub fn entity_eligible(&self, q: impl Into<CfsId>, e: impl Into<Ent>) -> bool {
        self.vruntime_eligible(q.into(), self.se(e.into()).vruntime)
    }

    /// `update_min_vruntime()`: monotonic, from curr and the leftmost entity.
    #[inline(always)]
    fn update_min_vruntime(&mut self, q: CfsId) {
        // The cfs_rq is looked up once (the write below reuses it).
        let cfs = cfs_in(&mut self.rqs, &mut self.grq, q);
        let (tasks, gse) = (&self.tasks, &self.gse[..]);
        let mut v = cfs.min_vruntime;
        let curr = cfs.curr.filter(|&c| se_of(tasks, gse, c).on_rq);
        if let Some(c) = curr {
            v = se_of(tasks, gse, c).vruntime;
        }
        let left = cfs.queue.first(&self.rq_steps).map(|(_, v)| v);
        if let Some(l) = left {
            v = if curr.is_none() || vdiff(l, v) < 0 { l } else { v };
        }
        let delta = vdiff(v, cfs.min_vruntime);
        if delta > 0 {
            // avg_vruntime_update(): keys are relative to min_vruntime.
            cfs.avg_vruntime -= cfs.avg_load * delta;
            cfs.min_vruntime = v;
        }
    }

    // ---------------------------------------------------------------- tree

    #[inline(always)]
    fn enqueue_tree(&mut self, q: CfsId, e: Ent) {
        let cfs = cfs_in(&mut self.rqs, &mut self.grq, q);
        let se = se_in(&mut self.tasks, &mut self.gse, e);
        Self::enqueue_tree_in(cfs, se, e, &self.rq_steps);
    }

    /// [`Kernel::enqueue_tree`] on a cfs_rq and entity already looked up.
    #[inline(always)]
    fn enqueue_tree_in(cfs: &mut CfsRq, se: &SchedEntity, e: Ent, steps: &std::cell::Cell<u64>) {
        Self::avg_vruntime_add(cfs, se);
        cfs.queue.insert(e, se.vruntime, se.deadline, steps);
    }

    #[inline(always)]
    fn dequeue_tree(&mut self, q: CfsId, e: Ent) {
        let steps = std::mem::take(&mut self.rq_steps);
        #[cfg(debug_assertions)]
        if let Some((v, _)) = self.cfs(q).queue.stored(e) {
            // (dequeue_entity() may already have made the deadline relative.)
            assert_eq!(v, self.se(e).vruntime, "{e:?} changed vruntime while in the tree");
        }
        let (cfs, se) = self.cfs_se_mut(q, e);
        Self::dequeue_tree_in(cfs, se, e, &steps);
        self.rq_steps = steps;
    }

    /// [`Kernel::dequeue_tree`] on a cfs_rq and entity already looked up
    /// (without its debug check of the stored vruntime).
    #[inline(always)]
    fn dequeue_tree_in(cfs: &mut CfsRq, se: &SchedEntity, e: Ent, steps: &std::cell::Cell<u64>) {
        if cfs.queue.remove(e, steps) {
            Self::avg_vruntime_sub(cfs, se);
        }
    }

    // ---------------------------------------------------------------- PELT

    /// `update_load_avg()` for an entity and its cfs_rq: advance both to `now`
    /// with the state they had over the elapsed interval. With `update_tg`
    /// (the kernel's UPDATE_TG flag, v4.14+; the `update_tg` argument
    /// before) a group cfs_rq then refreshes its share of `tg->load_avg`
    /// (`update_tg_load_avg()`): enqueue, dequeue, set_next_entity() and the
    /// tick pass it, put_prev_entity() and requeue_delayed_entity() do not.
    // FIDELITY(F-021): group entities accumulate their own averages from their
    // weight and on_rq state instead of propagating the child cfs_rq's sums.
    // FIDELITY(F-023): the v4.3+ UPDATE_TG call sites on every version.
    #[inline(always)]
    pub(crate) fn update_load_avg(&mut self, q: CfsId, e: Option<Ent>, now: u64, update_tg: bool) {
        // v6.12.0: se_runnable() is on_rq and the cfs_rq's runnable count is
        // h_nr_running, delayed sleepers included; "sched/eevdf: More PELT vs
        // DELAYED_DEQUEUE" (v6.14) leaves them out (v6.18; `--patch
        // delayed-accounting` on v6.12).
        let later = self.delayed_acct;
        let cfs = cfs_in(&mut self.rqs, &mut self.grq, q);
        let curr = cfs.curr;
        if let Some(e) = e {
            let se = se_in(&mut self.tasks, &mut self.gse, e);
            let runnable = se.on_rq && !(later && se.sched_delayed);
            se.avg.update(now, se.on_rq as u64, se.weight, runnable as u64, curr == Some(e));
        }
        let runnable = (cfs.h_nr_running - if later { cfs.h_nr_delayed } else { 0 }) as u64;
        cfs.avg.update(now, cfs.load_weight, 1, runnable, curr.is_some());
        if update_tg && q.slot().is_some() {
            self.update_tg_load_avg(q, now);
        }
    }

    /// `update_load_avg()` of the root cfs_rq of an idle CPU (tick).
    pub(crate) fn update_root_load_avg(&mut self, cpu: CpuId, now: u64) {
        self.update_load_avg(CfsId::root(cpu), None, now, false);
    }

    /// `attach_entity_load_avg()`: a migrated task brings its averages along.
    // FIDELITY(F-007): immediate attach/detach instead of the lazy `removed` accumulator.
    pub(crate) fn attach_entity_load_avg(&mut self, cpu: CpuId, p: TaskId) {
        let sa = self.tasks[p.idx()].se.avg;
        let w = self.tasks[p.idx()].se.weight;
        let q = self.tg_cfs(self.tasks[p.idx()].group, cpu);
        let cfs = self.cfs_mut(q);
        cfs.avg.load_avg += sa.load_avg;
        cfs.avg.load_sum += sa.load_sum * w;
        cfs.avg.util_avg += sa.util_avg;
        cfs.avg.util_sum += sa.util_sum;
        cfs.avg.runnable_avg += sa.runnable_avg;
        cfs.avg.runnable_sum += sa.runnable_sum;
    }

    /// `detach_entity_load_avg()` / `remove_entity_load_avg()`.
    pub(crate) fn detach_entity_load_avg(&mut self, cpu: CpuId, p: TaskId) {
        let sa = self.tasks[p.idx()].se.avg;
        let w = self.tasks[p.idx()].se.weight;
        let q = self.tg_cfs(self.tasks[p.idx()].group, cpu);
        let cfs = self.cfs_mut(q);
        cfs.avg.load_avg = cfs.avg.load_avg.saturating_sub(sa.load_avg);
        cfs.avg.load_sum = cfs.avg.load_sum.saturating_sub(sa.load_sum * w);
        cfs.avg.util_avg = cfs.avg.util_avg.saturating_sub(sa.util_avg);
        cfs.avg.util_sum = cfs.avg.util_sum.saturating_sub(sa.util_sum);
        cfs.avg.runnable_avg = cfs.avg.runnable_avg.saturating_sub(sa.runnable_avg);
        cfs.avg.runnable_sum = cfs.avg.runnable_sum.saturating_sub(sa.runnable_sum);
    }

    // ---------------------------------------------------------------- accounting

    /// `update_curr()` of one cfs_rq (kernel/sched/fair.c).
    #[inline]
    pub(crate) fn update_curr(&mut self, q: CfsId, now: u64) {
        // No curr (an idle CPU's enqueue, wakeup check): no call.
        if let Some(c) = self.cfs(q).curr {
            self.update_curr_of(q, c, now);
        }
    }

    fn update_curr_of(&mut self, q: CfsId, c: Ent, now: u64) {
        let eevdf = self.eevdf();
        let base_slice = self.tun.base_slice_ns;
        let se = self.se_mut(c);
        let delta = now.saturating_sub(se.exec_start);
        if delta == 0 {
            return;
        }
        se.exec_start = now;
        se.sum_exec_runtime += delta;
        se.vruntime = se.vruntime.wrapping_add(calc_delta_fair(delta, se.weight));
        // update_deadline() (EEVDF): the request is consumed when vruntime
        // passes the deadline.
        let mut resched = false;
        if eevdf && vdiff(se.vruntime, se.deadline) >= 0 {
            se.slice = base_slice;
            se.deadline = se.vruntime.wrapping_add(calc_delta_fair(se.slice, se.weight));
            resched = true;
        }
        self.update_min_vruntime(q);
        if !eevdf || self.cfs(q).nr_running <= 1 {
            return;
        }
        let short = if self.at_least(6, 17) {
            // v6.17+ (0b9ca2dcabc3 "Always trigger resched at the end of a
            // protected period"): also when curr's protection ended, eligible or not.
            !self.protect_slice(c)
        } else {
            // v6.12-v6.16 PREEMPT_SHORT: did_preempt_short(): curr lost
            // protection and is ineligible.
            self.feats.has(PREEMPT_SHORT) && !self.protect_slice(c) && !self.entity_eligible(q, c)
        };
        if resched || short {
            self.resched_curr(self.cfs_cpu(q));
            self.clear_buddies(q, c);
        }
    }

    /// `account_entity_enqueue()` (the CFS path; EEVDF's enqueue_entity()
    /// does it on the cfs_rq and entity it holds).
    #[inline]
    fn account_entity_enqueue(&mut self, q: CfsId, e: Ent) {
        let (cfs, se) = self.cfs_se_mut(q, e);
        cfs.load_weight += se.weight;
        cfs.nr_running += 1;
    }

    // ---------------------------------------------------------------- placement

    /// CFS `sched_slice()`: the wall-time share of the period for `e`, the
    /// product of its weight fractions up the hierarchy (v2.6.23-v6.5).
    pub(crate) fn sched_slice(&self, e: Ent) -> u64 {
        let q = self.cfs_of(e);
        let on_rq = self.se(e).on_rq;
        let mut nr = self.cfs(q).nr_running as u64;
        if self.profile.version >= (5, 13) && self.feats.has(ALT_PERIOD) {
            // v5.13-v6.5 ALT_PERIOD: the period follows the CPU's task count.
            nr = self.rqs[self.cfs_cpu(q).idx()].cfs.h_nr_running as u64;
        }
        let nr = nr + (!on_rq) as u64;
        let mut slice = if nr > self.tun.nr_latency { nr * self.tun.min_granularity_ns } else { self.tun.latency_ns };
        let mut cur = Some(e);
        while let Some(x) = cur {
            let se = self.se(x);
            let cfs = self.cfs(self.cfs_of(x));
            let load = cfs.load_weight + if se.on_rq { 0 } else { se.weight };
            slice = (slice as u128 * se.weight as u128 / load.max(1) as u128) as u64;
            cur = self.parent_entity(x);
        }
        if self.profile.version >= (5, 13) && self.feats.has(BASE_SLICE) {
            slice = slice.max(self.tun.min_granularity_ns);
        }
        slice
    }

    /// `place_entity()`: EEVDF (v6.6+) or CFS (<= v6.5).
    #[inline(always)]
    fn place_entity(&mut self, q: CfsId, e: Ent, flags: u32) {
        if !self.eevdf() {
            // CFS place_entity(cfs_rq, se, initial)
            let initial = flags & ENQUEUE_INITIAL != 0;
            let mut v = self.cfs(q).min_vruntime;
            if initial && self.feats.has(START_DEBIT) {
                let w = self.se(e).weight;
                v = v.wrapping_add(calc_delta_fair(self.sched_slice(e), w));
            }
            if !initial {
                let mut thresh = self.tun.latency_ns;
                if self.feats.has(GENTLE_FAIR_SLEEPERS) {
                    thresh >>= 1;
                }
                v = v.wrapping_sub(thresh);
            }
            let se = self.se_mut(e);
            if vdiff(v, se.vruntime) > 0 {
                se.vruntime = v;
            }
            return;
        }
        let vruntime = self.avg_vruntime(q);
        let base_slice = self.tun.base_slice_ns;
        let cfs_nr = self.cfs(q).nr_running;
        let curr = self.cfs(q).curr;
        let curr_w = curr.map_or(0, |c| {
            let se = self.se(c);
            if se.on_rq && c != e {
                se.weight as i64
            } else {
                0
            }
        });
        let avg_load = self.cfs(q).avg_load;
        let place_lag = self.feats.has(PLACE_LAG);
        let rel_deadline = self.feats.has(PLACE_REL_DEADLINE);
        let deadline_initial = self.feats.has(PLACE_DEADLINE_INITIAL);
        let se = self.se_mut(e);
        se.slice = base_slice;
        let mut vslice = calc_delta_fair(se.slice, se.weight) as i64;
        let mut lag: i64 = 0;
        if place_lag && cfs_nr > 0 && se.vlag != 0 {
            // Inflate the lag so the effective lag after insertion equals the stored one.
            let mut load = avg_load + curr_w;
            lag = se.vlag;
            let w = load + se.weight as i64;
            if load == 0 {
                load = 1;
            }
            // 128-bit only when the 64-bit product overflows (same truncated quotient).
            lag = match lag.checked_mul(w).and_then(|l| l.checked_div(load)) {
                Some(q) => q,
                None => ((lag as i128) * (w as i128) / load as i128) as i64,
            };
        }
        se.vruntime = vruntime.wrapping_sub(lag as u64);
        if rel_deadline && se.rel_deadline {
            se.deadline = se.deadline.wrapping_add(se.vruntime);
            se.rel_deadline = false;
            return;
        }
        if deadline_initial && flags & ENQUEUE_INITIAL != 0 {
            vslice /= 2;
        }
        se.deadline = se.vruntime.wrapping_add(vslice as u64);
    }

    /// `update_entity_lag()`: vlag = clamp(V - v, -L, L), L in virtual time.
    #[inline(always)]
    fn update_entity_lag(&mut self, q: CfsId, e: Ent) {
        let v = self.avg_vruntime(q);
        let limit = self.lag_limit(q, e, self.se(e).weight) as i64;
        let se = self.se_mut(e);
        let lag = vdiff(v, se.vruntime);
        se.vlag = lag.clamp(-limit, limit);
    }

    /// The lag clamp of `update_entity_lag()` (and of `entity_lag()` in
    /// reweight_entity()) for entity `e` of `q` at weight `w`, in virtual time:
    /// v6.6 - 6.18.16 max(2 * se->slice, TICK_NSEC); 6.18.17+ (6e3c0a4e1ad1
    /// "sched/fair: Fix lag clamp", mainline v7.0) `cfs_rq_max_slice()` +
    /// TICK_NSEC.
    #[inline(always)]
    pub(crate) fn lag_limit(&self, q: CfsId, e: Ent, w: u64) -> u64 {
        let tick = self.tun.tick_ns;
        let wall = if self.profile.stable_6_18(17) { self.cfs_rq_max_slice(q) + tick } else { (2 * self.se(e).slice).max(tick) };
        calc_delta_fair(wall, w)
    }

    /// `cfs_rq_max_slice()` (6.18.17+): the largest slice among curr (if
    /// queued) and the entities in the tree. The kernel reads it at the
    /// tree's root (the `max_slice` augmentation); here a walk of the tree.
    fn cfs_rq_max_slice(&self, q: CfsId) -> u64 {
        let cfs = self.cfs(q);
        let curr = cfs.curr.filter(|&c| self.se(c).on_rq).map_or(0, |c| self.se(c).slice);
        cfs.queue.iter_unordered().map(|x| self.se(x).slice).fold(curr, u64::max)
    }

    /// `cfs_rq_min_slice()` (v6.12+): the smallest slice among curr (if
    /// queued) and the entities in the tree; None when both are empty (the
    /// kernel's ~0ULL). The kernel reads it at the tree's root (the
    /// `min_slice` augmentation); here a walk of the tree.
    fn cfs_rq_min_slice(&self, q: CfsId) -> Option<u64> {
        let cfs = self.cfs(q);
        let curr = cfs.curr.filter(|&c| self.se(c).on_rq).map(|c| self.se(c).slice);
        cfs.queue.iter_unordered().map(|x| self.se(x).slice).chain(curr).min()
    }

    // ---------------------------------------------------------------- slice protection (RUN_TO_PARITY)
    //
    // The protection lives in `se.vlag` while the entity is curr, as the
    // kernel keeps it: v6.6-v6.16 a copy of the deadline at pick ("HACK,
    // stash a copy of deadline at the point of pick in vlag"), v6.17-6.18.44
    // the bound `vprot`, which shares its storage with vlag (a union in
    // struct sched_entity).

    /// `protect_slice()`: v6.6-v6.16 (f553741ac8c0 names it in v6.15) the
    /// stashed deadline is still the deadline; v6.17+ (74eec63661d4 "Fix
    /// NO_RUN_TO_PARITY case") vruntime has not reached vprot.
    fn protect_slice(&self, e: Ent) -> bool {
        let se = self.se(e);
        if self.at_least(6, 17) {
            vdiff(se.vlag as u64, se.vruntime) > 0
        } else {
            se.vlag == se.deadline as i64
        }
    }

    /// `set_protect_slice()` at pick (`set_next_entity()`): v6.6-v6.16 stash
    /// the deadline. v6.17+ (74eec63661d4, 052c3d87c82e "Limit run to parity
    /// to the min slice of enqueued entities"): vprot = deadline, or
    /// min(deadline, vruntime + the smallest slice queued in virtual time)
    /// when that slice is below the entity's own; with NO_RUN_TO_PARITY the
    /// normalized base slice (0.70 ms) instead of the queue's minimum. Called
    /// after the entity left the tree and before it becomes curr.
    #[inline(always)]
    fn set_protect_slice(&mut self, q: CfsId, e: Ent) {
        if !self.at_least(6, 17) {
            let se = self.se_mut(e);
            se.vlag = se.deadline as i64;
            return;
        }
        self.set_protect_slice_vprot(q, e);
    }

    /// The v6.17+ part of [`Kernel::set_protect_slice`] (out of line: it
    /// walks the tree).
    fn set_protect_slice_vprot(&mut self, q: CfsId, e: Ent) {
        let cfs = self.cfs(q);
        // cfs_rq->curr is not set yet at this point (the kernel's
        // set_next_entity() sets it after set_protect_slice()).
        let queued = cfs.queue.iter_unordered().map(|x| self.se(x).slice).min();
        let base = if self.feats.has(RUN_TO_PARITY) { queued } else { Some(self.profile.tunables.base_slice_ns) };
        let se = self.se(e);
        let slice = base.map_or(se.slice, |b| b.min(se.slice));
        let mut vprot = se.deadline;
        if slice != se.slice {
            let bound = se.vruntime.wrapping_add(calc_delta_fair(slice, se.weight));
            if vdiff(bound, vprot) < 0 {
                vprot = bound;
            }
        }
        self.se_mut(e).vlag = vprot as i64;
    }

    /// `update_protect_slice()` (v6.17+, 3a0baa8e6c57 "Fix entity's lag with
    /// run to parity"): vprot = min(vprot, vruntime + the smallest slice on
    /// the cfs_rq (curr included) in virtual time).
    fn update_protect_slice(&mut self, q: CfsId, e: Ent) {
        let slice = self.cfs_rq_min_slice(q).unwrap_or(self.se(e).slice);
        let se = self.se_mut(e);
        let bound = se.vruntime.wrapping_add(calc_delta_fair(slice, se.weight));
        if vdiff(bound, se.vlag as u64) < 0 {
            se.vlag = bound as i64;
        }
    }

    /// `cancel_protect_slice()`: v6.12-v6.16 the stash no longer equals the
    /// deadline (deadline + 1); v6.17+ vprot = vruntime. Only a protected
    /// entity's is touched.
    fn cancel_protect_slice(&mut self, e: Ent) {
        if !self.protect_slice(e) {
            return;
        }
        let v617 = self.profile.version >= (6, 17);
        let se = self.se_mut(e);
        se.vlag = if v617 { se.vruntime as i64 } else { se.deadline as i64 + 1 };
    }

    /// `enqueue_entity()`: one entity on one cfs_rq.
    #[inline(always)]
    pub(crate) fn enqueue_entity(&mut self, q: CfsId, e: Ent, flags: u32, now: u64) {
        let is_curr = self.cfs(q).curr == Some(e);
        let eevdf = self.eevdf();
        if !eevdf {
            if self.se(e).vruntime_relative {
                let min = self.cfs(q).min_vruntime;
                let se = self.se_mut(e);
                se.vruntime = se.vruntime.wrapping_add(min);
                se.vruntime_relative = false;
            }
            self.update_curr(q, now);
            self.update_load_avg(q, Some(e), now, true);
            self.update_cfs_group(e, now);
            self.account_entity_enqueue(q, e);
            if flags & ENQUEUE_WAKEUP != 0 {
                self.place_entity(q, e, 0);
            }
        } else {
            if is_curr {
                self.place_entity(q, e, flags);
            }
            self.update_curr(q, now);
            self.update_load_avg(q, Some(e), now, true);
            self.update_cfs_group(e, now);
            if !is_curr {
                self.place_entity(q, e, flags);
            }
        }
        // The cfs_rq and the entity looked up once for the accounting, the
        // tree and on_rq.
        let cfs = cfs_in(&mut self.rqs, &mut self.grq, q);
        let se = se_in(&mut self.tasks, &mut self.gse, e);
        if eevdf {
            // account_entity_enqueue()
            cfs.load_weight += se.weight;
            cfs.nr_running += 1;
        }
        if !is_curr {
            Self::enqueue_tree_in(cfs, se, e, &self.rq_steps);
        }
        se.on_rq = true;
        if let Some(p) = e.task_id() {
            self.mru_seq += 1;
            self.tasks[p.idx()].mru = self.mru_seq;
            self.cfs_tasks_list(p);
        }
        if !eevdf {
            self.update_min_vruntime(q);
        }
    }

    /// `dequeue_entity()`. Returns false when the dequeue was delayed (v6.12
    /// DELAY_DEQUEUE: an ineligible sleeping entity stays queued as
    /// `sched_delayed`: a task, or a group entity whose cfs_rq the sleep
    /// emptied, since session 24, F-022).
    #[inline(always)]
    pub(crate) fn dequeue_entity(&mut self, q: CfsId, e: Ent, flags: u32, now: u64) -> bool {
        let sleep = flags & DEQUEUE_SLEEP != 0;
        let delayed_final = flags & DEQUEUE_DELAYED != 0;
        let mut curr_updated = false;
        if self.eevdf() && sleep && !delayed_final && self.feats.has(DELAY_DEQUEUE) {
            self.update_curr(q, now);
            curr_updated = true;
            let delay = !self.entity_eligible(q, e);
            if e.is_task() {
                self.x_sleep(delay);
            }
            if delay {
                if self.cfs(q).next == Some(e) {
                    self.cfs_mut(q).next = None;
                }
                self.update_load_avg(q, Some(e), now, true);
                self.se_mut(e).sched_delayed = true;
                if e.is_task() {
                    self.walk_h_nr_delayed(e, true);
                }
                return false;
            }
        }
        let is_curr = self.cfs(q).curr == Some(e);
        if !curr_updated {
            // (A second update_curr() at the same time would change nothing.)
            self.update_curr(q, now);
        }
        self.update_load_avg(q, Some(e), now, true);
        if self.eevdf() {
            self.update_entity_lag(q, e);
            let delay_zero = self.feats.has(DELAY_ZERO);
            let rel = self.feats.has(PLACE_REL_DEADLINE);
            let se = self.se_mut(e);
            if delayed_final && delay_zero {
                se.vlag = se.vlag.min(0);
            }
            if rel && !sleep {
                se.deadline = se.deadline.wrapping_sub(se.vruntime);
                se.rel_deadline = true;
            }
        }
        self.clear_buddies(q, e);
        if !is_curr {
            self.dequeue_tree(q, e);
        }
        // The cfs_rq and the entity looked up once for the accounting,
        // on_rq, sched_delayed and the CFS relative vruntime (none of which
        // the cfs_tasks list or the h_nr_delayed walk below reads).
        let cfs_vruntime_relative = !self.eevdf() && !sleep;
        let cfs = cfs_in(&mut self.rqs, &mut self.grq, q);
        let se = se_in(&mut self.tasks, &mut self.gse, e);
        // account_entity_dequeue()
        cfs.load_weight -= se.weight;
        cfs.nr_running -= 1;
        se.on_rq = false;
        let was_delayed = std::mem::take(&mut se.sched_delayed);
        if cfs_vruntime_relative {
            se.vruntime = se.vruntime.wrapping_sub(cfs.min_vruntime);
            se.vruntime_relative = true;
        }
        if let Some(p) = e.task_id() {
            if let Some(c) = self.tasks[p.idx()].mru_listed.take() {
                self.rqs[c.idx()].cfs_tasks.remove(&mut self.tasks, p);
            }
            if was_delayed {
                self.walk_h_nr_delayed(e, false);
            }
        }
        self.update_cfs_group(e, now);
        self.update_min_vruntime(q);
        true
    }

    /// Mark a queued task `sched_delayed` (v6.12), counted up the hierarchy.
    pub(crate) fn mark_delayed(&mut self, p: TaskId) {
        self.tasks[p.idx()].se.sched_delayed = true;
        self.walk_h_nr_delayed(Ent::task(p), true);
    }

    /// `h_nr_delayed` of every cfs_rq from the task's up to the root (v6.12).
    fn walk_h_nr_delayed(&mut self, e: Ent, inc: bool) {
        let mut cur = Some(e);
        while let Some(x) = cur {
            let q = self.cfs_of(x);
            let cfs = self.cfs_mut(q);
            if inc {
                cfs.h_nr_delayed += 1;
            } else {
                cfs.h_nr_delayed -= 1;
            }
            cur = self.parent_entity(x);
        }
    }

    /// `requeue_delayed_entity()` (v6.12): a delayed sleeper is woken in place.
    /// The lag is taken against the cfs_rq as it stands: ttwu_runnable() only
    /// updates the rq clock and enqueue_task_fair(ENQUEUE_DELAYED) goes straight
    /// here, so curr's vruntime (and V) are as of curr's last update_curr(),
    /// not now (v6.12 through v6.18 alike). curr's run since then is charged
    /// by check_preempt_wakeup_fair()'s update_curr() right after, which can
    /// leave the waker ineligible and let the wakee preempt it (F-645).
    ///
    /// A group entity (v6.12+) is requeued the same way when one of its tasks
    /// wakes while it is still delayed; its cfs_rq holds no delayed tasks'
    /// counts, so nothing up the hierarchy changes (F-022).
    pub(crate) fn requeue_delayed_entity(&mut self, e: Ent, now: u64) {
        let q = self.cfs_of(e);
        if self.feats.has(DELAY_ZERO) {
            self.update_entity_lag(q, e);
            if self.se(e).vlag > 0 {
                let is_curr = self.cfs(q).curr == Some(e);
                if !is_curr {
                    self.dequeue_tree(q, e);
                }
                self.cfs_mut(q).nr_running -= 1;
                self.se_mut(e).vlag = 0;
                self.place_entity(q, e, 0);
                if !is_curr {
                    self.enqueue_tree(q, e);
                }
                self.cfs_mut(q).nr_running += 1;
            }
        }
        self.update_load_avg(q, Some(e), now, false);
        self.se_mut(e).sched_delayed = false;
        if e.is_task() {
            self.walk_h_nr_delayed(e, false);
        }
    }

    /// `pick_next_entity()` picked a delayed group entity (v6.12+):
    /// `dequeue_entities(DEQUEUE_SLEEP | DEQUEUE_DELAYED)` finishes its
    /// dequeue (the DELAY_ZERO clip), and each ancestor whose cfs_rq it
    /// empties is dequeued as a sleeper in turn, which may delay it.
    pub(crate) fn dequeue_delayed_group(&mut self, e: Ent, now: u64) {
        let mut x = e;
        let mut flags = DEQUEUE_SLEEP | DEQUEUE_DELAYED;
        loop {
            let q = self.cfs_of(x);
            if !self.dequeue_entity(q, x, flags, now) {
                break;
            }
            if self.cfs(q).load_weight != 0 {
                break;
            }
            match Self::parent_of(q) {
                Some(pe) => x = pe,
                None => break,
            }
            flags = DEQUEUE_SLEEP;
        }
    }

    /// `set_next_entity()`: `e` becomes curr of `q` and leaves the tree.
    #[inline(always)]
    pub(crate) fn set_next_entity(&mut self, q: CfsId, e: Ent, now: u64) {
        // (Neither the tree nor the PELT update changes on_rq: read once.)
        let on_rq = self.se(e).on_rq;
        if on_rq {
            self.dequeue_tree(q, e);
            self.update_load_avg(q, Some(e), now, true);
        }
        self.cfs_mut(q).curr = Some(e);
        if let Some(p) = e.task_id() {
            self.mru_seq += 1;
            self.tasks[p.idx()].mru = self.mru_seq;
            if on_rq {
                self.cfs_tasks_list(p);
            }
        }
        if self.eevdf() {
            // Slice protection is set here, at pick, and nowhere else: the
            // model has no sched_change path (put_prev/set_next of a running
            // task around a nice, policy or group change), which is where
            // bcd74b2ffdd0 (6.18.17) stopped re-arming it.
            self.set_protect_slice(q, e);
        }
        let se = self.se_mut(e);
        se.exec_start = now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
    }

    /// `put_prev_entity()`: curr goes back into the tree if still queued.
    #[inline(always)]
    pub(crate) fn put_prev_entity(&mut self, q: CfsId, e: Ent, now: u64) {
        if self.se(e).on_rq {
            self.update_curr(q, now);
            self.enqueue_tree(q, e);
            self.update_load_avg(q, Some(e), now, false);
        }
        self.cfs_mut(q).curr = None;
    }

    // ---------------------------------------------------------------- buddies

    /// `clear_buddies()`: for each buddy pointer of `q` equal to `e`, clear it
    /// there and up the hierarchy while the parent's buddy is the parent entity
    /// (`__clear_buddies_next/last/skip()`).
    #[inline(always)]
    fn clear_buddies(&mut self, q: CfsId, e: Ent) {
        let cfs = self.cfs(q);
        let (n, l, s) = (cfs.next == Some(e), cfs.last == Some(e), cfs.skip == Some(e));
        if n {
            self.clear_buddy_walk(e, |c| &mut c.next);
        }
        if l {
            self.clear_buddy_walk(e, |c| &mut c.last);
        }
        if s {
            self.clear_buddy_walk(e, |c| &mut c.skip);
        }
    }

    fn clear_buddy_walk(&mut self, e: Ent, field: fn(&mut CfsRq) -> &mut Option<Ent>) {
        let mut cur = Some(e);
        while let Some(x) = cur {
            let q = self.cfs_of(x);
            let slot = field(self.cfs_mut(q));
            if *slot != Some(x) {
                break;
            }
            *slot = None;
            cur = self.parent_entity(x);
        }
    }

    /// `set_next_buddy()`: mark `e` and its ancestors as next buddies of their
    /// cfs_rqs. SCHED_IDLE tasks (and, v6.12, delayed ones) are never buddies.
    fn set_next_buddy(&mut self, e: Ent) {
        if self.se_is_idle(e) || self.se(e).sched_delayed {
            return;
        }
        let mut cur = Some(e);
        while let Some(x) = cur {
            if !self.se(x).on_rq {
                return;
            }
            let q = self.cfs_of(x);
            self.cfs_mut(q).next = Some(x);
            cur = self.parent_entity(x);
        }
    }

    /// `set_last_buddy()` (CFS).
    fn set_last_buddy(&mut self, e: Ent) {
        if self.se_is_idle(e) {
            return;
        }
        let mut cur = Some(e);
        while let Some(x) = cur {
            let q = self.cfs_of(x);
            self.cfs_mut(q).last = Some(x);
            cur = self.parent_entity(x);
        }
    }

    /// The next-buddy hint on the sleep and preempt paths (seed 002,
    /// Venkatesh Pallipadi 2011, v2.6.39+): on in every profile after it.
    #[inline]
    fn next_buddy_hint(&self) -> bool {
        self.profile.next_buddy_hint
    }

    // ---------------------------------------------------------------- picking

    /// `pick_eevdf()` (v6.6-v6.16; v6.17+ `pick_eevdf()` = `__pick_eevdf(cfs_rq, true)`).
    #[inline(always)]
    pub fn pick_eevdf(&self, q: impl Into<CfsId>) -> Option<Ent> {
        self.pick_eevdf_protect(q.into(), true)
    }

    /// `__pick_eevdf(cfs_rq, protect)` (v6.17+, 9de74a9850b9 "Remove spurious
    /// shorter slice preemption"; before, `pick_eevdf()` with protect always
    /// true and gated on RUN_TO_PARITY): one queued entity is the pick; with
    /// the 6.18.33 wakeup rework (e837456fdca8) an eligible next buddy is
    /// returned here under PICK_BUDDY (so the wakeup check sees it); curr
    /// competes only if queued and eligible, and keeps the CPU outright while
    /// `protect` and its slice protection hold; otherwise the eligible entity
    /// with the earliest deadline, curr winning only with a strictly earlier
    /// one.
    #[inline(always)]
    fn pick_eevdf_protect(&self, q: CfsId, protect: bool) -> Option<Ent> {
        let cfs = self.cfs(q);
        let mut curr = cfs.curr.filter(|&c| self.se(c).on_rq);
        if cfs.nr_running == 1 {
            return curr.or_else(|| cfs.queue.first(&self.rq_steps).map(|(e, _)| e));
        }
        if self.profile.stable_6_18(33) && self.feats.has(PICK_BUDDY) {
            if let Some(n) = cfs.next.filter(|&n| self.entity_eligible(q, n)) {
                return Some(n);
            }
        }
        if let Some(c) = curr {
            if !self.entity_eligible(q, c) {
                curr = None;
            }
        }
        if let Some(c) = curr {
            // v6.17+: NO_RUN_TO_PARITY shortens vprot instead (set_protect_slice()).
            let gate = if self.profile.version >= (6, 17) { protect } else { self.feats.has(RUN_TO_PARITY) };
            if gate && self.protect_slice(c) {
                return Some(c);
            }
        }
        // Eligible entity with the earliest deadline (first inserted wins ties).
        let (avg, load) = self.avg_parts(q);
        let min = cfs.min_vruntime;
        let best = cfs
            .queue
            .pick_eligible_earliest(|v| (avg as i128) >= (vdiff(v, min) as i128) * (load as i128), &self.rq_steps)
            .map(|e| (e, self.se(e).deadline));
        #[cfg(debug_assertions)]
        {
            // The flat scan the tree replaced: same answer.
            let mut flat: Option<(Ent, u64)> = None;
            for e in cfs.queue.iter_insertion_order() {
                let se = self.se(e);
                if (avg as i128) >= (vdiff(se.vruntime, min) as i128) * (load as i128)
                    && flat.is_none_or(|(_, d)| vdiff(se.deadline, d) < 0)
                {
                    flat = Some((e, se.deadline));
                }
            }
            assert_eq!(best, flat, "pick_eevdf: tree and flat scan disagree");
        }
        match (best, curr) {
            (None, c) => c,
            (Some((_, bd)), Some(c)) if vdiff(self.se(c).deadline, bd) < 0 => Some(c),
            (Some((b, _)), _) => Some(b),
        }
    }

    /// EEVDF `pick_next_entity()`: the next buddy if honoured and eligible
    /// (v6.6-v6.13 under NEXT_BUDDY; v6.14+ under PICK_BUDDY), else `pick_eevdf()`.
    /// From 6.18.33 (e837456fdca8) the buddy test is inside `__pick_eevdf()`.
    /// The completion of a delayed dequeue of the entity picked is the
    /// caller's (`pick_next_task_fair()`, `wakeup_pick_next_entity()`).
    #[inline(always)]
    fn pick_next_entity_eevdf(&self, q: CfsId) -> Option<Ent> {
        let buddy_on = if self.at_least(6, 14) { self.feats.has(PICK_BUDDY) } else { self.feats.has(NEXT_BUDDY) };
        if buddy_on && !self.profile.stable_6_18(33) {
            if let Some(n) = self.cfs(q).next {
                if self.entity_eligible(q, n) {
                    return Some(n);
                }
            }
        }
        self.pick_eevdf(q)
    }

    /// `wakeup_preempt_entity(curr, se)` (CFS): 1 if `se` should preempt `curr`.
    fn wakeup_preempt_entity(&self, curr: Ent, se: Ent) -> i32 {
        let c = self.se(curr);
        let s = self.se(se);
        let vd = vdiff(c.vruntime, s.vruntime);
        if vd <= 0 {
            return -1;
        }
        // wakeup_gran(): uses the wakee's weight.
        let gran = calc_delta_fair(self.tun.wakeup_granularity_ns, s.weight) as i64;
        if vd > gran {
            1
        } else {
            0
        }
    }

    /// CFS `pick_next_entity(cfs_rq, curr)` (v3.1-v6.5): leftmost,
    /// unless a skip / last / next buddy may run without unfairness. `curr`
    /// (still running, v3.15+ pick path) competes as if it were in the tree,
    /// to the right of entities with the same vruntime.
    fn pick_next_entity_cfs(&mut self, q: CfsId, curr: Option<Ent>) -> Option<Ent> {
        let cfs = self.cfs(q);
        // The two leftmost of the tree, then curr as if inserted last.
        let [mut order, mut second] = cfs.queue.first_two(&self.rq_steps);
        if let Some(c) = curr {
            let v = self.se(c).vruntime;
            match order {
                Some((_, lv)) if vdiff(v, lv) >= 0 => {
                    if second.is_none_or(|(_, sv)| vdiff(v, sv) < 0) {
                        second = Some((c, v));
                    }
                }
                _ => {
                    second = order;
                    order = Some((c, v));
                }
            }
        }
        let left = order?.0;
        let mut se = left;
        if cfs.skip == Some(se) {
            if let Some((s, _)) = second {
                if self.wakeup_preempt_entity(s, left) < 1 {
                    se = s;
                }
            }
        }
        let (last, next) = (cfs.last, cfs.next);
        if self.profile.version < (2, 6) || self.profile.version >= (3, 0) {
            if let Some(l) = last {
                if self.wakeup_preempt_entity(l, left) < 1 {
                    se = l;
                }
            }
            if let Some(n) = next {
                if self.wakeup_preempt_entity(n, left) < 1 {
                    se = n;
                }
            }
        } else {
            // 2.6.33-2.6.38: next first, then last (last wins).
            if let Some(n) = next {
                if self.wakeup_preempt_entity(n, left) < 1 {
                    se = n;
                }
            }
            if let Some(l) = last {
                if self.wakeup_preempt_entity(l, left) < 1 {
                    se = l;
                }
            }
        }
        self.clear_buddies(q, se);
        Some(se)
    }

    /// `put_prev_task_fair()`: `put_prev_entity()` at every level of `p`.
    #[inline(always)]
    pub(crate) fn put_prev_task_fair(&mut self, p: TaskId, now: u64) {
        let t = &self.tasks[p.idx()];
        if t.group == 0 {
            // A root-group task: one level, its CPU's root cfs_rq (the
            // inlined put_prev_entity() knows the kinds).
            let q = CfsId::root(t.cpu);
            debug_assert_eq!(self.cfs(q).curr, Some(Ent::task(p)), "put_prev of an entity that is not curr");
            self.put_prev_entity(q, Ent::task(p), now);
            return;
        }
        let mut cur = Some(Ent::task(p));
        while let Some(x) = cur {
            let q = self.cfs_of(x);
            debug_assert_eq!(self.cfs(q).curr, Some(x), "put_prev of an entity that is not curr");
            self.put_prev_entity(q, x, now);
            cur = Self::parent_of(q);
        }
    }

    /// `set_next_task_fair()`: `set_next_entity()` at every level of `p`.
    fn set_next_task_fair(&mut self, p: TaskId, now: u64) {
        let t = &self.tasks[p.idx()];
        if t.group == 0 {
            // A root-group task: one level (the inlined set_next_entity()
            // knows the kinds).
            self.set_next_entity(CfsId::root(t.cpu), Ent::task(p), now);
            return;
        }
        // Bottom-up, as the kernel walks it; each level is independent.
        let mut cur = Some(Ent::task(p));
        while let Some(x) = cur {
            let q = self.cfs_of(x);
            self.set_next_entity(q, x, now);
            cur = Self::parent_of(q);
        }
    }

    /// The v3.15+ switch between two fair tasks: put `prev`'s entities and set
    /// `next`'s up to (not including) the cfs_rq they share, then swap there
    /// (pick_next_task_fair's is_same_group() loop).
    fn switch_entities(&mut self, prev: TaskId, next: TaskId, now: u64) {
        let (mut pse, mut se) = (Ent::task(prev), Ent::task(next));
        let (tp, tn) = (&self.tasks[prev.idx()], &self.tasks[next.idx()]);
        if tp.group == 0 && tn.group == 0 {
            // Two root-group tasks of one CPU share its root cfs_rq: the
            // loop's first turn, with the kinds known to the inlined calls.
            debug_assert_eq!(tp.cpu, tn.cpu);
            let q = CfsId::root(tn.cpu);
            self.put_prev_entity(q, pse, now);
            self.set_next_entity(q, se, now);
            return;
        }
        loop {
            let (pq, q) = (self.cfs_of(pse), self.cfs_of(se));
            if pq == q {
                self.put_prev_entity(pq, pse, now);
                self.set_next_entity(q, se, now);
                return;
            }
            let (sd, pd) = (self.se(se).depth, self.se(pse).depth);
            if sd <= pd {
                self.put_prev_entity(pq, pse, now);
                pse = Self::parent_of(pq).expect("entities below the root have a parent");
            }
            if sd >= pd {
                self.set_next_entity(q, se, now);
                se = Self::parent_of(q).expect("entities below the root have a parent");
            }
        }
    }

    /// `pick_next_task_fair()` for a CPU whose `prev` has been dequeued (if it
    /// blocked) but is still curr of its cfs_rqs. Walks down from the root cfs_rq
    /// picking at each level; completes delayed dequeues of picked tasks
    /// (v6.12). Returns the next task, or None to go idle; `prev` has been put
    /// and `next` set.
    #[inline(always)]
    pub(crate) fn pick_next_task_fair(&mut self, cpu: CpuId, now: u64) -> Option<TaskId> {
        // Nothing queued (v3.15+, the first test of the loop below): put
        // prev and go idle without the call (half the picks of a CPU pair
        // that hands one task back and forth).
        if (self.eevdf() || self.at_least(3, 15)) && self.rqs[cpu.idx()].cfs.nr_running == 0 {
            let prev = self.rqs[cpu.idx()].curr.filter(|&p| self.task_is_cfs_curr(p));
            if let Some(pv) = prev {
                self.put_prev_task_fair(pv, now);
            }
            return None;
        }
        self.pick_next_task_fair_queued(cpu, now)
    }

    /// [`Kernel::pick_next_task_fair`] past its empty-runqueue test (out of line).
    fn pick_next_task_fair_queued(&mut self, cpu: CpuId, now: u64) -> Option<TaskId> {
        // prev's entities are still curr of their cfs_rqs unless an earlier
        // pick of this schedule() (before newly idle balancing) put them.
        let prev = self.rqs[cpu.idx()].curr.filter(|&p| self.task_is_cfs_curr(p));
        let root = CfsId::root(cpu);
        if !self.eevdf() && self.profile.version < (3, 15) {
            // v2.6.x-v3.14 __schedule(): put_prev_task() before pick_next_task(),
            // then set_next_entity() at each level on the way down.
            if let Some(pv) = prev {
                self.put_prev_task_fair(pv, now);
            }
            let mut q = root;
            loop {
                let se = self.pick_next_entity_cfs(q, None)?;
                self.set_next_entity(q, se, now);
                match self.group_cfs_rq(se) {
                    Some(gq) => q = gq,
                    None => return se.task_id(),
                }
            }
        }
        'again: loop {
            if self.cfs(root).nr_running == 0 {
                if let Some(pv) = prev {
                    self.put_prev_task_fair(pv, now);
                }
                return None;
            }
            // The root level first, then the group levels below the entity
            // picked (the root's call inlined on its own, with the cfs_rq's
            // kind known: most picks end there).
            let Some(mut se) = self.pick_level(cpu, root, now) else { continue 'again };
            let p = loop {
                match self.group_cfs_rq(se) {
                    Some(gq) => match self.pick_level(cpu, gq, now) {
                        Some(x) => se = x,
                        None => continue 'again,
                    },
                    None => break se.task_id().unwrap(),
                }
            };
            match prev {
                Some(pv) if pv != p => self.switch_entities(pv, p, now),
                Some(_) => {}
                None => self.set_next_task_fair(p, now),
            }
            return Some(p);
        }
    }

    /// One level of [`Kernel::pick_next_task_fair_queued`]'s walk down (the
    /// body of pick_next_task_fair()'s / pick_task_fair()'s `do { } while
    /// (cfs_rq)` loop, all profiles): update `q`'s curr if still queued and
    /// pick on `q`. None when the pick was a delayed entity (v6.12+:
    /// pick_next_entity() finishes its dequeue and returns NULL), and the
    /// walk starts again (`goto again`).
    #[inline(always)]
    fn pick_level(&mut self, cpu: CpuId, q: CfsId, now: u64) -> Option<Ent> {
        let mut curr = self.cfs(q).curr;
        if let Some(c) = curr {
            if self.se(c).on_rq {
                self.update_curr(q, now);
            } else {
                curr = None;
            }
        }
        if self.eevdf() {
            let se = self.pick_next_entity_eevdf(q).expect("a non-empty cfs_rq has an eligible entity");
            if let Some(t) = se.task_id().filter(|t| self.tasks[t.idx()].se.sched_delayed) {
                // pick_next_entity(): finish the delayed dequeue and pick again.
                self.dequeue_task_fair(cpu, t, DEQUEUE_SLEEP | DEQUEUE_DELAYED, now);
                self.finish_delayed_dequeue(t);
                return None;
            }
            if !se.is_task() && self.se(se).sched_delayed {
                self.dequeue_delayed_group(se, now);
                return None;
            }
            Some(se)
        } else {
            Some(self.pick_next_entity_cfs(q, curr).expect("a non-empty cfs_rq has a leftmost entity"))
        }
    }

    /// Whether `p` is the current entity of its cfs_rq (`cfs_rq->curr == &p->se`).
    #[inline]
    pub(crate) fn task_is_cfs_curr(&self, p: TaskId) -> bool {
        self.cfs(self.cfs_of(Ent::task(p))).curr == Some(Ent::task(p))
    }

    // ---------------------------------------------------------------- enqueue / dequeue of tasks

    /// `enqueue_task_fair()`: enqueue the task's entity and every ancestor that
    /// is not queued yet; update the others (kernel/sched/fair.c).
    pub(crate) fn enqueue_task_fair(&mut self, p: TaskId, flags: u32, now: u64) {
        let idle = self.tasks[p.idx()].policy == Policy::Idle;
        let t = &self.tasks[p.idx()];
        if t.group == 0 {
            // A task of the root group (every task of a workload without
            // cgroups): one level, its CPU's root cfs_rq. The loops below
            // with the hierarchy folded away, so that the inlined
            // enqueue_entity() knows its cfs_rq is a root one and its entity
            // a task (no test of either kind at each access).
            let (cpu, on_rq) = (t.cpu, t.se.on_rq);
            let (q, te) = (CfsId::root(cpu), Ent::task(p));
            if on_rq {
                // (A queued task, not a group, is not requeued here: the
                // second loop's update of an ancestor already queued.)
                self.update_load_avg(q, Some(te), now, true);
            } else {
                self.enqueue_entity(q, te, flags, now);
            }
            let cfs = &mut self.rqs[cpu.idx()].cfs;
            cfs.h_nr_running += 1;
            cfs.h_nr_idle += idle as u32;
            self.util_est_enqueue(p);
            if idle {
                self.idle_hint.set(cpu); // may now be SCHED_IDLE-only
            }
            #[cfg(debug_assertions)]
            self.check_hierarchy(cpu, "enqueue_task_fair");
            return;
        }
        let mut cur = Some(Ent::task(p));
        let mut flags = flags;
        // First loop: enqueue entities that are not on a cfs_rq.
        while let Some(x) = cur {
            if self.se(x).on_rq {
                if !x.is_task() && self.se(x).sched_delayed {
                    self.requeue_delayed_entity(x, now);
                }
                break;
            }
            let q = self.cfs_of(x);
            self.enqueue_entity(q, x, flags, now);
            let cfs = self.cfs_mut(q);
            cfs.h_nr_running += 1;
            cfs.h_nr_idle += idle as u32;
            flags = ENQUEUE_WAKEUP;
            cur = Self::parent_of(q);
        }
        // Second loop: the ancestors already queued.
        while let Some(x) = cur {
            let q = self.cfs_of(x);
            self.update_load_avg(q, Some(x), now, true);
            self.update_cfs_group(x, now);
            let cfs = self.cfs_mut(q);
            cfs.h_nr_running += 1;
            cfs.h_nr_idle += idle as u32;
            cur = Self::parent_of(q);
        }
        self.util_est_enqueue(p);
        if idle {
            self.idle_hint.set(self.tasks[p.idx()].cpu); // may now be SCHED_IDLE-only
        }
        #[cfg(debug_assertions)]
        self.check_hierarchy(self.tasks[p.idx()].cpu, "enqueue_task_fair");
    }

    // FIDELITY(F-644): the value added is max(util_avg, util_est); no UTIL_AVG_UNCHANGED.
    /// `util_est_enqueue()`: add the task's estimate to its CPU's root cfs_rq
    /// (once: a task already counted is not added again).
    pub(crate) fn util_est_enqueue(&mut self, p: TaskId) {
        if !self.feats.has(UTIL_EST) || self.tasks[p.idx()].util_est_queued.is_some() {
            return;
        }
        // At most 1024: kept in 32 bits (`OptU32`).
        let ue = u32::try_from(self.tasks[p.idx()].se.avg.util_est_value()).unwrap_or(u32::MAX - 1);
        let cpu = self.tasks[p.idx()].cpu;
        self.rqs[cpu.idx()].cfs.util_est_enqueued += ue as u64;
        self.tasks[p.idx()].util_est_queued.set(Some(ue));
    }

    /// `util_est_dequeue()`: take back what util_est_enqueue() added.
    pub(crate) fn util_est_dequeue(&mut self, p: TaskId) {
        if let Some(ue) = self.tasks[p.idx()].util_est_queued.take() {
            let cpu = self.tasks[p.idx()].cpu;
            let cfs = &mut self.rqs[cpu.idx()].cfs;
            cfs.util_est_enqueued = cfs.util_est_enqueued.saturating_sub(ue as u64);
        }
    }

    /// `dequeue_task_fair()`: dequeue the task's entity and every ancestor whose
    /// cfs_rq becomes empty. Returns false if the task's dequeue was delayed
    /// (v6.12): it stays queued and counted, as do its ancestors.
    ///
    /// A sleeping task whose group still has load leaves the group entity as
    /// next buddy of its parent (seed 002, v2.6.39+): the next pick stays in the
    /// group for the rest of its slice.
    pub(crate) fn dequeue_task_fair(&mut self, cpu: CpuId, p: TaskId, flags: u32, now: u64) -> bool {
        debug_assert_eq!(self.tasks[p.idx()].cpu, cpu);
        let task_sleep = flags & DEQUEUE_SLEEP != 0;
        let idle = self.tasks[p.idx()].policy == Policy::Idle;
        let te = Ent::task(p);
        // util_est leaves the CPU at the sleep itself, before dequeue_entities()
        // can delay the dequeue, and the EWMA learns from this activation
        // (v6.12 dequeue_task_fair(); earlier kernels in the same order). A
        // delayed task's final dequeue finds nothing left to remove.
        // v6.12 runs util_est_update() before dequeue_entities(), on the
        // util_avg of the last PELT update; v5.x-v6.11 after the dequeue, on
        // the util_avg brought up to now.
        let learn = self.feats.has(UTIL_EST) && task_sleep && !self.tasks[p.idx()].se.sched_delayed;
        let before_dequeue = self.at_least(6, 12);
        let fastup = self.at_least(6, 9) || self.feats.has(UTIL_EST_FASTUP);
        self.util_est_dequeue(p);
        if learn && before_dequeue {
            self.tasks[p.idx()].se.avg.util_est_update(fastup, 1024);
        }
        if self.tasks[p.idx()].group == 0 {
            // A task of the root group: the steps below with the hierarchy
            // folded away (one level, `cpu`'s root cfs_rq, whose parent is
            // none: no next-buddy hint, no ancestor to update), so that the
            // inlined dequeue_entity() knows its cfs_rq and entity kinds.
            if !self.dequeue_entity(CfsId::root(cpu), te, flags, now) {
                return false;
            }
            if learn && !before_dequeue {
                self.tasks[p.idx()].se.avg.util_est_update(fastup, 1024);
            }
            let rq = &mut self.rqs[cpu.idx()];
            rq.cfs.h_nr_running -= 1;
            rq.cfs.h_nr_idle -= idle as u32;
            if rq.nr_running() == 0 || rq.nr_running() == rq.cfs.h_nr_idle {
                self.idle_hint.set(cpu); // idle once curr goes, or SCHED_IDLE-only
            }
            #[cfg(debug_assertions)]
            self.check_hierarchy(cpu, "dequeue_task_fair");
            return true;
        }
        if !self.dequeue_entity(self.cfs_of(te), te, flags, now) {
            return false;
        }
        if learn && !before_dequeue {
            self.tasks[p.idx()].se.avg.util_est_update(fastup, 1024);
        }
        let mut cur = Some(te);
        let mut first = true;
        let mut flags = flags;
        // First loop: dequeue while the cfs_rq we left becomes empty.
        while let Some(x) = cur {
            let q = self.cfs_of(x);
            // v6.12+: a group entity whose cfs_rq emptied may itself be
            // delayed (not eligible): it stays queued, and dequeue_entities()
            // goes on with its parent's counts, without the sleep buddy.
            let delayed = !first && !self.dequeue_entity(q, x, flags, now);
            first = false;
            let cfs = self.cfs_mut(q);
            cfs.h_nr_running -= 1;
            cfs.h_nr_idle -= idle as u32;
            if delayed {
                // FIDELITY(F-022): the delayed entity's own update_cfs_group() is skipped (v6.13+ keeps an empty group's weight; v6.12.0 did not).
                cur = Self::parent_of(q);
                break;
            }
            if cfs.load_weight != 0 {
                // Don't dequeue the parent: it has other entities besides us.
                let parent = Self::parent_of(q);
                if task_sleep && self.next_buddy_hint() {
                    if let Some(pe) = parent {
                        self.set_next_buddy(pe);
                    }
                }
                cur = parent;
                break;
            }
            flags |= DEQUEUE_SLEEP;
            cur = Self::parent_of(q);
        }
        // Second loop: the ancestors that stay queued.
        while let Some(x) = cur {
            let q = self.cfs_of(x);
            self.update_load_avg(q, Some(x), now, true);
            self.update_cfs_group(x, now);
            let cfs = self.cfs_mut(q);
            cfs.h_nr_running -= 1;
            cfs.h_nr_idle -= idle as u32;
            cur = Self::parent_of(q);
        }
        let rq = &self.rqs[cpu.idx()];
        if rq.nr_running() == 0 || rq.nr_running() == rq.cfs.h_nr_idle {
            self.idle_hint.set(cpu); // idle once curr goes, or SCHED_IDLE-only
        }
        #[cfg(debug_assertions)]
        self.check_hierarchy(cpu, "dequeue_task_fair");
        true
    }

    /// Debug check of the hierarchy on `cpu`: every queued group entity owns a
    /// non-empty cfs_rq, and nr_running counts the tree plus a queued curr.
    #[cfg(debug_assertions)]
    pub(crate) fn check_hierarchy(&self, cpu: CpuId, what: &str) {
        let mut stack = vec![CfsId::root(cpu)];
        while let Some(q) = stack.pop() {
            let cfs = self.cfs(q);
            let n = cfs.queue.len() as u32 + cfs.curr.is_some_and(|c| self.se(c).on_rq) as u32;
            assert_eq!(
                n, cfs.nr_running,
                "{what}: cpu {} {q:?}: nr_running {} but {n} entities: queue {:?} curr {:?}",
                cpu.0, cfs.nr_running, cfs.queue, cfs.curr
            );
            for e in cfs.queue.iter().chain(cfs.curr.filter(|&c| self.se(c).on_rq)) {
                assert!(self.se(e).on_rq, "{what}: {e:?} queued but not on_rq");
                if let Some(gq) = self.group_cfs_rq(e) {
                    assert!(
                        self.cfs(gq).nr_running > 0 || self.se(e).sched_delayed,
                        "{what}: cpu {} group {e:?} queued with an empty cfs_rq and not delayed",
                        cpu.0
                    );
                    stack.push(gq);
                }
            }
        }
    }

    /// (Re)list on_rq task `p` in its CPU's `cfs_tasks` at its current mru
    /// (`list_add()` at enqueue, `list_move()` at pick).
    #[inline(always)]
    fn cfs_tasks_list(&mut self, p: TaskId) {
        let t = &self.tasks[p.idx()];
        let (cpu, mru) = (t.cpu, t.mru);
        if t.mru_listed == Some(cpu) && self.rqs[cpu.idx()].cfs_tasks.is_tail(p) {
            // Already the newest on its CPU's list (a CPU that runs one task
            // over and over): moving it to the tail changes nothing.
            return;
        }
        if let Some(c) = t.mru_listed {
            self.rqs[c.idx()].cfs_tasks.remove(&mut self.tasks, p);
        }
        debug_assert!(mru == self.mru_seq, "cfs_tasks is listed in mru order: a task joins with the newest mru");
        self.rqs[cpu.idx()].cfs_tasks.push_tail(&mut self.tasks, p);
        self.tasks[p.idx()].mru_listed = Some(cpu);
    }

    /// The tasks queued on `cpu` at any level, running one included
    /// (`rq->cfs_tasks`), in no particular order.
    #[cfg(debug_assertions)]
    pub(crate) fn cfs_tasks(&self, cpu: CpuId, out: &mut Vec<TaskId>) {
        out.clear();
        let root = &self.rqs[cpu.idx()].cfs;
        if self.tgs.len() == 1 {
            // No task groups: every entity is a task of the root cfs_rq.
            let curr = root.curr.filter(|&c| self.se(c).on_rq);
            out.extend(root.queue.iter().chain(curr).map(|e| e.task_id().expect("no groups")));
            return;
        }
        let mut stack = vec![CfsId::root(cpu)];
        while let Some(q) = stack.pop() {
            let cfs = self.cfs(q);
            for e in cfs.queue.iter().chain(cfs.curr.filter(|&c| self.se(c).on_rq)) {
                match e.task_id() {
                    Some(t) => out.push(t),
                    None => stack.push(self.group_cfs_rq(e).unwrap()),
                }
            }
        }
    }

    // ---------------------------------------------------------------- preemption

    /// `task_tick_fair()`: `entity_tick()` at every level of the running task.
    /// EEVDF has no separate tick check (update_curr renews the request and
    /// reschedules); CFS runs `check_preempt_tick()` on each cfs_rq with more
    /// than one entity.
    pub(crate) fn task_tick_fair(&mut self, cpu: CpuId, now: u64) {
        let Some(p) = self.rqs[cpu.idx()].curr else {
            return;
        };
        let mut cur = Some(Ent::task(p));
        while let Some(x) = cur {
            let q = self.cfs_of(x);
            self.entity_tick(q, x, now);
            cur = Self::parent_of(q);
        }
    }

    /// `entity_tick()`
    fn entity_tick(&mut self, q: CfsId, curr: Ent, now: u64) {
        self.update_curr(q, now);
        self.update_load_avg(q, Some(curr), now, true);
        self.update_cfs_group(curr, now);
        if self.eevdf() || self.cfs(q).nr_running <= 1 {
            return;
        }
        // check_preempt_tick()
        let cpu = self.cfs_cpu(q);
        let ideal = self.sched_slice(curr);
        let se = self.se(curr);
        let delta_exec = se.sum_exec_runtime - se.prev_sum_exec_runtime;
        if delta_exec > ideal {
            self.resched_curr(cpu);
            self.clear_buddies(q, curr);
            return;
        }
        if delta_exec < self.tun.min_granularity_ns {
            return;
        }
        let cfs = self.cfs(q);
        let Some((first, _)) = cfs.queue.first(&self.rq_steps) else {
            return;
        };
        let d = vdiff(self.se(curr).vruntime, self.se(first).vruntime);
        if d < 0 {
            return;
        }
        if d as u64 > ideal {
            self.resched_curr(cpu);
        }
    }

    /// `find_matching_se()`: climb from both entities to the first cfs_rq they share.
    fn find_matching_se(&self, mut se: Ent, mut pse: Ent) -> (Ent, Ent) {
        let (mut sd, mut pd) = (self.se(se).depth, self.se(pse).depth);
        while sd > pd {
            se = self.parent_entity(se).unwrap();
            sd -= 1;
        }
        while pd > sd {
            pse = self.parent_entity(pse).unwrap();
            pd -= 1;
        }
        while self.cfs_of(se) != self.cfs_of(pse) {
            se = self.parent_entity(se).unwrap();
            pse = self.parent_entity(pse).unwrap();
        }
        (se, pse)
    }

    /// `check_preempt_wakeup()` (CFS, v3.x-v6.5) / `check_preempt_wakeup_fair()`
    /// (EEVDF): may the freshly enqueued `p` preempt the current task of `cpu`?
    pub(crate) fn check_preempt_wakeup(&mut self, cpu: CpuId, p: TaskId, wake_fork: bool, now: u64) {
        let Some(curr) = self.rqs[cpu.idx()].curr else {
            // The idle task is always preempted by a fair task.
            self.resched_curr(cpu);
            self.xp(Preempt::IdleCpu);
            return;
        };
        if curr == p {
            return;
        }
        let pe = Ent::task(p);
        let nr = self.cfs(self.cfs_of(Ent::task(curr))).nr_running as u64;
        let scale = nr >= self.tun.nr_latency;
        let mut next_buddy_marked = false;
        if self.eevdf() {
            if self.feats.has(NEXT_BUDDY) && !wake_fork && !self.tasks[p.idx()].se.sched_delayed {
                self.set_next_buddy(pe);
            }
        } else if self.feats.has(NEXT_BUDDY) && scale && !wake_fork {
            self.set_next_buddy(pe);
            next_buddy_marked = true;
        }
        if self.rqs[cpu.idx()].need_resched {
            self.xp(Preempt::Pending);
            return;
        }
        let (tc, tp) = (&self.tasks[curr.idx()], &self.tasks[p.idx()]);
        if tc.group == 0 && tp.group == 0 {
            // Two root-group tasks: they are the matching entities, on
            // `cpu`'s root cfs_rq (the decision below inlined with the kinds
            // known; find_matching_se() would return them as they are).
            debug_assert_eq!((tc.cpu, tp.cpu), (cpu, cpu));
            self.wakeup_preempt_decide(cpu, p, CfsId::root(cpu), Ent::task(curr), pe, wake_fork, scale, next_buddy_marked, now);
            return;
        }
        let (se, pse) = self.find_matching_se(Ent::task(curr), pe);
        let q = self.cfs_of(se);
        self.wakeup_preempt_decide(cpu, p, q, se, pse, wake_fork, scale, next_buddy_marked, now);
    }

    /// The rest of [`Kernel::check_preempt_wakeup`] (check_preempt_wakeup()
    /// v2.6.23-v6.5, check_preempt_wakeup_fair() v6.6-6.18.32,
    /// wakeup_preempt_fair() 6.18.33+) after find_matching_se(): the entities
    /// `se` (curr's side) and `pse` (the wakee's) and their cfs_rq `q`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn wakeup_preempt_decide(
        &mut self,
        cpu: CpuId,
        p: TaskId,
        q: CfsId,
        se: Ent,
        pse: Ent,
        wake_fork: bool,
        scale: bool,
        next_buddy_marked: bool,
        now: u64,
    ) {
        let pp = self.tasks[p.idx()].policy;
        let (cse_idle, pse_idle) = (self.se_is_idle(se), self.se_is_idle(pse));
        if cse_idle && !pse_idle {
            if self.eevdf() && self.profile.version >= (6, 15) {
                // f553741ac8c0 (v6.15): "Cancel the slice protection of the idle entity".
                self.cancel_protect_slice(se);
            }
            self.resched_curr(cpu);
            self.xp(Preempt::IdleCurr);
            return;
        }
        if cse_idle != pse_idle || pp != Policy::Normal || !self.feats.has(WAKEUP_PREEMPTION) {
            self.xp(Preempt::Policy);
            return;
        }
        self.update_curr(q, now);
        if self.eevdf() && self.profile.version >= (6, 17) {
            self.check_preempt_wakeup_v6_17(cpu, q, se, pse, wake_fork, now);
            return;
        }
        if self.eevdf() {
            let before = self.explain.is_some().then(|| self.preempt_state(q, se, pse));
            // v6.12 PREEMPT_SHORT: a shorter-slice eligible wakee cancels protection.
            let mut short = false;
            if self.feats.has(PREEMPT_SHORT) {
                let (ps, cs) = (self.se(pse), self.se(se));
                short = ps.slice < cs.slice
                    && self.entity_eligible(q, pse)
                    && (vdiff(ps.deadline, cs.deadline) < 0 || !self.entity_eligible(q, se));
                if short {
                    self.cancel_protect_slice(se);
                }
            }
            let preempt = self.pick_eevdf(q) == Some(pse);
            if preempt {
                self.resched_curr(cpu);
            }
            if let Some(st) = before {
                self.xp(Self::preempt_why(st, short, preempt));
            }
            return;
        }
        let cfs_preempt = self.wakeup_preempt_entity(se, pse) == 1;
        self.xp(if cfs_preempt { Preempt::CfsGran } else { Preempt::CfsKeep });
        if cfs_preempt {
            if !next_buddy_marked && self.next_buddy_hint() {
                // Seed 002 (v2.6.39+): the preempting entity becomes next buddy.
                self.set_next_buddy(pse);
            }
            self.resched_curr(cpu);
            if self.se(se).on_rq && self.feats.has(LAST_BUDDY) && scale && se.is_task() {
                self.set_last_buddy(se);
            }
        }
    }

    /// The EEVDF decision of `check_preempt_wakeup_fair()` (v6.17 - 6.18.44;
    /// wakeup_preempt_fair() in 6.18.33+), after update_curr() of the common
    /// cfs_rq `q` of curr's entity `se` and the wakee's `pse`:
    /// - v6.17 (9de74a9850b9): PREEMPT_SHORT applies iff the wakee's slice is
    ///   shorter than curr's (no eligibility or deadline test); then the pick
    ///   ignores curr's protection.
    /// - 6.18.33+ (e837456fdca8 as reverted by 15257cc2f905): otherwise no
    ///   preemption by a WF_FORK wakeup or a wakee that is still delayed;
    ///   (NEXT_BUDDY's set_preempt_buddy()/preempt_sync() are not modelled,
    ///   FIDELITY(F-648)); the pick is `pick_next_entity()` repeated while it
    ///   completes delayed dequeues (ac8e69e69363, 9f6d929ee2c6).
    ///   v6.17 - 6.18.32: one `__pick_eevdf()`, a delayed pick counting as
    ///   somebody else.
    /// - The wakee preempts iff it is the pick; in SHORT mode curr's
    ///   protection is then cancelled. Otherwise (RUN_TO_PARITY) curr's
    ///   protection is tightened to the smallest queued slice
    ///   (update_protect_slice()): in SHORT mode only up to 6.18.32 (3a0baa8e6c57),
    ///   after every non-preempting wakeup from 6.18.33.
    fn check_preempt_wakeup_v6_17(&mut self, cpu: CpuId, q: CfsId, se: Ent, pse: Ent, wake_fork: bool, now: u64) {
        let stable33 = self.profile.stable_6_18(33);
        let short = self.feats.has(PREEMPT_SHORT) && self.se(pse).slice < self.se(se).slice;
        if stable33 && !short && (wake_fork || self.se(pse).sched_delayed) {
            self.xp(Preempt::ForkOrDelayed);
            return;
        }
        let before = self.explain.is_some().then(|| self.preempt_state(q, se, pse));
        let pick = if stable33 { self.wakeup_pick_next_entity(cpu, q, !short, now) } else { self.pick_eevdf_protect(q, !short) };
        if let Some(st) = before {
            self.xp(Self::preempt_why(st, short, pick == Some(pse)));
        }
        if pick == Some(pse) {
            if short {
                self.cancel_protect_slice(se);
            }
            self.resched_curr(cpu);
            return;
        }
        if self.feats.has(RUN_TO_PARITY) && (short || stable33) {
            self.update_protect_slice(q, se);
        }
    }

    /// For `--explain`: (curr eligible, curr protected, wakee eligible) before
    /// the wakeup check's pick.
    fn preempt_state(&self, q: CfsId, se: Ent, pse: Ent) -> (bool, bool, bool) {
        (self.entity_eligible(q, se), self.protect_slice(se), self.entity_eligible(q, pse))
    }

    /// For `--explain`: the clause that decided an EEVDF wakeup check.
    fn preempt_why((curr_elig, curr_prot, wakee_elig): (bool, bool, bool), short: bool, preempted: bool) -> Preempt {
        match (preempted, short) {
            (true, true) => Preempt::Short,
            (true, false) if !curr_elig => Preempt::CurrPastV,
            (true, false) => Preempt::EarlierDeadline,
            (false, _) if curr_elig && curr_prot && !short => Preempt::Protected,
            (false, _) if !wakee_elig => Preempt::WakeeIneligible,
            (false, _) => Preempt::OtherFirst,
        }
    }

    /// The pick of the 6.18.33+ wakeup check (ac8e69e69363 "Fix
    /// wakeup_preempt_fair() vs delayed dequeue", 9f6d929ee2c6 "Fix
    /// wakeup_preempt_fair() for not waking up task"): `pick_next_entity()`,
    /// which completes the dequeue of a delayed entity it picks (its lag
    /// clipped to <= 0 under DELAY_ZERO) and returns none, repeated until it
    /// returns a non-delayed entity or `q` is empty.
    fn wakeup_pick_next_entity(&mut self, cpu: CpuId, q: CfsId, protect: bool, now: u64) -> Option<Ent> {
        while self.cfs(q).nr_running > 0 {
            let e = self.pick_eevdf_protect(q, protect)?;
            if !e.is_task() && self.se(e).sched_delayed {
                self.dequeue_delayed_group(e, now);
                continue;
            }
            match e.task_id().filter(|t| self.tasks[t.idx()].se.sched_delayed) {
                Some(t) => {
                    self.dequeue_task_fair(cpu, t, DEQUEUE_SLEEP | DEQUEUE_DELAYED, now);
                    self.finish_delayed_dequeue(t);
                }
                None => return Some(e),
            }
        }
        None
    }

    /// `resched_curr()`: set TIF_NEED_RESCHED on the CPU's current task.
    #[inline]
    pub(crate) fn resched_curr(&mut self, cpu: CpuId) {
        self.rqs[cpu.idx()].need_resched = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{SwitchReason, TaskParams};
    use crate::profile::profile;
    use crate::sched::TaskState;
    use schedlab_topology::{CpuInfo, CpuTopology};

    const MS: u64 = 1_000_000;

    fn one_cpu(kernel: &str) -> Kernel {
        let t = CpuTopology::new(vec![CpuInfo { core: 0, cluster: 0, llc: 0, node: 0, package: 0 }], vec![vec![10]]).unwrap();
        Kernel::new(&t, profile(kernel).unwrap())
    }

    // `Kernel::jiffies` (the division skipped inside the last answer's
    // jiffy) is `now / tick_ns` for times that go forward, repeat, jump
    // and go back.
    #[test]
    fn cached_jiffies_are_now_over_the_tick() {
        let k = one_cpu("v6.12");
        let tick = k.tun.tick_ns;
        let mut x = 12345u64;
        let mut now = 0u64;
        for i in 0..100_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            now = match i % 7 {
                0 => (x >> 20) % (50 * tick),
                1 => now,
                2 => now.saturating_sub((x >> 40) % tick),
                _ => now + (x >> 33) % (tick / 3),
            };
            assert_eq!(k.jiffies(now), now / tick, "at {now}");
        }
        assert_eq!(k.jiffies(tick - 1), 0);
        assert_eq!(k.jiffies(tick), 1);
    }

    /// Hand-build a cfs_rq on CPU 0: entities (weight, vruntime, deadline) in
    /// the tree, none running. Returns their ids.
    fn hand_queue(k: &mut Kernel, ents: &[(u64, u64, u64)]) -> Vec<TaskId> {
        let mut ids = Vec::new();
        for &(w, v, d) in ents {
            let p = k.sched_fork(&TaskParams::default(), None, CpuId(0), 0);
            let se = &mut k.tasks[p.idx()].se;
            se.weight = w;
            se.vruntime = v;
            se.deadline = d;
            se.on_rq = true;
            k.tasks[p.idx()].state = TaskState::Runnable;
            k.account_entity_enqueue(CpuId(0).into(), p.into());
            k.rqs[0].cfs.h_nr_running += 1;
            k.enqueue_tree(CpuId(0).into(), p.into());
            ids.push(p);
        }
        ids
    }

    // entity_eligible() (v6.6+): an entity is eligible iff v_i <= V; pick_eevdf returns the
    // eligible entity with the earliest virtual deadline, not the earliest deadline overall.
    #[test]
    fn eevdf_picks_earliest_eligible_deadline() {
        let mut k = one_cpu("v6.6");
        let ids = hand_queue(&mut k, &[(1024, 0, 30 * MS), (1024, 10 * MS, 15 * MS), (1024, 20 * MS, 5 * MS)]);
        assert_eq!(k.avg_vruntime(CpuId(0)), 10 * MS);
        assert!(k.entity_eligible(CpuId(0), ids[0]));
        assert!(k.entity_eligible(CpuId(0), ids[1]), "v == V is eligible");
        assert!(!k.entity_eligible(CpuId(0), ids[2]));
        assert_eq!(k.pick_eevdf(CpuId(0)).and_then(|e| e.task_id()), Some(ids[1]));
    }

    // avg_vruntime() (v6.6+): V is weight-averaged: a heavy entity drags V toward itself.
    #[test]
    fn eevdf_eligibility_is_weighted() {
        let mut k = one_cpu("v6.6");
        // nice -5 (3121) at v=0, nice 0 at v=8ms: V = 8ms*1024/(4145) ~ 1.98ms
        let ids = hand_queue(&mut k, &[(3121, 0, 50 * MS), (1024, 8 * MS, 9 * MS)]);
        let v = k.avg_vruntime(CpuId(0));
        assert!(v > MS && v < 3 * MS, "V = {v}");
        assert!(!k.entity_eligible(CpuId(0), ids[1]));
        assert_eq!(k.pick_eevdf(CpuId(0)).and_then(|e| e.task_id()), Some(ids[0]));
    }

    // RUN_TO_PARITY (v6.6+): a running, eligible curr keeps the CPU until its
    // request is consumed, even if a queued entity has an earlier deadline.
    #[test]
    fn eevdf_run_to_parity_protects_curr() {
        let mut k = one_cpu("v6.6");
        let ids = hand_queue(&mut k, &[(1024, 0, 3 * MS), (1024, 0, MS)]);
        k.set_next_entity(CpuId(0).into(), ids[0].into(), 0);
        k.rqs[0].curr = Some(ids[0]);
        assert_eq!(k.pick_eevdf(CpuId(0)).and_then(|e| e.task_id()), Some(ids[0]), "protected curr");
        k.feats.set(crate::features::SchedFeat::RUN_TO_PARITY, false);
        assert_eq!(k.pick_eevdf(CpuId(0)).and_then(|e| e.task_id()), Some(ids[1]), "without RUN_TO_PARITY the earlier deadline wins");
    }

    /// Make `p` (queued, not running) go to sleep at `now`, as schedule() does for a blocking curr.
    fn run_then_sleep(k: &mut Kernel, p: TaskId, now: u64) {
        if let Some(c) = k.rqs[0].cfs.curr {
            k.put_prev_entity(CpuId(0).into(), c, now);
        }
        k.set_next_entity(CpuId(0).into(), p.into(), now);
        k.rqs[0].curr = Some(p);
        k.schedule(CpuId(0), SwitchReason::Block, now, &mut crate::core::Effects::default());
    }

    // place_entity() (v6.6+): lag is kept across sleep: after PLACE_LAG placement the entity's
    // lag relative to the new V equals the lag it had when it went to sleep.
    #[test]
    fn eevdf_lag_kept_across_sleep() {
        let mut k = one_cpu("v6.6");
        let ids = hand_queue(&mut k, &[(1024, 0, 3 * MS), (1024, 4 * MS, 7 * MS), (1024, 8 * MS, 11 * MS)]);
        // ids[0] is 4ms behind V (=4ms): lag +4ms; it sleeps (runs 0 ns first).
        run_then_sleep(&mut k, ids[0], 0);
        let vlag = k.tasks[ids[0].idx()].se.vlag;
        assert_eq!(vlag, 4 * MS as i64, "lag at dequeue = V - v");
        k.tasks[ids[0].idx()].state = TaskState::Sleeping;
        // Wake it: placed at V' - inflated lag; afterwards V'' - v == stored lag.
        k.try_to_wake_up(ids[0], CpuId(0), None, crate::core::WakeFlags::default(), 0, &mut crate::core::Effects::default());
        let v_after = k.avg_vruntime(CpuId(0));
        let lag_after = vdiff(v_after, k.tasks[ids[0].idx()].se.vruntime);
        assert!((lag_after - vlag).abs() <= 2, "lag after placement {lag_after} vs stored {vlag}");
        // Without PLACE_LAG it would be placed at V (lag 0).
        let mut k2 = one_cpu("v6.6");
        k2.feats.set(crate::features::SchedFeat::PLACE_LAG, false);
        let ids2 = hand_queue(&mut k2, &[(1024, 0, 3 * MS), (1024, 4 * MS, 7 * MS), (1024, 8 * MS, 11 * MS)]);
        run_then_sleep(&mut k2, ids2[0], 0);
        k2.tasks[ids2[0].idx()].state = TaskState::Sleeping;
        let v_before = k2.avg_vruntime(CpuId(0));
        k2.try_to_wake_up(ids2[0], CpuId(0), None, crate::core::WakeFlags::default(), 0, &mut crate::core::Effects::default());
        assert_eq!(k2.tasks[ids2[0].idx()].se.vruntime, v_before);
    }

    // Issue 14 item 8 — v6.12 dequeue_task_fair(): util_est_dequeue() and
    // util_est_update() run at the sleep, before dequeue_entities() delays the
    // dequeue; ttwu_runnable()'s enqueue_task_fair(ENQUEUE_DELAYED) adds the
    // estimate back, once.
    #[test]
    fn v6_12_util_est_leaves_at_the_sleep_even_when_delayed() {
        let mut k = one_cpu("v6.12");
        let ids = hand_queue(&mut k, &[(1024, 0, 3 * MS), (1024, 8 * MS, 11 * MS)]);
        for &p in &ids {
            let a = &mut k.tasks[p.idx()].se.avg;
            a.util_avg = 300;
            a.util_est = 100;
            k.util_est_enqueue(p);
        }
        assert_eq!(k.rqs[0].cfs.util_est_enqueued, 600);
        run_then_sleep(&mut k, ids[1], 0);
        assert!(k.tasks[ids[1].idx()].se.sched_delayed, "ids[1] is ineligible: its dequeue is delayed");
        assert_eq!(k.rqs[0].cfs.util_est_enqueued, 300, "the delayed sleeper's estimate left at the sleep");
        assert_eq!(k.tasks[ids[1].idx()].se.avg.util_est, 300, "EWMA updated at the sleep (fast-up to util_avg)");
        k.tasks[ids[1].idx()].state = TaskState::Sleeping;
        k.try_to_wake_up(ids[1], CpuId(0), None, crate::core::WakeFlags::default(), 0, &mut crate::core::Effects::default());
        assert_eq!(k.rqs[0].cfs.util_est_enqueued, 600, "requeue adds it back");
        // A second sleep of the same task does not remove it twice.
        k.util_est_dequeue(ids[1]);
        k.util_est_dequeue(ids[1]);
        assert_eq!(k.rqs[0].cfs.util_est_enqueued, 300);
    }

    // dequeue_entity() (v6.12 delayed dequeue): an ineligible sleeper stays queued as
    // sched_delayed; an eligible one is dequeued at once.
    #[test]
    fn eevdf_v6_12_delays_ineligible_sleepers() {
        let mut k = one_cpu("v6.12");
        let ids = hand_queue(&mut k, &[(1024, 0, 3 * MS), (1024, 8 * MS, 11 * MS)]);
        // ids[1] is ahead of V (=4ms): negative lag, not eligible.
        run_then_sleep(&mut k, ids[1], 0);
        assert!(k.tasks[ids[1].idx()].se.sched_delayed && k.tasks[ids[1].idx()].se.on_rq);
        assert_eq!(k.rqs[0].cfs.h_nr_delayed, 1);
        // ids[0] (eligible, behind V) sleeps: dequeued for real; then the CPU
        // picks the delayed one, completes its dequeue, and goes idle.
        let mut k2 = one_cpu("v6.12");
        let ids2 = hand_queue(&mut k2, &[(1024, 0, 3 * MS), (1024, 8 * MS, 11 * MS)]);
        run_then_sleep(&mut k2, ids2[0], 0);
        assert!(!k2.tasks[ids2[0].idx()].se.on_rq);
        let mut k3 = one_cpu("v6.6");
        let ids3 = hand_queue(&mut k3, &[(1024, 0, 3 * MS), (1024, 8 * MS, 11 * MS)]);
        run_then_sleep(&mut k3, ids3[1], 0);
        assert!(!k3.tasks[ids3[1].idx()].se.on_rq, "v6.6 has no delayed dequeue");
    }

    // F-645, v6.12 ttwu_runnable() -> enqueue_task_fair(ENQUEUE_DELAYED) ->
    // requeue_delayed_entity(): the delayed wakee's lag is taken against curr's
    // vruntime as of its last update_curr() (none on this path); the waker's run
    // since its pick is charged only by check_preempt_wakeup_fair()'s
    // update_curr(). Two nice-0 tasks ping-pong on one CPU, hand-computed
    // (vruntime = wall time at weight 1024; V = (vA + vB) / 2; eligible iff v <= V):
    //   B blocks 1 us ahead of A (vA = 10 ms, vB = 10 ms + 1 us): V = +0.5 us,
    //   vB > V, ineligible: delayed; A is picked at t = 0.
    //   A runs 3 us and wakes B. Requeue: V = +0.5 us (vA not yet charged),
    //   lag(B) = V - vB = -0.5 us <= 0: B stays at +1 us (no DELAY_ZERO replace).
    //   Wakeup preemption: update_curr() -> vA = +3 us, V = +2 us, vA > V: A is
    //   not eligible, pick_eevdf() = B: B preempts A.
    //   (With update_curr() before the requeue, the model's old form: V = +2 us,
    //   lag(B) = +1 us > 0, zeroed and B placed at V = vA = +3 us; A stays
    //   eligible and protected, no preemption, and A blocks ahead of B: delayed.)
    //   B runs r and blocks with A queued: vB = +1 us + r, V = (3 us + vB) / 2:
    //   eligible iff r <= 2 us. r = 0.5 us: V = +2.25 us, vB = +1.5 us, eligible,
    //   dequeued for real with vlag = +0.75 us (its next wakeup selects a CPU).
    //   r = 2.5 us: vB = +3.5 us > V = +3.25 us: delayed.
    #[test]
    fn v6_12_delayed_wakee_lag_before_the_wakers_update_curr() {
        const US: u64 = 1_000;
        let scenario = |r: u64| {
            let mut k = one_cpu("v6.12");
            let base = 10 * MS;
            let ids = hand_queue(&mut k, &[(1024, base, base + 3 * MS), (1024, base + US, base + US + 3 * MS)]);
            let (a, b) = (ids[0], ids[1]);
            run_then_sleep(&mut k, b, 0);
            assert!(k.tasks[b.idx()].se.sched_delayed, "B blocked 1 us ahead: not eligible, delayed");
            assert_eq!(k.rqs[0].curr, Some(a));
            let w = k.try_to_wake_up(b, CpuId(0), Some(a), crate::core::WakeFlags::SYNC, 3 * US, &mut crate::core::Effects::default());
            assert!(!k.tasks[b.idx()].se.sched_delayed);
            assert_eq!(k.tasks[b.idx()].se.vruntime, base + US, "lag -0.5 us against the stale V: B stays in place");
            assert_eq!(k.tasks[a.idx()].se.vruntime, base + 3 * US, "A charged by the wakeup-preemption check");
            assert_eq!(k.avg_vruntime(CpuId(0)), base + 2 * US);
            assert!(!k.entity_eligible(CpuId(0), a), "A (+3 us) is past V (+2 us)");
            assert!(w.resched, "B preempts A");
            k.schedule(CpuId(0), SwitchReason::Preempt, 3 * US, &mut crate::core::Effects::default());
            assert_eq!(k.rqs[0].curr, Some(b));
            k.schedule(CpuId(0), SwitchReason::Block, 3 * US + r, &mut crate::core::Effects::default());
            assert_eq!(k.rqs[0].curr, Some(a));
            (k, b)
        };
        let (k, b) = scenario(US / 2);
        let b = &k.tasks[b.idx()].se;
        assert!(!b.on_rq && !b.sched_delayed, "B ran 0.5 us < its 2 us lead: eligible, dequeued");
        assert_eq!(b.vlag, 750, "vlag = V - vB = 2.25 us - 1.5 us");
        let (k, b) = scenario(5 * US / 2);
        assert!(k.tasks[b.idx()].se.on_rq && k.tasks[b.idx()].se.sched_delayed, "B ran 2.5 us > its 2 us lead: delayed");
    }

    // Issue 17 (memcached 2 workers x 2x8 connections on the 2-vCPU guest): one
    // wakeup taken from `schedlab run --machine local-guest.toml --kernel v6.12
    // --workload memcached --set threads=2,client_threads=2,connections=8`,
    // seed 1, CPU 0 at t = 44.063913 ms, checked by hand against v6.12
    // ttwu_runnable() -> enqueue_task_fair(ENQUEUE_DELAYED) ->
    // requeue_delayed_entity(), then check_preempt_wakeup_fair() ->
    // update_curr() -> pick_eevdf() (nice 0: vruntime advances at wall rate;
    // V = (vW + vC) / 2; eligible iff v <= V):
    //   the client C (memtier-0) blocked in epoll_wait at t0 = 44.054726 ms with
    //   vC = 23,662,197 against the worker W's vW = 23,655,440: V = 23,658,818,
    //   vC > V, not eligible: delayed. W is picked at t0 (set_next_entity():
    //   vlag = deadline = 24,823,965, protected).
    //   W serves one request and its reply wakes C at t1 = t0 + 9,187 ns.
    //   requeue: lag(C) = V - vC = 23,658,818 - 23,662,197 = -3,379 <= 0: no
    //   DELAY_ZERO re-placement, C stays at 23,662,197.
    //   update_curr(): vW = 23,655,440 + 9,187 = 23,664,627 (deadline not
    //   reached; PREEMPT_SHORT: equal slices, nothing). V = 23,663,412.
    //   pick_eevdf(): W is past V, not eligible, so RUN_TO_PARITY does not
    //   apply; C (<= V) is the eligible entity: C preempts W.
    // So W loses the CPU iff it ran more than C's lead e = vC - vW = 6,757 ns
    // since its pick: x = e keeps W eligible (v == V) and protected.
    #[test]
    fn v6_12_memcached_client_requeue_preempts_the_worker_that_ran_past_its_lead() {
        let (t0, vw, dw, vc, dc) = (44_054_726, 23_655_440, 24_823_965, 23_662_197, 25_145_548);
        let wake_after = |x: u64| {
            let mut k = one_cpu("v6.12");
            let ids = hand_queue(&mut k, &[(1024, vw, dw), (1024, vc, dc)]);
            let (w, c) = (ids[0], ids[1]);
            run_then_sleep(&mut k, c, t0);
            assert!(k.tasks[c.idx()].se.sched_delayed, "C blocked 6,757 ns ahead of W: not eligible, delayed");
            assert_eq!(k.rqs[0].curr, Some(w));
            assert_eq!(k.tasks[w.idx()].se.vlag, dw as i64, "set_next_entity() stashed W's deadline: protected");
            let r = k.try_to_wake_up(c, CpuId(0), Some(w), crate::core::WakeFlags::SYNC, t0 + x, &mut crate::core::Effects::default());
            assert_eq!(k.tasks[c.idx()].se.vruntime, vc, "negative lag: requeued in place");
            assert_eq!(k.tasks[w.idx()].se.vruntime, vw + x, "W charged by check_preempt_wakeup_fair()'s update_curr()");
            (k, w, r.resched)
        };
        let (k, w, resched) = wake_after(9_187);
        assert_eq!(k.avg_vruntime(CpuId(0)), 23_663_412);
        assert!(!k.entity_eligible(CpuId(0), w), "W (23,664,627) is past V (23,663,412)");
        assert!(resched, "C preempts W");
        let (k, w, resched) = wake_after(6_757);
        assert!(k.entity_eligible(CpuId(0), w), "vW == vC == V");
        assert!(!resched, "W ran exactly C's lead: eligible and protected (RUN_TO_PARITY)");
        let (_, _, resched) = wake_after(6_758);
        assert!(resched, "one ns past C's lead: W is not eligible");
    }

    // ------------------------------------------------------------ v6.18 and stable-6.18.44

    /// A kernel on `ncpus` CPUs of one LLC, with `patch` applied.
    fn kernel_on(kernel: &str, patch: Option<&str>, ncpus: u32) -> Kernel {
        let cpus = (0..ncpus).map(|c| CpuInfo { core: c, cluster: 0, llc: 0, node: 0, package: 0 }).collect();
        let t = CpuTopology::new(cpus, vec![vec![10]]).unwrap();
        let mut p = profile(kernel).unwrap();
        if let Some(x) = patch {
            p.apply_patches(x).unwrap();
        }
        Kernel::new(&t, p)
    }

    /// `a` becomes curr of CPU 0 at time 0 (set_next_entity(): slice protection set).
    fn make_curr(k: &mut Kernel, a: TaskId) {
        k.set_next_entity(CpuId(0).into(), a.into(), 0);
        k.rqs[0].curr = Some(a);
    }

    // 2ae891b82695 (v6.15): base slice 0.70 ms normalized, 1.4 ms on 2 CPUs
    // (factor 1 + ilog2(2)); v6.12.0 has 0.75 ms, 1.5 ms.
    #[test]
    fn v6_18_base_slice_is_1_4_ms_on_2_cpus() {
        assert_eq!(kernel_on("v6.18", None, 2).tun.base_slice_ns, 1_400_000);
        assert_eq!(kernel_on("v6.12", None, 2).tun.base_slice_ns, 1_500_000);
        assert_eq!(kernel_on("v6.18", Some("stable-6.18.44"), 2).tun.base_slice_ns, 1_400_000);
    }

    // update_entity_lag(): v6.6 - 6.18.16 clamp the lag at max(2 * slice,
    // TICK_NSEC) = max(2.8, 4.0) = 4.0 ms on 2 CPUs at HZ 250; 6.18.17+
    // (6e3c0a4e1ad1) at the largest slice on the cfs_rq + TICK_NSEC = 1.4 +
    // 4.0 = 5.4 ms. S sleeps 13.33 ms behind V (V = (0 + 20 + 20) / 3 ms).
    #[test]
    fn stable_6_18_17_lag_clamp_is_max_slice_plus_tick() {
        let sleep_lag = |patch: Option<&str>| {
            let mut k = kernel_on("v6.18", patch, 2);
            let ids = hand_queue(&mut k, &[(1024, 0, 1_400_000), (1024, 20 * MS, 21 * MS), (1024, 20 * MS, 21 * MS)]);
            assert_eq!(k.lag_limit(CpuId(0).into(), ids[0].into(), 1024), if patch.is_some() { 5_400_000 } else { 4 * MS });
            run_then_sleep(&mut k, ids[0], 0);
            assert!(!k.tasks[ids[0].idx()].se.on_rq, "eligible: dequeued at once");
            k.tasks[ids[0].idx()].se.vlag
        };
        assert_eq!(sleep_lag(None), 4_000_000);
        assert_eq!(sleep_lag(Some("stable-6.18.44")), 5_400_000);
        // The largest slice queued, not the entity's own: a 3 ms slice raises it to 7 ms.
        let mut k = kernel_on("v6.18", Some("stable-6.18.44"), 2);
        let ids = hand_queue(&mut k, &[(1024, 0, MS), (1024, 0, MS)]);
        k.tasks[ids[1].idx()].se.slice = 3 * MS;
        assert_eq!(k.lag_limit(CpuId(0).into(), ids[0].into(), 1024), 7 * MS);
        assert_eq!(k.lag_limit(CpuId(0).into(), ids[0].into(), 2048), 7 * MS / 2, "in virtual time");
    }

    // 2a77e4be12cb (v6.14) PICK_BUDDY: pick_next_entity() honours an eligible
    // cfs_rq->next with NEXT_BUDDY off; v6.12.0 only under NEXT_BUDDY.
    #[test]
    fn v6_18_pick_buddy_without_next_buddy() {
        for (kernel, want) in [("v6.12", 1), ("v6.18", 0)] {
            let mut k = one_cpu(kernel);
            let ids = hand_queue(&mut k, &[(1024, 0, 5 * MS), (1024, 0, MS)]);
            k.rqs[0].cfs.next = Some(ids[0].into());
            assert!(!k.feats.has(NEXT_BUDDY));
            assert_eq!(k.pick_next_entity_eevdf(CpuId(0).into()), Some(ids[want].into()), "{kernel}");
        }
    }

    // v6.17 set_protect_slice() (052c3d87c82e) and update_curr()
    // (0b9ca2dcabc3): with a shorter slice queued, curr's protection ends
    // vruntime + that slice after the pick, and update_curr() reschedules
    // then although curr is eligible and before its deadline. v6.12 protects
    // to the deadline and reschedules an unprotected curr only if ineligible.
    #[test]
    fn v6_18_protection_bound_by_the_smallest_queued_slice() {
        for (kernel, resched) in [("v6.12", false), ("v6.18", true)] {
            let mut k = one_cpu(kernel);
            let ids = hand_queue(&mut k, &[(1024, 0, 700_000), (1024, MS, MS + 700_000)]);
            k.tasks[ids[1].idx()].se.slice = 100_000;
            make_curr(&mut k, ids[0]);
            if kernel == "v6.18" {
                assert_eq!(k.tasks[ids[0].idx()].se.vlag, 100_000, "vprot = vruntime + 0.1 ms");
            }
            k.update_curr(CpuId(0).into(), 200_000);
            assert!(k.entity_eligible(CpuId(0), ids[0]), "A (0.2 ms) <= V (0.6 ms)");
            assert_eq!(k.rqs[0].need_resched, resched, "{kernel}");
        }
    }

    // 74eec63661d4 (v6.17) NO_RUN_TO_PARITY: curr is still protected for the
    // normalized base slice (0.7 ms), here half of its 1.4 ms request; v6.12
    // without RUN_TO_PARITY does not protect at all.
    #[test]
    fn v6_18_no_run_to_parity_protects_0_7_ms() {
        for (kernel, want) in [("v6.12", 1), ("v6.18", 0)] {
            let mut k = kernel_on(kernel, None, 2);
            k.feats.set(RUN_TO_PARITY, false);
            let s = k.tun.base_slice_ns;
            let ids = hand_queue(&mut k, &[(1024, 0, s), (1024, 500_000, 900_000), (1024, MS, 3 * MS)]);
            make_curr(&mut k, ids[0]);
            k.update_curr(CpuId(0).into(), 300_000);
            assert!(k.entity_eligible(CpuId(0), ids[0]) && k.entity_eligible(CpuId(0), ids[1]), "V = 0.6 ms");
            assert_eq!(k.pick_eevdf(CpuId(0)), Some(ids[want].into()), "{kernel}");
        }
        let mut k = kernel_on("v6.18", None, 2);
        k.feats.set(RUN_TO_PARITY, false);
        let ids = hand_queue(&mut k, &[(1024, 0, 1_400_000), (1024, MS, 3 * MS)]);
        make_curr(&mut k, ids[0]);
        assert_eq!(k.tasks[ids[0].idx()].se.vlag, 700_000);
    }

    // v6.17 check_preempt_wakeup_fair() (9de74a9850b9, 3a0baa8e6c57): a
    // shorter-slice wakee makes the pick ignore curr's protection, and the
    // protection is cancelled only if the wakee wins; when it loses, curr's
    // protection is tightened to vruntime + the smallest slice. v6.12 cancels
    // it as soon as the eligible wakee has an earlier deadline, win or lose.
    // A (curr, v 0, deadline 0.7 ms), X (deadline 0.05 ms), W (wakee, slice
    // 0.1 ms, deadline 0.1 ms), all at V = 0: X is the pick.
    #[test]
    fn v6_18_shorter_slice_wakee_cancels_only_when_it_wins() {
        for kernel in ["v6.12", "v6.18"] {
            let mut k = one_cpu(kernel);
            let ids = hand_queue(&mut k, &[(1024, 0, 700_000), (1024, 0, 50_000), (1024, 0, 100_000)]);
            let (a, w) = (ids[0], ids[2]);
            make_curr(&mut k, a);
            k.tasks[w.idx()].se.slice = 100_000;
            k.check_preempt_wakeup(CpuId(0), w, false, 0);
            assert!(!k.rqs[0].need_resched, "{kernel}: X is the pick, not W");
            let se = &k.tasks[a.idx()].se;
            if kernel == "v6.12" {
                assert!(!k.protect_slice(a.into()), "v6.12: cancelled although W lost");
                assert_eq!(se.vlag, 700_001);
            } else {
                assert!(k.protect_slice(a.into()), "v6.18: kept");
                assert_eq!(se.vlag, 100_000, "tightened to vruntime + 0.1 ms");
            }
        }
    }

    // f553741ac8c0 (v6.15): a non-idle wakee preempting a SCHED_IDLE curr
    // also cancels its slice protection.
    #[test]
    fn v6_18_idle_curr_loses_its_protection() {
        for (kernel, kept) in [("v6.12", true), ("v6.18", false)] {
            let mut k = one_cpu(kernel);
            let ids = hand_queue(&mut k, &[(1024, 0, 700_000), (1024, 0, 700_000)]);
            k.tasks[ids[0].idx()].policy = Policy::Idle;
            make_curr(&mut k, ids[0]);
            k.check_preempt_wakeup(CpuId(0), ids[1], false, 0);
            assert!(k.rqs[0].need_resched);
            assert_eq!(k.protect_slice(ids[0].into()), kept, "{kernel}");
        }
    }

    // The wakeup check of 6.18.33 (ac8e69e69363): the pick goes through
    // pick_next_entity(), which completes the dequeue of a delayed sleeper it
    // returns (lag clipped to 0 by DELAY_ZERO) and picks again. A is curr and
    // ineligible (10 ms), D a delayed sleeper (2 ms, deadline 2.5 ms), W the
    // wakee (4 ms, deadline 4.7 ms); V = 5.33 ms: D and W are eligible and D's
    // deadline is the earliest. v6.18.0 picks D, "somebody else": no
    // preemption. stable-6.18.44 dequeues D (lag +3.33 ms clipped to 0); V =
    // 7 ms, A is still ineligible and W is the pick: W preempts A.
    #[test]
    fn stable_6_18_33_wakeup_pick_purges_delayed_sleepers() {
        let run = |patch: Option<&str>| {
            let mut k = kernel_on("v6.18", patch, 1);
            let ids = hand_queue(&mut k, &[(1024, 10 * MS, 10_700_000), (1024, 2 * MS, 2_500_000), (1024, 4 * MS, 4_700_000)]);
            let (a, d, w) = (ids[0], ids[1], ids[2]);
            k.tasks[d.idx()].state = TaskState::Sleeping;
            k.mark_delayed(d);
            make_curr(&mut k, a);
            assert_eq!(k.pick_eevdf(CpuId(0)), Some(d.into()), "the delayed sleeper is the EEVDF pick");
            k.check_preempt_wakeup(CpuId(0), w, false, 0);
            (k, d)
        };
        let (k, d) = run(None);
        assert!(!k.rqs[0].need_resched, "v6.18.0: D is the pick, W does not preempt");
        assert!(k.tasks[d.idx()].se.on_rq && k.tasks[d.idx()].se.sched_delayed);
        let (k, d) = run(Some("stable-6.18.44"));
        assert!(k.rqs[0].need_resched, "6.18.44: D dropped, W is the pick");
        let se = &k.tasks[d.idx()].se;
        assert!(!se.on_rq && !se.sched_delayed, "D's delayed dequeue completed");
        assert_eq!(se.vlag, 0, "DELAY_ZERO: +3.33 ms clipped to 0");
        assert_eq!((k.rqs[0].cfs.nr_running, k.rqs[0].cfs.h_nr_delayed), (2, 0));
    }

    // 6.18.33 (e837456fdca8): no preemption by a WF_FORK wakeup or a wakee
    // that is still delayed, before any pick; v6.18.0 preempts when the
    // wakee is the pick. A is curr and ineligible, W eligible.
    #[test]
    fn stable_6_18_33_fork_and_delayed_wakees_do_not_preempt() {
        for (patch, preempts) in [(None, true), (Some("stable-6.18.44"), false)] {
            for delayed in [false, true] {
                let mut k = kernel_on("v6.18", patch, 1);
                let ids = hand_queue(&mut k, &[(1024, 10 * MS, 10_700_000), (1024, 4 * MS, 4_700_000)]);
                make_curr(&mut k, ids[0]);
                if delayed {
                    k.tasks[ids[1].idx()].state = TaskState::Sleeping;
                    k.mark_delayed(ids[1]);
                }
                k.check_preempt_wakeup(CpuId(0), ids[1], !delayed, 0);
                assert_eq!(k.rqs[0].need_resched, preempts, "{patch:?} delayed {delayed}");
            }
        }
    }

    // 6.18.33 (e837456fdca8): PICK_BUDDY is inside __pick_eevdf(), so the
    // wakeup check sees an eligible cfs_rq->next. A curr and ineligible, X
    // (next buddy, deadline 6 ms) and W (wakee, deadline 4.7 ms) eligible:
    // v6.18.0 picks W and preempts; 6.18.44 picks X and does not.
    #[test]
    fn stable_6_18_33_wakeup_check_sees_the_next_buddy() {
        for (patch, preempts) in [(None, true), (Some("stable-6.18.44"), false)] {
            let mut k = kernel_on("v6.18", patch, 1);
            let ids = hand_queue(&mut k, &[(1024, 10 * MS, 10_700_000), (1024, 3 * MS, 6 * MS), (1024, 4 * MS, 4_700_000)]);
            make_curr(&mut k, ids[0]);
            k.rqs[0].cfs.next = Some(ids[1].into());
            k.check_preempt_wakeup(CpuId(0), ids[2], false, 0);
            assert_eq!(k.rqs[0].need_resched, preempts, "{patch:?}");
        }
    }

    // 6.18.33: update_protect_slice() after every non-preempting wakeup, not
    // only in PREEMPT_SHORT mode. A curr (protected to its 0.7 ms deadline),
    // X queued with a 0.1 ms slice (after A's pick), W an equal-slice wakee
    // that loses: 6.18.44 tightens A's vprot to vruntime + 0.1 ms.
    #[test]
    fn stable_6_18_33_tightens_protection_after_any_wakeup() {
        for (patch, vprot) in [(None, 700_000), (Some("stable-6.18.44"), 100_000)] {
            let mut k = kernel_on("v6.18", patch, 1);
            let ids = hand_queue(&mut k, &[(1024, 0, 700_000), (1024, 0, 800_000), (1024, 0, 900_000)]);
            make_curr(&mut k, ids[0]);
            k.tasks[ids[1].idx()].se.slice = 100_000;
            k.check_preempt_wakeup(CpuId(0), ids[2], false, 0);
            assert!(!k.rqs[0].need_resched);
            assert_eq!(k.tasks[ids[0].idx()].se.vlag, vprot, "{patch:?}");
        }
    }

    // `--explain` names the clause of every wakeup check: the hand-built
    // situations above, each counted once under its clause.
    #[test]
    fn explain_names_the_clause_of_each_wakeup_check() {
        let last = |k: &Kernel| -> Preempt {
            let c = &k.explain.as_ref().unwrap().counts.preempt;
            assert_eq!(c.iter().sum::<u64>(), 1, "one check counted: {c:?}");
            Preempt::ALL[c.iter().position(|&n| n == 1).unwrap()]
        };
        // A curr and past V (10 ms), W eligible (4 ms): W preempts.
        let mut k = kernel_on("v6.18", None, 1);
        k.enable_explain(false);
        let ids = hand_queue(&mut k, &[(1024, 10 * MS, 10_700_000), (1024, 4 * MS, 4_700_000)]);
        make_curr(&mut k, ids[0]);
        k.check_preempt_wakeup(CpuId(0), ids[1], false, 0);
        assert!(k.rqs[0].need_resched);
        assert_eq!(last(&k), Preempt::CurrPastV);
        // The same wakee still delayed, 6.18.33+: no check.
        let mut k = kernel_on("v6.18", Some("stable-6.18.44"), 1);
        k.enable_explain(false);
        let ids = hand_queue(&mut k, &[(1024, 10 * MS, 10_700_000), (1024, 4 * MS, 4_700_000)]);
        make_curr(&mut k, ids[0]);
        k.tasks[ids[1].idx()].state = TaskState::Sleeping;
        k.mark_delayed(ids[1]);
        k.check_preempt_wakeup(CpuId(0), ids[1], false, 0);
        assert_eq!(last(&k), Preempt::ForkOrDelayed);
        // A curr at V, inside its protected slice: kept.
        let mut k = kernel_on("v6.18", Some("stable-6.18.44"), 1);
        k.enable_explain(false);
        let ids = hand_queue(&mut k, &[(1024, 0, 700_000), (1024, 0, 800_000), (1024, 0, 900_000)]);
        make_curr(&mut k, ids[0]);
        k.check_preempt_wakeup(CpuId(0), ids[2], false, 0);
        assert!(!k.rqs[0].need_resched);
        assert_eq!(last(&k), Preempt::Protected);
        // A shorter-slice wakee that loses to X's earlier deadline.
        let mut k = one_cpu("v6.18");
        k.enable_explain(false);
        let ids = hand_queue(&mut k, &[(1024, 0, 700_000), (1024, 0, 50_000), (1024, 0, 100_000)]);
        make_curr(&mut k, ids[0]);
        k.tasks[ids[2].idx()].se.slice = 100_000;
        k.check_preempt_wakeup(CpuId(0), ids[2], false, 0);
        assert_eq!(last(&k), Preempt::OtherFirst);
        // CFS: 0.5 ms behind is within the granularity, 2 ms is not; a third
        // wakeup finds need_resched set.
        let mut k = one_cpu("v3.10");
        k.enable_explain(false);
        let ids = hand_queue(&mut k, &[(1024, 10 * MS, 0), (1024, 9 * MS + MS / 2, 0), (1024, 8 * MS, 0)]);
        k.set_next_entity(CpuId(0).into(), ids[0].into(), 0);
        k.rqs[0].curr = Some(ids[0]);
        k.check_preempt_wakeup(CpuId(0), ids[1], false, 0);
        assert_eq!(last(&k), Preempt::CfsKeep);
        k.explain.as_mut().unwrap().counts.preempt = Default::default();
        k.check_preempt_wakeup(CpuId(0), ids[2], false, 0);
        assert_eq!(last(&k), Preempt::CfsGran);
        k.explain.as_mut().unwrap().counts.preempt = Default::default();
        k.check_preempt_wakeup(CpuId(0), ids[1], false, 0);
        assert_eq!(last(&k), Preempt::Pending);
    }

    // `--explain`'s sleep count (DELAY_DEQUEUE): a sleeper past V stays
    // queued as delayed, one before V is dequeued.
    #[test]
    fn explain_counts_delayed_and_dequeued_sleeps() {
        let mut k = kernel_on("v6.18", None, 1);
        k.enable_explain(false);
        let ids = hand_queue(&mut k, &[(1024, 10 * MS, 10_700_000), (1024, 4 * MS, 4_700_000)]);
        let q = k.cfs_of(Ent::task(ids[0]));
        assert!(!k.dequeue_entity(q, Ent::task(ids[0]), DEQUEUE_SLEEP, 0), "past V: delayed");
        assert!(k.tasks[ids[0].idx()].se.sched_delayed);
        assert!(k.dequeue_entity(q, Ent::task(ids[1]), DEQUEUE_SLEEP, 0), "before V: dequeued");
        assert_eq!(k.explain.as_ref().unwrap().counts.sleeps, [1, 1]);
    }

    // pick_next_entity() (<= v6.5): CFS picks the leftmost (smallest vruntime) entity; a next buddy
    // wins only if it is within wakeup_gran of the leftmost.
    #[test]
    fn cfs_picks_leftmost_and_honours_close_buddy() {
        let mut k = one_cpu("v3.10");
        let ids = hand_queue(&mut k, &[(1024, 5 * MS, 0), (1024, 2 * MS, 0), (1024, 2 * MS + MS / 2, 0)]);
        assert_eq!(k.pick_next_entity_cfs(CpuId(0).into(), None).and_then(|e| e.task_id()), Some(ids[1]));
        // wakeup_gran on 1 CPU = 1ms (factor 1): buddy 0.5ms right of leftmost wins...
        k.rqs[0].cfs.next = Some(ids[2].into());
        assert_eq!(k.pick_next_entity_cfs(CpuId(0).into(), None).and_then(|e| e.task_id()), Some(ids[2]));
        assert_eq!(k.rqs[0].cfs.next, None, "picked buddy is cleared");
        // ...one 3ms right does not.
        k.rqs[0].cfs.next = Some(ids[0].into());
        assert_eq!(k.pick_next_entity_cfs(CpuId(0).into(), None).and_then(|e| e.task_id()), Some(ids[1]));
    }

    // check_preempt_tick() (<= v6.5): curr is preempted once it ran longer than
    // its ideal slice (period * w / load), not before min_granularity.
    #[test]
    fn cfs_tick_preemption_after_ideal_slice() {
        let mut k = one_cpu("v3.10");
        let ids = hand_queue(&mut k, &[(1024, 0, 0), (1024, 0, 0)]);
        k.set_next_entity(CpuId(0).into(), ids[0].into(), 0);
        k.rqs[0].curr = Some(ids[0]);
        // 1 CPU: latency 6ms, 2 tasks -> ideal slice 3ms.
        assert_eq!(k.sched_slice(ids[0].into()), 3 * MS);
        k.task_tick_fair(CpuId(0), MS / 2);
        assert!(!k.rqs[0].need_resched, "below min_granularity: no preemption");
        k.task_tick_fair(CpuId(0), 2 * MS);
        // ran 2ms, vruntime 2ms ahead of the other (0) but < ideal 3ms: no preemption
        assert!(!k.rqs[0].need_resched);
        k.task_tick_fair(CpuId(0), 3 * MS + 1);
        assert!(k.rqs[0].need_resched, "ran past its ideal slice");
    }

    // check_preempt_wakeup() (<= v6.5): CFS wakeup preemption needs curr.v - wakee.v > wakeup_gran(wakee).
    #[test]
    fn cfs_wakeup_preemption_granularity() {
        let mut k = one_cpu("v3.10");
        let ids = hand_queue(&mut k, &[(1024, 10 * MS, 0), (1024, 9 * MS + MS / 2, 0), (1024, 8 * MS, 0)]);
        k.set_next_entity(CpuId(0).into(), ids[0].into(), 0);
        k.rqs[0].curr = Some(ids[0]);
        k.check_preempt_wakeup(CpuId(0), ids[1], false, 0);
        assert!(!k.rqs[0].need_resched, "0.5ms behind < 1ms gran");
        k.check_preempt_wakeup(CpuId(0), ids[2], false, 0);
        assert!(k.rqs[0].need_resched, "2ms behind > 1ms gran");
        assert_eq!(k.rqs[0].cfs.next, Some(ids[2].into()), "the preempting wakee becomes next buddy");
    }

    // update_deadline() (v6.6+): EEVDF has no tick preemption check; the request renews at the
    // deadline and reschedules when others are queued.
    #[test]
    fn eevdf_tick_reschedules_at_deadline() {
        let mut k = one_cpu("v6.6");
        let ids = hand_queue(&mut k, &[(1024, 0, 750_000), (1024, 0, 750_000)]);
        k.set_next_entity(CpuId(0).into(), ids[0].into(), 0);
        k.rqs[0].curr = Some(ids[0]);
        k.task_tick_fair(CpuId(0), 500_000);
        assert!(!k.rqs[0].need_resched);
        k.task_tick_fair(CpuId(0), 800_000);
        assert!(k.rqs[0].need_resched, "vruntime passed the deadline");
        let se = &k.tasks[ids[0].idx()].se;
        assert_eq!(se.deadline, se.vruntime + k.tun.base_slice_ns, "new request of one base slice");
    }
}
