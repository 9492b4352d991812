//! Reproducing studies: experiment files (docs/experiment-format.md), one
//! study per file, each a list of comparisons with the published numbers
//! they are read against. `plan` loads a study and plans every comparison
//! before any runs; `execute` runs them and returns the data (`Study`).
//! Renderers (text tables, JSON, CSV, HTML) live in the front ends.

use crate::compare::{self, Progress};
use crate::scenario::{machine_file_in, workload_file_in};
use crate::spec::{CompareSpec, ReproduceSpec, DEFAULT_KERNEL, DEFAULT_MACHINE, DEFAULT_RUNS, DEFAULT_WORKLOAD};
use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// A string or a list of strings (`set = "clients=1,2"` or `set = ["clients=1,2", "mode=ro"]`).
#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum Strings {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    name: String,
    description: String,
    #[serde(default)]
    source: Option<String>,
    comparison: Vec<toml::Spanned<ComparisonDoc>>,
}

/// Exactly the arguments of `schedlab compare` (dashes become underscores), plus `published`.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct ComparisonDoc {
    machine: Option<Strings>,
    workload: Option<Strings>,
    set: Option<Strings>,
    kernel: Option<String>,
    vs: Option<String>,
    patch: Option<String>,
    patch_b: Option<String>,
    features: Option<String>,
    features_b: Option<String>,
    machine_model: Option<String>,
    machine_model_b: Option<String>,
    runs: Option<u64>,
    duration: Option<String>,
    published: Option<String>,
}

/// One comparison of an experiment file.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Line of its `[[comparison]]` table.
    pub line: usize,
    pub spec: CompareSpec,
    /// The published numbers it is read against, as the file gives them.
    pub published: Option<String>,
}

/// An experiment file, parsed.
#[derive(Clone, Debug, Serialize)]
pub struct Experiment {
    pub name: String,
    pub description: String,
    pub source: Option<String>,
    pub comparisons: Vec<Comparison>,
}

/// A string or list as `compare`'s repeatable option; `default` when absent (none if empty).
fn strings(v: Option<Strings>, default: &str) -> Vec<String> {
    match v {
        None if default.is_empty() => vec![],
        None => vec![default.to_string()],
        Some(Strings::One(s)) => vec![s],
        Some(Strings::Many(v)) => v,
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// Parses an experiment file's text; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Experiment> {
    let doc: Doc = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(0);
        anyhow!("{file}:{line}: {}", e.message().trim_end())
    })?;
    if doc.name.trim().is_empty() {
        bail!("{file}: name: must not be empty");
    }
    if doc.comparison.is_empty() {
        bail!("{file}: comparison: at least one [[comparison]] table is needed");
    }
    let comparisons = doc
        .comparison
        .iter()
        .map(|c| {
            let line = line_of(text, c.span().start);
            let c = c.get_ref().clone();
            let spec = CompareSpec {
                machines: strings(c.machine, DEFAULT_MACHINE),
                workloads: strings(c.workload, DEFAULT_WORKLOAD),
                set: strings(c.set, ""),
                kernel: c.kernel.unwrap_or_else(|| DEFAULT_KERNEL.into()),
                patch: c.patch,
                features: c.features,
                machine_model: c.machine_model,
                vs: c.vs,
                patch_b: c.patch_b,
                features_b: c.features_b,
                machine_model_b: c.machine_model_b,
                runs: c.runs.unwrap_or(DEFAULT_RUNS),
                duration: c.duration,
                jobs: None,
            };
            Comparison { line, spec, published: c.published }
        })
        .collect();
    Ok(Experiment { name: doc.name, description: doc.description, source: doc.source, comparisons })
}

/// The experiments directory: `dir` if given, else ./experiments, else the one in the schedlab source tree.
pub fn experiments_dir(dir: Option<&Path>) -> PathBuf {
    if let Some(d) = dir {
        return d.to_path_buf();
    }
    let here = PathBuf::from("experiments");
    if here.is_dir() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments")
}

/// Reads and parses one experiment file.
pub fn load(path: &Path) -> Result<Experiment> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read experiment file {}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// One study of the experiments directory (`schedlab reproduce --list`).
#[derive(Clone, Debug, Serialize)]
pub struct StudyInfo {
    /// File stem: the name `reproduce` takes.
    pub name: String,
    pub description: String,
    pub comparisons: usize,
}

/// The studies under `dir` (None: `experiments_dir`), in file name order.
pub fn list(dir: Option<&Path>) -> Result<Vec<StudyInfo>> {
    let dir = experiments_dir(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot read the experiments directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|p| {
            let e = load(p)?;
            Ok(StudyInfo {
                name: p.file_stem().unwrap_or_default().to_string_lossy().into_owned(),
                description: e.description.trim().to_string(),
                comparisons: e.comparisons.len(),
            })
        })
        .collect()
}

/// A study loaded and every comparison planned; nothing run yet.
pub struct Plan {
    /// The experiment file, as named in messages.
    pub file: String,
    pub experiment: Experiment,
    pub plans: Vec<compare::Plan>,
}

impl Plan {
    /// Simulation runs this study makes.
    pub fn nr_runs(&self) -> usize {
        self.plans.iter().map(|p| p.nr_runs()).sum()
    }
}

/// Finds the study's file (a stem under the experiments directory, or a path
/// to a .toml file), loads it and plans every comparison before any runs.
pub fn plan(spec: &ReproduceSpec) -> Result<Plan> {
    let name = spec.name.as_str();
    if name.is_empty() {
        bail!("give a study name (schedlab reproduce --list shows them)");
    }
    let dir = experiments_dir(spec.dir.as_deref());
    let path = if name.ends_with(".toml") || name.contains('/') { PathBuf::from(name) } else { dir.join(format!("{name}.toml")) };
    if !path.is_file() {
        bail!("no experiment file {} (schedlab reproduce --list shows the studies)", path.display());
    }
    let experiment = load(&path)?;
    let file = path.display().to_string();
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut plans = Vec::with_capacity(experiment.comparisons.len());
    for c in &experiment.comparisons {
        let at = format!("{file}:{}", c.line);
        let s = CompareSpec {
            jobs: spec.jobs,
            machines: files_in(dir, &c.spec.machines, "machine", machine_file_in, &at)?,
            workloads: files_in(dir, &c.spec.workloads, "workload", workload_file_in, &at)?,
            ..c.spec.clone()
        };
        plans.push(compare::plan(&s).with_context(|| format!("{at}: comparison"))?);
    }
    Ok(Plan { file, experiment, plans })
}

/// `names` (comma lists of machines or workloads, as the experiment file gives
/// them) with every file path made relative to `dir`, the experiment file's
/// directory, as validation cases do; presets and built-ins stay as they are.
/// A file that is not there is an error naming it and `at` (experiment file and line).
fn files_in(dir: &Path, names: &[String], what: &str, file_of: fn(&Path, &str) -> Option<PathBuf>, at: &str) -> Result<Vec<String>> {
    names
        .iter()
        .map(|list| {
            let each = list.split(',').map(|n| match file_of(dir, n.trim()) {
                None => Ok(n.to_string()),
                Some(p) if p.is_file() => Ok(p.display().to_string()),
                Some(p) => Err(anyhow!(
                    "{at}: {what} file {:?} not found: no file {} (a path in an experiment file is relative to the file's directory)",
                    n.trim(),
                    p.display()
                )),
            });
            Ok(each.collect::<Result<Vec<_>>>()?.join(","))
        })
        .collect()
}

/// One comparison of a study, run: the file's comparison and its report.
#[derive(Clone, Debug, Serialize)]
pub struct StudyComparison {
    pub comparison: Comparison,
    pub report: compare::Report,
}

/// What reproducing a study produced.
#[derive(Clone, Debug, Serialize)]
pub struct Study {
    /// The experiment file, as named in messages.
    pub file: String,
    pub name: String,
    pub description: String,
    pub source: Option<String>,
    pub comparisons: Vec<StudyComparison>,
}

/// Runs a planned study, comparison by comparison, reporting progress; `warn`
/// gets one line per truncated run. `each` is called with every comparison as
/// it completes (its index and data), after the progress line is cleared,
/// so a front end can show it at once.
/// With `stop` set from another thread this returns an "interrupted" error.
pub fn execute(
    plan: &Plan,
    progress: &mut Progress,
    warn: &mut dyn FnMut(&str),
    each: &mut dyn FnMut(usize, &StudyComparison),
    stop: Option<&AtomicBool>,
) -> Result<Study> {
    let e = &plan.experiment;
    let mut comparisons = Vec::with_capacity(plan.plans.len());
    for (i, (p, c)) in plan.plans.iter().zip(&e.comparisons).enumerate() {
        let report = compare::execute(p, progress, warn, stop)?;
        progress.finish();
        let sc = StudyComparison { comparison: c.clone(), report };
        each(i, &sc);
        comparisons.push(sc);
    }
    Ok(Study { file: plan.file.clone(), name: e.name.clone(), description: e.description.clone(), source: e.source.clone(), comparisons })
}

/// Plans and runs a study without progress output; warnings are returned with it.
pub fn reproduce(spec: &ReproduceSpec) -> Result<(Study, Vec<String>)> {
    reproduce_stoppable(spec, None)
}

/// `reproduce` that ends with an "interrupted" error once `stop` is set.
pub fn reproduce_stoppable(spec: &ReproduceSpec, stop: Option<&AtomicBool>) -> Result<(Study, Vec<String>)> {
    let p = plan(spec)?;
    let mut progress = Progress::quiet(p.nr_runs());
    let mut warnings = Vec::new();
    let study = execute(&p, &mut progress, &mut |w| warnings.push(w.to_string()), &mut |_, _| {}, stop)?;
    Ok((study, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_key_names_file_line_and_field() {
        let text = "name = \"x\"\ndescription = \"d\"\n\n[[comparison]]\nworkload = \"pipe\"\nrunz = 3\n";
        let e = parse(text, "x.toml").err().unwrap().to_string();
        assert!(e.starts_with("x.toml:6:") && e.contains("runz"), "{e}");
    }

    #[test]
    fn set_takes_a_string_or_a_list() {
        let text = "name = \"x\"\ndescription = \"d\"\n[[comparison]]\nset = \"a=1,2\"\n[[comparison]]\nset = [\"a=1,2\", \"b=3\"]\n";
        let e = parse(text, "x.toml").unwrap();
        assert_eq!(e.comparisons[0].spec.set, vec!["a=1,2".to_string()]);
        assert_eq!(e.comparisons[1].spec.set.len(), 2);
        assert_eq!(e.comparisons[1].line, 5);
    }

    #[test]
    fn machine_and_workload_take_lists_and_the_documented_example_plans() {
        let text = "name = \"x\"\ndescription = \"d\"\n[[comparison]]\nmachine = [\"x86-12\", \"laptop-4c8t\"]\nworkload = \"pipe\"\n";
        let e = parse(text, "x.toml").unwrap();
        assert_eq!(e.comparisons[0].spec.machines, vec!["x86-12".to_string(), "laptop-4c8t".to_string()]);
        assert_eq!(e.comparisons[0].spec.workloads, vec!["pipe".to_string()]);
        // The multi-machine, multi-workload example of docs/experiment-format.md is valid.
        let doc = include_str!("../../../docs/experiment-format.md");
        let block = doc.split("```toml").nth(2).and_then(|b| b.split("```").next()).expect("second toml block");
        let e = parse(&format!("name = \"doc\"\ndescription = \"d\"\n{block}"), "doc").unwrap();
        let plan = compare::plan(&e.comparisons[0].spec).unwrap_or_else(|e| panic!("{e:#}"));
        // 2 machines x (hackbench 4 points + schbench 3 points) x 2 sides x 5 runs.
        assert_eq!(plan.nr_runs(), 2 * (4 + 3) * 2 * 5);
    }

    #[test]
    fn a_small_study_runs_and_returns_each_comparison() {
        let dir = std::env::temp_dir().join(format!("schedlab-lab-reproduce-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = "name = \"tiny\"\ndescription = \"d\"\n[[comparison]]\nworkload = \"hackbench\"\nset = \"groups=1,loops=10\"\nvs = \"v6.6\"\nruns = 2\npublished = \"p\"\n";
        std::fs::write(dir.join("tiny.toml"), text).unwrap();
        let spec = ReproduceSpec { name: "tiny".into(), dir: Some(dir.clone()), jobs: Some(1) };
        let (study, warnings) = reproduce(&spec).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!((study.name.as_str(), study.comparisons.len()), ("tiny", 1));
        let c = &study.comparisons[0];
        assert_eq!(c.comparison.published.as_deref(), Some("p"));
        assert_eq!((c.report.runs, c.report.tables.len(), c.report.tables[0].recs.len()), (2, 1, 4));
        assert_eq!(c.report.sides[1].kernel, "v6.6");
        let l = list(Some(&dir)).unwrap();
        assert_eq!((l[0].name.as_str(), l[0].comparisons), ("tiny", 1));
        let e = plan(&ReproduceSpec { name: "nope".into(), dir: Some(dir.clone()), jobs: None }).err().unwrap().to_string();
        assert!(e.contains("no experiment file") && e.contains("--list"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_shipped_study_finds_its_machine_file_from_another_directory() {
        // Tests run in crates/lab, not the repository root; wakee-flips names
        // ../validation/machines/x86-12-c1.toml, relative to experiments/.
        let spec = ReproduceSpec { name: "wakee-flips".into(), dir: Some(PathBuf::from("../../experiments")), jobs: None };
        let p = plan(&spec).unwrap_or_else(|e| panic!("{e:#}"));
        let c = &p.experiment.comparisons[0];
        assert_eq!(c.spec.machines, vec!["../validation/machines/x86-12-c1.toml".to_string()], "kept as the file writes it");
        let m = &p.plans[0].cells[0].preps[0].machine;
        assert_eq!((m.name.as_str(), m.idle_states.last().map(|s| s.name.as_str())), ("x86-12-c1", Some("C1")));
    }

    #[test]
    fn machine_and_workload_files_are_relative_to_the_experiment_file() {
        let root = std::env::temp_dir().join(format!("schedlab-lab-reproduce-files-{}", std::process::id()));
        for d in ["exp", "m", "w"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        std::fs::copy(repo.join("validation/machines/x86-12-c1.toml"), root.join("m/c1.toml")).unwrap();
        std::fs::copy(repo.join("examples/workloads/pipe.toml"), root.join("w/pipe.toml")).unwrap();
        let study = |machine: &str, workload: &str| {
            let text = format!("name = \"files\"\ndescription = \"d\"\n[[comparison]]\nmachine = [\"x86-12\", \"{machine}\"]\nworkload = \"{workload}\"\nruns = 2\n");
            let f = root.join("exp/files.toml");
            std::fs::write(&f, text).unwrap();
            plan(&ReproduceSpec { name: f.display().to_string(), dir: None, jobs: None })
        };
        // Neither path exists relative to the working directory (crates/lab).
        let p = study("../m/c1.toml", "../w/pipe.toml").unwrap_or_else(|e| panic!("{e:#}"));
        let names: Vec<_> =
            p.plans[0].cells.iter().map(|c| (c.preps[0].machine.name.as_str(), c.preps[0].workload.name.as_str())).collect();
        assert_eq!(names, vec![("x86-12", "pipe"), ("c1", "pipe")], "a preset stays a preset; a machine file's name is its stem");
        assert_eq!(p.experiment.comparisons[0].spec.workloads, vec!["../w/pipe.toml".to_string()]);
        // A missing file: its name as written, where it was looked for, the experiment file and line.
        let f = root.join("exp/files.toml").display().to_string();
        for (machine, workload, what, missing) in
            [("../m/c2.toml", "../w/pipe.toml", "machine", "../m/c2.toml"), ("../m/c1.toml", "pipe2.json", "workload", "pipe2.json")]
        {
            let e = format!("{:#}", study(machine, workload).err().unwrap());
            let looked = root.join("exp").join(missing).display().to_string();
            assert!(e.starts_with(&format!("{f}:3: {what} file \"{missing}\" not found: no file {looked} ")), "{e}");
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
}
