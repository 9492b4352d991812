//! Building a runnable scenario from a `ScenarioSpec`: machine, kernel
//! profile (+ patches, features), workload (+ parameters), run options.
//! Every check of the inputs happens here, before anything runs.

use crate::spec::{ScenarioSpec, DEFAULT_DURATION_NS};
use anyhow::{bail, Context, Result};
use schedlab_engine::SimConfig;
use schedlab_kernel::profile::{self, KernelProfile};
use schedlab_kernel::topology::SchedDomains;
use schedlab_machine::Machine;
use schedlab_workload::{Params, Workload};
use std::path::{Path, PathBuf};

/// A scenario with everything loaded and validated, ready to run.
pub struct Prepared {
    pub machine: Machine,
    pub kernel: KernelProfile,
    pub workload: Workload,
    pub cfg: SimConfig,
    pub duration_defaulted: bool,
    /// What it was built from.
    pub spec: ScenarioSpec,
}

pub fn load_machine(name: &str) -> Result<Machine> {
    schedlab_machine::load(name).map_err(|e| anyhow::anyhow!("{e}"))
}

pub fn load_kernel_patched(name: &str, patch: Option<&str>, features: Option<&str>) -> Result<KernelProfile> {
    let mut k = load_kernel(name, None)?;
    if let Some(p) = patch {
        k.apply_patches(p).map_err(anyhow::Error::msg)?;
    }
    if let Some(f) = features {
        k.apply_features(f).map_err(anyhow::Error::msg)?;
    }
    Ok(k)
}

pub fn load_kernel(name: &str, features: Option<&str>) -> Result<KernelProfile> {
    if let Some(note) = profile::deprecation_note(name) {
        eprintln!("schedlab: warning: {note}");
    }
    let mut k = profile::profile(name).map_err(anyhow::Error::msg)?;
    if let Some(f) = features {
        k.apply_features(f).map_err(anyhow::Error::msg)?;
    }
    Ok(k)
}

/// CPUs of each core, cores in order of their first CPU (hwloc logical order).
pub fn cores_of(m: &Machine) -> Vec<Vec<u16>> {
    m.topology.core_groups()
}

/// Parse a duration: `2s`, `500ms`, `250us`, `1000ns`, `1.5s`, `2min`, `1h`.
pub fn parse_duration(s: &str) -> Result<u64> {
    let s = s.trim();
    let num = s.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &s[num.len()..];
    let mult = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        "" => bail!("duration {s:?} needs a unit: e.g. 2s, 500ms, 250us"),
        u if num.trim().is_empty() => bail!("duration {s:?} is not a number with a unit (e.g. 2s); {u:?} has no number"),
        u => bail!("duration {s:?} has an unknown unit {u:?}; use ns, us, ms, s, min or h (lower case)"),
    };
    let v: f64 = num.trim().parse().with_context(|| format!("duration {s:?} is not a number with a unit (e.g. 2s)"))?;
    if !v.is_finite() || v <= 0.0 {
        bail!("duration {s:?} must be positive");
    }
    let ns = v * mult;
    if ns < 1.0 {
        bail!("duration {s:?} is shorter than 1 ns; schedlab's clock counts whole nanoseconds");
    }
    if ns > 3600e9 {
        bail!("duration {s:?} is longer than one simulated hour; use a shorter run");
    }
    Ok(ns as u64)
}

/// Loads and checks everything a run needs; errors name the problem and the fix.
pub fn prepare(spec: &ScenarioSpec) -> Result<Prepared> {
    let machine = load_machine(&spec.machine)?;
    let mut kernel = load_kernel_patched(&spec.kernel, spec.patch.as_deref(), spec.features.as_deref())?;
    if let Some(s) = &spec.sysctl {
        kernel.tunables.numa.apply(s).map_err(anyhow::Error::msg)?;
        if kernel.tunables.numa.enabled == Some(true) && !schedlab_kernel::Kernel::numa_balancing_modelled(&kernel) {
            bail!(
                "--sysctl numa_balancing=1: {}'s NUMA balancing is not modelled (docs/FIDELITY.md F-771: the v4.19-v5.6 form runs on v5.2, the v5.7+ form on v5.11 and later); use one of those kernels, or leave numa_balancing unset ({} runs with it off)",
                kernel.name,
                kernel.name
            );
        }
    }
    let params = Params(spec.params.clone());
    let cores = cores_of(&machine);
    let workload = load_workload(&spec.workload, &params, &machine, &cores)?;
    for t in &workload.tasks {
        if let Some(c) = &t.cpus {
            if let Some(bad) = c.iter().find(|&&x| x as usize >= machine.topology.nr_cpus()) {
                bail!("task {} is bound to CPU {bad}, but {} has {} CPUs", t.name, machine.name, machine.topology.nr_cpus());
            }
        }
    }
    let nodes = machine.topology.nr_nodes();
    if let Some(m) = workload.memory.iter().find(|m| m.initial_node.is_some_and(|n| n as usize >= nodes)) {
        bail!(
            "the memory of process {} starts on node {}, but {} has {nodes} node(s); give initial_node 0..{} or leave it out (first touch)",
            m.mm,
            m.initial_node.unwrap_or(0),
            machine.name,
            nodes - 1
        );
    }
    if let Some(a) = &workload.arrivals {
        let n = machine.topology.nr_cpus();
        if let Some(&(chan, _, cpu)) = a.conns.iter().find(|c| c.2 as usize >= n) {
            bail!(
                "arrivals: the connection on channel {chan} takes its receive interrupts on CPU {cpu}, but {} has {n} CPUs; export the workload for this machine (`workload export --machine`) or give CPUs 0..{}",
                machine.name,
                n - 1
            );
        }
    }
    let mut duration_ns = spec.duration.as_deref().map(parse_duration).transpose()?;
    let mut duration_defaulted = false;
    if workload.time_bounded && duration_ns.is_none() {
        duration_ns = Some(DEFAULT_DURATION_NS);
        duration_defaulted = true;
    }
    Ok(Prepared {
        machine,
        kernel,
        workload,
        cfg: SimConfig {
            seed: spec.seed,
            duration_ns,
            schedstat: spec.schedstat,
            switch_log: spec.switch_log,
            trace: spec.trace,
            model: schedlab_machine::cost::ModelSwitches::parse(spec.machine_model.as_deref().unwrap_or("")).map_err(anyhow::Error::msg)?,
        },
        duration_defaulted,
        spec: spec.clone(),
    })
}

/// `prepare` for `spec` with workload parameters from `--set` strings
/// (`key=value[,key=value...]`); a bad machine or kernel is reported before
/// a bad parameter string, as the CLI always has.
pub fn prepare_sets(spec: ScenarioSpec, sets: &[String]) -> Result<Prepared> {
    let (machine, kernel, patch, features) = (spec.machine.clone(), spec.kernel.clone(), spec.patch.clone(), spec.features.clone());
    match spec.with_sets(sets) {
        Ok(s) => prepare(&s),
        Err(e) => {
            load_machine(&machine)?;
            load_kernel_patched(&kernel, patch.as_deref(), features.as_deref())?;
            Err(e)
        }
    }
}

/// The file a machine named in a file (a validation case, an experiment)
/// stands for: a path ending in `.toml` or `.xml` (as `load_machine` takes
/// it), joined to `dir`, the directory of the file that names it, when
/// relative; None for a preset ("x86-12") or `local`.
pub fn machine_file_in(dir: &Path, machine: &str) -> Option<PathBuf> {
    let lower = machine.to_ascii_lowercase();
    (lower.ends_with(".toml") || lower.ends_with(".xml")).then(|| dir.join(machine))
}

/// `machine_file_in` for a workload: a path ending in `.toml` or `.json` (as
/// `load_workload` takes it) joined to `dir` when relative; None for a built-in.
pub fn workload_file_in(dir: &Path, workload: &str) -> Option<PathBuf> {
    (workload.ends_with(".toml") || workload.ends_with(".json")).then(|| dir.join(workload))
}

/// A built-in by name, or a workload file: `.toml` (docs/workload-format.md)
/// or `.json` (rt-app). Files take no `--set`.
pub fn load_workload(name: &str, params: &Params, machine: &Machine, cores: &[Vec<u16>]) -> Result<Workload> {
    let is_toml = name.ends_with(".toml");
    if is_toml || name.ends_with(".json") {
        if !params.0.is_empty() {
            bail!("--set applies to built-in workloads; edit the file {name} instead");
        }
        let text = std::fs::read_to_string(name).with_context(|| format!("cannot read workload file {name}"))?;
        let w = if is_toml {
            schedlab_workload::file::from_toml_str(&text, name)
        } else {
            schedlab_workload::rtapp::from_json_str(&text, name)
        };
        return w.map_err(|e| anyhow::anyhow!("{e}"));
    }
    schedlab_workload::build(name, params, machine.topology.nr_cpus(), cores).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Domains for display (`machine show`).
pub fn domains(m: &Machine, k: &KernelProfile) -> SchedDomains {
    SchedDomains::build(&m.topology, k)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn durations() {
        assert_eq!(parse_duration("2s").unwrap(), 2_000_000_000);
        assert_eq!(parse_duration("500ms").unwrap(), 500_000_000);
        assert_eq!(parse_duration("1.5s").unwrap(), 1_500_000_000);
        assert!(parse_duration("2").unwrap_err().to_string().contains("unit"));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("xs").is_err());
        assert!(parse_duration("0.5ns").unwrap_err().to_string().contains("1 ns"));
        assert_eq!(parse_duration("1h").unwrap(), 3_600_000_000_000);
        assert_eq!(parse_duration("2min").unwrap(), 120_000_000_000);
        assert!(parse_duration("2h").unwrap_err().to_string().contains("one simulated hour"));
        assert!(parse_duration("1S").unwrap_err().to_string().contains("unknown unit \"S\""));
        assert!(parse_duration("abc").unwrap_err().to_string().contains("not a number"));
        assert!(parse_duration("-1s").unwrap_err().to_string().contains("must be positive"));
    }

    #[test]
    fn defaults_prepare_and_bad_input_is_an_error() {
        let p = prepare(&ScenarioSpec::default()).unwrap();
        assert_eq!((p.machine.name.as_str(), p.workload.name.as_str()), ("x86-12", "hackbench"));
        assert_eq!(p.kernel.name, "v6.12");
        let bad = ScenarioSpec { kernel: "v9.99".into(), ..Default::default() };
        assert!(prepare(&bad).is_err());
        let bad = ScenarioSpec { params: vec![("nosuch".into(), "1".into())], ..Default::default() };
        assert!(prepare(&bad).err().unwrap().to_string().contains("no parameter"));
    }
}
