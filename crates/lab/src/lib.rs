//! schedlab's library: the API boundary between the front ends (the
//! `schedlab` CLI, the Python package) and the simulator core.
//!
//! - `spec`: plain, serialisable specifications (`ScenarioSpec`,
//!   `CompareSpec`, `SweepSpec`) with the defaults in one place;
//! - `scenario`: loading and checking a spec into a runnable `Prepared`;
//! - `run`, `compare::{plan, execute}`, `sweep::sweep`: the operations,
//!   returning data (`RunReport`, `compare::Report`, `SweepRun`);
//! - `stats`: the statistics comparisons use (mmtests' means, Welch's t-test).
//!
//! Nothing here renders text for a terminal except `compare::Progress`
//! (stderr, terminals only) and kernel deprecation warnings on stderr.

pub mod compare;
pub mod reproduce;
pub mod result;
pub mod scenario;
pub mod spec;
pub mod stats;
pub mod sweep;
pub mod validate;

pub use result::RunReport;
pub use scenario::{prepare, Prepared};
pub use spec::{CompareSpec, ReproduceSpec, ScenarioSpec, ValidateSpec};
pub use sweep::{sweep, SweepRun, SweepSpec};

use anyhow::{bail, Result};
use std::sync::atomic::AtomicBool;

/// Prepares and runs one scenario. A run whose metric's end was never
/// reached is returned with `truncated` set (`RunReport::no_result`).
pub fn run(spec: &ScenarioSpec) -> Result<RunReport> {
    run_stoppable(spec, None)
}

/// `run` that ends with an "interrupted" error once `stop` is set.
pub fn run_stoppable(spec: &ScenarioSpec, stop: Option<&AtomicBool>) -> Result<RunReport> {
    let p = prepare(spec)?;
    let never = AtomicBool::new(false);
    match schedlab_engine::run_stoppable(&p.machine, p.kernel.clone(), &p.workload, &p.cfg, stop.unwrap_or(&never)) {
        Some(r) => Ok(RunReport::new(&p, &r)),
        None => bail!("interrupted"),
    }
}

impl RunReport {
    /// The CLI's error for a run without a valid metric (issue 13), if this is one.
    pub fn no_result(&self) -> Option<String> {
        self.truncated.as_ref().map(|why| format!("{} on {} with {}: no result: {why}", self.workload, self.machine.name, self.kernel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_is_deterministic_and_serialises() {
        let spec = ScenarioSpec { params: vec![("groups".into(), "1".into()), ("loops".into(), "10".into())], ..Default::default() };
        let a = run(&spec).unwrap();
        let b = run(&spec).unwrap();
        assert_eq!(a, b);
        assert!(a.metric.value > 0.0 && a.truncated.is_none());
        let text = serde_json::to_string(&a).unwrap();
        let back: RunReport = serde_json::from_str(&text).unwrap();
        assert_eq!((back.events, &back.cpus, &back.params), (a.events, &a.cpus, &a.params));
        let stop = AtomicBool::new(true);
        let long = ScenarioSpec { workload: "pipe".into(), ..Default::default() };
        assert_eq!(run_stoppable(&long, Some(&stop)).unwrap_err().to_string(), "interrupted");
    }
}
