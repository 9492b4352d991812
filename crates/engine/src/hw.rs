//! The hardware side of the simulation: the cost of searching runqueues,
//! wakeup latency (IPI, idle exit), remote kicks, segment timing at the CPU's
//! progress rate (SMT sharing, memory bandwidth), and runqueue lock sections of
//! load balancing. `Sim` methods; the event loop (lib.rs) calls them.

use crate::*;

/// Wall time to do `work` nominal ns at `rate` per mille (rounded up):
/// `(work * 1000).div_ceil(rate.max(1))`. `smt` divides by one fixed rate
/// (the SMT-shared one, most segments on SMT machines) with a multiply
/// instead of a hardware division, with the same quotient.
#[inline]
pub(crate) fn wall_for(work: u64, rate: u64, smt: &DivU64) -> u64 {
    if rate == 1000 {
        work
    } else if rate == smt.d {
        smt.div_ceil(work * 1000)
    } else {
        (work * 1000).div_ceil(rate.max(1))
    }
}

/// Unsigned division of any `u64` by a divisor fixed in advance, by a
/// multiply-high, a subtract, an add and two shifts (Granlund and Montgomery,
/// "Division by invariant integers using multiplication", PLDI 1994, the
/// algorithm of their figure 4.1): quotients equal to `n / d` for every `n`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DivU64 {
    /// The divisor (at least 1).
    pub(crate) d: u64,
    /// 2^64 * (2^l - d) / d + 1 (rounded down before the +1), l = ceil(log2 d).
    m: u64,
    /// min(l, 1) and max(l - 1, 0).
    s1: u32,
    s2: u32,
}

impl DivU64 {
    pub(crate) fn new(d: u64) -> DivU64 {
        assert!(d >= 1, "division by zero");
        // l = ceil(log2 d), 0 for d = 1. 2^l - d < 2^63 (d > 2^(l-1)), so the
        // shift fits in u128, and the quotient is below 2^64 (2^l - d < d).
        let l = 64 - (d - 1).leading_zeros();
        let m = ((((1u128 << l) - d as u128) << 64) / d as u128 + 1) as u64;
        DivU64 { d, m, s1: l.min(1), s2: l.saturating_sub(1) }
    }

    /// `n / d`.
    #[inline(always)]
    pub(crate) fn div(&self, n: u64) -> u64 {
        let t = ((self.m as u128 * n as u128) >> 64) as u64;
        (t + ((n - t) >> self.s1)) >> self.s2
    }

    /// `n.div_ceil(d)`.
    #[inline(always)]
    pub(crate) fn div_ceil(&self, n: u64) -> u64 {
        let q = self.div(n);
        q + (n != q * self.d) as u64
    }
}

impl Sim<'_> {
    /// Cost of examining one CPU's runqueue in a search (SCAN component).
    #[inline]
    pub(crate) fn scan_ns(&self) -> u64 {
        if self.cost.sw.on(Component::SCAN) {
            self.machine.costs.idle_scan_ns_per_cpu
        } else {
            0
        }
    }

    /// IPI + idle-exit latency to get `target` running (WAKELAT component);
    /// a CPU polling in the POLL state needs no IPI (TIF_POLLING_NRFLAG).
    pub(crate) fn wake_latency(&mut self, target: CpuId, ipi: bool) -> u64 {
        self.wake_latency_ipi(target, ipi).0
    }

    /// [`Self::wake_latency`], and whether an IPI was sent (the sender pays
    /// `ipi_send_ns` for it, see `after_wake`).
    pub(crate) fn wake_latency_ipi(&mut self, target: CpuId, ipi: bool) -> (u64, bool) {
        let idle = self.cpus[target.idx()].running.is_none();
        // NO_WAKELAT: no IPI and no idle exit, but the rq-lock rule below
        // (a LOCKS fact) still holds.
        let wakelat = self.cost.sw.on(Component::WAKELAT);
        let exit = if idle && wakelat { self.idle_exit_latency(target) } else { 0 };
        let polling = idle && exit == 0;
        let sent = wakelat && ipi && !polling;
        let mut lat = if sent { self.machine.costs.ipi_ns } else { 0 };
        if idle {
            self.idle_exit_ns += exit;
            lat += exit;
            // An idle CPU still spinning for or holding an rq lock (its
            // newly idle or nohz balancing, whose time is its own) runs
            // nothing before that section ends.
            lat = lat.max(self.cost.lock_busy_until(target).saturating_sub(self.now));
            self.cpus[target.idx()].exit_lat = lat;
        }
        (lat, sent)
    }

    /// Send a reschedule IPI to `target` (it leaves idle first if idle).
    pub(crate) fn kick_remote(&mut self, target: CpuId) {
        if self.cpus[target.idx()].resched_pending {
            return;
        }
        let lat = self.wake_latency(target, true);
        self.cpus[target.idx()].resched_pending = true;
        self.push(self.now + lat, EvKind::Resched { cpu: target.0 });
    }

    /// Kick the idle load balancer (an IPI; it balances after leaving idle).
    pub(crate) fn kick_ilb(&mut self, ilb: CpuId) {
        if self.ilb_pending {
            return;
        }
        self.ilb_pending = true;
        let lat = self.wake_latency(ilb, true);
        self.push(self.now + lat, EvKind::NohzBalance { cpu: ilb.0 });
    }

    /// The running task's remaining work changed: move its segment end.
    pub(crate) fn reschedule_segment(&mut self, c: CpuId, t: TaskId) {
        let rate = self.cpus[c.idx()].rate;
        self.retime_segment(c, t, rate);
    }

    /// Settle the progress of `t` (running on `c`) at the old rate, switch to
    /// `rate` and move the segment's end event accordingly.
    pub(crate) fn retime_segment(&mut self, c: CpuId, t: TaskId, rate: u64) {
        let done = self.seg_done(c);
        let r = &mut self.rt[t.idx()];
        r.remaining = r.remaining.saturating_sub(done);
        let cpu = &mut self.cpus[c.idx()];
        cpu.seg_start = self.now.max(cpu.seg_start);
        cpu.rate = rate;
        cpu.seg_gen = cpu.seg_gen.wrapping_add(1);
        let gen = cpu.seg_gen;
        let at = cpu.seg_start + wall_for(self.rt[t.idx()].remaining, rate, &self.smt_div);
        self.push(at, EvKind::SegEnd { cpu: c.0, gen });
    }

    /// A memory-bound phase starts on `c`: every stream of its node gets a new share.
    pub(crate) fn mem_start(&mut self, c: CpuId) {
        let (llc, node) = (self.cost.llc_index(c) as usize, self.cost.node(c) as usize);
        self.cpus[c.idx()].mem = true;
        self.llc_streams[llc] += 1;
        self.node_streams[node] += 1;
        self.mem_rates(node as u32);
    }

    /// A memory-bound phase on `c` ends or is switched out.
    pub(crate) fn mem_stop(&mut self, c: CpuId) {
        let (llc, node) = (self.cost.llc_index(c) as usize, self.cost.node(c) as usize);
        // Settle the stream's progress at its old rate before the rates change.
        if let Some(t) = self.cpus[c.idx()].running {
            let done = self.seg_done(c);
            let r = &mut self.rt[t.idx()];
            r.remaining = r.remaining.saturating_sub(done);
            self.cpus[c.idx()].seg_start = self.now.max(self.cpus[c.idx()].seg_start);
        }
        self.cpus[c.idx()].mem = false;
        self.llc_streams[llc] -= 1;
        self.node_streams[node] -= 1;
        let busy_sib = self.kernel.sd.smt_mask[c.idx()].iter().any(|o| o != c && self.cpus[o.idx()].running.is_some());
        self.cpus[c.idx()].rate = self.cost.smt_rate(busy_sib);
        self.mem_rates(node as u32);
    }

    /// Fluid bandwidth sharing: recompute the rate of every stream on `node`
    /// and move the end of those whose rate changed.
    pub(crate) fn mem_rates(&mut self, node: u32) {
        for i in 0..self.cpus.len() {
            let ci = CpuId(i as u16);
            if !self.cpus[i].mem || self.cost.node(ci) != node {
                continue;
            }
            let Some(t) = self.cpus[i].running else { continue };
            let home = self.mem[t.idx()].home_node().unwrap_or(node);
            let rate =
                self.cost.mem_rate(self.llc_streams[self.cost.llc_index(ci) as usize], self.node_streams[node as usize], home != node);
            if rate == self.cpus[i].rate {
                continue;
            }
            self.retime_segment(ci, t, rate);
        }
    }

    /// Work (nominal ns) the running task of `c` has done in its current segment.
    #[inline]
    pub(crate) fn seg_done(&self, c: CpuId) -> u64 {
        let cpu = &self.cpus[c.idx()];
        self.now.saturating_sub(cpu.seg_start) * cpu.rate / 1000
    }

    /// SMT: `c` became busy or idle; its siblings' running tasks change speed.
    pub(crate) fn smt_changed(&mut self, c: CpuId) {
        if !self.smt {
            return;
        }
        let mut sibs = [CpuId(0); 8];
        let mut n = 0;
        for s in self.kernel.sd.smt_mask[c.idx()].iter().take(8) {
            sibs[n] = s;
            n += 1;
        }
        for &s in &sibs[..n] {
            if self.cpus[s.idx()].mem {
                continue; // a streaming task's rate is set by the bandwidth model
            }
            let busy_sib = self.kernel.sd.smt_mask[s.idx()].iter().any(|o| o != s && self.cpus[o.idx()].running.is_some());
            let rate = self.cost.smt_rate(busy_sib);
            if rate == self.cpus[s.idx()].rate {
                continue;
            }
            match self.cpus[s.idx()].running {
                Some(t) if s != c => self.retime_segment(s, t, rate),
                _ => self.cpus[s.idx()].rate = rate,
            }
        }
    }

    /// Exit latency of the idle state the governor chose for `c`
    /// (`CostModel::idle_exit_latency` on this CPU's prediction).
    pub(crate) fn idle_exit_latency(&self, c: CpuId) -> u64 {
        self.cost.idle_exit_latency(self.cpus[c.idx()].idle_pred_ns)
    }

    /// What the kernel entry point `c` just ran spent on shared lines: the
    /// lock sections of its load-balance passes (each detach held the busiest
    /// rq's lock, after waiting for it), then its `tg->load_avg` accesses
    /// ([`Self::tg_lines`]). Returns the time `c` spent waiting and holding.
    /// (The usual case, an entry point that locked nothing and touched no
    /// group line, is two tests inlined at the call; the rest is out of line.)
    #[inline(always)]
    pub(crate) fn entry_lock_time(&mut self, c: CpuId) -> u64 {
        if self.fx.locked.is_empty() && self.fx.tg_lines.is_empty() {
            return 0;
        }
        self.entry_lock_time_slow(c)
    }

    #[inline(never)]
    fn entry_lock_time_slow(&mut self, c: CpuId) -> u64 {
        if self.fx.locked.is_empty() {
            return self.tg_lines_slow(c, self.now);
        }
        let mut spent = 0;
        let locked = std::mem::take(&mut self.fx.locked);
        // The sections follow one another on `c`.
        let section = self.machine.costs.rq_lock_hold_ns;
        for &src in &locked {
            let l = self.cost.rq_lock(src, c, self.now + spent, section);
            self.rq_lock_wait_ns += l.wait;
            spent += l.wait + l.hold;
        }
        // Hand the buffer back so the effects do not reallocate.
        let mut l = locked;
        l.clear();
        self.fx.locked = l;
        spent + self.tg_lines(c, self.now + spent)
    }

    /// The `tg->load_avg` accesses of the entry point `c` just ran
    /// (`Effects::tg_lines`), from `at` on, one after the other: the time `c`
    /// spent waiting for and moving the group lines. Counted with the rq-lock
    /// wait in `rq_lock_wait_ns`'s sibling `tg_line_ns`. (None, the usual
    /// case without task groups: one test inlined at the call.)
    #[inline(always)]
    pub(crate) fn tg_lines(&mut self, c: CpuId, at: u64) -> u64 {
        if self.fx.tg_lines.is_empty() {
            return 0;
        }
        self.tg_lines_slow(c, at)
    }

    #[inline(never)]
    fn tg_lines_slow(&mut self, c: CpuId, at: u64) -> u64 {
        let mut spent = 0;
        for i in 0..self.fx.tg_lines.len() {
            let (g, write) = self.fx.tg_lines[i];
            let l = self.cost.tg_line(g, c, at + spent, write);
            spent += l.wait + l.hold;
        }
        self.fx.tg_lines.clear();
        self.tg_line_ns += spent;
        spent
    }
}

#[cfg(test)]
mod div_tests {
    use super::{wall_for, DivU64};

    /// A 64-bit xorshift* stream (test inputs only).
    fn next(x: &mut u64) -> u64 {
        *x ^= *x >> 12;
        *x ^= *x << 25;
        *x ^= *x >> 27;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn check(d: u64, n: u64) {
        let v = DivU64::new(d);
        assert_eq!(v.div(n), n / d, "{n} / {d}");
        assert_eq!(v.div_ceil(n), n.div_ceil(d), "{n} div_ceil {d}");
    }

    /// Numerators around the places a wrong magic number would show: 0, the
    /// multiples of `d` and their neighbours, powers of two, the top of u64.
    fn edges(d: u64, rng: &mut u64) -> Vec<u64> {
        let mut ns = vec![0, 1, 2, u64::MAX, u64::MAX - 1, u64::MAX / 2, u64::MAX / 2 + 1];
        for k in 0..64 {
            ns.extend([1u64 << k, (1u64 << k) - 1, (1u64 << k) + 1]);
        }
        let top = u64::MAX / d;
        for q in [1, 2, 3, 1000, top / 2, top - 1, top, next(rng) % top.max(1)] {
            let m = q.wrapping_mul(d);
            if q <= top {
                ns.extend([m, m.wrapping_sub(1), m.wrapping_add(1), m.wrapping_add(d - 1)]);
            }
        }
        ns
    }

    #[test]
    fn divu64_matches_hardware_division() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut ds: Vec<u64> = (1..=2100).collect();
        for k in 1..64 {
            ds.extend([1u64 << k, (1u64 << k) - 1, (1u64 << k) + 1]);
        }
        ds.extend([u64::MAX, u64::MAX - 1, (1 << 63) + 1, 641, 6_700_417, 274_177, 67_280_421_310_721]);
        for _ in 0..2000 {
            let d = next(&mut rng) >> (next(&mut rng) % 64);
            ds.push(d.max(1));
        }
        for &d in &ds {
            for n in edges(d, &mut rng) {
                check(d, n);
            }
            for _ in 0..64 {
                let n = next(&mut rng) >> (next(&mut rng) % 64);
                check(d, n);
            }
        }
    }

    #[test]
    fn wall_for_is_the_rounded_up_quotient() {
        let mut rng = 0x1234_5678_9abc_def1u64;
        for smt in [1, 2, 500, 600, 620, 650, 700, 999, 1000, 1001] {
            let v = DivU64::new(smt);
            for rate in [0, 1, 7, 600, smt, 999, 1000, 1500] {
                for _ in 0..2000 {
                    // Work up to u64::MAX / 1000 (no overflow of work * 1000).
                    let work = (next(&mut rng) >> (next(&mut rng) % 64)) / 1000;
                    let want = if rate == 1000 { work } else { (work * 1000).div_ceil(rate.max(1)) };
                    assert_eq!(wall_for(work, rate, &v), want, "work {work} rate {rate} smt {smt}");
                }
            }
        }
    }
}
