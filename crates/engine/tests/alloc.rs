//! No allocation on the hot path: a counting global allocator shows that a
//! run twice as long allocates no more than a constant more (the set-up and
//! the final result are the same size; only the steady state differs).

use schedlab_engine::{run, SimConfig};
use schedlab_kernel::profile::profile;
use schedlab_workload::{build, Params};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

struct Counting;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// A preset, or `flat-N`: one LLC of N single-thread cores (laptop-4c8t's
/// costs), the shape on which a scan or walk that follows the LLC size shows.
fn machine(name: &str) -> schedlab_machine::Machine {
    let Some(n) = name.strip_prefix("flat-") else { return schedlab_machine::load(name).unwrap() };
    let toml: String = schedlab_machine::load("laptop-4c8t")
        .unwrap()
        .to_toml()
        .lines()
        .filter(|l| !l.starts_with("numbering"))
        .map(|l| match l.split('=').next().unwrap_or("").trim() {
            "cores_per_llc" => format!("cores_per_llc = {n}\n"),
            "threads_per_core" => "threads_per_core = 1\n".to_string(),
            _ => format!("{l}\n"),
        })
        .collect();
    schedlab_machine::from_toml_str(&toml, name).unwrap()
}

/// (allocations, context switches, CPUs) of one run.
fn count(machine_name: &str, kernel: &str, workload: &str, set: &str, duration_ns: Option<u64>) -> (u64, u64, u64) {
    let m = machine(machine_name);
    let cores = m.topology.core_groups();
    let w = build(workload, &Params::parse(set).unwrap(), m.topology.nr_cpus(), &cores).unwrap();
    let cfg = SimConfig { seed: 1, model: Default::default(), schedstat: false, duration_ns, switch_log: false, trace: false };
    let k = profile(kernel).unwrap();
    let before = ALLOCS.load(Relaxed);
    let r = run(&m, k, &w, &cfg);
    (ALLOCS.load(Relaxed) - before, r.voluntary_switches + r.involuntary_switches, m.topology.nr_cpus() as u64)
}

/// Machine, kernel, workload, short and long run's `--set`, short and long run's duration.
type Case = (&'static str, &'static str, &'static str, &'static str, &'static str, Option<u64>, Option<u64>);

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "debug builds run the kernel's allocating invariant checks (fair/mod.rs, balance.rs); CI tests release builds"
)]
fn steady_state_allocates_nothing_per_switch() {
    let cases: &[Case] = &[
        ("laptop-4c8t", "v6.12", "pipe", "loops=20000", "loops=40000", None, None),
        ("x86-12", "v3.10", "hackbench", "groups=2,loops=200,pipe=1", "groups=2,loops=400,pipe=1", None, None),
        ("zen3-2s-nps1", "v6.6", "hackbench", "groups=4,loops=100", "groups=4,loops=300", None, None),
        (
            "spr-112",
            "v6.12",
            "soaker",
            "tasks=448,run_us=100,sleep_us=300",
            "tasks=448,run_us=100,sleep_us=300",
            Some(20_000_000),
            Some(40_000_000),
        ),
        ("x86-12", "v5.13", "pgbench", "", "", Some(100_000_000), Some(200_000_000)),
        // Sleep/wake on one 512-CPU LLC: every wakeup scans the LLC
        // (select_idle_cpu), every CPU going idle balances it (newidle).
        (
            "flat-512",
            "v6.12",
            "soaker",
            "tasks=2048,run_us=100,sleep_us=300",
            "tasks=2048,run_us=100,sleep_us=300",
            Some(20_000_000),
            Some(40_000_000),
        ),
        // The other select_idle_sibling() forms: v5.2 (select_idle_core /
        // select_idle_cpu / select_idle_smt), v5.13 (SIS_PROP, smt prev), v3.10
        // (group walk), on SMT machines with several LLCs.
        ("skylake-2s", "v5.2", "hackbench", "groups=4,loops=100", "groups=4,loops=300", None, None),
        ("zen3-2s-nps4", "v5.13", "hackbench", "groups=4,loops=100", "groups=4,loops=300", None, None),
        ("x86-12", "v3.10", "hackbench", "groups=2,loops=200", "groups=2,loops=1200", None, None),
        ("x86-12", "v2.6.38", "hackbench", "groups=2,loops=200", "groups=2,loops=800", None, None),
    ];
    for &(m, k, w, short, long, d1, d2) in cases {
        let (a1, s1, _) = count(m, k, w, short, d1);
        let (a2, s2, cpus) = count(m, k, w, long, d2);
        assert!(s2 >= s1 + 4_000, "{m} {k} {w}: the long run must switch more ({s1} vs {s2})");
        let extra = a2.saturating_sub(a1);
        eprintln!("{m} {k} {w}: {a1} allocs/{s1} sw, {a2}/{s2}");
        // Per-CPU queues (timeline nodes, wake lists) may still grow to a
        // higher water mark in the longer run: a few reallocations per CPU,
        // far below one per switch (the long runs add 4,000+ switches; 4x
        // more than the allowance on the largest machine).
        let allowed = 200 + 2 * cpus;
        assert!(
            extra <= allowed,
            "{m} {k} {w}: {a1} allocations in {s1} switches, {a2} in {s2}: {extra} more for {} more switches (allowed {allowed})",
            s2 - s1
        );
        assert!(s2 - s1 >= 4 * allowed, "{m} {k} {w}: too few more switches ({}) to tell per-switch allocation", s2 - s1);
    }
}
