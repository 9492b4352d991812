//! `schedlab reproduce`: experiment files (docs/experiment-format.md), one study
//! per file, each a list of `schedlab compare` runs with the published numbers
//! they are read against.

use crate::compare::{self, CompareArgs};
use crate::html;
use anyhow::{anyhow, bail, Context, Result};
use schedlab_lab::spec::{DEFAULT_KERNEL, DEFAULT_MACHINE, DEFAULT_RUNS, DEFAULT_WORKLOAD};
use serde::Deserialize;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Clone)]
pub struct ReproduceArgs {
    /// Study: a file stem under the experiments directory (wakee-flips) or a path to a .toml file.
    #[arg(required_unless_present = "list")]
    pub name: Option<String>,
    /// List the studies with their description.
    #[arg(long, conflicts_with = "name")]
    pub list: bool,
    /// Experiments directory (default: ./experiments, else the one in the schedlab source tree).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Worker threads (default: available parallelism). Results do not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Write every run of every comparison as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one CSV line per run to FILE (first column: comparison number).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write the study as one self-contained HTML report (plots and tables, opens offline) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

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
    comparison: Vec<toml::Spanned<Comparison>>,
}

/// Exactly the arguments of `schedlab compare` (dashes become underscores), plus `published`.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Comparison {
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

pub struct Experiment {
    pub name: String,
    pub description: String,
    pub source: Option<String>,
    /// (line of the `[[comparison]]` table, arguments, published notes).
    comparisons: Vec<(usize, CompareArgs, Option<String>)>,
}

/// A string or list as `compare`'s repeatable option; `default` when absent (none if empty).
fn list(v: Option<Strings>, default: &str) -> Vec<String> {
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
            let args = CompareArgs {
                machine: list(c.machine, DEFAULT_MACHINE),
                workload: list(c.workload, DEFAULT_WORKLOAD),
                set: list(c.set, ""),
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
                json: None,
                csv: None,
                html: None,
                explain: false,
            };
            (line, args, c.published)
        })
        .collect();
    Ok(Experiment { name: doc.name, description: doc.description, source: doc.source, comparisons })
}

fn experiments_dir(args: &ReproduceArgs) -> PathBuf {
    if let Some(d) = &args.dir {
        return d.clone();
    }
    let here = PathBuf::from("experiments");
    if here.is_dir() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments")
}

fn load(path: &Path) -> Result<Experiment> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read experiment file {}", path.display()))?;
    parse(&text, &path.display().to_string())
}

pub fn reproduce(args: &ReproduceArgs) -> Result<()> {
    let dir = experiments_dir(args);
    if args.list {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .with_context(|| format!("cannot read the experiments directory {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        let stems: Vec<String> = files.iter().map(|p| p.file_stem().unwrap_or_default().to_string_lossy().into_owned()).collect();
        let w = stems.iter().map(|s| s.len()).max().unwrap_or(0);
        for (p, stem) in files.iter().zip(&stems) {
            let e = load(p)?;
            println!("{stem:<w$}  {} ({} comparisons)", e.description.trim(), e.comparisons.len());
        }
        return Ok(());
    }
    let Some(name) = &args.name else { bail!("give a study name (schedlab reproduce --list shows them)") };
    let path = if name.ends_with(".toml") || name.contains('/') { PathBuf::from(name) } else { dir.join(format!("{name}.toml")) };
    if !path.is_file() {
        bail!("no experiment file {} (schedlab reproduce --list shows the studies)", path.display());
    }
    let exp = load(&path)?;
    let file = path.display().to_string();
    // Validate every comparison before running any.
    let mut plans = Vec::with_capacity(exp.comparisons.len());
    for (line, c, _) in &exp.comparisons {
        let c = CompareArgs { jobs: args.jobs, ..c.clone() };
        plans.push(compare::plan(&c).with_context(|| format!("{file}:{line}: comparison"))?);
    }
    let n = plans.len();
    let mut progress = compare::Progress::new(plans.iter().map(|p| p.nr_runs()).sum());
    println!("schedlab reproduce: {} ({file})", exp.name);
    println!("{}", exp.description.trim());
    if let Some(s) = &exp.source {
        println!("source: {}", s.trim());
    }
    let mut jsons = Vec::with_capacity(n);
    let mut csv = String::new();
    let mut reports = Vec::with_capacity(n);
    for (i, (plan, (_, _, published))) in plans.iter().zip(&exp.comparisons).enumerate() {
        let report = compare::execute_with(plan, &mut progress)?;
        progress.finish();
        let mut out = String::new();
        let _ = writeln!(out, "\n== comparison {}/{n} ==", i + 1);
        out.push_str(&report.text);
        if let Some(p) = published {
            let _ = writeln!(out, "\npublished:\n{}", p.trim_end());
        }
        print!("{out}");
        let mut lines = report.csv.lines();
        if let Some(h) = lines.next() {
            if csv.is_empty() {
                let _ = writeln!(csv, "comparison,{h}");
            }
        }
        for l in lines {
            let _ = writeln!(csv, "{},{l}", i + 1);
        }
        jsons.push(json!({ "published": published, "report": report.json }));
        reports.push(report);
    }
    if let Some(p) = &args.json {
        let v: Value = json!({ "name": exp.name, "description": exp.description, "source": exp.source, "comparisons": jsons });
        std::fs::write(p, serde_json::to_string_pretty(&v)? + "\n").with_context(|| format!("cannot write --json file {}", p.display()))?;
    }
    if let Some(p) = &args.csv {
        std::fs::write(p, csv).with_context(|| format!("cannot write --csv file {}", p.display()))?;
    }
    if let Some(p) = &args.html {
        let mut intro = vec![("study".to_string(), exp.description.trim().to_string())];
        if let Some(s) = &exp.source {
            intro.push(("source".into(), s.trim().to_string()));
        }
        let sections = reports
            .iter()
            .zip(&exp.comparisons)
            .enumerate()
            .map(|(i, (report, (_, _, published)))| html::Section {
                heading: Some(format!("comparison {}/{n}", i + 1)),
                report,
                published: published.as_ref().map(|p| p.trim().to_string()),
            })
            .collect();
        let doc = html::Doc { title: format!("schedlab reproduce {}", exp.name), intro, sections };
        std::fs::write(p, html::render(&doc)).with_context(|| format!("cannot write --html file {}", p.display()))?;
    }
    Ok(())
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
        assert_eq!(e.comparisons[0].1.set, vec!["a=1,2".to_string()]);
        assert_eq!(e.comparisons[1].1.set.len(), 2);
        assert_eq!(e.comparisons[1].0, 5);
    }

    #[test]
    fn machine_and_workload_take_lists_and_the_documented_example_plans() {
        let text = "name = \"x\"\ndescription = \"d\"\n[[comparison]]\nmachine = [\"x86-12\", \"laptop-4c8t\"]\nworkload = \"pipe\"\n";
        let e = parse(text, "x.toml").unwrap();
        assert_eq!(e.comparisons[0].1.machine, vec!["x86-12".to_string(), "laptop-4c8t".to_string()]);
        assert_eq!(e.comparisons[0].1.workload, vec!["pipe".to_string()]);
        // The multi-machine, multi-workload example of docs/experiment-format.md is valid.
        let doc = include_str!("../../../docs/experiment-format.md");
        let block = doc.split("```toml").nth(2).and_then(|b| b.split("```").next()).expect("second toml block");
        let e = parse(&format!("name = \"doc\"\ndescription = \"d\"\n{block}"), "doc").unwrap();
        let plan = compare::plan(&e.comparisons[0].1).unwrap_or_else(|e| panic!("{e:#}"));
        // 2 machines x (hackbench 4 points + schbench 3 points) x 2 sides x 5 runs.
        assert_eq!(plan.nr_runs(), 2 * (4 + 3) * 2 * 5);
    }
}
