//! Shared by the calibration tests against the measuring guest: its machine
//! file and one run under its own kernel.
#![allow(dead_code)] // each test file uses part of it

use schedlab_engine::{RunResult, Sim, SimConfig};
use schedlab_kernel::profile::profile;
use schedlab_kernel::Kernel;
use schedlab_machine::Machine;
use schedlab_workload::Workload;

/// tests/data/local-guest.toml: `schedlab machine show local --toml` on the
/// 2-vCPU guest the real programs were measured on, with its measured costs
/// and noise (docs/CALIBRATION.md).
pub fn guest_machine() -> Machine {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/local-guest.toml")).unwrap();
    schedlab_machine::from_toml_str(&text, "local-guest.toml").unwrap()
}

/// One run of `w` on `m` under the guest's kernel (v6.18 with `--patch
/// stable-6.18.44`), without schedstat or traces, keeping the kernel for its
/// per-task counts.
pub fn run_on_guest(m: &Machine, w: &Workload, seed: u64, duration_ns: Option<u64>) -> (RunResult, Kernel) {
    run_on_guest_with(m, w, seed, duration_ns, false)
}

/// [`run_on_guest`], with `RunResult::switch_log` filled when `switch_log` is set.
pub fn run_on_guest_with(m: &Machine, w: &Workload, seed: u64, duration_ns: Option<u64>, switch_log: bool) -> (RunResult, Kernel) {
    run_guest_kernel(m, w, seed, duration_ns, switch_log, false)
}

/// [`run_on_guest`] with `--explain`'s decision counts kept in `Kernel::explain`.
pub fn run_on_guest_explained(m: &Machine, w: &Workload, seed: u64, duration_ns: Option<u64>) -> (RunResult, Kernel) {
    run_guest_kernel(m, w, seed, duration_ns, false, true)
}

fn run_guest_kernel(
    m: &Machine,
    w: &Workload,
    seed: u64,
    duration_ns: Option<u64>,
    switch_log: bool,
    explain: bool,
) -> (RunResult, Kernel) {
    let cfg = SimConfig { seed, duration_ns, schedstat: false, model: Default::default(), trace: false, switch_log };
    let mut kp = profile("v6.18").unwrap();
    kp.apply_patches("stable-6.18.44").unwrap();
    let mut k = Kernel::new(&m.topology, kp);
    if explain {
        k.enable_explain(false);
    }
    Sim::new(m, k, w, &cfg).run_keep_kernel(&cfg)
}
