//! Open-loop requests from the network (`Workload::arrivals`): remote clients
//! send requests at a fixed mean rate, whatever the server's speed, so an A/B
//! comparison holds the offered load constant as production comparisons do.
//!
//! Each connection's packets are delivered by the NIC queue interrupt of one
//! CPU (RSS); the requests of all connections of that CPU form a Poisson
//! process there (rate shared in proportion to its connections). An arrival
//! takes the receive path's time (`rx_ns`: interrupt, NET_RX softirq, TCP
//! receive) from the task it interrupts, queues the request on its
//! connection's channel with its arrival time (the reader's `ReqEnd` closes
//! the latency), and wakes a reader blocked there by try_to_wake_up() from that
//! CPU with the interrupted task as `current` and no WF_SYNC
//! (sock_def_readable() from softirq context: the waker is whoever was
//! interrupted, as wake_affine() and record_wakee() see it). A full channel
//! drops the request (counted), as a full socket receive queue would.
// FIDELITY(F-803): Poisson arrivals per CPU, a fixed receive-path cost, no NAPI batching, no GRO, no TX completions, drops instead of TCP flow control.

use schedlab_kernel::{SwitchReason, WakeFlags};
use schedlab_topology::CpuId;
use schedlab_workload::Arrivals;

use crate::rng::Pcg32;
use crate::{EvKind, Sim, SimConfig};

/// Counts of the arrivals, for reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArrivalStats {
    /// Requests that arrived (queued or dropped).
    pub arrived: u64,
    /// Requests dropped because their connection's queue was full.
    pub dropped: u64,
    /// Arrivals that woke a blocked reader.
    pub wakeups: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct ArrivalRt {
    /// Mean gap between arrivals on each CPU (0: no connection there).
    gap_ns: Vec<u64>,
    /// Connections delivered on each CPU: (channel, tag).
    conns: Vec<Vec<(u32, u32)>>,
    next: Vec<u32>,
    rx_ns: u64,
    pub(crate) hist: u32,
    rng: Pcg32,
    pub(crate) stats: ArrivalStats,
}

impl ArrivalRt {
    pub(crate) fn new(a: &Arrivals, nr_cpus: usize, cfg: &SimConfig) -> ArrivalRt {
        let mut conns = vec![Vec::new(); nr_cpus];
        for &(chan, tag, cpu) in &a.conns {
            // The builders place interrupts on existing CPUs; a workload file's
            // out-of-range CPU wraps (documented in docs/workload-format.md).
            conns[cpu as usize % nr_cpus].push((chan, tag));
        }
        let total = a.conns.len() as f64;
        let gap_ns = conns
            .iter()
            .map(|c| if c.is_empty() { 0 } else { ((1e9 * total / c.len() as f64) / a.rate_per_s).round().max(1.0) as u64 })
            .collect();
        ArrivalRt {
            gap_ns,
            next: vec![0; nr_cpus],
            conns,
            rx_ns: a.rx_ns,
            hist: a.hist,
            rng: Pcg32::new(cfg.seed, 0x6172_7276),
            stats: ArrivalStats::default(),
        }
    }

    fn exp(&mut self, mean: u64) -> u64 {
        let u = (self.rng.next_u32() as f64 + 1.0) / 4_294_967_296.0;
        ((-u.ln() * mean as f64) as u64).max(1)
    }
}

impl Sim<'_> {
    /// Arm the first arrival of every CPU that takes interrupts of some connection.
    pub(crate) fn arrivals_start(&mut self) {
        let Some(a) = self.arrivals.as_mut() else { return };
        let mut first = Vec::new();
        for c in 0..a.gap_ns.len() {
            if a.gap_ns[c] > 0 {
                let g = a.gap_ns[c];
                first.push((a.exp(g), c as u16));
            }
        }
        for (at, c) in first {
            self.push(at, EvKind::Arrival { cpu: c });
        }
    }

    /// A request arrives on `c`.
    pub(crate) fn arrival(&mut self, c: CpuId) {
        let a = self.arrivals.as_mut().expect("arrival events only with arrivals");
        let gap = a.gap_ns[c.idx()];
        let d = a.exp(gap);
        let k = a.next[c.idx()] as usize;
        let (chan, tag) = a.conns[c.idx()][k];
        a.next[c.idx()] = ((k + 1) % a.conns[c.idx()].len()) as u32;
        a.stats.arrived += 1;
        let rx = a.rx_ns;
        self.push(self.now + d, EvKind::Arrival { cpu: c.0 });
        let current = self.cpus[c.idx()].running;
        if let Some(t) = current {
            self.steal(c, t, rx);
        }
        let cap = self.wl.channels[chan as usize].capacity;
        // The request's lines were written by this CPU's receive path.
        let sent = self.cost.message_stamp(c);
        let ch = &mut self.chans[chan as usize];
        if ch.count >= cap {
            self.arrivals.as_mut().expect("checked").stats.dropped += 1;
            return;
        }
        ch.count += 1;
        if ch.tagged {
            ch.tags.push_back(tag);
        }
        ch.stamps.push_back(self.now);
        ch.sent.push_back(sent);
        let reader = ch.readers.pop_front();
        let ep_waiter = self.epoll_ready(chan);
        if reader.is_none() && ep_waiter.is_none() {
            return;
        }
        for r in reader.into_iter().chain(ep_waiter.map(|(w, _)| w)) {
            self.arrivals.as_mut().expect("checked").stats.wakeups += 1;
            self.wake(r, c, current, WakeFlags::default());
        }
        self.irq_exit_preempt(c);
    }

    /// Return from an interrupt on `c`: if a wakeup there set need_resched,
    /// the interrupted task is preempted now (irq exit is a preemption point).
    pub(crate) fn irq_exit_preempt(&mut self, c: CpuId) {
        if let Some(t) = self.cpus[c.idx()].running {
            // The waker's share of the wakeup (scan, remote lock) was added to its work.
            self.reschedule_segment(c, t);
            if self.kernel.need_resched(c) {
                self.do_schedule(c, SwitchReason::Preempt);
            }
        }
    }
}
