//! The L1 level of the cost model (docs/FIDELITY.md F-026) against what
//! interleaving independent ping-pong pairs on one vCPU costs the real
//! programs on the EPYC guest (tests/data/l1-pairs-local.txt,
//! scripts/calibrate-l1-pairs; docs/CALIBRATION.md "L1 hot set").
//!
//! With one pair on a CPU every switch-in finds the task's data where its
//! partner left the L1; with two or more pairs most switch-ins follow a task of
//! another pair, and the real cost per switch grows by 0.6 us (2 pairs) to
//! 1.15 us (8 pairs) although the switches per round trip stay exactly 2.
//!
//! - Calibration: `DEFAULT_L1_HOT` (the hot set) was chosen so that the
//!   model's pipe pairs pay this premium (least squares over 2, 4 and 8 pairs).
//! - Validation (not fitted): tbench's client/server pairs interleaved the
//!   same way slow down by the measured share.

use std::collections::BTreeMap;

mod common;
use common::guest_machine;
use schedlab_engine::{Sim, SimConfig};
use schedlab_kernel::profile::profile;
use schedlab_kernel::Kernel;
use schedlab_machine::cost::ModelSwitches;
use schedlab_workload::{build, Params};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/");

/// Mean of the recorded repeats per (bench, N).
fn real() -> BTreeMap<(String, u32), f64> {
    let text = std::fs::read_to_string(format!("{DATA}l1-pairs-local.txt")).unwrap();
    let mut acc: BTreeMap<(String, u32), (f64, f64)> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let kv: BTreeMap<&str, &str> = line.split_whitespace().filter_map(|w| w.split_once('=')).collect();
        let n: u32 = kv.get("pairs").or(kv.get("clients")).unwrap().parse().unwrap();
        let v: f64 = kv.get("us_per_switch").or(kv.get("mb_per_s")).unwrap().parse().unwrap();
        let e = acc.entry((kv["bench"].to_string(), n)).or_default();
        e.0 += v;
        e.1 += 1.0;
    }
    acc.into_iter().map(|(k, (s, n))| (k, s / n)).collect()
}

/// One simulated run on the guest's machine file (v6.12, seed 1): the metric.
fn model(workload: &str, params: &str, sw: &str, duration_ns: u64) -> f64 {
    let m = guest_machine();
    let p = Params::parse(params).unwrap();
    let w = build(workload, &p, m.topology.nr_cpus(), &m.topology.core_groups()).unwrap();
    let cfg = SimConfig {
        seed: 1,
        duration_ns: Some(duration_ns),
        schedstat: false,
        model: ModelSwitches::parse(sw).unwrap(),
        trace: false,
        switch_log: false,
    };
    let k = Kernel::new(&m.topology, profile("v6.12").unwrap());
    let r = Sim::new(&m, k, &w, &cfg).run(&cfg);
    assert!(r.metric_missing.is_none(), "{workload} {params}: {:?}", r.metric_missing);
    r.metric_value
}

/// Model us per switch of N pipe pairs on CPU 1: will-it-scale's
/// context_switch1 unbound (the same two-pipe ping-pong as perf bench sched
/// pipe), pinned; its ops are one-way switches.
fn pipe_us_per_switch(n: u32, sw: &str) -> f64 {
    1e6 / model("context_switch1", &format!("pairs={n},affinity=0,pin=1"), sw, 200_000_000)
}

#[test]
fn pipe_pairs_pay_the_measured_premium_per_switch() {
    let real = real();
    let r1 = real[&("pipe".into(), 1)];
    let (m1, off1) = (pipe_us_per_switch(1, ""), pipe_us_per_switch(1, "NO_L1"));
    let mut bad = Vec::new();
    for n in [2, 4, 8] {
        let want = real[&("pipe".into(), n)] - r1;
        let got = pipe_us_per_switch(n, "") - m1;
        let without = pipe_us_per_switch(n, "NO_L1") - off1;
        println!("pipe pairs={n}: premium per switch real {want:.3} us, model {got:.3} us (without the L1 level {without:.3})");
        // 0.3 us: the model's premium saturates by 4 pairs (an L1 holds about
        // three hot sets), the real one keeps growing (F-026).
        if (got - want).abs() > 0.3 {
            bad.push(format!("pairs={n}: real {want:.3}, model {got:.3} us per switch (tolerance 0.3)"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn tbench_pairs_slow_down_by_the_measured_share() {
    let real = real();
    let r1 = real[&("tbench".into(), 1)];
    let m1 = model("tbench", "clients=1,pin=1", "", 1_000_000_000);
    let mut bad = Vec::new();
    for n in [2, 4, 8] {
        // Time per MB relative to one pair.
        let want = r1 / real[&("tbench".into(), n)] - 1.0;
        let got = m1 / model("tbench", &format!("clients={n},pin=1"), "", 1_000_000_000) - 1.0;
        println!("tbench clients={n}: time per MB +{:.1} % real, +{:.1} % model", want * 100.0, got * 100.0);
        // Within a factor of 2 where the L1 decides (2 and 4 pairs); at 8 pairs
        // the real slowdown keeps growing where the model's has saturated.
        let ok = if n == 8 { got > 0.25 * want } else { got > 0.5 * want && got < 2.0 * want };
        if !ok {
            bad.push(format!("clients={n}: real +{:.1} %, model +{:.1} %", want * 100.0, got * 100.0));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
