//! `schedlab validate`: the fidelity scorecard. Published kernel results are
//! case files under `validation/` (docs/validation-format.md), each with claims
//! and tolerances fixed before the simulation ran; this runs them (seeded, the
//! same machinery as `schedlab compare`), judges every claim, re-judges every
//! A/B claim as negative controls that must disagree, and prints one row per
//! claim and the total. The computation is `schedlab_lab::validate`; this
//! parses the arguments and renders the scorecard (table, JSON, HTML).

use crate::compare;
use crate::html;
use anyhow::{bail, Context, Result};
use schedlab_lab::validate::{self as lab, Scorecard, Verdict};
use schedlab_lab::ValidateSpec;
use std::fmt::Write as _;
use std::path::PathBuf;

#[derive(clap::Args, Clone)]
pub struct ValidateArgs {
    /// Run only this case (its `name`), or every case of one file (its stem).
    #[arg(long = "case", value_name = "NAME")]
    pub case: Option<String>,
    /// Run only the cases marked `quick = true` (a subset meant for every test run).
    #[arg(long)]
    pub quick: bool,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Write each claim's published and simulated series as one self-contained HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Runs per side and point for every case (default: each case's `runs`).
    #[arg(long)]
    pub runs: Option<u64>,
    /// First seed; run k of a point uses seed S + k.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Worker threads (default: available parallelism). Results do not depend on it.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Case directory (default: ./validation, else the one in the schedlab source tree).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

impl ValidateArgs {
    /// The library's validation for these arguments.
    pub fn spec(&self) -> ValidateSpec {
        ValidateSpec {
            case: self.case.clone(),
            quick: self.quick,
            runs: self.runs,
            seed: self.seed,
            jobs: self.jobs,
            dir: self.dir.clone(),
        }
    }
}

pub fn validate(args: &ValidateArgs) -> Result<()> {
    let plan = lab::plan(&args.spec())?;
    let mut progress = compare::Progress::new(plan.nr_runs());
    let card = lab::execute(&plan, &mut progress, None)?;
    progress.finish();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&card.to_json())?);
    } else {
        print!("{}", table(&card));
    }
    if let Some(p) = &args.html {
        std::fs::write(p, to_html(&card)).with_context(|| format!("cannot write --html file {}", p.display()))?;
    }
    if let Some(e) = card.control_error() {
        bail!("{e}");
    }
    Ok(())
}

fn table(card: &Scorecard) -> String {
    let cases = &card.cases;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "schedlab validate{}: {} cases, {} claims; seeds {}.. (runs per case as in its file{})",
        if card.quick { " --quick" } else { "" },
        cases.len(),
        card.rows.len(),
        card.seed,
        card.runs.map(|r| format!(", here --runs {r}")).unwrap_or_default()
    );
    let _ = writeln!(o);
    let head = ["case", "claim", "label", "published", "schedlab", "tolerance", "verdict"];
    let cells: Vec<[String; 7]> = card
        .rows
        .iter()
        .map(|r| {
            [
                cases[r.case].name.clone(),
                r.text.clone(),
                r.label.name().to_string(),
                r.judged.published.clone(),
                r.judged.schedlab.clone(),
                r.judged.tolerance.clone(),
                r.judged.verdict.text(),
            ]
        })
        .collect();
    o.push_str(&columns(&head, &cells));
    if !card.controls.is_empty() {
        let _ = writeln!(o, "\nnegative controls (each must disagree):");
        let head = ["case", "claim", "control", "schedlab", "verdict"];
        let cells: Vec<[String; 5]> = card
            .controls
            .iter()
            .map(|c| {
                let v = if c.judged.verdict == Verdict::Agree { "AGREES (control failed)".to_string() } else { c.judged.verdict.text() };
                [cases[c.case].name.clone(), c.text.clone(), c.control.to_string(), c.judged.schedlab.clone(), v]
            })
            .collect();
        o.push_str(&columns(&head, &cells));
        let bad = card.controls.iter().filter(|c| c.judged.verdict == Verdict::Agree).count();
        let _ = writeln!(
            o,
            "controls: {} of {} disagree{}",
            card.controls.len() - bad,
            card.controls.len(),
            if bad == 0 { " (as they must)" } else { " -- FAILED" }
        );
    }
    let t = card.totals();
    let _ = writeln!(o, "\n{}", t.line());
    o
}

fn columns<const N: usize>(head: &[&str; N], cells: &[[String; N]]) -> String {
    let mut w = head.map(|h| h.chars().count());
    for r in cells {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut o = String::new();
    let line = |o: &mut String, r: &[&str]| {
        let mut s = String::new();
        for (i, c) in r.iter().enumerate() {
            if i + 1 == N {
                s.push_str(c);
            } else {
                let pad = w[i] - c.chars().count();
                let _ = write!(s, "{c}{}  ", " ".repeat(pad));
            }
        }
        let _ = writeln!(o, "{}", s.trim_end());
    };
    line(&mut o, head);
    for r in cells {
        line(&mut o, &r.iter().map(String::as_str).collect::<Vec<_>>());
    }
    o
}

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#1b1b1b;line-height:1.4}
table{border-collapse:collapse;margin:.4em 0 1em;font-size:.88em}th,td{border:1px solid #ccc;padding:.2em .55em;text-align:left}
th{background:#f3f3f3}.agree{background:#e3f4e1}.disagree{background:#fbe3e0}.other{background:#eeeeee}.note{color:#555;font-size:.85em}
figure{margin:.5em 0}figcaption{font-size:.85em;color:#555}h2{border-bottom:2px solid #ccc;margin-top:2em}svg text{font-family:system-ui,sans-serif}";

fn verdict_class(v: &Verdict) -> &'static str {
    match v {
        Verdict::Agree => "agree",
        Verdict::Disagree => "disagree",
        _ => "other",
    }
}

fn to_html(card: &Scorecard) -> String {
    let cases = &card.cases;
    use html::esc;
    let t = card.totals();
    let mut o = String::new();
    let _ = writeln!(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">");
    let _ = writeln!(o, "<title>schedlab validate</title>\n<style>\n{CSS}\n</style>\n</head>\n<body>");
    let _ = writeln!(o, "<h1>schedlab validate{}</h1>", if card.quick { " --quick" } else { "" });
    let _ = writeln!(o, "<p><b>{}</b></p>", esc(&t.line()));
    let _ = writeln!(
        o,
        "<table><tr><th>case</th><th>claim</th><th>label</th><th>published</th><th>schedlab</th><th>tolerance</th><th>verdict</th></tr>"
    );
    for r in &card.rows {
        let _ = writeln!(
            o,
            "<tr class=\"{}\"><td><a href=\"#c{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            verdict_class(&r.judged.verdict),
            r.case,
            esc(&cases[r.case].name),
            esc(&r.text),
            r.label.name(),
            esc(&r.judged.published),
            esc(&r.judged.schedlab),
            esc(&r.judged.tolerance),
            esc(&r.judged.verdict.text())
        );
    }
    let _ = writeln!(o, "</table>");
    for (ci, c) in cases.iter().enumerate() {
        let _ = writeln!(o, "<section id=\"c{ci}\">\n<h2>{}</h2>", esc(&c.name));
        let src = &c.source;
        let mut s = format!("{}, \u{201c}{}\u{201d}, {}", src.author, src.title, src.date);
        if let Some(l) = &src.lkml {
            let _ = write!(s, "; Message-ID {l}");
        }
        if let Some(cm) = &src.commit {
            let _ = write!(s, "; commit {cm}");
        }
        let _ = writeln!(o, "<p><b>source:</b> {}<br><span class=\"note\">{}</span></p>", esc(&s), esc(&src.checked));
        let sides: Vec<String> = c
            .sides
            .iter()
            .map(|s| {
                let mut d = format!("{}: {}", s.name, s.kernel);
                if !s.patches.is_empty() {
                    let _ = write!(d, " + {}", s.patches.join(", "));
                }
                if let Some(f) = &s.features {
                    let _ = write!(d, " features {f}");
                }
                d
            })
            .collect();
        let _ = writeln!(
            o,
            "<p class=\"note\">{} on {}{}; {}; file validation/{}</p>",
            esc(&c.workload),
            esc(&c.machine),
            c.set.as_ref().map(|s| format!(" ({})", esc(s))).unwrap_or_default(),
            esc(&sides.join("; ")),
            esc(&c.file)
        );
        let _ = writeln!(o, "<div>");
        for r in card.rows.iter().filter(|r| r.case == ci) {
            let j = &r.judged;
            if j.series.is_empty() {
                let _ = writeln!(o, "<p>{}: {}</p>", esc(&r.text), esc(&j.verdict.text()));
                continue;
            }
            let xs: Vec<String> = j.series.iter().map(|s| s.0.clone()).collect();
            let series = [j.series.iter().map(|s| (s.1, s.1, s.1)).collect(), j.series.iter().map(|s| (s.2, s.2, s.2)).collect()];
            html::figure_named(
                &mut o,
                &j.ylabel,
                c.axis.as_deref().unwrap_or("point"),
                &xs,
                &series,
                &format!(
                    "{}: {} (tolerance {}; published {}, schedlab {})",
                    r.text,
                    j.verdict.text(),
                    j.tolerance,
                    j.published,
                    j.schedlab
                ),
                ["published", "schedlab"],
            );
        }
        let _ = writeln!(o, "</div>\n</section>");
    }
    let _ = writeln!(
        o,
        "<p class=\"note\">Generated by schedlab validate (simulated figures, deterministic for seed {}).</p>\n</body>\n</html>",
        card.seed
    );
    o
}
