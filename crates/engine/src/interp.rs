//! The op interpreter: runs a task's program from its current state (`Op`s of
//! schedlab_workload), with channels, semaphores, barriers and latency
//! histograms. `Sim` methods; the event loop (lib.rs) calls `run_ops` when a
//! task's segment ends or it is switched in.

use crate::*;

/// One draw of `Op::RunDist`: the inverse of a piecewise-linear CDF through
/// (0, lo), (1/2, mid), (1, hi), in integers (the top bit of one 32-bit draw
/// picks the half, the other 31 the point in it). Mean `(lo + 2 mid + hi) / 4`,
/// median `mid`.
#[inline]
pub(crate) fn draw_run_dist(rng: &mut Pcg32, lo: u32, mid: u32, hi: u32) -> u64 {
    let u = rng.next_u32();
    let f = (u & 0x7fff_ffff) as u64;
    let (a, b) = if u >> 31 == 0 { (lo, mid) } else { (mid, hi) };
    a as u64 + (((b - a) as u64 * f) >> 31)
}

/// pipe_full(): every page slot of the pipe is taken (slots, not bytes).
#[inline]
fn pipe_full(ch: &ChanRt) -> bool {
    ch.pages.len() as u32 >= ch.pipe_slots
}

/// pipe_write(): a fresh write() (not `waited`) merges into the last page
/// while the pipe is not empty and the message fits there.
fn pipe_merges(ch: &ChanRt, waited: bool, msgs_per_page: u32) -> bool {
    !waited && ch.count > 0 && ch.pages.back().is_some_and(|&m| m < msgs_per_page)
}

/// Take `n` messages from a pipe's pages, oldest first (`pipe_read()`, all
/// kernels): a page all of whose messages are read is released. Returns
/// whether one was released while every slot was taken (`pipe_full()` before
/// the release), which is when `pipe_read()` wakes writers.
#[inline]
pub(crate) fn pipe_consume(ch: &mut ChanRt, mut n: u32) -> bool {
    let mut was_full = false;
    while n > 0 {
        let Some(&front) = ch.pages.front() else { break };
        let take = n.min(front - ch.tail_read);
        ch.tail_read += take;
        n -= take;
        if ch.tail_read == front {
            was_full |= pipe_full(ch);
            ch.pages.pop_front();
            ch.tail_read = 0;
        }
    }
    was_full
}

/// `TaskRt::cpu_lock` of a task that holds or spins on no `Op::CpuLock`.
pub(crate) const NO_CPU_LOCK: u32 = u32::MAX;
/// How long a spin on an `Op::CpuLock` runs before the spinner checks again
/// (it spins on; only a release ends it early).
const SPIN_SEGMENT_NS: u64 = 1_000_000_000;

/// One lock of an `Op::CpuLock` set.
#[derive(Clone, Debug, Default)]
pub(crate) struct CpuLockRt {
    owner: Option<TaskId>,
    /// Tasks spinning on it, in arrival order.
    spinners: Vec<TaskId>,
}

/// `TaskRt::stage` of a `Run`, `RunDist` or read whose CPU time is set
/// (`remaining`) and whose only step left once it has run is `advance()`:
/// at the end of that time (its segment end, popped or inline) `run_ops`
/// advances at once instead of dispatching the op again for a stage that
/// would do just that (one indirect jump less per such op). An op whose time
/// is 0 (no segment) is dispatched again and advances there.
pub(crate) const STAGE_ADVANCE: u8 = 4;

impl Sim<'_> {
    /// Interpret the program of `t`, running on `c`, from its current state.
    /// (Inlined into its only caller, `Sim::run`'s segment-end handler: no
    /// call, prologue or epilogue per event.)
    #[inline(always)]
    pub(crate) fn run_ops(&mut self, c: CpuId, t: TaskId) {
        let wl = self.wl;
        // A segment end (the caller's event) of a `Run` or read: the op is
        // done (`STAGE_ADVANCE`).
        let r = &mut self.rt[t.idx()];
        if r.stage == STAGE_ADVANCE && r.remaining == 0 {
            r.pc += 1;
            r.stage = 0;
        }
        loop {
            let remaining = self.rt[t.idx()].remaining;
            if remaining > 0 {
                let now = self.now;
                let cpu = &mut self.cpus[c.idx()];
                cpu.seg_start = now;
                let at = now + wall_for(remaining, cpu.rate, &self.smt_div);
                // The segment's end is the next event (no other CPU or timer
                // comes first, ties included): handle it here as `Sim::run`
                // would after popping it, without the return to the loop.
                // `run_ops` runs only from `c`'s `SegEnd` handler, as its last
                // step; not past the run's limit, nor on an event where `run`
                // polls its stop flag.
                // Safe because nothing else can happen before it: every other
                // pending event is later in `(at, seq)` order, and what this
                // handler does next (the task's following ops) is what the
                // handler of the popped event would do, with the same clock,
                // RNG draws and sequence numbers (`tests::inline_segment_ends_change_nothing`).
                // The usual case skips the push's tree walk too: the popped
                // entry of `c` (this handler's event) is still in place and
                // the new one comes before every other
                // (`EventQueue::schedule_pop_if_next`).
                // (The test that fails most often first: past `INLINE_MISSES`,
                // 31 segment ends in 32 skip the others.)
                let taken = if (self.inline_misses < INLINE_MISSES || self.events.is_multiple_of(INLINE_PROBE))
                    && self.inline_seg_ends
                    && at <= self.limit
                    && (self.events + 1) & 0x3fff != 0
                {
                    // (`push`: a segment end's slot is its CPU.)
                    let taken = self.queue.schedule_pop_if_next(c.0 as u32, at);
                    self.inline_misses = if taken { 0 } else { (self.inline_misses + 1).min(INLINE_MISSES) };
                    taken
                } else {
                    // `push(at, SegEnd { cpu: c })` without its dispatch on the kind.
                    self.queue.schedule_leaf(c.0 as u32, at);
                    false
                };
                if taken {
                    self.now = at;
                    self.events += 1;
                    #[cfg(test)]
                    {
                        self.inline_hits += 1;
                    }
                    let r = &mut self.rt[t.idx()];
                    r.remaining = 0;
                    if r.stage == STAGE_ADVANCE {
                        // (As at a popped segment end, above.)
                        r.pc += 1;
                        r.stage = 0;
                    }
                    self.cpus[c.idx()].seg_start = at;
                    continue;
                }
                return;
            }
            let r = &self.rt[t.idx()];
            if r.program == noise::KTHREAD_PROGRAM {
                if self.kthread_step(c, t) {
                    continue;
                }
                return;
            }
            if r.pc >= r.code_len {
                // Falling off the end of a program is an exit.
                self.exit_task(c, t);
                return;
            }
            let op = self.code[(r.code_at + r.pc) as usize];
            let stage = r.stage;
            match op {
                Op::Run { .. } | Op::RunDist { .. } => {
                    if stage == 0 {
                        let mut j = match op {
                            Op::Run { ns } => self.jitter(ns),
                            Op::RunDist { lo, mid, hi } => draw_run_dist(&mut self.rng, lo, mid, hi),
                            _ => unreachable!(),
                        };
                        if self.numa_mem.is_some() {
                            j = self.numa_run_ns(t, c, j);
                        }
                        let r = &mut self.rt[t.idx()];
                        // A refill owed from a switch-in at a lock (Sim::owe_refill;
                        // none without locks: `owed_refill` is then never read).
                        if self.has_locks && r.held_locks == 0 {
                            j += std::mem::take(&mut r.owed_refill);
                        }
                        r.remaining = j;
                        r.stage = STAGE_ADVANCE;
                    } else {
                        self.advance(t);
                    }
                }
                Op::Mem { bytes } => {
                    if stage == 0 {
                        // The phase's time varies as a Run's does (DRAM refresh,
                        // page placement, prefetch): its effective bytes are jittered.
                        // FIDELITY(F-801): uniform +-jitter_pct per phase, no measured distribution.
                        let j = self.jitter(bytes);
                        let r = &mut self.rt[t.idx()];
                        r.remaining = j;
                        r.stage = 1;
                        r.mem = true;
                        self.mem_start(c);
                    } else {
                        self.rt[t.idx()].mem = false;
                        self.mem_stop(c);
                        self.advance(t);
                    }
                }
                Op::Write { chan, cost } | Op::WriteTag { chan, cost, .. } | Op::WriteReg { chan_base: chan, cost } => {
                    if stage == 0 {
                        let j = self.jitter(cost);
                        self.start_cost(t, j);
                        if j > 0 {
                            continue;
                        }
                        // No cost to run first (a `cost=0` write): the next
                        // turn of the loop would find nothing but stage 1.
                    }
                    let (chan, tag) = match op {
                        Op::WriteTag { tag, .. } => (chan, tag),
                        Op::WriteReg { .. } => (chan + self.rt[t.idx()].reg, 0),
                        _ => (chan, 0),
                    };
                    // Back from a wait on a full pipe: the switch-in's refill is
                    // paid once the write gets through (`TaskRt::refill_deferred`).
                    if self.rt[t.idx()].refill_deferred && !self.chan_write_blocks(t, chan) {
                        self.rt[t.idx()].refill_deferred = false;
                        let ns = self.refill(c, t);
                        self.owe_refill(t, ns);
                        if self.rt[t.idx()].remaining > 0 {
                            continue;
                        }
                    }
                    match self.chan_write(c, t, chan, tag) {
                        ChanOutcome::Blocked => return,
                        ChanOutcome::Done { woke } => {
                            if woke && self.preempt_point(c) {
                                return;
                            }
                        }
                    }
                }
                Op::Read { chan, cost }
                | Op::ReadTag { chan, cost }
                | Op::ReadReg { chan_base: chan, cost }
                | Op::ReadAll { chan, cost, .. } => {
                    if stage == 0 {
                        let chan = if let Op::ReadReg { .. } = op { chan + self.rt[t.idx()].reg } else { chan };
                        let (outcome, cost) = match op {
                            Op::ReadAll { per_msg, .. } => {
                                let (o, taken) = self.chan_read_all(c, t, chan);
                                (o, cost.saturating_add(per_msg.saturating_mul(taken)))
                            }
                            _ => (self.chan_read(c, t, chan, matches!(op, Op::ReadTag { .. })), cost),
                        };
                        match outcome {
                            ChanOutcome::Blocked => return,
                            ChanOutcome::Done { woke } => {
                                // The message's lines come from the writer's caches,
                                // or from wherever the traffic since pushed them.
                                let xfer = self.msg_read.take().map_or(0, |st| self.cost.message_read_ns(st, c, MSG_BYTES));
                                let j = self.jitter(cost) + xfer;
                                let r = &mut self.rt[t.idx()];
                                // Added to what the read's wakeups of blocked
                                // writers (pipe_read()'s wakeup of wr_wait,
                                // unix_write_space()) already charged the reader
                                // in `after_wake`: try_to_wake_up()'s idle scan, the
                                // enqueue's rq-lock section, the IPI send. An
                                // assignment here dropped them until session 33.
                                r.remaining += j;
                                r.stage = STAGE_ADVANCE;
                                if woke && self.preempt_point(c) {
                                    return;
                                }
                            }
                        }
                    } else {
                        self.advance(t);
                    }
                }
                Op::Sleep { ns } => {
                    // hrtimer_nanosleep() (all profiles): the timer's range is
                    // [now + ns, now + ns + current->timer_slack_ns] and it
                    // fires at the hard end.
                    // FIDELITY(F-027): never earlier, when another hrtimer interrupt on the CPU lands in the range.
                    self.advance(t);
                    let at = self.now + ns + self.timer_slack(t);
                    self.push(at, EvKind::Timer { task: t.0 });
                    self.block(c);
                    return;
                }
                Op::Timer { period, absolute } => {
                    // rt-app's timer event: clock_nanosleep(TIMER_ABSTIME) to
                    // the next activation, or no sleep once the task is past
                    // it (then "relative" re-anchors the grid at now).
                    self.advance(t);
                    let (now, slack) = (self.now, self.timer_slack(t));
                    let r = &mut self.rt[t.idx()];
                    r.timer_next += period;
                    if r.timer_next > now {
                        let at = r.timer_next + slack;
                        self.push(at, EvKind::Timer { task: t.0 });
                        self.block(c);
                        return;
                    }
                    if !absolute {
                        r.timer_next = now;
                    }
                }
                Op::CpuLock { set } => {
                    // Taken (the next op follows) or a spin segment to run:
                    // the loop goes on either way.
                    self.cpu_lock(c, t, set, stage);
                }
                Op::CpuUnlock { set } => {
                    // The workload's validation pairs every unlock with the
                    // lock of its set before it.
                    let held = self.rt[t.idx()].cpu_lock;
                    if held != NO_CPU_LOCK && held / self.cpus.len() as u32 == set {
                        self.rt[t.idx()].cpu_lock = NO_CPU_LOCK;
                        self.cpu_lock_release(held);
                    }
                    self.advance(t);
                }
                Op::SemWait { sem } => {
                    let s = &mut self.sems[sem as usize];
                    if s.woken == Some(t) {
                        s.woken = None; // LWLockAcquire re-try: releaseOK again
                    }
                    if s.count > 0 {
                        s.count -= 1;
                        if s.lock {
                            self.rt[t.idx()].held_locks += 1;
                        }
                        self.advance(t);
                    } else {
                        s.waiters.push_back(t);
                        self.block(c);
                        return;
                    }
                }
                Op::SemPost { sem, n } => {
                    self.advance(t);
                    let sync = if wl.sems[sem as usize].sync { WakeFlags::SYNC } else { WakeFlags::default() };
                    let s = &mut self.sems[sem as usize];
                    let lock = s.lock;
                    if lock {
                        let r = &mut self.rt[t.idx()];
                        r.held_locks = r.held_locks.saturating_sub(1);
                    }
                    if wl.sems[sem as usize].barging {
                        // LWLockRelease() before 9.5: release, then wake the first
                        // waiter unless one woken earlier has not re-tried yet; the
                        // woken task runs its SemWait again (no hand-off).
                        s.count += n.min(u32::MAX / 2) as u64;
                        let w = if s.woken.is_none() { s.waiters.pop_front() } else { None };
                        if let Some(w) = w {
                            s.woken = Some(w);
                            self.wake(w, c, Some(t), sync);
                            if self.preempt_point(c) {
                                return;
                            }
                        }
                        continue;
                    }
                    let mut ws = std::mem::take(&mut self.wake_buf);
                    if n == u32::MAX {
                        s.count = u64::MAX / 2;
                        ws.extend(s.waiters.drain(..));
                    } else {
                        let k = (n as usize).min(s.waiters.len());
                        s.count += (n as usize - k) as u64;
                        ws.extend(s.waiters.drain(..k));
                    }
                    let woke = !ws.is_empty();
                    for &w in &ws {
                        // futex/semaphore hand-off: the woken waiter owns the count it waited for.
                        self.advance(w);
                        if lock {
                            self.rt[w.idx()].held_locks += 1;
                        }
                        self.wake(w, c, Some(t), sync);
                    }
                    ws.clear();
                    self.wake_buf = ws;
                    if woke && self.preempt_point(c) {
                        return;
                    }
                }
                Op::Fork { spec, cost } => {
                    if stage == 0 {
                        let j = self.jitter(cost);
                        self.start_cost(t, j);
                        continue;
                    }
                    self.advance(t);
                    self.create_task(spec, Some(t), c);
                    if self.preempt_point(c) {
                        return;
                    }
                }
                Op::WaitChild => {
                    let r = &mut self.rt[t.idx()];
                    if r.unreaped > 0 {
                        r.unreaped -= 1;
                        self.advance(t);
                    } else if r.live_children == 0 {
                        // wait() with no children returns ECHILD.
                        self.advance(t);
                    } else {
                        r.waiting_child = true;
                        self.block(c);
                        return;
                    }
                }
                Op::Loop { count } => {
                    let r = &mut self.rt[t.idx()];
                    r.pc += 1;
                    r.loops.push((r.pc, count));
                }
                Op::EndLoop => {
                    let r = &mut self.rt[t.idx()];
                    let (body, left) = r.loops.top().expect("validated loops");
                    if *left != u64::MAX {
                        *left -= 1;
                    }
                    if *left == 0 {
                        r.loops.pop();
                        r.pc += 1;
                    } else {
                        r.pc = body;
                    }
                }
                Op::Mark { id } => {
                    self.marks[id as usize] = Some(self.now);
                    self.advance(t);
                }
                Op::MarkNth { id, nth } => {
                    let hits = &mut self.mark_hits[id as usize];
                    *hits += 1;
                    if *hits == nth {
                        self.marks[id as usize] = Some(self.now);
                    }
                    self.advance(t);
                }
                Op::Count { id, n } => {
                    self.counters[id as usize] += n;
                    self.advance(t);
                }
                Op::Exit { cost } => {
                    if stage == 0 {
                        self.start_cost(t, cost);
                        continue;
                    }
                    self.exit_task(c, t);
                    return;
                }
                Op::Barrier { id, parties } => {
                    if self.barrier_arrive(c, t, id, parties) {
                        return;
                    }
                }
                Op::SpinBarrier { id, parties, spin } => {
                    if stage == 0 {
                        if self.barrier_arrive_spin(c, t, id, parties, spin) {
                            return;
                        }
                    } else {
                        // The spin ran out before the last arrival: futex_wait.
                        let sp = &mut self.spinners[id as usize];
                        if let Some(k) = sp.iter().position(|&x| x == t) {
                            sp.swap_remove(k);
                        }
                        self.rt[t.idx()].stage = 0;
                        self.barriers[id as usize].1.push(t);
                        self.block(c);
                        return;
                    }
                }
                Op::Poll { chan } => {
                    if self.chans[chan as usize].count > 0 {
                        self.advance(t);
                    } else {
                        self.chans[chan as usize].readers.push_back(t);
                        self.block(c);
                        return;
                    }
                }
                Op::EpollNext { set, max, block_cost, block_pre } => {
                    // Stages: 0 the call; 3 its blocking path up to
                    // schedule() paid (`block_pre`); 2 woken from its sleep,
                    // the rest of the path to pay; 1 that paid.
                    if stage == 2 {
                        // Woken from a call that slept: the rest of
                        // ep_poll()'s blocking path is paid before the events
                        // are taken.
                        let j = self.jitter(block_cost - block_pre);
                        self.start_cost(t, j);
                        if j > 0 {
                            continue;
                        }
                    }
                    if self.epoll_next(t, set, max) {
                        self.advance(t);
                    } else if stage == 0 && block_pre > 0 {
                        // FIDELITY(F-030): ep_poll() queues the caller and
                        // checks again before schedule(); an event arriving
                        // meanwhile ends the call without a sleep.
                        let j = self.jitter(block_pre);
                        self.start_cost(t, j);
                        self.rt[t.idx()].stage = 3;
                        continue;
                    } else {
                        self.epolls[set as usize].waiters.push_back((t, false));
                        if block_cost > block_pre {
                            self.rt[t.idx()].stage = 2;
                        }
                        self.block(c);
                        return;
                    }
                }
                Op::SelectNext { set, cost } => {
                    if stage == 0 && !self.select_has_result(t, set) && cost > 0 {
                        // The scan of every descriptor comes before the result.
                        let j = self.jitter(cost);
                        self.start_cost(t, j);
                        continue;
                    }
                    if self.select_next(t, set) {
                        self.advance(t);
                    } else {
                        // do_select() sleeps; woken, it scans again (stage 0).
                        self.rt[t.idx()].stage = 0;
                        self.epolls[set as usize].waiters.push_back((t, true));
                        self.block(c);
                        return;
                    }
                }
                Op::WakeQueued { chan, sem_base, cost } => {
                    if stage == 0 {
                        // xlist_splice() and one timestamp for the whole list.
                        let woke = self.splice_queued(c, t, chan, sem_base);
                        if self.posts[t.idx()].is_empty() {
                            self.advance(t);
                        } else {
                            let j = self.jitter(cost);
                            let r = &mut self.rt[t.idx()];
                            r.remaining += j;
                            r.stage = 1;
                        }
                        if woke && self.preempt_point(c) {
                            return;
                        }
                    } else {
                        // The fpost() whose syscall has run: wake its worker, then
                        // (back in user space, a preemption point) the next one.
                        let sem = self.posts[t.idx()].pop().expect("stage 1 has a post left");
                        let woke = self.post_queued(c, t, sem);
                        if self.posts[t.idx()].is_empty() {
                            self.advance(t);
                        } else {
                            let j = self.jitter(cost);
                            self.rt[t.idx()].remaining += j;
                        }
                        if woke && self.preempt_point(c) {
                            return;
                        }
                    }
                }
                Op::SemWake { sem, n } => {
                    self.advance(t);
                    if self.sem_wake(c, t, sem, n) && self.preempt_point(c) {
                        return;
                    }
                }
                Op::WakeLatency { hist, sem } => {
                    let d = self.now.saturating_sub(self.sem_stamp[sem as usize]);
                    self.record_latency(hist, d);
                    self.advance(t);
                }
                Op::ReqStart { hist } => {
                    let now = self.now;
                    self.rt[t.idx()].req_stamps.push_back((hist, now));
                    self.advance(t);
                }
                Op::ReqEnd { hist } => {
                    self.req_end(t, hist);
                    self.advance(t);
                }
            }
        }
    }

    /// The effect of a write of one message: block while full, else queue it
    /// and wake a blocked reader (and, for pipes, the next blocked writer).
    // FIDELITY(F-010): pipe_write() with whole messages per page (all kernels); writer wakeups v5.5+ or pre-v5.5 by profile.
    pub(crate) fn chan_write(&mut self, c: CpuId, t: TaskId, chan: u32, tag: u32) -> ChanOutcome {
        let spec = &self.wl.channels[chan as usize];
        let ch = &mut self.chans[chan as usize];
        let next_writer = match spec.kind {
            ChannelKind::Pipe { msgs_per_page } => {
                // pipe_write(): a fresh write() first merges into the last page
                // while the pipe is not empty and the message fits there; else
                // (and always once back from waiting) it needs a free page slot
                // (pipe_full() counts slots, not bytes) and waits exclusively
                // for one.
                let waited = self.rt[t.idx()].pipe_waited;
                let merge = pipe_merges(ch, waited, msgs_per_page);
                match () {
                    _ if merge => *ch.pages.back_mut().expect("merge needs a page") += 1,
                    _ if !pipe_full(ch) => ch.pages.push_back(1),
                    _ => {
                        ch.writers.push_back(t);
                        self.chan_waits.writes += 1;
                        self.chan_waits.pipe_rewaits += waited as u64;
                        self.rt[t.idx()].pipe_waited = true;
                        self.block(c);
                        return ChanOutcome::Blocked;
                    }
                }
                self.rt[t.idx()].pipe_waited = false;
                // v5.5+: a writer that waited wakes the next one if a slot is
                // still free (before, every waiter had been woken already).
                let exclusive = self.kernel.profile.pipe_exclusive_waits();
                (exclusive && waited && !pipe_full(ch) && !ch.writers.is_empty()).then(|| ch.writers.pop_front().expect("not empty"))
            }
            ChannelKind::Socket => {
                if ch.count >= spec.capacity {
                    ch.writers.push_back(t);
                    self.chan_waits.writes += 1;
                    self.block(c);
                    return ChanOutcome::Blocked;
                }
                None
            }
        };
        let sent = self.cost.message_stamp(c);
        let ch = &mut self.chans[chan as usize];
        ch.count += 1;
        if ch.tagged {
            ch.tags.push_back(tag);
        }
        ch.sent.push_back(sent);
        let reader = (!ch.readers.is_empty()).then(|| ch.readers.pop_front().expect("not empty"));
        let wf = if spec.sync { WakeFlags::SYNC } else { WakeFlags::default() };
        let ep_waiter = if spec.epoll.is_some() { self.epoll_ready(chan) } else { None };
        self.advance(t);
        let mut woke = false;
        for w in reader.into_iter().chain(next_writer) {
            self.wake(w, c, Some(t), wf);
            woke = true;
        }
        if let Some((w, select)) = ep_waiter {
            // ep_poll_callback(): wake_up(), or wake_up_sync() for a sync waker from v6.13.
            let wf = if select || self.kernel.profile.epoll_sync_wakeup() { wf } else { WakeFlags::default() };
            self.wake(w, c, Some(t), wf);
            woke = true;
        }
        ChanOutcome::Done { woke }
    }

    /// Whether a write by `t` to `chan` would block now, as `chan_write`
    /// tests it: pipe_write() neither merges nor finds a free slot
    /// (pipe_full()); a socket's send buffer is full (sock_alloc_send_pskb()).
    fn chan_write_blocks(&self, t: TaskId, chan: u32) -> bool {
        let ch = &self.chans[chan as usize];
        match self.wl.channels[chan as usize].kind {
            ChannelKind::Pipe { msgs_per_page } => !pipe_merges(ch, self.rt[t.idx()].pipe_waited, msgs_per_page) && pipe_full(ch),
            ChannelKind::Socket => ch.count >= self.wl.channels[chan as usize].capacity,
        }
    }

    /// The effect of a read of one message: block while empty, else take it and
    /// wake blocked writers as the channel kind does.
    // FIDELITY(F-010): pipe_read() releases whole pages (writer wakeups: pre-v5.5, v5.5-v6.13 `was_full`, v6.14+ by profile); sockets count messages.
    pub(crate) fn chan_read(&mut self, c: CpuId, t: TaskId, chan: u32, tagged: bool) -> ChanOutcome {
        let spec = &self.wl.channels[chan as usize];
        let ch = &mut self.chans[chan as usize];
        if ch.count == 0 {
            ch.readers.push_back(t);
            self.chan_waits.reads += 1;
            self.block(c);
            return ChanOutcome::Blocked;
        }
        ch.count -= 1;
        self.msg_read = ch.sent.pop_front();
        if ch.tagged {
            let tag = ch.tags.pop_front().unwrap_or(0);
            if tagged {
                self.rt[t.idx()].reg = tag;
            }
        }
        // A request from the network: its latency runs from its arrival.
        if let Some(at) = self.chans[chan as usize].stamps.pop_front() {
            let hist = self.arrivals.as_ref().map_or(0, |a| a.hist);
            self.rt[t.idx()].req_stamps.push_back((hist, at));
        }
        let ch = &mut self.chans[chan as usize];
        // pipe_read(): a page whose messages are all read is released.
        let pipe_wake = match spec.kind {
            ChannelKind::Pipe { .. } => {
                let was_full = pipe_full(ch);
                let released = std::mem::take(&mut ch.wake_writer) | pipe_consume(ch, 1);
                // v5.5-v6.13: `was_full`, taken before the read, wakes a writer
                // whether or not the read released a page.
                released || (was_full && !self.kernel.profile.pipe_read_wakes_on_release())
            }
            ChannelKind::Socket => false,
        };
        if ch.writers.is_empty() {
            // No writer blocked (nearly every read): nothing to wake.
            return ChanOutcome::Done { woke: false };
        }
        let wf = if spec.sync { WakeFlags::SYNC } else { WakeFlags::default() };
        let mut woken = std::mem::take(&mut self.wake_buf);
        match spec.kind {
            // pipe_read(): if the pipe's slots were all taken when the page
            // was released (v6.14+), or when the read began (v5.5-v6.13),
            // one exclusive writer is woken at the end of the read; before
            // v5.5 every waiting writer, on a page released.
            ChannelKind::Pipe { .. } if pipe_wake => {
                if self.kernel.profile.pipe_exclusive_waits() {
                    woken.push(ch.writers.pop_front().expect("not empty"));
                } else {
                    woken.extend(ch.writers.drain(..));
                }
            }
            // unix_write_space(): every writer once the buffer is at most a quarter full.
            ChannelKind::Socket if ch.count * 4 <= spec.capacity => woken.extend(ch.writers.drain(..)),
            _ => {}
        }
        let woke = !woken.is_empty();
        for &w in &woken {
            self.wake(w, c, Some(t), wf);
        }
        woken.clear();
        self.wake_buf = woken;
        ChanOutcome::Done { woke }
    }

    /// `Op::ReadAll`: take every message of `chan` (blocking while it is
    /// empty), then wake blocked writers once as [`Self::chan_read`] does.
    /// Returns the outcome and the number of messages taken.
    pub(crate) fn chan_read_all(&mut self, c: CpuId, t: TaskId, chan: u32) -> (ChanOutcome, u64) {
        let ch = &mut self.chans[chan as usize];
        let n = ch.count;
        if n == 0 {
            return (self.chan_read(c, t, chan, false), 0);
        }
        // All but the last leave without the writer check; the last one's read does it.
        if let ChannelKind::Pipe { .. } = self.wl.channels[chan as usize].kind {
            // v5.5-v6.13 wake a writer if the pipe was full before the read.
            let was_full = pipe_full(ch) && !self.kernel.profile.pipe_read_wakes_on_release();
            ch.wake_writer |= pipe_consume(ch, n - 1) | was_full;
        }
        ch.count = 1;
        // One transfer for the batch (the newest message's, read last).
        let keep = ch.sent.len().saturating_sub(1);
        ch.sent.drain(..keep);
        if ch.tagged {
            let keep = ch.tags.len().saturating_sub(1);
            ch.tags.drain(..keep);
        }
        let stamps = self.chans[chan as usize].stamps.len().saturating_sub(1);
        for _ in 0..stamps {
            if let Some(at) = self.chans[chan as usize].stamps.pop_front() {
                let hist = self.arrivals.as_ref().map_or(0, |a| a.hist);
                self.rt[t.idx()].req_stamps.push_back((hist, at));
            }
        }
        (self.chan_read(c, t, chan, false), n as u64)
    }

    /// A message was queued on `chan`, which is registered in an epoll
    /// instance: put the channel on the instance's ready list unless it is on
    /// it (ep_poll_callback(): list_add_tail), and take one task blocked in
    /// the instance's epoll_wait() or select() (an exclusive waiter) for the
    /// caller to wake, with whether it waits in select().
    pub(crate) fn epoll_ready(&mut self, chan: u32) -> Option<(TaskId, bool)> {
        let e = self.wl.channels[chan as usize].epoll?;
        let ch = &mut self.chans[chan as usize];
        let ep = &mut self.epolls[e.set as usize];
        if !ch.ep_queued {
            ch.ep_queued = true;
            ep.ready.push_back(chan);
        }
        ep.waiters.pop_front()
    }

    /// `Op::EpollNext`: put the next event of `t`'s last epoll_wait() result
    /// on set `set` into its register; with none left, harvest a new result
    /// (ep_send_events(): the members on the ready list that still hold a
    /// message, at most `max`, in ready-list order; each stays on the list,
    /// at its tail, as a level-triggered item does; members found empty
    /// leave it). Returns false when there is no event: the caller blocks
    /// `t` on the set.
    pub(crate) fn epoll_next(&mut self, t: TaskId, set: u32, max: u32) -> bool {
        if self.ep_events.len() <= t.idx() {
            self.ep_events.resize_with(t.idx() + 1, || (u32::MAX, Default::default()));
        }
        let (of, evs) = &mut self.ep_events[t.idx()];
        if *of != set {
            // Events of another set are dropped: level triggered, their
            // channels are still on that set's ready list.
            evs.clear();
            *of = set;
        }
        if evs.is_empty() {
            let ep = &mut self.epolls[set as usize];
            for _ in 0..ep.ready.len() {
                if evs.len() >= max as usize {
                    break;
                }
                let ch = ep.ready.pop_front().expect("scanning the list's length");
                if self.chans[ch as usize].count > 0 {
                    evs.push_back(self.wl.channels[ch as usize].epoll.expect("on an epoll ready list").data);
                    ep.ready.push_back(ch);
                } else {
                    self.chans[ch as usize].ep_queued = false;
                }
            }
        }
        match evs.pop_front() {
            Some(d) => {
                self.rt[t.idx()].reg = d;
                true
            }
            None => false,
        }
    }

    /// Whether `t` still holds events of its last select() on `set`.
    fn select_has_result(&self, t: TaskId, set: u32) -> bool {
        self.ep_events.get(t.idx()).is_some_and(|(of, evs)| *of == set && !evs.is_empty())
    }

    /// `Op::SelectNext`: as [`Self::epoll_next`] with no limit on the
    /// events one call returns, the result in connection order (select()'s
    /// bitmap is scanned by fd; pgbench's threadRun() then serves its
    /// clients in order). Returns false when nothing is ready.
    // FIDELITY(F-684): select() as a harvest of the set's ready list: one scan cost per call.
    pub(crate) fn select_next(&mut self, t: TaskId, set: u32) -> bool {
        if !self.select_has_result(t, set) && self.epoll_next(t, set, u32::MAX) {
            // epoll_next() took the first event in ready order: put it back
            // and order the whole result by connection.
            let first = self.rt[t.idx()].reg;
            let evs = &mut self.ep_events[t.idx()].1;
            evs.push_front(first);
            evs.make_contiguous().sort_unstable();
        }
        match self.ep_events.get_mut(t.idx()).and_then(|(of, evs)| if *of == set { evs.pop_front() } else { None }) {
            Some(d) => {
                self.rt[t.idx()].reg = d;
                true
            }
            None => false,
        }
    }

    /// Stage 0 of an op with a CPU cost: `ns` of work to run before stage 1.
    #[inline]
    fn start_cost(&mut self, t: TaskId, ns: u64) {
        let r = &mut self.rt[t.idx()];
        r.remaining = ns;
        r.stage = 1;
    }

    #[inline]
    pub(crate) fn advance(&mut self, t: TaskId) {
        let r = &mut self.rt[t.idx()];
        r.pc += 1;
        r.stage = 0;
    }

    /// After an op that woke someone: preempt the current task if the kernel
    /// set need_resched on this CPU (return to user space is a preemption point).
    pub(crate) fn preempt_point(&mut self, c: CpuId) -> bool {
        if self.kernel.need_resched(c) {
            self.do_schedule(c, SwitchReason::Preempt);
            return true;
        }
        false
    }

    /// `Op::Barrier`: arrive at barrier `id`. The last of `parties` arrivals
    /// releases the waiters with futex (non-sync) wakeups and continues; the
    /// others block; spinners of `Op::SpinBarrier` at the same id are released
    /// without a wakeup. Returns true when the caller must stop interpreting.
    pub(crate) fn barrier_arrive(&mut self, c: CpuId, t: TaskId, id: u32, parties: u32) -> bool {
        if self.barriers.len() <= id as usize {
            self.barriers.resize_with(id as usize + 1, Default::default);
        }
        let b = &mut self.barriers[id as usize];
        b.0 += 1;
        if b.0 < parties {
            b.1.push(t);
            self.block(c);
            return true;
        }
        b.0 = 0;
        self.advance(t);
        // `Op::SpinBarrier` arrivals still spinning see the generation change:
        // they go on without a futex wakeup; a running spinner's segment ends now.
        if let Some(sp) = self.spinners.get_mut(id as usize) {
            let mut sp = std::mem::take(sp);
            for &s in &sp {
                self.advance(s);
                self.rt[s.idx()].remaining = 0;
                let cpu = self.kernel.tasks[s.idx()].cpu;
                if self.cpus[cpu.idx()].running == Some(s) {
                    self.reschedule_segment(cpu, s);
                }
            }
            sp.clear();
            self.spinners[id as usize] = sp; // keeps its capacity: no allocation per barrier
        }
        let mut ws = std::mem::take(&mut self.wake_buf);
        ws.append(&mut self.barriers[id as usize].1);
        let woke = !ws.is_empty();
        for &w in &ws {
            self.advance(w);
            self.wake(w, c, Some(t), WakeFlags::default());
        }
        ws.clear();
        self.wake_buf = ws;
        woke && self.preempt_point(c)
    }

    /// `TaskSpec::timer_slack_ns` of `t` (a workload task: kernel threads
    /// run no `Sleep` or `Timer` op), from its interpreter state.
    #[inline]
    fn timer_slack(&self, t: TaskId) -> u64 {
        self.rt[t.idx()].timer_slack
    }

    /// `Op::CpuLock` on `c` (schbench 2023's lock_this_cpu()): stage 0
    /// takes the lock of `c` or starts spinning
    /// on it; stage 1 is a spin that ran out (it spins on); stage 2 is a
    /// spinner that was handed the lock, which keeps it if it still runs on
    /// the lock's CPU and otherwise releases it and starts over on `c`.
    /// Returns whether the task holds the lock (false: it spins, its
    /// `remaining` set to a spin segment).
    pub(crate) fn cpu_lock(&mut self, c: CpuId, t: TaskId, set: u32, stage: u8) -> bool {
        let nr = self.cpus.len() as u32;
        if stage == 2 {
            let held = self.rt[t.idx()].cpu_lock;
            if held % nr == c.0 as u32 {
                self.advance(t);
                return true;
            }
            // "we got the lock but we migrated": unlock and try again.
            self.rt[t.idx()].cpu_lock = NO_CPU_LOCK;
            self.cpu_lock_release(held);
        }
        if stage == 1 {
            self.rt[t.idx()].remaining = SPIN_SEGMENT_NS;
            return false;
        }
        let idx = set * nr + c.0 as u32;
        if self.cpu_locks.len() <= idx as usize {
            self.cpu_locks.resize_with(((set + 1) * nr) as usize, Default::default);
        }
        let r = &mut self.rt[t.idx()];
        r.cpu_lock = idx;
        let l = &mut self.cpu_locks[idx as usize];
        if l.owner.is_none() {
            l.owner = Some(t);
            self.advance(t);
            return true;
        }
        // FIDELITY(F-101): spinners take a released lock in arrival order, a running one first.
        l.spinners.push(t);
        r.stage = 1;
        r.remaining = SPIN_SEGMENT_NS;
        false
    }

    /// Release lock `idx` of `Op::CpuLock`: a spinner that is running takes
    /// it (its trylock succeeds at once), else the first spinner, when it
    /// next runs; the taker's spin segment ends now.
    pub(crate) fn cpu_lock_release(&mut self, idx: u32) {
        let l = &mut self.cpu_locks[idx as usize];
        l.owner = None;
        if l.spinners.is_empty() {
            return;
        }
        let running = |s: &TaskId| {
            let cpu = self.kernel.tasks[s.idx()].cpu;
            self.cpus[cpu.idx()].running == Some(*s)
        };
        let k = l.spinners.iter().position(running).unwrap_or(0);
        let s = l.spinners.remove(k);
        l.owner = Some(s);
        let r = &mut self.rt[s.idx()];
        r.stage = 2;
        r.remaining = 0;
        let cpu = self.kernel.tasks[s.idx()].cpu;
        if self.cpus[cpu.idx()].running == Some(s) {
            self.reschedule_segment(cpu, s);
        }
    }

    /// `Op::SpinBarrier`: as [`Self::barrier_arrive`], but an arrival that is
    /// not the last spins for `spin` ns (CPU time, on its CPU) before it
    /// blocks; the last arrival releases the spinners (they go on without a
    /// wakeup, a running spinner's segment ends now) and wakes the sleepers.
    /// libgomp gomp_barrier_wait_end() / do_wait() (config/linux/wait.h).
    pub(crate) fn barrier_arrive_spin(&mut self, c: CpuId, t: TaskId, id: u32, parties: u32, spin: u64) -> bool {
        if self.barriers.len() <= id as usize {
            self.barriers.resize_with(id as usize + 1, Default::default);
        }
        if self.spinners.len() <= id as usize {
            self.spinners.resize_with(id as usize + 1, Default::default);
        }
        let b = &mut self.barriers[id as usize];
        if b.0 + 1 < parties && spin > 0 {
            b.0 += 1;
            self.spinners[id as usize].push(t);
            let r = &mut self.rt[t.idx()];
            r.stage = 1;
            r.remaining = spin;
            return false; // the run loop starts the spin segment
        }
        self.barrier_arrive(c, t, id, parties)
    }

    /// `Op::WakeQueued`, first step (schbench's xlist_wake_all(), both
    /// versions): take every message of `chan` at once (xlist_splice()), stamp
    /// each message's semaphore `sem_base + tag` with the one time read before
    /// the loop, queue the posts on the task (`Sim::posts`) and wake
    /// blocked writers. Returns whether a writer was woken.
    pub(crate) fn splice_queued(&mut self, c: CpuId, t: TaskId, chan: u32, sem_base: u32) -> bool {
        let ch = &mut self.chans[chan as usize];
        ch.count = 0;
        ch.sent.clear();
        if self.posts.len() <= t.idx() {
            self.posts.resize_with(t.idx() + 1, Vec::new);
        }
        let mut posts = std::mem::take(&mut self.posts[t.idx()]);
        posts.clear();
        posts.extend(ch.tags.drain(..).map(|tag| sem_base + tag));
        let mut writers = std::mem::take(&mut self.wake_buf);
        writers.extend(ch.writers.drain(..));
        let wf = if self.wl.channels[chan as usize].sync { WakeFlags::SYNC } else { WakeFlags::default() };
        for &w in &writers {
            self.wake(w, c, Some(t), wf);
        }
        let woke = !writers.is_empty();
        writers.clear();
        self.wake_buf = writers;
        for &sem in &posts {
            self.sem_stamp[sem as usize] = self.now;
        }
        self.posts[t.idx()] = posts;
        woke
    }

    /// `Op::WakeQueued`, one fpost(): post `sem`, waking its waiter if one
    /// waits (futex_wake() of one). Returns whether a task was woken.
    pub(crate) fn post_queued(&mut self, c: CpuId, t: TaskId, sem: u32) -> bool {
        let sem = sem as usize;
        let sf = if self.wl.sems[sem].sync { WakeFlags::SYNC } else { WakeFlags::default() };
        let s = &mut self.sems[sem];
        match s.waiters.pop_front() {
            None => {
                s.count += 1;
                false
            }
            Some(w) => {
                self.advance(w);
                self.wake(w, c, Some(t), sf);
                true
            }
        }
    }

    /// `Op::SemWake`: wake up to `n` current waiters of `sem` (futex_wake);
    /// returns whether anyone was woken.
    pub(crate) fn sem_wake(&mut self, c: CpuId, t: TaskId, sem: u32, n: u32) -> bool {
        let s = &mut self.sems[sem as usize];
        let k = (n as usize).min(s.waiters.len());
        let mut ws = std::mem::take(&mut self.wake_buf);
        ws.extend(s.waiters.drain(..k));
        let wf = if self.wl.sems[sem as usize].sync { WakeFlags::SYNC } else { WakeFlags::default() };
        for &w in &ws {
            self.advance(w);
            self.wake(w, c, Some(t), wf);
        }
        let woke = !ws.is_empty();
        ws.clear();
        self.wake_buf = ws;
        woke
    }

    /// Record `d` ns in latency histogram `hist` (grown on first use).
    pub(crate) fn record_latency(&mut self, hist: u32, d: u64) {
        let h = hist as usize;
        if self.lat_hists.len() <= h {
            self.lat_hists.resize_with(h + 1, Histogram::default);
        }
        if self.lat_sums.len() <= h {
            self.lat_sums.resize(h + 1, 0);
            self.lat_mins.resize(h + 1, u64::MAX);
        }
        self.lat_hists[h].record(d);
        self.lat_sums[h] = self.lat_sums[h].saturating_add(d);
        self.lat_mins[h] = self.lat_mins[h].min(d);
    }

    /// `Op::ReqEnd`: record `now -` the oldest open `Op::ReqStart` stamp of
    /// `hist` of task `t` (requests in flight complete in order); none: no sample.
    pub(crate) fn req_end(&mut self, t: TaskId, hist: u32) {
        let st = &mut self.rt[t.idx()].req_stamps;
        if let Some(k) = st.iter().position(|&(h, _)| h == hist) {
            let (_, t0) = st.remove(k).expect("position is in range");
            let d = self.now.saturating_sub(t0);
            self.record_latency(hist, d);
        }
    }

    /// Mean of latency histogram `h` in ns (0 without samples).
    pub(crate) fn latency_mean(&self, h: usize) -> u64 {
        match self.lat_hists.get(h) {
            Some(x) if x.count() > 0 => self.lat_sums[h] / x.count(),
            _ => 0,
        }
    }
}
