//! The fair class (kernel/sched/fair.c): entity accounting, placement in virtual
//! time, picking (EEVDF v6.6+ and classic CFS <= v6.5), tick and wakeup preemption.
//! Wakeup CPU selection lives in `select.rs`.
//!
//! Only the root cfs_rq of each CPU exists: FIDELITY F-002 (no task groups yet).

pub mod balance;
pub mod select;

use crate::core::Kernel;
use crate::features::SchedFeat::*;
use crate::profile::PickAlgo;
use crate::sched::{Policy, TaskId, NICE_0_LOAD};
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
        ((delta as u128 * NICE_0_LOAD as u128) / w as u128) as u64
    }
}

/// `(s64)(a - b)`: the kernel's wrap-safe comparison of u64 virtual times.
#[inline]
pub fn vdiff(a: u64, b: u64) -> i64 {
    a.wrapping_sub(b) as i64
}

impl Kernel {
    #[inline]
    pub(crate) fn eevdf(&self) -> bool {
        self.profile.pick == PickAlgo::Eevdf
    }

    // ---------------------------------------------------------------- EEVDF math

    #[inline]
    fn entity_key(&self, cpu: CpuId, p: TaskId) -> i64 {
        vdiff(self.tasks[p.idx()].se.vruntime, self.rqs[cpu.idx()].cfs.min_vruntime)
    }

    fn avg_vruntime_add(&mut self, cpu: CpuId, p: TaskId) {
        let key = self.entity_key(cpu, p);
        let w = self.tasks[p.idx()].se.weight as i64;
        let cfs = &mut self.rqs[cpu.idx()].cfs;
        cfs.avg_vruntime += key * w;
        cfs.avg_load += w;
    }

    fn avg_vruntime_sub(&mut self, cpu: CpuId, p: TaskId) {
        let key = self.entity_key(cpu, p);
        let w = self.tasks[p.idx()].se.weight as i64;
        let cfs = &mut self.rqs[cpu.idx()].cfs;
        cfs.avg_vruntime -= key * w;
        cfs.avg_load -= w;
    }

    /// Sum of keys*w and of w over the tree plus curr if queued.
    #[inline]
    fn avg_parts(&self, cpu: CpuId) -> (i64, i64) {
        let cfs = &self.rqs[cpu.idx()].cfs;
        let (mut avg, mut load) = (cfs.avg_vruntime, cfs.avg_load);
        if let Some(c) = cfs.curr {
            let se = &self.tasks[c.idx()].se;
            if se.on_rq {
                let w = se.weight as i64;
                avg += vdiff(se.vruntime, cfs.min_vruntime) * w;
                load += w;
            }
        }
        (avg, load)
    }

    /// `avg_vruntime()`: V, the weighted average vruntime of the queue incl. curr (spec §7.2).
    pub fn avg_vruntime(&self, cpu: CpuId) -> u64 {
        let (mut avg, load) = self.avg_parts(cpu);
        let min = self.rqs[cpu.idx()].cfs.min_vruntime;
        if load == 0 {
            return min;
        }
        if avg < 0 {
            avg -= load - 1; // floor toward -inf
        }
        min.wrapping_add((avg / load) as u64)
    }

    /// `vruntime_eligible()`: v <= V without division.
    #[inline]
    fn vruntime_eligible(&self, cpu: CpuId, vruntime: u64) -> bool {
        let (avg, load) = self.avg_parts(cpu);
        let key = vdiff(vruntime, self.rqs[cpu.idx()].cfs.min_vruntime);
        (avg as i128) >= (key as i128) * (load as i128)
    }

    /// `entity_eligible()`
    pub fn entity_eligible(&self, cpu: CpuId, p: TaskId) -> bool {
        self.vruntime_eligible(cpu, self.tasks[p.idx()].se.vruntime)
    }

    /// `update_min_vruntime()`: monotonic, from curr and the leftmost entity.
    fn update_min_vruntime(&mut self, cpu: CpuId) {
        let cfs = &self.rqs[cpu.idx()].cfs;
        let mut v = cfs.min_vruntime;
        let curr = cfs.curr.filter(|c| self.tasks[c.idx()].se.on_rq);
        if let Some(c) = curr {
            v = self.tasks[c.idx()].se.vruntime;
        }
        let mut left: Option<u64> = None;
        for &q in &cfs.queue {
            let qv = self.tasks[q.idx()].se.vruntime;
            if left.is_none_or(|l| vdiff(qv, l) < 0) {
                left = Some(qv);
            }
        }
        if let Some(l) = left {
            v = if curr.is_none() || vdiff(l, v) < 0 { l } else { v };
        }
        let delta = vdiff(v, cfs.min_vruntime);
        if delta > 0 {
            let cfs = &mut self.rqs[cpu.idx()].cfs;
            // avg_vruntime_update(): keys are relative to min_vruntime.
            cfs.avg_vruntime -= cfs.avg_load * delta;
            cfs.min_vruntime = v;
        }
    }

    // ---------------------------------------------------------------- tree

    fn enqueue_tree(&mut self, cpu: CpuId, p: TaskId) {
        self.avg_vruntime_add(cpu, p);
        self.rqs[cpu.idx()].cfs.queue.push(p);
    }

    fn dequeue_tree(&mut self, cpu: CpuId, p: TaskId) {
        let q = &mut self.rqs[cpu.idx()].cfs.queue;
        if let Some(pos) = q.iter().position(|&x| x == p) {
            q.remove(pos);
            self.avg_vruntime_sub(cpu, p);
        }
    }

    // ---------------------------------------------------------------- PELT

    /// `update_load_avg()` for the task entity and the root cfs_rq: advance both
    /// to `now` with the state they had over the elapsed interval.
    pub(crate) fn update_load_avg(&mut self, cpu: CpuId, p: Option<TaskId>, now: u64) {
        let rq = &mut self.rqs[cpu.idx()];
        let curr = rq.cfs.curr;
        if let Some(p) = p {
            let se = &mut self.tasks[p.idx()].se;
            let runnable = se.on_rq && !se.sched_delayed;
            se.avg.update(now, se.on_rq as u64, se.weight, runnable as u64, curr == Some(p));
        }
        let cfs = &mut rq.cfs;
        let runnable = (cfs.nr_running - cfs.h_nr_delayed) as u64;
        cfs.avg.update(now, cfs.load_weight, 1, runnable, curr.is_some());
    }

    /// `attach_entity_load_avg()`: a migrated task brings its averages along.
    // FIDELITY(F-007): immediate attach/detach instead of the lazy `removed` accumulator.
    pub(crate) fn attach_entity_load_avg(&mut self, cpu: CpuId, p: TaskId) {
        let sa = self.tasks[p.idx()].se.avg;
        let w = self.tasks[p.idx()].se.weight;
        let cfs = &mut self.rqs[cpu.idx()].cfs;
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
        let cfs = &mut self.rqs[cpu.idx()].cfs;
        cfs.avg.load_avg = cfs.avg.load_avg.saturating_sub(sa.load_avg);
        cfs.avg.load_sum = cfs.avg.load_sum.saturating_sub(sa.load_sum * w);
        cfs.avg.util_avg = cfs.avg.util_avg.saturating_sub(sa.util_avg);
        cfs.avg.util_sum = cfs.avg.util_sum.saturating_sub(sa.util_sum);
        cfs.avg.runnable_avg = cfs.avg.runnable_avg.saturating_sub(sa.runnable_avg);
        cfs.avg.runnable_sum = cfs.avg.runnable_sum.saturating_sub(sa.runnable_sum);
    }

    // ---------------------------------------------------------------- accounting

    /// `update_curr()` (spec §7.2 / §7.3).
    pub(crate) fn update_curr(&mut self, cpu: CpuId, now: u64) {
        let Some(c) = self.rqs[cpu.idx()].cfs.curr else {
            return;
        };
        let se = &mut self.tasks[c.idx()].se;
        let delta = now.saturating_sub(se.exec_start);
        if delta == 0 {
            return;
        }
        se.exec_start = now;
        se.sum_exec_runtime += delta;
        se.vruntime = se.vruntime.wrapping_add(calc_delta_fair(delta, se.weight));
        if !self.eevdf() {
            self.update_min_vruntime(cpu);
            return;
        }
        // update_deadline(): the request is consumed when vruntime passes the deadline.
        let se = &mut self.tasks[c.idx()].se;
        let mut resched = false;
        if vdiff(se.vruntime, se.deadline) >= 0 {
            se.slice = self.tun.base_slice_ns;
            se.deadline = se.vruntime.wrapping_add(calc_delta_fair(se.slice, se.weight));
            resched = true;
        }
        self.update_min_vruntime(cpu);
        if self.rqs[cpu.idx()].cfs.nr_running <= 1 {
            return;
        }
        // v6.12 PREEMPT_SHORT: did_preempt_short(): curr lost protection and is ineligible.
        let short = self.feats.has(PREEMPT_SHORT) && {
            let se = &self.tasks[c.idx()].se;
            se.vlag != se.deadline as i64 && !self.entity_eligible(cpu, c)
        };
        if resched || short {
            self.resched_curr(cpu);
            self.clear_buddies(cpu, c);
        }
    }

    fn account_entity_enqueue(&mut self, cpu: CpuId, p: TaskId) {
        let w = self.tasks[p.idx()].se.weight;
        let idle = self.tasks[p.idx()].policy == Policy::Idle;
        let cfs = &mut self.rqs[cpu.idx()].cfs;
        cfs.load_weight += w;
        cfs.nr_running += 1;
        cfs.h_nr_idle += idle as u32;
    }

    fn account_entity_dequeue(&mut self, cpu: CpuId, p: TaskId) {
        let w = self.tasks[p.idx()].se.weight;
        let idle = self.tasks[p.idx()].policy == Policy::Idle;
        let cfs = &mut self.rqs[cpu.idx()].cfs;
        cfs.load_weight -= w;
        cfs.nr_running -= 1;
        cfs.h_nr_idle -= idle as u32;
    }

    // ---------------------------------------------------------------- placement

    /// CFS `sched_slice()`: the wall-time share of the period for `p` (spec §7.3).
    pub(crate) fn sched_slice(&self, cpu: CpuId, p: TaskId) -> u64 {
        let cfs = &self.rqs[cpu.idx()].cfs;
        let se = &self.tasks[p.idx()].se;
        let nr = cfs.nr_running as u64 + (!se.on_rq) as u64;
        let period = if nr > self.tun.nr_latency { nr * self.tun.min_granularity_ns } else { self.tun.latency_ns };
        let load = cfs.load_weight + if se.on_rq { 0 } else { se.weight };
        let mut slice = (period as u128 * se.weight as u128 / load.max(1) as u128) as u64;
        if self.profile.version >= (5, 13) && self.feats.has(BASE_SLICE) {
            slice = slice.max(self.tun.min_granularity_ns);
        }
        slice
    }

    /// `place_entity()`: EEVDF (spec §7.2) or CFS (spec §7.3).
    fn place_entity(&mut self, cpu: CpuId, p: TaskId, flags: u32) {
        if !self.eevdf() {
            // CFS place_entity(cfs_rq, se, initial)
            let initial = flags & ENQUEUE_INITIAL != 0;
            let mut v = self.rqs[cpu.idx()].cfs.min_vruntime;
            if initial && self.feats.has(START_DEBIT) {
                let w = self.tasks[p.idx()].se.weight;
                v = v.wrapping_add(calc_delta_fair(self.sched_slice(cpu, p), w));
            }
            if !initial {
                let mut thresh = self.tun.latency_ns;
                if self.feats.has(GENTLE_FAIR_SLEEPERS) {
                    thresh >>= 1;
                }
                v = v.wrapping_sub(thresh);
            }
            let se = &mut self.tasks[p.idx()].se;
            if vdiff(v, se.vruntime) > 0 {
                se.vruntime = v;
            }
            return;
        }
        let vruntime = self.avg_vruntime(cpu);
        let base_slice = self.tun.base_slice_ns;
        let cfs_nr = self.rqs[cpu.idx()].cfs.nr_running;
        let curr = self.rqs[cpu.idx()].cfs.curr;
        let (avg_load, curr_w) = {
            let cfs = &self.rqs[cpu.idx()].cfs;
            let cw = curr.map_or(0, |c| {
                let se = &self.tasks[c.idx()].se;
                if se.on_rq && c != p {
                    se.weight as i64
                } else {
                    0
                }
            });
            (cfs.avg_load, cw)
        };
        let se = &mut self.tasks[p.idx()].se;
        se.slice = base_slice;
        let mut vslice = calc_delta_fair(se.slice, se.weight) as i64;
        let mut lag: i64 = 0;
        if self.feats.has(PLACE_LAG) && cfs_nr > 0 && se.vlag != 0 {
            // Inflate the lag so the effective lag after insertion equals the stored one.
            let mut load = avg_load + curr_w;
            lag = se.vlag;
            let l = (lag as i128) * ((load + se.weight as i64) as i128);
            if load == 0 {
                load = 1;
            }
            lag = (l / load as i128) as i64;
        }
        se.vruntime = vruntime.wrapping_sub(lag as u64);
        if self.feats.has(PLACE_REL_DEADLINE) && se.rel_deadline {
            se.deadline = se.deadline.wrapping_add(se.vruntime);
            se.rel_deadline = false;
            return;
        }
        if self.feats.has(PLACE_DEADLINE_INITIAL) && flags & ENQUEUE_INITIAL != 0 {
            vslice /= 2;
        }
        se.deadline = se.vruntime.wrapping_add(vslice as u64);
    }

    /// `update_entity_lag()`: vlag = clamp(V - v, -L, L), L = max(2*slice, TICK) in virtual time.
    fn update_entity_lag(&mut self, cpu: CpuId, p: TaskId) {
        let v = self.avg_vruntime(cpu);
        let tick = self.tun.tick_ns;
        let se = &mut self.tasks[p.idx()].se;
        let lag = vdiff(v, se.vruntime);
        let limit = calc_delta_fair((2 * se.slice).max(tick), se.weight) as i64;
        se.vlag = lag.clamp(-limit, limit);
    }

    /// `enqueue_entity()` (and `enqueue_task_fair()` for the single level).
    pub(crate) fn enqueue_entity(&mut self, cpu: CpuId, p: TaskId, flags: u32, now: u64) {
        let is_curr = self.rqs[cpu.idx()].cfs.curr == Some(p);
        if !self.eevdf() {
            if self.tasks[p.idx()].se.vruntime_relative {
                let min = self.rqs[cpu.idx()].cfs.min_vruntime;
                let se = &mut self.tasks[p.idx()].se;
                se.vruntime = se.vruntime.wrapping_add(min);
                se.vruntime_relative = false;
            }
            self.update_curr(cpu, now);
            self.update_load_avg(cpu, Some(p), now);
            self.account_entity_enqueue(cpu, p);
            if flags & ENQUEUE_WAKEUP != 0 {
                self.place_entity(cpu, p, 0);
            }
        } else {
            if is_curr {
                self.place_entity(cpu, p, flags);
            }
            self.update_curr(cpu, now);
            self.update_load_avg(cpu, Some(p), now);
            if !is_curr {
                self.place_entity(cpu, p, flags);
            }
            self.account_entity_enqueue(cpu, p);
        }
        if !is_curr {
            self.enqueue_tree(cpu, p);
        }
        self.tasks[p.idx()].se.on_rq = true;
        self.mru_seq += 1;
        self.tasks[p.idx()].mru = self.mru_seq;
        let ue = self.tasks[p.idx()].se.avg.util_est_value();
        if self.feats.has(UTIL_EST) {
            self.rqs[cpu.idx()].cfs.util_est_enqueued += ue;
        }
        if !self.eevdf() {
            self.update_min_vruntime(cpu);
        }
    }

    /// `dequeue_entity()`. Returns false when the dequeue was delayed (v6.12
    /// DELAY_DEQUEUE: an ineligible sleeper stays queued as `sched_delayed`).
    pub(crate) fn dequeue_entity(&mut self, cpu: CpuId, p: TaskId, flags: u32, now: u64) -> bool {
        let sleep = flags & DEQUEUE_SLEEP != 0;
        let delayed_final = flags & DEQUEUE_DELAYED != 0;
        if self.eevdf() && sleep && !delayed_final && self.feats.has(DELAY_DEQUEUE) {
            self.update_curr(cpu, now);
            if !self.entity_eligible(cpu, p) {
                let cfs = &mut self.rqs[cpu.idx()].cfs;
                if cfs.next == Some(p) {
                    cfs.next = None;
                }
                self.update_load_avg(cpu, Some(p), now);
                self.tasks[p.idx()].se.sched_delayed = true;
                self.rqs[cpu.idx()].cfs.h_nr_delayed += 1;
                return false;
            }
        }
        let is_curr = self.rqs[cpu.idx()].cfs.curr == Some(p);
        self.update_curr(cpu, now);
        self.update_load_avg(cpu, Some(p), now);
        if self.eevdf() {
            self.update_entity_lag(cpu, p);
            if delayed_final && self.feats.has(DELAY_ZERO) {
                let se = &mut self.tasks[p.idx()].se;
                se.vlag = se.vlag.min(0);
            }
            if self.feats.has(PLACE_REL_DEADLINE) && !sleep {
                let se = &mut self.tasks[p.idx()].se;
                se.deadline = se.deadline.wrapping_sub(se.vruntime);
                se.rel_deadline = true;
            }
        }
        self.clear_buddies(cpu, p);
        if !is_curr {
            self.dequeue_tree(cpu, p);
        }
        self.account_entity_dequeue(cpu, p);
        let se = &mut self.tasks[p.idx()].se;
        se.on_rq = false;
        if se.sched_delayed {
            se.sched_delayed = false;
            self.rqs[cpu.idx()].cfs.h_nr_delayed -= 1;
        }
        if self.feats.has(UTIL_EST) {
            let ue = self.tasks[p.idx()].se.avg.util_est_value();
            let cfs = &mut self.rqs[cpu.idx()].cfs;
            cfs.util_est_enqueued = cfs.util_est_enqueued.saturating_sub(ue);
            if sleep {
                let fastup = self.profile.version >= (6, 9) || self.feats.has(UTIL_EST_FASTUP);
                self.tasks[p.idx()].se.avg.util_est_update(fastup, 1024);
            }
        }
        if !self.eevdf() && !sleep {
            let min = self.rqs[cpu.idx()].cfs.min_vruntime;
            let se = &mut self.tasks[p.idx()].se;
            se.vruntime = se.vruntime.wrapping_sub(min);
            se.vruntime_relative = true;
        }
        self.update_min_vruntime(cpu);
        true
    }

    /// `requeue_delayed_entity()` (v6.12): a delayed sleeper is woken in place.
    pub(crate) fn requeue_delayed_entity(&mut self, cpu: CpuId, p: TaskId, now: u64) {
        self.update_curr(cpu, now);
        if self.feats.has(DELAY_ZERO) {
            self.update_entity_lag(cpu, p);
            if self.tasks[p.idx()].se.vlag > 0 {
                let is_curr = self.rqs[cpu.idx()].cfs.curr == Some(p);
                if !is_curr {
                    self.dequeue_tree(cpu, p);
                }
                self.rqs[cpu.idx()].cfs.nr_running -= 1;
                self.tasks[p.idx()].se.vlag = 0;
                self.place_entity(cpu, p, 0);
                if !is_curr {
                    self.enqueue_tree(cpu, p);
                }
                self.rqs[cpu.idx()].cfs.nr_running += 1;
            }
        }
        self.update_load_avg(cpu, Some(p), now);
        self.tasks[p.idx()].se.sched_delayed = false;
        self.rqs[cpu.idx()].cfs.h_nr_delayed -= 1;
    }

    /// `set_next_entity()`: `p` becomes curr and leaves the tree.
    pub(crate) fn set_next_entity(&mut self, cpu: CpuId, p: TaskId, now: u64) {
        if self.tasks[p.idx()].se.on_rq {
            self.dequeue_tree(cpu, p);
            self.update_load_avg(cpu, Some(p), now);
        }
        self.rqs[cpu.idx()].cfs.curr = Some(p);
        self.mru_seq += 1;
        self.tasks[p.idx()].mru = self.mru_seq;
        let eevdf = self.eevdf();
        let se = &mut self.tasks[p.idx()].se;
        if eevdf {
            // The kernel stashes the deadline in vlag at pick: slice protection (RUN_TO_PARITY).
            se.vlag = se.deadline as i64;
        }
        se.exec_start = now;
        se.prev_sum_exec_runtime = se.sum_exec_runtime;
    }

    /// `put_prev_entity()`: curr goes back into the tree if still queued.
    pub(crate) fn put_prev_entity(&mut self, cpu: CpuId, p: TaskId, now: u64) {
        if self.tasks[p.idx()].se.on_rq {
            self.update_curr(cpu, now);
            self.enqueue_tree(cpu, p);
            self.update_load_avg(cpu, Some(p), now);
        }
        self.rqs[cpu.idx()].cfs.curr = None;
    }

    // ---------------------------------------------------------------- buddies

    fn clear_buddies(&mut self, cpu: CpuId, p: TaskId) {
        let cfs = &mut self.rqs[cpu.idx()].cfs;
        if cfs.next == Some(p) {
            cfs.next = None;
        }
        if cfs.last == Some(p) {
            cfs.last = None;
        }
        if cfs.skip == Some(p) {
            cfs.skip = None;
        }
    }

    fn set_next_buddy(&mut self, cpu: CpuId, p: TaskId) {
        if self.tasks[p.idx()].policy == Policy::Idle || self.tasks[p.idx()].se.sched_delayed {
            return;
        }
        self.rqs[cpu.idx()].cfs.next = Some(p);
    }

    // ---------------------------------------------------------------- picking

    /// `pick_eevdf()` (v6.6 / v6.12, spec §7.2).
    pub fn pick_eevdf(&self, cpu: CpuId) -> Option<TaskId> {
        let cfs = &self.rqs[cpu.idx()].cfs;
        let mut curr = cfs.curr.filter(|c| self.tasks[c.idx()].se.on_rq);
        if cfs.nr_running == 1 {
            return curr.or_else(|| cfs.queue.first().copied());
        }
        // v6.12 (before PICK_BUDDY): the next buddy under NEXT_BUDDY; ~v6.14+: PICK_BUDDY.
        let buddy_on = self.feats.has(NEXT_BUDDY) || (self.profile.version >= (6, 14) && self.feats.has(PICK_BUDDY));
        if self.profile.version >= (6, 12) && buddy_on {
            if let Some(n) = cfs.next {
                if self.entity_eligible(cpu, n) {
                    return Some(n);
                }
            }
        }
        if let Some(c) = curr {
            if !self.entity_eligible(cpu, c) {
                curr = None;
            }
        }
        if let Some(c) = curr {
            let se = &self.tasks[c.idx()].se;
            if self.feats.has(RUN_TO_PARITY) && se.vlag == se.deadline as i64 {
                return Some(c);
            }
        }
        // Eligible entity with the earliest deadline (first inserted wins ties).
        let (avg, load) = self.avg_parts(cpu);
        let mut best: Option<(TaskId, u64)> = None;
        for &q in &cfs.queue {
            let se = &self.tasks[q.idx()].se;
            let key = vdiff(se.vruntime, cfs.min_vruntime);
            if (avg as i128) < (key as i128) * (load as i128) {
                continue;
            }
            if best.is_none_or(|(_, d)| vdiff(se.deadline, d) < 0) {
                best = Some((q, se.deadline));
            }
        }
        match (best, curr) {
            (None, c) => c,
            (Some((_, bd)), Some(c)) if vdiff(self.tasks[c.idx()].se.deadline, bd) < 0 => Some(c),
            (Some((b, _)), _) => Some(b),
        }
    }

    /// `wakeup_preempt_entity(curr, se)` (CFS): 1 if `se` should preempt `curr`.
    fn wakeup_preempt_entity(&self, curr: TaskId, se: TaskId) -> i32 {
        let c = &self.tasks[curr.idx()].se;
        let s = &self.tasks[se.idx()].se;
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

    /// CFS `pick_next_entity()` (v3.1-v6.5, spec §7.3): leftmost, unless a
    /// skip / last / next buddy may run without unfairness.
    fn pick_next_entity_cfs(&mut self, cpu: CpuId) -> Option<TaskId> {
        let cfs = &self.rqs[cpu.idx()].cfs;
        // curr was put back by put_prev before the pick (CFS order); leftmost = min vruntime.
        let mut order: Option<(TaskId, u64)> = None;
        let mut second: Option<(TaskId, u64)> = None;
        for &q in &cfs.queue {
            let v = self.tasks[q.idx()].se.vruntime;
            match order {
                Some((_, lv)) if vdiff(v, lv) >= 0 => {
                    if second.is_none_or(|(_, sv)| vdiff(v, sv) < 0) {
                        second = Some((q, v));
                    }
                }
                _ => {
                    second = order;
                    order = Some((q, v));
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
        self.clear_buddies(cpu, se);
        Some(se)
    }

    /// `pick_next_task_fair()` for a CPU whose `prev` has been dequeued (if it
    /// blocked) but is still `cfs.curr`. Completes delayed dequeues of picked
    /// entities (v6.12). Returns the next task, or None to go idle; `prev` has
    /// been put and `next` set.
    // FIDELITY(F-002): one root cfs_rq per CPU; no group entities to descend into.
    pub(crate) fn pick_next_task_fair(&mut self, cpu: CpuId, now: u64) -> Option<TaskId> {
        let prev = self.rqs[cpu.idx()].cfs.curr;
        if !self.eevdf() {
            // CFS (3.x __schedule): put_prev_task before pick_next_task.
            if let Some(pv) = prev {
                self.put_prev_entity(cpu, pv, now);
            }
            let next = self.pick_next_entity_cfs(cpu)?;
            self.set_next_entity(cpu, next, now);
            return Some(next);
        }
        loop {
            if self.rqs[cpu.idx()].cfs.nr_running == 0 {
                if let Some(pv) = self.rqs[cpu.idx()].cfs.curr {
                    self.put_prev_entity(cpu, pv, now);
                }
                return None;
            }
            if let Some(c) = self.rqs[cpu.idx()].cfs.curr {
                if self.tasks[c.idx()].se.on_rq {
                    self.update_curr(cpu, now);
                }
            }
            let se = self.pick_eevdf(cpu).expect("a non-empty cfs_rq has an eligible entity");
            if self.tasks[se.idx()].se.sched_delayed {
                // pick_next_entity(): finish the delayed dequeue and pick again.
                self.dequeue_entity(cpu, se, DEQUEUE_SLEEP | DEQUEUE_DELAYED, now);
                self.finish_delayed_dequeue(se);
                continue;
            }
            let curr = self.rqs[cpu.idx()].cfs.curr;
            if curr != Some(se) {
                if let Some(pv) = curr {
                    self.put_prev_entity(cpu, pv, now);
                }
                self.set_next_entity(cpu, se, now);
            }
            return Some(se);
        }
    }

    // ---------------------------------------------------------------- preemption

    /// `entity_tick()` / `task_tick_fair()`: EEVDF has no separate tick check
    /// (update_curr renews the request and reschedules); CFS runs `check_preempt_tick()`.
    pub(crate) fn task_tick_fair(&mut self, cpu: CpuId, now: u64) {
        let Some(curr) = self.rqs[cpu.idx()].cfs.curr else {
            return;
        };
        self.update_curr(cpu, now);
        self.update_load_avg(cpu, Some(curr), now);
        if self.eevdf() || self.rqs[cpu.idx()].cfs.nr_running <= 1 {
            return;
        }
        // check_preempt_tick()
        let ideal = self.sched_slice(cpu, curr);
        let se = &self.tasks[curr.idx()].se;
        let delta_exec = se.sum_exec_runtime - se.prev_sum_exec_runtime;
        if delta_exec > ideal {
            self.resched_curr(cpu);
            self.clear_buddies(cpu, curr);
            return;
        }
        if delta_exec < self.tun.min_granularity_ns {
            return;
        }
        let cfs = &self.rqs[cpu.idx()].cfs;
        let Some(first) =
            cfs.queue.iter().copied().min_by(|a, b| vdiff(self.tasks[a.idx()].se.vruntime, self.tasks[b.idx()].se.vruntime).cmp(&0))
        else {
            return;
        };
        let d = vdiff(self.tasks[curr.idx()].se.vruntime, self.tasks[first.idx()].se.vruntime);
        if d < 0 {
            return;
        }
        if d as u64 > ideal {
            self.resched_curr(cpu);
        }
    }

    /// `check_preempt_wakeup()` (CFS, v3.x-v6.5) / `check_preempt_wakeup_fair()`
    /// (EEVDF): may the freshly enqueued `p` preempt the current task of `cpu`?
    pub(crate) fn check_preempt_wakeup(&mut self, cpu: CpuId, p: TaskId, wake_fork: bool, now: u64) {
        let Some(curr) = self.rqs[cpu.idx()].curr else {
            // The idle task is always preempted by a fair task.
            self.resched_curr(cpu);
            return;
        };
        if curr == p {
            return;
        }
        let nr = self.rqs[cpu.idx()].cfs.nr_running as u64;
        let scale = nr >= self.tun.nr_latency;
        let mut next_buddy_marked = false;
        if self.eevdf() {
            if self.feats.has(NEXT_BUDDY) && !wake_fork && !self.tasks[p.idx()].se.sched_delayed {
                self.set_next_buddy(cpu, p);
            }
        } else if self.feats.has(NEXT_BUDDY) && scale && !wake_fork {
            self.set_next_buddy(cpu, p);
            next_buddy_marked = true;
        }
        if self.rqs[cpu.idx()].need_resched {
            return;
        }
        let (cp, pp) = (self.tasks[curr.idx()].policy, self.tasks[p.idx()].policy);
        if cp == Policy::Idle && pp != Policy::Idle {
            self.resched_curr(cpu);
            return;
        }
        if pp != Policy::Normal || !self.feats.has(WAKEUP_PREEMPTION) {
            return;
        }
        self.update_curr(cpu, now);
        if self.eevdf() {
            // v6.12 PREEMPT_SHORT: a shorter-slice eligible wakee cancels protection.
            if self.feats.has(PREEMPT_SHORT) {
                let (ps, cs) = (&self.tasks[p.idx()].se, &self.tasks[curr.idx()].se);
                let short = ps.slice < cs.slice
                    && self.entity_eligible(cpu, p)
                    && (vdiff(ps.deadline, cs.deadline) < 0 || !self.entity_eligible(cpu, curr));
                if short && cs.vlag == cs.deadline as i64 {
                    self.tasks[curr.idx()].se.vlag = cs.deadline as i64 + 1;
                }
            }
            if self.pick_eevdf(cpu) == Some(p) {
                self.resched_curr(cpu);
            }
            return;
        }
        if self.wakeup_preempt_entity(curr, p) == 1 {
            if !next_buddy_marked {
                // Venkatesh Pallipadi 2011 (v2.6.39+): the preempting wakee becomes next buddy.
                self.set_next_buddy(cpu, p);
            }
            self.resched_curr(cpu);
            if self.tasks[curr.idx()].se.on_rq && self.feats.has(LAST_BUDDY) && scale {
                self.rqs[cpu.idx()].cfs.last = Some(curr);
            }
        }
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
            k.account_entity_enqueue(CpuId(0), p);
            k.enqueue_tree(CpuId(0), p);
            ids.push(p);
        }
        ids
    }

    // spec §7.2: an entity is eligible iff v_i <= V; pick_eevdf returns the
    // eligible entity with the earliest virtual deadline, not the earliest deadline overall.
    #[test]
    fn eevdf_picks_earliest_eligible_deadline() {
        let mut k = one_cpu("v6.6");
        let ids = hand_queue(&mut k, &[(1024, 0, 30 * MS), (1024, 10 * MS, 15 * MS), (1024, 20 * MS, 5 * MS)]);
        assert_eq!(k.avg_vruntime(CpuId(0)), 10 * MS);
        assert!(k.entity_eligible(CpuId(0), ids[0]));
        assert!(k.entity_eligible(CpuId(0), ids[1]), "v == V is eligible");
        assert!(!k.entity_eligible(CpuId(0), ids[2]));
        assert_eq!(k.pick_eevdf(CpuId(0)), Some(ids[1]));
    }

    // spec §7.2: V is weight-averaged: a heavy entity drags V toward itself.
    #[test]
    fn eevdf_eligibility_is_weighted() {
        let mut k = one_cpu("v6.6");
        // nice -5 (3121) at v=0, nice 0 at v=8ms: V = 8ms*1024/(4145) ~ 1.98ms
        let ids = hand_queue(&mut k, &[(3121, 0, 50 * MS), (1024, 8 * MS, 9 * MS)]);
        let v = k.avg_vruntime(CpuId(0));
        assert!(v > MS && v < 3 * MS, "V = {v}");
        assert!(!k.entity_eligible(CpuId(0), ids[1]));
        assert_eq!(k.pick_eevdf(CpuId(0)), Some(ids[0]));
    }

    // spec §7.2 RUN_TO_PARITY: a running, eligible curr keeps the CPU until its
    // request is consumed, even if a queued entity has an earlier deadline.
    #[test]
    fn eevdf_run_to_parity_protects_curr() {
        let mut k = one_cpu("v6.6");
        let ids = hand_queue(&mut k, &[(1024, 0, 3 * MS), (1024, 0, MS)]);
        k.set_next_entity(CpuId(0), ids[0], 0);
        k.rqs[0].curr = Some(ids[0]);
        assert_eq!(k.pick_eevdf(CpuId(0)), Some(ids[0]), "protected curr");
        k.feats.set(crate::features::SchedFeat::RUN_TO_PARITY, false);
        assert_eq!(k.pick_eevdf(CpuId(0)), Some(ids[1]), "without RUN_TO_PARITY the earlier deadline wins");
    }

    /// Make `p` (queued, not running) go to sleep at `now`, as schedule() does for a blocking curr.
    fn run_then_sleep(k: &mut Kernel, p: TaskId, now: u64) {
        if let Some(c) = k.rqs[0].cfs.curr {
            k.put_prev_entity(CpuId(0), c, now);
        }
        k.set_next_entity(CpuId(0), p, now);
        k.rqs[0].curr = Some(p);
        k.schedule(CpuId(0), SwitchReason::Block, now);
    }

    // spec §7.2: lag is kept across sleep: after PLACE_LAG placement the entity's
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
        k.try_to_wake_up(ids[0], CpuId(0), None, crate::core::WakeFlags::default(), 0);
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
        k2.try_to_wake_up(ids2[0], CpuId(0), None, crate::core::WakeFlags::default(), 0);
        assert_eq!(k2.tasks[ids2[0].idx()].se.vruntime, v_before);
    }

    // spec §7.2 (v6.12 delayed dequeue): an ineligible sleeper stays queued as
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

    // spec §7.3: CFS picks the leftmost (smallest vruntime) entity; a next buddy
    // wins only if it is within wakeup_gran of the leftmost.
    #[test]
    fn cfs_picks_leftmost_and_honours_close_buddy() {
        let mut k = one_cpu("v3.10");
        let ids = hand_queue(&mut k, &[(1024, 5 * MS, 0), (1024, 2 * MS, 0), (1024, 2 * MS + MS / 2, 0)]);
        assert_eq!(k.pick_next_entity_cfs(CpuId(0)), Some(ids[1]));
        // wakeup_gran on 1 CPU = 1ms (factor 1): buddy 0.5ms right of leftmost wins...
        k.rqs[0].cfs.next = Some(ids[2]);
        assert_eq!(k.pick_next_entity_cfs(CpuId(0)), Some(ids[2]));
        assert_eq!(k.rqs[0].cfs.next, None, "picked buddy is cleared");
        // ...one 3ms right does not.
        k.rqs[0].cfs.next = Some(ids[0]);
        assert_eq!(k.pick_next_entity_cfs(CpuId(0)), Some(ids[1]));
    }

    // spec §7.3 check_preempt_tick: curr is preempted once it ran longer than
    // its ideal slice (period * w / load), not before min_granularity.
    #[test]
    fn cfs_tick_preemption_after_ideal_slice() {
        let mut k = one_cpu("v3.10");
        let ids = hand_queue(&mut k, &[(1024, 0, 0), (1024, 0, 0)]);
        k.set_next_entity(CpuId(0), ids[0], 0);
        k.rqs[0].curr = Some(ids[0]);
        // 1 CPU: latency 6ms, 2 tasks -> ideal slice 3ms.
        assert_eq!(k.sched_slice(CpuId(0), ids[0]), 3 * MS);
        k.task_tick_fair(CpuId(0), MS / 2);
        assert!(!k.rqs[0].need_resched, "below min_granularity: no preemption");
        k.task_tick_fair(CpuId(0), 2 * MS);
        // ran 2ms, vruntime 2ms ahead of the other (0) but < ideal 3ms: no preemption
        assert!(!k.rqs[0].need_resched);
        k.task_tick_fair(CpuId(0), 3 * MS + 1);
        assert!(k.rqs[0].need_resched, "ran past its ideal slice");
    }

    // spec §7.3: CFS wakeup preemption needs curr.v - wakee.v > wakeup_gran(wakee).
    #[test]
    fn cfs_wakeup_preemption_granularity() {
        let mut k = one_cpu("v3.10");
        let ids = hand_queue(&mut k, &[(1024, 10 * MS, 0), (1024, 9 * MS + MS / 2, 0), (1024, 8 * MS, 0)]);
        k.set_next_entity(CpuId(0), ids[0], 0);
        k.rqs[0].curr = Some(ids[0]);
        k.check_preempt_wakeup(CpuId(0), ids[1], false, 0);
        assert!(!k.rqs[0].need_resched, "0.5ms behind < 1ms gran");
        k.check_preempt_wakeup(CpuId(0), ids[2], false, 0);
        assert!(k.rqs[0].need_resched, "2ms behind > 1ms gran");
        assert_eq!(k.rqs[0].cfs.next, Some(ids[2]), "the preempting wakee becomes next buddy");
    }

    // spec §7.2: EEVDF has no tick preemption check; the request renews at the
    // deadline and reschedules when others are queued.
    #[test]
    fn eevdf_tick_reschedules_at_deadline() {
        let mut k = one_cpu("v6.6");
        let ids = hand_queue(&mut k, &[(1024, 0, 750_000), (1024, 0, 750_000)]);
        k.set_next_entity(CpuId(0), ids[0], 0);
        k.rqs[0].curr = Some(ids[0]);
        k.task_tick_fair(CpuId(0), 500_000);
        assert!(!k.rqs[0].need_resched);
        k.task_tick_fair(CpuId(0), 800_000);
        assert!(k.rqs[0].need_resched, "vruntime passed the deadline");
        let se = &k.tasks[ids[0].idx()].se;
        assert_eq!(se.deadline, se.vruntime + k.tun.base_slice_ns, "new request of one base slice");
    }
}
