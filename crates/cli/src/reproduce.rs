//! `schedlab reproduce`: experiment files (docs/experiment-format.md), one study
//! per file, each a list of `schedlab compare` runs with the published numbers
//! they are read against. The computation is `schedlab_lab::reproduce`;
//! this parses the arguments and renders the study (text, JSON, CSV, HTML).

use crate::compare;
use crate::html;
use anyhow::{Context, Result};
use schedlab_lab::reproduce::{self as lab, StudyComparison};
use schedlab_lab::ReproduceSpec;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;

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

impl ReproduceArgs {
    /// The library's study for these arguments.
    pub fn spec(&self) -> ReproduceSpec {
        ReproduceSpec { name: self.name.clone().unwrap_or_default(), dir: self.dir.clone(), jobs: self.jobs }
    }
}

pub fn reproduce(args: &ReproduceArgs) -> Result<()> {
    if args.list {
        let studies = lab::list(args.dir.as_deref())?;
        let w = studies.iter().map(|s| s.name.len()).max().unwrap_or(0);
        for s in &studies {
            println!("{:<w$}  {} ({} comparisons)", s.name, s.description, s.comparisons);
        }
        return Ok(());
    }
    let plan = lab::plan(&args.spec())?;
    let exp = &plan.experiment;
    let n = plan.plans.len();
    let mut progress = compare::Progress::new(plan.nr_runs());
    println!("schedlab reproduce: {} ({})", exp.name, plan.file);
    println!("{}", exp.description.trim());
    if let Some(s) = &exp.source {
        println!("source: {}", s.trim());
    }
    let study = lab::execute(&plan, &mut progress, &mut |w| eprintln!("{w}"), &mut |i, c| print!("{}", comparison_text(i, n, c)), None)?;
    progress.finish();
    let mut csv = String::new();
    for (i, c) in study.comparisons.iter().enumerate() {
        let text = compare::csv(&c.report);
        let mut lines = text.lines();
        if let Some(h) = lines.next() {
            if csv.is_empty() {
                let _ = writeln!(csv, "comparison,{h}");
            }
        }
        for l in lines {
            let _ = writeln!(csv, "{},{l}", i + 1);
        }
    }
    if let Some(p) = &args.json {
        let jsons: Vec<Value> =
            study.comparisons.iter().map(|c| json!({ "published": c.comparison.published, "report": c.report.to_json() })).collect();
        let v: Value = json!({ "name": study.name, "description": study.description, "source": study.source, "comparisons": jsons });
        std::fs::write(p, serde_json::to_string_pretty(&v)? + "\n").with_context(|| format!("cannot write --json file {}", p.display()))?;
    }
    if let Some(p) = &args.csv {
        std::fs::write(p, csv).with_context(|| format!("cannot write --csv file {}", p.display()))?;
    }
    if let Some(p) = &args.html {
        let mut intro = vec![("study".to_string(), study.description.trim().to_string())];
        if let Some(s) = &study.source {
            intro.push(("source".into(), s.trim().to_string()));
        }
        let sections = study
            .comparisons
            .iter()
            .enumerate()
            .map(|(i, c)| html::Section {
                heading: Some(format!("comparison {}/{n}", i + 1)),
                report: &c.report,
                published: c.comparison.published.as_ref().map(|p| p.trim().to_string()),
            })
            .collect();
        let doc = html::Doc { title: format!("schedlab reproduce {}", study.name), intro, sections };
        std::fs::write(p, html::render(&doc)).with_context(|| format!("cannot write --html file {}", p.display()))?;
    }
    Ok(())
}

/// One comparison of a study as printed: its heading, the compare tables, the published numbers.
fn comparison_text(i: usize, n: usize, c: &StudyComparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\n== comparison {}/{n} ==", i + 1);
    out.push_str(&compare::text(&c.report));
    if let Some(p) = &c.comparison.published {
        let _ = writeln!(out, "\npublished:\n{}", p.trim_end());
    }
    out
}
