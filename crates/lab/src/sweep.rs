//! Sweeps: the cartesian product machines x kernels (x patches) x workloads x
//! parameter values x seeds, each point a `ScenarioSpec`, run on worker
//! threads; results come back in the product's order, whatever the threads.

use crate::result::RunReport;
use crate::spec::ScenarioSpec;
use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A sweep matrix. Every list that is empty takes the default's one value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SweepSpec {
    pub machines: Vec<String>,
    pub kernels: Vec<String>,
    /// Patch sets per kernel; `None` in the list is the kernel as released.
    pub patches: Vec<Option<String>>,
    pub workloads: Vec<String>,
    /// Swept workload parameters, in order: each key with its values.
    pub params: Vec<(String, Vec<String>)>,
    /// Seeds; empty: 1..=runs.
    pub seeds: Vec<u64>,
    /// Repetitions when `seeds` is empty (default 1).
    pub runs: Option<u64>,
    /// Everything not swept (features, duration, machine model, ...).
    pub base: ScenarioSpec,
}

impl SweepSpec {
    /// Every point of the product, outermost first: machine, kernel, patch,
    /// workload, parameters (first key outermost), seed.
    pub fn points(&self) -> Result<Vec<ScenarioSpec>> {
        let one = |v: &[String], d: &str| if v.is_empty() { vec![d.to_string()] } else { v.to_vec() };
        let machines = one(&self.machines, &self.base.machine);
        let kernels = one(&self.kernels, &self.base.kernel);
        let workloads = one(&self.workloads, &self.base.workload);
        let patches = if self.patches.is_empty() { vec![self.base.patch.clone()] } else { self.patches.clone() };
        let seeds: Vec<u64> = if self.seeds.is_empty() {
            let runs = self.runs.unwrap_or(1);
            if runs == 0 {
                bail!("runs must be at least 1");
            }
            (1..=runs).collect()
        } else {
            self.seeds.clone()
        };
        for (k, vals) in &self.params {
            if vals.is_empty() {
                bail!("sweep parameter {k} has no values; give at least one");
            }
        }
        // Parameter combinations, first key outermost.
        let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
        for (k, vals) in &self.params {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    vals.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push((k.clone(), v.clone()));
                        c
                    })
                })
                .collect();
        }
        let mut out = Vec::new();
        for m in &machines {
            for k in &kernels {
                for p in &patches {
                    for w in &workloads {
                        for c in &combos {
                            for &seed in &seeds {
                                let mut params = self.base.params.clone();
                                params.extend(c.iter().cloned());
                                out.push(ScenarioSpec {
                                    machine: m.clone(),
                                    kernel: k.clone(),
                                    patch: p.clone(),
                                    workload: w.clone(),
                                    params,
                                    seed,
                                    ..self.base.clone()
                                });
                            }
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}

/// One point of a sweep and what it gave (an error is kept as its message).
#[derive(Clone, Debug, Serialize)]
pub struct SweepRun {
    pub spec: ScenarioSpec,
    pub result: std::result::Result<RunReport, String>,
}

/// Runs every point on `jobs` threads (None: available parallelism).
pub fn sweep(spec: &SweepSpec, jobs: Option<usize>, stop: Option<&AtomicBool>) -> Result<Vec<SweepRun>> {
    let points = spec.points()?;
    let n = points.len();
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).clamp(1, n.max(1));
    let next = AtomicUsize::new(0);
    let mut slots: Vec<Option<std::result::Result<RunReport, String>>> = vec![None; n];
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..jobs)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n || stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                            break;
                        }
                        done.push((i, crate::run_stoppable(&points[i], stop).map_err(|e| format!("{e:#}"))));
                    }
                    done
                })
            })
            .collect();
        for h in hs {
            if let Ok(done) = h.join() {
                for (i, r) in done {
                    slots[i] = Some(r);
                }
            }
        }
    });
    if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
        bail!("interrupted");
    }
    points
        .into_iter()
        .zip(slots)
        .map(|(spec, r)| r.map(|result| SweepRun { spec, result }))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| anyhow::anyhow!("a simulation run failed (internal error); please report it with the sweep"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn product_order_and_defaults() {
        let s = SweepSpec {
            kernels: vec!["v6.6".into(), "v6.12".into()],
            params: vec![("groups".into(), vec!["1".into(), "2".into()])],
            runs: Some(2),
            base: ScenarioSpec { params: vec![("loops".into(), "20".into())], ..Default::default() },
            ..Default::default()
        };
        let p = s.points().unwrap();
        assert_eq!(p.len(), 8);
        assert_eq!((p[0].kernel.as_str(), p[0].seed), ("v6.6", 1));
        assert_eq!(p[1].seed, 2);
        assert_eq!(p[2].params, vec![("loops".to_string(), "20".to_string()), ("groups".to_string(), "2".to_string())]);
        assert_eq!(p[4].kernel, "v6.12");
        assert_eq!(p[7].machine, "x86-12");
        assert!(SweepSpec { runs: Some(0), ..Default::default() }.points().is_err());
    }

    #[test]
    fn sweep_results_do_not_depend_on_threads() {
        let s = SweepSpec {
            seeds: vec![1, 2, 3],
            base: ScenarioSpec { params: vec![("groups".into(), "1".into()), ("loops".into(), "10".into())], ..Default::default() },
            ..Default::default()
        };
        let one = sweep(&s, Some(1), None).unwrap();
        let two = sweep(&s, Some(2), None).unwrap();
        let m = |v: &[SweepRun]| v.iter().map(|r| r.result.as_ref().unwrap().to_json()).collect::<Vec<_>>();
        assert_eq!(m(&one), m(&two));
        assert_eq!(one[2].spec.seed, 3);
        let bad = SweepSpec { workloads: vec!["nosuch".into()], ..Default::default() };
        assert!(sweep(&bad, Some(1), None).unwrap()[0].result.is_err());
    }
}
