//! Task groups (the cpu cgroup controller, CONFIG_FAIR_GROUP_SCHED): group
//! creation, `calc_group_shares()`, `reweight_entity()`, `tg->load_avg`, and
//! the hierarchical load `task_h_load()` (spec §6.1, §7.1).

use crate::core::Kernel;
use crate::fair::{calc_delta_fair, vdiff};
use crate::sched::{CfsId, CfsRq, Ent, SchedEntity, TaskGroup, TaskId, NICE_0_LOAD};

/// `MIN_SHARES`: the smallest weight a group entity can get.
pub const MIN_SHARES: u64 = 2;
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
            // init_tg_cfs_entry(): the entity starts at NICE_0_LOAD; calc_group_shares sets it on enqueue.
            self.gse.push(SchedEntity { weight: NICE_0_LOAD, depth, slice: self.tun.base_slice_ns, ..Default::default() });
        }
        Ok(id)
    }

    /// `update_tg_load_avg()`: publish this cfs_rq's load into `tg->load_avg`
    /// when it moved by more than 1/64 of what was published.
    // FIDELITY(F-023): no once-per-ms rate limit (v6.7+); the 1/64 filter is kept.
    pub(crate) fn update_tg_load_avg(&mut self, q: CfsId) {
        let Some(slot) = q.slot() else {
            return;
        };
        let g = slot / self.nr_cpus() + 1;
        let cfs = &mut self.grq[slot];
        let delta = cfs.avg.load_avg as i64 - cfs.tg_load_avg_contrib;
        if delta.abs() > cfs.tg_load_avg_contrib / 64 {
            cfs.tg_load_avg_contrib = cfs.avg.load_avg as i64;
            self.tgs[g].load_avg += delta;
        }
    }

    /// `calc_group_shares()` (spec §6.1): the group's shares split by the
    /// fraction of the group's load on this CPU, clamped to [MIN_SHARES, shares].
    pub(crate) fn calc_group_shares(&self, gq: CfsId) -> u64 {
        let slot = gq.slot().expect("a group cfs_rq");
        let tg = &self.tgs[slot / self.nr_cpus() + 1];
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
    pub(crate) fn update_cfs_group(&mut self, e: Ent, now: u64) {
        let Some(gq) = self.group_cfs_rq(e) else {
            return;
        };
        let shares = self.calc_group_shares(gq);
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
            let tick = self.tun.tick_ns;
            let se = self.se_mut(e);
            if on_rq {
                if se.vruntime != avruntime {
                    // entity_lag(): clamped like update_entity_lag().
                    let limit = calc_delta_fair((2 * se.slice).max(tick), old) as i64;
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
