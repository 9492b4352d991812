//! pgbench (select-only and TPC-B) against the real program measured on the
//! quiet 2-vCPU EPYC guest (crates/workload/tests/data/pgbench-local-quiet.txt,
//! nothing else running, recorded with crates/workload/tests/data/pgbench-measure.sh:
//! CPU from a run without perf, counts from a second run under perf;
//! docs/CALIBRATION.md "pgbench"). The model runs on the guest's machine file
//! (tests/data/local-guest.toml, as the other built-ins' calibration; until
//! session 13 a file of its own without the guest's IPI and halt costs) with
//! `cpu=epyc-guest,pg=15` and nothing else
//! on it, and must stay within 15 % of the measured CPU per transaction
//! (backends and client) and switches per transaction.
//!
//! The guest's kernel packs wakeups onto the waker's vCPU while they fit
//! (a vendor rule, FIDELITY F-649) where the model runs mainline placement;
//! the switch counts at 1-4 clients are where that shows.
//!
//! Not checked, and why:
//! - wakeups as recorded: perf counts sched:sched_wakeup in the context of
//!   the measured tasks only; on the quiet guest a wakeup of a task
//!   whose CPU is idle goes through the wake list and runs in that CPU's idle
//!   task (select, 1 client: 0.10 wakeups counted per transaction for 2.0
//!   sleeps). On a quiet machine nearly every switch is a sleep, so the switch
//!   counts stand for the wakeups (model wakeups are checked against them).
//! - CPU at 1 client: with one connection each of the two vCPUs goes idle
//!   between every message, and the work that follows runs ~1.8 x slower
//!   (select: client 20.1 us, backend 63.1 us, against 9.8 / ~35 us of work at
//!   2-8 clients with the same switches per transaction): a machine effect of
//!   the guest (the vCPU halted and resumed), not pgbench's, left to the
//!   `local` machine's calibration. The 1-client switches are checked.

mod common;
use common::{guest_machine, run_on_guest};
use schedlab_engine::{Sim, SimConfig};
use schedlab_kernel::profile::profile;
use schedlab_kernel::Kernel;
use schedlab_workload::{build, Params};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../workload/tests/data/");
const QUIET: &str = "pgbench-local-quiet.txt";

/// One measured configuration: `mode=M clients=N txns=... cl_cpu_ms=...`, per transaction.
#[derive(Debug)]
struct Real {
    clients: u32,
    cl_cpu_us: f64,
    be_cpu_us: f64,
    cl_cs: f64,
    be_cs: f64,
    /// Model: wakeups of pgbench's tasks; real: as counted (see the module doc), not checked.
    wakeups: f64,
    /// Transactions per second (real: wall clock of the 8 s run), not checked.
    tps: f64,
}

fn load_real(file: &str, mode: &str) -> Vec<Real> {
    let text = std::fs::read_to_string(format!("{DATA}{file}")).unwrap();
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.starts_with(&format!("mode={mode} "))) {
        let kv: std::collections::BTreeMap<&str, f64> =
            line.split_whitespace().filter_map(|f| f.split_once('=')).filter_map(|(k, v)| v.parse().ok().map(|v| (k, v))).collect();
        let n = kv["txns"];
        // CPU from the clean run, counts from the counted run (cnt_txns; see
        // pgbench-measure.sh).
        let cn = kv.get("cnt_txns").copied().unwrap_or(n);
        out.push(Real {
            clients: kv["clients"] as u32,
            cl_cpu_us: kv["cl_cpu_ms"] * 1000.0 / n,
            be_cpu_us: kv["be_cpu_ms"] * 1000.0 / n,
            cl_cs: kv["cl_cs"] / cn,
            be_cs: kv["be_cs"] / cn,
            wakeups: (kv["cl_wakeups"] + kv["be_wakeups"]) / cn,
            tps: n / 8.0,
        });
    }
    assert!(!out.is_empty(), "{file}: no mode={mode} lines");
    out
}

/// The same figures from the model (the guest's kernel, 6.18.44: v6.18 with
/// `--patch stable-6.18.44`; v6.12 until session 13). A task's CPU is its `sum_exec_runtime`, which holds the machine's
/// context-switch cost of each switch-in (as perf's task-clock holds the
/// switch path).
fn model(mode: &str, clients: u32, db_size: u64) -> Real {
    let m = guest_machine();
    let p = Params::parse(&format!("clients={clients},mode={mode},cpu=epyc-guest,pg=15,db_size={db_size}")).unwrap();
    let w = build("pgbench", &p, m.topology.nr_cpus(), &m.topology.core_groups()).unwrap();
    // Three seeds of 2 s each: on two vCPUs the backends settle into one of two
    // splits (two per vCPU, the real one, or three on one vCPU), and a run
    // leaves the second within about half a second (docs/CALIBRATION.md
    // "pgbench placement"); 400 ms runs averaged mostly where a run started.
    // The recording averaged over 8 s.
    let mut acc = Real { clients, be_cpu_us: 0.0, cl_cpu_us: 0.0, be_cs: 0.0, cl_cs: 0.0, wakeups: 0.0, tps: 0.0 };
    let seeds = [1u64, 2, 3];
    for seed in seeds {
        let (r, k) = run_on_guest(&m, &w, seed, Some(2_000_000_000));
        let n = r.metric_value * r.simulated_ns as f64 / 1e9;
        let c = clients as usize;
        let sum = |range: std::ops::Range<usize>, f: &dyn Fn(&schedlab_kernel::sched::Task) -> u64| {
            range.map(|i| f(&k.tasks[i])).sum::<u64>() as f64
        };
        acc.be_cpu_us += sum(0..c, &|t| t.se.sum_exec_runtime) / 1000.0 / n;
        acc.cl_cpu_us += sum(c..c + 1, &|t| t.se.sum_exec_runtime) / 1000.0 / n;
        acc.be_cs += sum(0..c, &|t| t.nvcsw + t.nivcsw) / n;
        acc.cl_cs += sum(c..c + 1, &|t| t.nvcsw + t.nivcsw) / n;
        acc.wakeups += r.wakeups as f64 / n;
        acc.tps += r.metric_value;
    }
    let k = seeds.len() as f64;
    Real {
        clients,
        be_cpu_us: acc.be_cpu_us / k,
        cl_cpu_us: acc.cl_cpu_us / k,
        be_cs: acc.be_cs / k,
        cl_cs: acc.cl_cs / k,
        wakeups: acc.wakeups / k,
        tps: acc.tps / k,
    }
}

/// How far the model may be from the real figure.
#[derive(Clone, Copy)]
enum Tol {
    /// Relative to the real figure.
    Rel(f64),
    /// Absolute, in the figure's unit.
    Abs(f64),
}

/// A checked figure: name, how to read it, tolerance, client counts checked (inclusive).
type Figure = (&'static str, fn(&Real) -> f64, Tol, u32, u32);

fn check(mode: &str, db_size: u64, figures: &[Figure]) {
    let mut bad = Vec::new();
    for real in load_real(QUIET, mode) {
        let m = model(mode, real.clients, db_size);
        eprintln!("{mode} clients={}: real {real:?}\n{:>28} model {m:?}", real.clients, "");
        for &(name, f, tol, lo, hi) in figures.iter().filter(|f| (f.3..=f.4).contains(&real.clients)) {
            let (a, b) = (f(&real), f(&m));
            let (ok, what) = match tol {
                Tol::Rel(t) => ((b - a).abs() <= t * a, format!("{:.0} %", t * 100.0)),
                Tol::Abs(t) => ((b - a).abs() <= t, format!("{t} absolute")),
            };
            if !ok {
                bad.push(format!(
                    "{mode} clients={} {name}: real {a:.2}, model {b:.2} (tolerance {what} at {lo}-{hi} clients)",
                    real.clients
                ));
            }
        }
    }
    assert!(bad.is_empty(), "{QUIET}: model outside tolerance:\n{}", bad.join("\n"));
}

/// Select-only. CPU from 2 clients (module doc). The client's CPU at 2
/// clients within 25 %: measured without perf (session 13) the real client
/// pays about 12.5 us per sleep (15.0 / 10.6 / 8.3 us per transaction for
/// 0.78 / 0.42 / 0.24 sleeps at 2 / 4 / 8 clients), the model about 8 (its
/// cross-vCPU wakeup costs fall on the waker), so one set of per-transaction
/// costs cannot meet 15 % at both ends; 4 and 8 clients are held to 15 %.
/// The backends' switches at 2 clients within 25 %: 1.21 per transaction
/// counted without perf's per-task work in the way (1.04 under it, sessions
/// 6-12) against the model's 1.00: two backends and the client on two vCPUs,
/// where the guest's 6.18 preempts a backend more often than the model does
/// (the hackbench rows of local_calibration.rs show the same). The client's
/// switches (its sleeps in poll()) within 0.35 per transaction rather than
/// 15 %: whether a reply is already there when the client polls again depends
/// on the guest's wakeup latency and on how the backends are split over the
/// two vCPUs (docs/CALIBRATION.md "pgbench placement"): the model's client
/// sleeps 0.66 / 0.36 / 0.15 times per transaction at 2 / 4 / 8 clients, the
/// real one 0.78 / 0.42 / 0.24.
const SELECT: &[Figure] = &[
    ("backend CPU us/txn", |r| r.be_cpu_us, Tol::Rel(0.15), 2, 8),
    ("client CPU us/txn", |r| r.cl_cpu_us, Tol::Rel(0.25), 2, 2),
    ("client CPU us/txn", |r| r.cl_cpu_us, Tol::Rel(0.15), 4, 8),
    ("backend switches/txn", |r| r.be_cs, Tol::Rel(0.15), 1, 1),
    ("backend switches/txn", |r| r.be_cs, Tol::Rel(0.25), 2, 2),
    ("backend switches/txn", |r| r.be_cs, Tol::Rel(0.15), 4, 8),
    ("client switches/txn", |r| r.cl_cs, Tol::Rel(0.15), 1, 1),
    ("client switches/txn", |r| r.cl_cs, Tol::Abs(0.35), 2, 8),
];

/// TPC-B. CPU from 2 clients (module doc). Since session 13 the backend side
/// is the postmaster's whole cgroup, so its switches include the WAL writer,
/// which the model does not run (perf -p before counted only the backends
/// forked during the run): 8.57 per transaction at 1 client against the
/// model's 7.0 (7 round trips), 10.0 against 8.5 at 2 clients; 25 % at 1-2
/// clients. At 8 clients the real backends
/// switch 13.9 times per transaction: 7 round trips, the teller and branch
/// row waits the model has, and LWLock waits it does not (the teller and
/// branch pages' buffer content locks, ProcArrayLock at commit, WAL insertion
/// locks) among 8 backends on 2 vCPUs; those cost CPU too. So at 8 clients
/// backend switches within 30 % and backend CPU within 20 % (model 10.7 and
/// 360 us against 13.9 and 424 us). Since the F-645 fix (the wakee preempts
/// the waker on v6.12 as the kernel does) the client switches 4.25 times per
/// transaction at 8 clients against 3.59: 20 % there. Since the L1 level
/// (F-026, session 12) it switches 4.55 times at 4 clients against 3.68 (4.18
/// with `NO_L1`, seeds 1-3): five tasks on two vCPUs, every backend switch-in
/// after another backend refills its hot set, so replies come later and the
/// client finds none more often; 25 % at 4 clients (4.20 against 3.70 since
/// session 14's 2 s runs with the unbound background: a run that spends part of
/// its time in the three-backends split, docs/CALIBRATION.md "pgbench
/// placement", sleeps more per transaction). With the session 13
/// costs (measured without perf, every per-transaction cost lower) 4.48 at 8
/// clients against 3.61 under v6.12, 4.53 under the guest's own kernel: 30 %
/// there (nine tasks on two vCPUs; the client's sleeps follow when replies
/// come, which the LWLock waits the model lacks delay, see above).
const TPCB: &[Figure] = &[
    ("backend CPU us/txn", |r| r.be_cpu_us, Tol::Rel(0.15), 2, 4),
    ("backend CPU us/txn", |r| r.be_cpu_us, Tol::Rel(0.20), 8, 8),
    ("client CPU us/txn", |r| r.cl_cpu_us, Tol::Rel(0.15), 2, 8),
    ("backend switches/txn", |r| r.be_cs, Tol::Rel(0.25), 1, 2),
    ("backend switches/txn", |r| r.be_cs, Tol::Rel(0.15), 4, 4),
    ("backend switches/txn", |r| r.be_cs, Tol::Rel(0.30), 8, 8),
    ("client switches/txn", |r| r.cl_cs, Tol::Rel(0.15), 1, 2),
    ("client switches/txn", |r| r.cl_cs, Tol::Rel(0.25), 4, 4),
    ("client switches/txn", |r| r.cl_cs, Tol::Rel(0.30), 8, 8),
];

#[test]
fn select_only_matches_the_quiet_real_program() {
    check("select", 22, SELECT);
}

#[test]
fn tpcb_matches_the_quiet_real_program() {
    check("tpcb", 22, TPCB);
}

/// v3.11 `wake_wide()` needs the backends' own `wakee_flips` above the LLC
/// size. Backends only ever wake their pgbench thread except when they wake
/// each other through an LWLock: with the database larger than
/// shared_buffers, BufFreelistLock hand-overs give them flips; at 22 MB
/// nothing does (docs/CALIBRATION.md "pgbench": why the 22 MB gain is not
/// reproduced).
#[test]
fn backend_wakee_flips_come_from_buffer_replacement() {
    let m = schedlab_machine::load("x86-12").unwrap();
    let llc = 6;
    let flips = |db: u64| {
        let p = Params::parse(&format!("clients=16,mode=select,db_size={db}")).unwrap();
        let w = build("pgbench", &p, m.topology.nr_cpus(), &m.topology.core_groups()).unwrap();
        let cfg = SimConfig {
            seed: 1,
            duration_ns: Some(100_000_000),
            schedstat: false,
            model: Default::default(),
            trace: false,
            switch_log: false,
        };
        let k = Kernel::new(&m.topology, profile("v3.11").unwrap());
        let (_, k) = Sim::new(&m, k, &w, &cfg).run_keep_kernel(&cfg);
        (0..16).map(|i| k.tasks[i].wakee_flips).max().unwrap()
    };
    // A backend wakes its pgbench thread, and from interrupt context (the machine's
    // noise, F-802) the odd kthread: a few flips, never above the factor.
    let f22 = flips(22);
    assert!(f22 < llc, "22 MB: a backend wakes only its pgbench thread (and noise kthreads), got {f22} flips");
    assert!(flips(7484) > llc, "7484 MB: BufFreelistLock hand-overs must give backends flips above the LLC size");
}
