//! Plain specifications of what to simulate: the one place where schedlab's
//! defaults live ("v6.12", "x86-12", hackbench, seed 1, 5 runs per side).
//! Front ends (the CLI's arguments, experiment files, the Python package)
//! build these; `scenario::prepare` and `compare::plan` turn them into runs.

use serde::{Deserialize, Serialize};

/// Default machine preset.
pub const DEFAULT_MACHINE: &str = "x86-12";
/// Default kernel profile.
pub const DEFAULT_KERNEL: &str = "v6.12";
/// Default workload.
pub const DEFAULT_WORKLOAD: &str = "hackbench";
/// Default seed of a single run.
pub const DEFAULT_SEED: u64 = 1;
/// Default repetitions per side and point of a comparison.
pub const DEFAULT_RUNS: u64 = 5;
/// Simulated time of a time-bounded workload when no duration is given.
pub const DEFAULT_DURATION_NS: u64 = 1_000_000_000;

/// One simulation run: machine, kernel (+ patches, feature bits), workload
/// (+ parameters), seed, duration, machine-model switches, and which
/// optional records to keep.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScenarioSpec {
    /// Machine preset, `local`, or a .toml / .xml (hwloc) file.
    pub machine: String,
    /// Kernel profile name (`schedlab kernels`).
    pub kernel: String,
    /// Patches on top of the profile (comma list).
    pub patch: Option<String>,
    /// Feature bits to flip (NO_PLACE_LAG,NEXT_BUDDY).
    pub features: Option<String>,
    /// Built-in workload name or workload file (.toml / rt-app .json).
    pub workload: String,
    /// Workload parameters, in order (a later key overrides an earlier one).
    pub params: Vec<(String, String)>,
    pub seed: u64,
    /// Simulated run time (`2s`, `500ms`); None: 1 s for time-bounded workloads.
    pub duration: Option<String>,
    /// Machine-model switches (NO_CACHE,...).
    pub machine_model: Option<String>,
    /// Render /proc/schedstat at the end of the run.
    pub schedstat: bool,
    /// Record every context switch.
    pub switch_log: bool,
    /// Record the sched tracepoints.
    pub trace: bool,
    /// Kernel sysctls (`numa_balancing=0|1,...`; fair/numa.rs). Left out of
    /// the serialised spec when None, so stored sweep keys stay as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sysctl: Option<String>,
}

impl Default for ScenarioSpec {
    fn default() -> Self {
        ScenarioSpec {
            machine: DEFAULT_MACHINE.into(),
            kernel: DEFAULT_KERNEL.into(),
            patch: None,
            features: None,
            workload: DEFAULT_WORKLOAD.into(),
            params: Vec::new(),
            seed: DEFAULT_SEED,
            duration: None,
            machine_model: None,
            schedstat: false,
            switch_log: false,
            trace: false,
            sysctl: None,
        }
    }
}

impl ScenarioSpec {
    /// Parameters from `key=value[,key=value...]` strings (the CLI's `--set`).
    pub fn with_sets(mut self, sets: &[String]) -> anyhow::Result<Self> {
        let p = schedlab_workload::Params::parse(&sets.join(",")).map_err(|e| anyhow::anyhow!("{e}"))?;
        self.params = p.0;
        Ok(self)
    }
}

/// An A/B comparison: side A against side B on every (machine, workload),
/// over a parameter matrix, `runs` seeded repetitions per side and point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompareSpec {
    pub machines: Vec<String>,
    pub workloads: Vec<String>,
    /// `[WORKLOAD:]key=value[,value...]` entries; a key with several values is the swept axis.
    pub set: Vec<String>,
    /// Side A (baseline).
    pub kernel: String,
    pub patch: Option<String>,
    pub features: Option<String>,
    pub machine_model: Option<String>,
    /// Side B; None: A's. For the optional fields `none` or "" means "none".
    pub vs: Option<String>,
    pub patch_b: Option<String>,
    pub features_b: Option<String>,
    pub machine_model_b: Option<String>,
    /// Repetitions per side and point, seeds 1..=runs.
    pub runs: u64,
    pub duration: Option<String>,
    /// Worker threads (None: available parallelism); results do not depend on it.
    pub jobs: Option<usize>,
}

impl Default for CompareSpec {
    fn default() -> Self {
        CompareSpec {
            machines: vec![DEFAULT_MACHINE.into()],
            workloads: vec![DEFAULT_WORKLOAD.into()],
            set: Vec::new(),
            kernel: DEFAULT_KERNEL.into(),
            patch: None,
            features: None,
            machine_model: None,
            vs: None,
            patch_b: None,
            features_b: None,
            machine_model_b: None,
            runs: DEFAULT_RUNS,
            duration: None,
            jobs: None,
        }
    }
}

/// A validation run (`schedlab validate`): which cases of the case files
/// (docs/validation-format.md), with which seeds and repetitions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ValidateSpec {
    /// Only this case (its `name`), or every case of one file (its stem).
    pub case: Option<String>,
    /// Only the cases marked `quick = true`.
    pub quick: bool,
    /// Runs per side and point for every case (None: each case's `runs`).
    pub runs: Option<u64>,
    /// First seed; run k of a point uses seed `seed + k`.
    pub seed: u64,
    /// Worker threads (None: available parallelism); results do not depend on it.
    pub jobs: Option<usize>,
    /// Case directory (None: ./validation, else the one in the source tree).
    pub dir: Option<std::path::PathBuf>,
}

impl Default for ValidateSpec {
    fn default() -> Self {
        ValidateSpec { case: None, quick: false, runs: None, seed: DEFAULT_SEED, jobs: None, dir: None }
    }
}

/// A study to reproduce (`schedlab reproduce`): an experiment file
/// (docs/experiment-format.md) by name or path.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReproduceSpec {
    /// A file stem under the experiments directory (wakee-flips) or a path to a .toml file.
    pub name: String,
    /// Experiments directory (None: ./experiments, else the one in the source tree).
    pub dir: Option<std::path::PathBuf>,
    /// Worker threads (None: available parallelism); results do not depend on it.
    pub jobs: Option<usize>,
}
