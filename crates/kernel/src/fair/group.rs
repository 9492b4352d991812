//! Task groups (the cpu cgroup controller, CONFIG_FAIR_GROUP_SCHED): group
//! creation, `calc_group_shares()`, `reweight_entity()`, `tg->load_avg`, and
//! the hierarchical load `task_h_load()` (spec §6.1, §7.1).

use crate::core::Kernel;
use crate::fair::vdiff;
use crate::sched::{CfsId, CfsRq, Ent, SchedEntity, TaskGroup, TaskId, NICE_0_LOAD};

/// `MIN_SHARES`: the smallest weight a group entity can get.
pub const MIN_SHARES: u64 = 2;
/// `NSEC_PER_MSEC`: the v6.7+ minimum interval between two updates of
/// `tg->load_avg` from one cfs_rq (1528c661c24b).
pub const TG_LOAD_RATELIMIT_NS: u64 = 1_000_000;
/// `MAX_SHARES` (cpu.shares upper bound, unscaled).
pub const MAX_SHARES: u64 = 1 << 18;

impl Kernel {
    /// Create task group `name` under `parent` (0 = the root group) with
    /// `shares` (`sched_create_group()` + `sched_group_set_shares()`): one
    /// cfs_rq and one group entity per CPU (`init_tg_cfs_entry()`). Groups must
    /// be created before tasks are put in them. Returns the group id.
    pub fn create_group(&mut self, name: &str, parent: u32, shares: u64) -> Result<u32, String> {
        if parent as usize >= self.tgs.len() {
            return Err(format!("task group {name:?}: parent group {parent} does not exist"));
        }
        let shares = shares.clamp(MIN_SHARES, MAX_SHARES);
        let id = self.tgs.len() as u32;
        let depth = if parent == 0 { 0 } else { self.tgs[parent as usize].depth + 1 };
        self.tgs.push(TaskGroup { name: name.to_string(), parent, shares, depth, load_avg: 0 });
        for _ in 0..self.nr_cpus() {
            self.grq.push(CfsRq::default());
            self.grq_tg_update.push(None);
            // init_tg_cfs_entry(): the entity starts at NICE_0_LOAD; calc_group_shares sets it on enqueue.
            self.gse.push(SchedEntity { weight: NICE_0_LOAD, depth, slice: self.tun.base_slice_ns, ..Default::default() });
        }
        Ok(id)
    }

    /// The task group a group cfs_rq slot belongs to (`cfs_rq->tg`; slot
    /// `(group - 1) * nr_cpus + cpu`).
    #[inline]
    fn group_of_slot(&self, slot: usize) -> usize {
        slot / self.nr_cpus() + 1
    }

    /// `update_tg_load_avg()`: publish this cfs_rq's load into `tg->load_avg`
    /// when it moved by more than 1/64 of what was published; from v6.7
    /// (1528c661c24b "sched/fair: Ratelimit update to tg->load_avg") at most
    /// once per ms per cfs_rq, the clock read before the filter. The atomic
    /// add is a write of the group's shared line (`Effects::tg_lines`).
    // FIDELITY(F-023): the v6.7+ rate limit reads the rq clock where the kernel reads sched_clock_cpu().
    pub(crate) fn update_tg_load_avg(&mut self, q: CfsId, now: u64) {
        let Some(slot) = q.slot() else {
            return;
        };
        let g = self.group_of_slot(slot);
        let limit = self.profile.tg_load_ratelimit();
        if limit && self.grq_tg_update[slot].is_some_and(|t| now.saturating_sub(t) < TG_LOAD_RATELIMIT_NS) {
            return;
        }
        let cfs = &mut self.grq[slot];
        let delta = cfs.avg.load_avg as i64 - cfs.tg_load_avg_contrib;
        if delta.abs() > cfs.tg_load_avg_contrib / 64 {
            cfs.tg_load_avg_contrib = cfs.avg.load_avg as i64;
            self.tgs[g].load_avg += delta;
            if limit {
                self.grq_tg_update[slot] = Some(now);
            }
            self.tg_lines.push((g as u32, true));
        }
    }

    /// `calc_group_shares()` (spec §6.1): the group's shares split by the
    /// fraction of the group's load on this CPU, clamped to [MIN_SHARES, shares].
    pub(crate) fn calc_group_shares(&self, gq: CfsId) -> u64 {
        let slot = gq.slot().expect("a group cfs_rq");
        let tg = &self.tgs[self.group_of_slot(slot)];
        let cfs = self.cfs(gq);
        let load = cfs.load_weight.max(cfs.avg.load_avg) as i64;
        let tg_weight = tg.load_avg - cfs.tg_load_avg_contrib + load;
        let mut shares = tg.shares as i64 * load;
        if tg_weight > 0 {
            shares /= tg_weight;
        }
        (shares.max(0) as u64).clamp(MIN_SHARES, tg.shares)
    }

    /// `update_cfs_group()`: re-derive a group entity's weight from its cfs_rq.
    #[inline(always)]
    pub(crate) fn update_cfs_group(&mut self, e: Ent, now: u64) {
        // A task entity owns no cfs_rq: nothing to do, without a call.
        if let Some(gq) = self.group_cfs_rq(e) {
            // v6.13+ (66951e4860d3 "Fix update_cfs_group() vs DELAY_DEQUEUE"):
            // an empty group keeps its weight, so that a delayed group entity
            // burns off its lag at the weight it had.
            if self.profile.empty_group_keeps_weight() && self.cfs(gq).load_weight == 0 {
                return;
            }
            self.update_group_shares(e, gq, now);
        }
    }

    fn update_group_shares(&mut self, e: Ent, gq: CfsId, now: u64) {
        let shares = self.calc_group_shares(gq);
        // calc_group_shares() read tg->load_avg.
        let g = self.group_of_slot(gq.slot().expect("a group cfs_rq"));
        self.tg_lines.push((g as u32, false));
        if self.se(e).weight != shares {
            let q = self.cfs_of(e);
            self.reweight_entity(q, e, shares, now);
        }
    }

    /// `reweight_entity()`: change an entity's weight in place. EEVDF (v6.6+,
    /// `reweight_eevdf()`): lag and relative deadline scale by old/new weight
    /// around V, so the entity keeps its place in fairness terms. CFS: the
    /// vruntime is kept.
    pub(crate) fn reweight_entity(&mut self, q: CfsId, e: Ent, weight: u64, now: u64) {
        let on_rq = self.se(e).on_rq;
        let is_curr = self.cfs(q).curr == Some(e);
        let old = self.se(e).weight;
        // entity_lag()'s clamp, taken while `e` is still queued (v6.6+).
        let limit = if self.eevdf() { self.lag_limit(q, e, old) as i64 } else { 0 };
        let mut avruntime = 0;
        if on_rq {
            self.update_curr(q, now);
            avruntime = self.avg_vruntime(q);
            if !is_curr {
                self.dequeue_tree(q, e);
            }
            self.cfs_mut(q).load_weight -= old;
        }
        if self.eevdf() {
            let se = self.se_mut(e);
            if on_rq {
                if se.vruntime != avruntime {
                    // entity_lag(): clamped like update_entity_lag().
                    let vlag = vdiff(avruntime, se.vruntime).clamp(-limit, limit);
                    let vlag = (vlag as i128 * old as i128 / weight as i128) as i64;
                    se.vruntime = avruntime.wrapping_sub(vlag as u64);
                }
                let vslice = vdiff(se.deadline, avruntime);
                let vslice = (vslice as i128 * old as i128 / weight as i128) as i64;
                se.deadline = avruntime.wrapping_add(vslice as u64);
            } else {
                se.vlag = (se.vlag as i128 * old as i128 / weight as i128) as i64;
            }
        }
        self.se_mut(e).weight = weight;
        if on_rq {
            self.cfs_mut(q).load_weight += weight;
            if !is_curr {
                self.enqueue_tree(q, e);
            }
            self.update_min_vruntime(q);
        }
    }

    /// `task_h_load()`: the task's share of the root cfs_rq's load, through the
    /// group entities above it (`update_cfs_rq_h_load()`). A task of the root
    /// group contributes its own load_avg.
    pub fn task_h_load(&self, p: TaskId) -> u64 {
        let e = Ent::task(p);
        let q = self.cfs_of(e);
        let load = self.tasks[p.idx()].se.avg.load_avg;
        if q.root_cpu().is_some() {
            return load;
        }
        let h = self.cfs_h_load(q);
        (h as u128 * load as u128 / (self.cfs(q).avg.load_avg as u128 + 1)) as u64
    }

    /// `cfs_rq->h_load`: the root's load_avg, scaled down through each group entity.
    fn cfs_h_load(&self, q: CfsId) -> u64 {
        let Some(slot) = q.slot() else {
            return self.cfs(q).avg.load_avg;
        };
        let ge = Ent::group(slot);
        let pq = self.cfs_of(ge);
        let ph = self.cfs_h_load(pq);
        (ph as u128 * self.se(ge).avg.load_avg as u128 / (self.cfs(pq).avg.load_avg as u128 + 1)) as u64
    }

    /// Task groups, the root first.
    pub fn groups(&self) -> &[TaskGroup] {
        &self.tgs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::{SwitchReason, TaskParams, WakeFlags};
    use crate::profile::profile;
    use crate::sched::TaskState;
    use schedlab_topology::{CpuId, CpuInfo, CpuTopology};

    const MS: u64 = 1_000_000;
    const C0: CpuId = CpuId(0);

    fn cpus(n: usize, kernel: &str) -> Kernel {
        let infos = (0..n).map(|c| CpuInfo { core: c as u32, cluster: 0, llc: 0, node: 0, package: 0 }).collect();
        let t = CpuTopology::new(infos, vec![vec![10]]).unwrap();
        Kernel::new(&t, profile(kernel).unwrap())
    }

    /// Two groups A (id 1) and B (id 2) under the root; tasks a0, a1 in A and
    /// b0 in B, all runnable on CPU 0, nothing running yet.
    fn two_groups(kernel: &str) -> (Kernel, [TaskId; 3]) {
        let mut k = cpus(1, kernel);
        let a = k.create_group("A", 0, 1024).unwrap();
        let b = k.create_group("B", 0, 1024).unwrap();
        let mut ids = [TaskId(0); 3];
        for (i, g) in [a, a, b].into_iter().enumerate() {
            let p = k.sched_fork(&TaskParams { group: g, ..Default::default() }, None, C0, 0);
            k.wake_up_new_task(p, C0, 0, &mut crate::core::Effects::default());
            ids[i] = p;
        }
        (k, ids)
    }

    /// Move a queued (not running) entity to vruntime `v`, deadline `d`,
    /// keeping the cfs_rq's EEVDF sums consistent.
    fn set_v(k: &mut Kernel, e: Ent, v: u64, d: u64) {
        let q = k.cfs_of(e);
        k.dequeue_tree(q, e);
        k.se_mut(e).vruntime = v;
        k.se_mut(e).deadline = d;
        k.enqueue_tree(q, e);
    }

    fn group_se(k: &Kernel, g: u32) -> Ent {
        Ent::group(k.tg_cfs(g, C0).slot().unwrap())
    }

    // spec §7.1: the root cfs_rq holds group entities; the pick descends into
    // the group whose entity wins at the root, then picks inside it. The task
    // with the smallest vruntime overall does not matter across groups.
    #[test]
    fn cfs_pick_descends_through_group_entities() {
        let (mut k, [a0, a1, b0]) = two_groups("v3.10");
        assert_eq!(k.rqs[0].cfs.nr_running, 2, "root holds the two group entities");
        assert_eq!(k.rqs[0].nr_running(), 3, "rq->nr_running counts tasks (h_nr_running)");
        let (ga, gb) = (group_se(&k, 1), group_se(&k, 2));
        let min = k.rqs[0].cfs.min_vruntime;
        set_v(&mut k, ga, min + 5 * MS, 0);
        set_v(&mut k, gb, min + MS, 0);
        set_v(&mut k, Ent::task(a0), 0, 0); // tiny, but inside the losing group
        k.schedule(C0, SwitchReason::Preempt, MS, &mut crate::core::Effects::default());
        assert_eq!(k.rqs[0].curr, Some(b0));
        assert_eq!(k.rqs[0].cfs.curr, Some(gb), "the group entity is curr at the root");
        // Now A's entity is leftmost: the next pick goes into A and takes its leftmost task.
        set_v(&mut k, ga, 0, 0);
        let av0 = k.se(Ent::task(a0)).vruntime;
        set_v(&mut k, Ent::task(a1), av0 + MS, 0);
        k.rqs[0].need_resched = true;
        k.schedule(C0, SwitchReason::Preempt, 2 * MS, &mut crate::core::Effects::default());
        assert_eq!(k.rqs[0].curr, Some(a0));
    }

    // spec §7.2 + §7.1: EEVDF picks among the root's entities by eligibility
    // and deadline, then inside the group.
    #[test]
    fn eevdf_pick_descends_by_eligible_deadline() {
        let (mut k, [a0, _a1, b0]) = two_groups("v6.6");
        let (ga, gb) = (group_se(&k, 1), group_se(&k, 2));
        let min = k.rqs[0].cfs.min_vruntime;
        // Both eligible (equal vruntime); B's entity has the earlier deadline.
        set_v(&mut k, ga, min, min + 3 * MS);
        set_v(&mut k, gb, min, min + MS);
        k.schedule(C0, SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
        assert_eq!(k.rqs[0].curr, Some(b0));
        // An ineligible entity (vruntime right of V) is skipped despite its earlier deadline.
        let mut k = two_groups("v6.6").0;
        let (ga, gb) = (group_se(&k, 1), group_se(&k, 2));
        let min = k.rqs[0].cfs.min_vruntime;
        set_v(&mut k, ga, min, min + 9 * MS);
        set_v(&mut k, gb, min + 4 * MS, min + 5 * MS);
        assert!(!k.entity_eligible(C0, gb));
        k.schedule(C0, SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
        assert_eq!(k.tasks[a0.idx()].group, 1);
        assert_eq!(k.tasks[k.rqs[0].curr.unwrap().idx()].group, 1);
    }

    // update_tg_load_avg(): every change past 1/64 is published up to v6.6;
    // from v6.7 (1528c661c24b) at most once per ms per cfs_rq, the first one
    // at once. Each publication is one write of the group's line, and a
    // share computation one read.
    #[test]
    fn tg_load_avg_updates_at_most_once_per_ms_from_v6_7() {
        for (kernel, limited) in [("v6.6", false), ("v6.12", true)] {
            let mut k = cpus(2, kernel);
            let g = k.create_group("G", 0, 1024).unwrap();
            let q = k.tg_cfs(g, CpuId(0));
            let tg = |k: &Kernel| k.tgs[g as usize].load_avg;
            k.cfs_mut(q).avg.load_avg = 1000;
            k.update_tg_load_avg(q, 5_000_000);
            assert_eq!(tg(&k), 1000, "{kernel}: the first update publishes");
            k.cfs_mut(q).avg.load_avg = 2000;
            k.update_tg_load_avg(q, 5_400_000);
            assert_eq!(tg(&k), if limited { 1000 } else { 2000 }, "{kernel}: 0.4 ms later");
            k.update_tg_load_avg(q, 6_000_000);
            assert_eq!(tg(&k), 2000, "{kernel}: 1 ms after the first");
            // Under the 1/64 filter nothing is written, limited or not.
            k.cfs_mut(q).avg.load_avg = 2010;
            k.update_tg_load_avg(q, 9_000_000);
            assert_eq!(tg(&k), 2000);
            // v6.6 wrote at 5 and 5.4 ms, v6.12 at 5 and 6 ms.
            assert_eq!(k.tg_lines, vec![(g, true); 2], "{kernel}");
            k.tg_lines.clear();
            let e = Ent::group(q.slot().unwrap());
            k.update_cfs_group(e, 9_000_000);
            assert_eq!(k.tg_lines, vec![(g, false)], "{kernel}: calc_group_shares() reads the line");
        }
    }

    // spec §6.1: a group entity's weight is tg.shares scaled by the fraction
    // of the group's load on its CPU.
    #[test]
    fn calc_group_shares_splits_by_load() {
        let mut k = cpus(2, "v6.12");
        let g = k.create_group("G", 0, 1024).unwrap();
        let (q0, q1) = (k.tg_cfs(g, CpuId(0)), k.tg_cfs(g, CpuId(1)));
        k.cfs_mut(q0).avg.load_avg = 1024;
        k.cfs_mut(q1).avg.load_avg = 3072;
        k.update_tg_load_avg(q0, 0);
        k.update_tg_load_avg(q1, 0);
        assert_eq!(k.tgs[g as usize].load_avg, 4096);
        assert_eq!(k.calc_group_shares(q0), 256);
        assert_eq!(k.calc_group_shares(q1), 768);
        // An idle CPU's cfs_rq never drops below MIN_SHARES.
        k.cfs_mut(q0).avg.load_avg = 0;
        assert_eq!(k.calc_group_shares(q0), MIN_SHARES);
    }

    // spec §7.3 check_preempt_wakeup: preemption compares the entities that
    // share a cfs_rq (find_matching_se), i.e. the two group entities here.
    #[test]
    fn wakeup_preemption_compares_matching_group_entities() {
        let (mut k, [_a0, _a1, b0]) = two_groups("v3.10");
        let (ga, gb) = (group_se(&k, 1), group_se(&k, 2));
        let min = k.rqs[0].cfs.min_vruntime;
        set_v(&mut k, ga, min, 0);
        set_v(&mut k, gb, min + 50 * MS, 0);
        k.schedule(C0, SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
        let curr = k.rqs[0].curr.unwrap();
        assert_eq!(k.tasks[curr.idx()].group, 1);
        // b0 sleeps... it is queued; take it off and wake it with a tiny task vruntime:
        // its group entity is still 50 ms right of A's, so no preemption.
        k.dequeue_task_fair(C0, b0, crate::fair::flags::DEQUEUE_SLEEP, 0);
        k.tasks[b0.idx()].state = TaskState::Sleeping;
        k.tasks[b0.idx()].se.vruntime = 0;
        k.gse[gb.slot().unwrap()].vruntime = min + 50 * MS;
        k.try_to_wake_up(b0, C0, None, WakeFlags::default(), 0, &mut crate::core::Effects::default());
        assert!(!k.rqs[0].need_resched, "B's entity is far right of A's: no preemption");
    }

    // Seed 002 (v2.6.39+): a task that sleeps while its group still has work
    // leaves the group entity as next buddy of the root; v2.6.38 does not.
    #[test]
    fn sleep_path_next_buddy_hint() {
        for (kernel, patch, expect) in [("v3.10", "", true), ("v2.6.38", "", false), ("v2.6.38", "next-buddy-hint", true)] {
            let mut k = cpus(1, kernel);
            k.profile.apply_patches(patch).unwrap();
            let a = k.create_group("A", 0, 1024).unwrap();
            let b = k.create_group("B", 0, 1024).unwrap();
            let mut ids = Vec::new();
            for g in [a, a, b] {
                let p = k.sched_fork(&TaskParams { group: g, ..Default::default() }, None, C0, 0);
                k.wake_up_new_task(p, C0, 0, &mut crate::core::Effects::default());
                ids.push(p);
            }
            k.schedule(C0, SwitchReason::Preempt, 0, &mut crate::core::Effects::default());
            let curr = k.rqs[0].curr.unwrap();
            let g = k.tasks[curr.idx()].group;
            assert_eq!(g, a, "{kernel}: group A's entity was enqueued first and runs first");
            // Runs 0.5 ms (within wakeup_gran of B's entity), then sleeps.
            k.schedule(C0, SwitchReason::Block, MS / 2, &mut crate::core::Effects::default());
            let next_group = k.tasks[k.rqs[0].curr.unwrap().idx()].group;
            assert_eq!(next_group == a, expect, "{kernel} {patch}: the next pick stays in the sleeper's group");
        }
    }
}

#[cfg(test)]
mod delayed_group_tests {
    use super::*;
    use crate::core::{Effects, SwitchReason, TaskParams, WakeFlags};
    use crate::profile::profile;
    use schedlab_topology::{CpuId, CpuInfo, CpuTopology};

    const MS: u64 = 1_000_000;
    const C0: CpuId = CpuId(0);

    // v6.12+ dequeue_entities(): a task's sleep that empties its group's
    // cfs_rq dequeues the group entity as a sleeper, and DELAY_DEQUEUE keeps
    // it queued (sched_delayed) while it is not eligible. The next pick that
    // lands on it finishes the dequeue (pick_next_entity()); a wakeup of one
    // of its tasks before that requeues it in place (requeue_delayed_entity()).
    #[test]
    fn an_emptied_group_entity_that_is_not_eligible_is_delayed() {
        for wake_first in [false, true] {
            let t = CpuTopology::new(vec![CpuInfo { core: 0, cluster: 0, llc: 0, node: 0, package: 0 }], vec![vec![10]]).unwrap();
            let mut k = Kernel::new(&t, profile("v6.18").unwrap());
            let (ga, gb) = (k.create_group("A", 0, 1024).unwrap(), k.create_group("B", 0, 1024).unwrap());
            let a = k.sched_fork(&TaskParams { group: ga, ..Default::default() }, None, C0, 0);
            k.wake_up_new_task(a, C0, 0, &mut Effects::default());
            let b = k.sched_fork(&TaskParams { group: gb, ..Default::default() }, None, C0, 0);
            k.wake_up_new_task(b, C0, 0, &mut Effects::default());
            k.schedule(C0, SwitchReason::Preempt, 0, &mut Effects::default());
            let first = k.rqs[0].curr.unwrap();
            let (runner, other) = if first == a { (a, b) } else { (b, a) };
            let g_run = Ent::group(k.tg_cfs(k.tasks[runner.idx()].group, C0).slot().unwrap());
            // The runner's group runs 1 ms ahead of the other, then its only task blocks.
            k.schedule(C0, SwitchReason::Block, MS, &mut Effects::default());
            assert!(
                k.se(g_run).on_rq && k.se(g_run).sched_delayed,
                "wake_first={wake_first}: the ineligible emptied group entity stays queued, delayed"
            );
            assert_eq!(k.rqs[0].cfs.nr_running, 2, "the root still holds both group entities");
            assert_eq!(k.rqs[0].nr_running(), 1, "but only the other group's task");
            assert_eq!(k.rqs[0].curr, Some(other));
            if wake_first {
                k.try_to_wake_up(runner, C0, Some(other), WakeFlags::default(), MS + 10_000, &mut Effects::default());
                assert!(k.se(g_run).on_rq && !k.se(g_run).sched_delayed, "requeued in place");
                assert_eq!(k.rqs[0].nr_running(), 2);
            } else {
                // The other group runs until the delayed one is eligible again;
                // the next pick finishes its dequeue.
                k.resched_curr(C0);
                k.schedule(C0, SwitchReason::Preempt, 3 * MS, &mut Effects::default());
                assert!(!k.se(g_run).on_rq && !k.se(g_run).sched_delayed, "picked while delayed: dequeued");
                assert_eq!(k.rqs[0].cfs.nr_running, 1);
                assert!(k.se(g_run).vlag <= 0, "DELAY_ZERO: no positive lag kept");
            }
        }
    }

    // Why autogroups change the wakeup path (docs/CALIBRATION.md "pgbench
    // placement: autogroups"): in its group's cfs_rq a task alone is always
    // eligible (V is its own vruntime), so dequeue_entities() dequeues the task
    // itself and only its group entity can stay delayed. Its next wakeup then
    // finds it off the runqueue and takes the full path (select_task_rq(), the
    // waker's record_wakee()); flat, the same ineligible sleeper stays queued
    // as delayed and the wakeup is ttwu_runnable(), which records nothing.
    #[test]
    fn a_task_alone_in_its_group_is_dequeued_at_sleep_and_woken_in_full() {
        for grouped in [false, true] {
            let infos = (0..2).map(|c| CpuInfo { core: c, cluster: 0, llc: 0, node: 0, package: 0 }).collect();
            let t = CpuTopology::new(infos, vec![vec![10]]).unwrap();
            let mut k = Kernel::new(&t, profile("v6.18").unwrap());
            let (ga, gb) = if grouped { (k.create_group("A", 0, 1024).unwrap(), k.create_group("B", 0, 1024).unwrap()) } else { (0, 0) };
            // Both start on CPU 0 (pinned there for the fork, so that the fork
            // balancer does not spread them), then may run on both CPUs, so
            // that a wakeup goes through select_task_rq().
            let pinned = |group| TaskParams { group, cpus_allowed: Some(vec![C0]), ..Default::default() };
            let a = k.sched_fork(&pinned(ga), None, C0, 0);
            k.wake_up_new_task(a, C0, 0, &mut Effects::default());
            let b = k.sched_fork(&pinned(gb), None, C0, 0);
            k.wake_up_new_task(b, C0, 0, &mut Effects::default());
            for p in [a, b] {
                k.tasks[p.idx()].cpus_allowed = None;
            }
            let cpu = C0;
            k.schedule(cpu, SwitchReason::Preempt, 0, &mut Effects::default());
            let runner = k.rqs[cpu.idx()].curr.unwrap();
            let other = if runner == a { b } else { a };
            // The runner runs 1 ms ahead of the other, then blocks while ineligible.
            k.schedule(cpu, SwitchReason::Block, MS, &mut Effects::default());
            let se = &k.tasks[runner.idx()].se;
            assert_eq!(
                (se.on_rq, se.sched_delayed),
                (!grouped, !grouped),
                "grouped={grouped}: the task itself stays queued as delayed only when flat"
            );
            if grouped {
                let g = Ent::group(k.tg_cfs(k.tasks[runner.idx()].group, cpu).slot().unwrap());
                assert!(k.se(g).sched_delayed, "its group entity is the delayed one");
            }
            k.try_to_wake_up(runner, cpu, Some(other), WakeFlags::default(), MS + 10_000, &mut Effects::default());
            assert_eq!(
                k.tasks[other.idx()].last_wakee == Some(runner),
                grouped,
                "grouped={grouped}: only the full wakeup reaches select_task_rq_fair()'s record_wakee()"
            );
        }
    }
}
