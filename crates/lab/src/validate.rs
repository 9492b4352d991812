//! Validation: the fidelity scorecard. Published kernel results are case
//! files under `validation/` (docs/validation-format.md), each with claims and
//! tolerances fixed before the simulation ran; `plan` loads and checks them,
//! `execute` runs them (seeded, the same machinery as comparisons), judges
//! every claim and re-judges every A/B claim as negative controls that must
//! disagree. The result is data (`Scorecard`); its one serialisation is
//! `Scorecard::to_json` (`schedlab validate --json`). The table and HTML
//! renderers live in the front ends.

use crate::compare::{self, MetricInfo, Progress, Rec};
use crate::scenario::{machine_file_in, prepare_sets, Prepared};
use crate::spec::{ScenarioSpec, ValidateSpec};
use crate::stats;
use anyhow::{anyhow, bail, Context, Result};
use schedlab_kernel::profile;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

// ---------------------------------------------------------------------------
// File format

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    source: Source,
    case: Vec<toml::Spanned<CaseDoc>>,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub title: String,
    pub author: String,
    pub date: String,
    pub lkml: Option<String>,
    pub commit: Option<String>,
    pub text: Option<String>,
    pub checked: String,
}

/// A point value: TOML integer, float or string.
#[derive(Deserialize, Clone, Debug)]
#[serde(untagged)]
enum PointVal {
    Int(i64),
    Float(f64),
    Str(String),
}

impl PointVal {
    fn text(&self) -> String {
        match self {
            PointVal::Int(i) => i.to_string(),
            PointVal::Float(f) => f.to_string(),
            PointVal::Str(s) => s.clone(),
        }
    }
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct CaseDoc {
    name: String,
    label: String,
    #[serde(default)]
    quick: bool,
    machine: String,
    workload: String,
    set: Option<String>,
    axis: Option<String>,
    points: Option<Vec<PointVal>>,
    runs: Option<u64>,
    duration: Option<String>,
    unit: String,
    note: Option<String>,
    not_modelled: Option<String>,
    side: Vec<SideDoc>,
    #[serde(default)]
    published: BTreeMap<String, Vec<f64>>,
    claim: Vec<toml::Spanned<ClaimDoc>>,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct SideDoc {
    name: String,
    kernel: String,
    #[serde(default)]
    patches: Vec<String>,
    features: Option<String>,
}

#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
struct ClaimDoc {
    kind: String,
    what: String,
    a: Option<String>,
    b: Option<String>,
    side: Option<String>,
    at: Option<Vec<PointVal>>,
    #[serde(rename = "ref")]
    reference: Option<PointVal>,
    band: Option<[f64; 2]>,
    alpha: Option<f64>,
    metric: Option<String>,
    published: Option<f64>,
    pp: Option<f64>,
    label: Option<String>,
    why_label: Option<String>,
    not_modelled: Option<String>,
}

// ---------------------------------------------------------------------------
// Validated cases

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Label {
    Calibration,
    Validation,
}

impl Label {
    fn parse(s: &str, at: &str) -> Result<Label> {
        match s {
            "calibration" => Ok(Label::Calibration),
            "validation" => Ok(Label::Validation),
            _ => bail!("{at}: label = {s:?}: expected \"calibration\" (the case chose a model constant) or \"validation\""),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Label::Calibration => "calibration",
            Label::Validation => "validation",
        }
    }
}

/// What a claim checks; indices are into the case's sides and points.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// Sign of the change from side a to side b at every point, significant at alpha.
    Sign { a: usize, b: usize, alpha: f64 },
    /// Mean simulated change / mean published change within the band.
    EffectRatio { a: usize, b: usize, band: [f64; 2] },
    /// Simulated / published within the band at every point.
    Baseline { side: usize, band: [f64; 2] },
    /// (sim / sim at ref) / (published / published at ref) within the band at every point.
    Shape { side: usize, reference: usize, band: [f64; 2] },
    /// A counter share (percent) within pp percentage points of the published share.
    Share { side: usize, published: f64, pp: f64 },
}

#[derive(Clone, Debug)]
pub struct Claim {
    pub kind: Kind,
    pub what: String,
    pub label: Label,
    pub at: Vec<usize>,
    pub not_modelled: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Side {
    pub name: String,
    pub kernel: String,
    pub patches: Vec<String>,
    pub features: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    pub file: String,
    pub line: usize,
    pub source: Source,
    pub quick: bool,
    /// The machine as the case file names it (a preset, or a file path
    /// relative to the case file's directory).
    pub machine: String,
    /// What `plan_case` loads: `machine`, with a relative file path joined to
    /// the case directory by `load_dir`.
    pub machine_load: String,
    pub workload: String,
    pub set: Option<String>,
    pub axis: Option<String>,
    pub points: Vec<String>,
    pub runs: u64,
    pub duration: Option<String>,
    pub unit: String,
    pub note: Option<String>,
    pub not_modelled: Option<String>,
    pub sides: Vec<Side>,
    /// Per side (same order as `sides`): published values per point, if given.
    pub published: Vec<Option<Vec<f64>>>,
    pub claims: Vec<Claim>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

const KINDS: &str = "sign, effect_ratio, baseline, shape, share";

/// Parses one case file's text; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Vec<Case>> {
    let doc: FileDoc = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(0);
        anyhow!("{file}:{line}: {} (docs/validation-format.md lists the keys)", e.message().trim_end())
    })?;
    if doc.case.is_empty() {
        bail!("{file}: no [[case]] table; add at least one (docs/validation-format.md)");
    }
    let mut cases = Vec::with_capacity(doc.case.len());
    for c in &doc.case {
        let line = line_of(text, c.span().start);
        let d = c.get_ref();
        let at = format!("{file}:{line}: case {:?}", d.name);
        if d.name.trim().is_empty() || d.name.contains(char::is_whitespace) {
            bail!("{at}: name must be a non-empty word (letters, digits, dashes)");
        }
        let label = Label::parse(&d.label, &at)?;
        if d.side.is_empty() || d.side.len() > 2 {
            bail!("{at}: {} [[case.side]] tables; give one (a baseline) or two (an A/B pair)", d.side.len());
        }
        if d.side.len() == 2 && d.side[0].name == d.side[1].name {
            bail!("{at}: both sides are named {:?}; give them different names", d.side[0].name);
        }
        let points: Vec<String> = match (&d.axis, &d.points) {
            (Some(_), Some(p)) if !p.is_empty() => p.iter().map(PointVal::text).collect(),
            (None, None) => vec!["default".to_string()],
            (Some(a), _) => bail!("{at}: axis = {a:?} needs points = [...] (the values of {a} the source reports)"),
            (None, Some(_)) => bail!("{at}: points given without axis; name the swept parameter with axis = \"KEY\""),
        };
        if let Some(d) = points.iter().enumerate().find(|(i, p)| points[..*i].contains(p)) {
            bail!("{at}: points lists {} twice", d.1);
        }
        let runs = d.runs.unwrap_or(3);
        if runs == 0 || runs > 100 {
            bail!("{at}: runs = {runs}: give 1..=100 (2 or more where a claim needs a spread)");
        }
        let side_idx = |name: &Option<String>, key: &str, cl: &str| -> Result<usize> {
            let Some(n) = name else { bail!("{cl}: kind needs {key} = \"SIDE\" (one of the case's side names)") };
            d.side.iter().position(|s| &s.name == n).ok_or_else(|| {
                anyhow!(
                    "{cl}: {key} = {n:?} is not a side of the case; the sides are {}",
                    d.side.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
                )
            })
        };
        let mut published = vec![None; d.side.len()];
        for (k, v) in &d.published {
            let Some(si) = d.side.iter().position(|s| &s.name == k) else {
                bail!("{at}: [case.published] names {k:?}, which is not a side; use the side names");
            };
            if v.len() != points.len() {
                bail!("{at}: published.{k} has {} values for {} points; give one value per point, in order", v.len(), points.len());
            }
            if v.iter().any(|x| !x.is_finite() || *x <= 0.0) {
                bail!("{at}: published.{k} has a value that is not a positive number");
            }
            published[si] = Some(v.clone());
        }
        let mut claims = Vec::with_capacity(d.claim.len());
        if d.claim.is_empty() {
            bail!("{at}: no [[case.claim]]; a case without claims checks nothing");
        }
        for cl in &d.claim {
            let cline = line_of(text, cl.span().start);
            let c = cl.get_ref();
            let cat = format!("{file}:{cline}: claim {:?}", c.what);
            let point = |v: &PointVal| -> Result<usize> {
                let t = v.text();
                points
                    .iter()
                    .position(|p| *p == t)
                    .ok_or_else(|| anyhow!("{cat}: point {t} is not among the case's points ({})", points.join(", ")))
            };
            let at_idx: Vec<usize> = match &c.at {
                Some(v) if v.is_empty() => bail!("{cat}: at = [] reads no point; leave it out to read them all"),
                Some(v) => v.iter().map(point).collect::<Result<_>>()?,
                None => (0..points.len()).collect(),
            };
            let band = |default_hint: &str| -> Result<[f64; 2]> {
                let Some(b) = c.band else { bail!("{cat}: {} needs band = [LOW, HIGH] (standard: {default_hint})", c.kind) };
                if !(b[0].is_finite() && b[1].is_finite() && 0.0 < b[0] && b[0] < b[1]) {
                    bail!("{cat}: band = [{}, {}] must be two positive numbers, low < high", b[0], b[1]);
                }
                Ok(b)
            };
            let needs_published = |si: usize, what: &str| -> Result<()> {
                if published[si].is_none() && c.not_modelled.is_none() && d.not_modelled.is_none() {
                    bail!("{cat}: {what} needs [case.published] values for side {:?}", d.side[si].name);
                }
                Ok(())
            };
            let kind = match c.kind.as_str() {
                "sign" | "effect_ratio" => {
                    let (a, b) = (side_idx(&c.a, "a", &cat)?, side_idx(&c.b, "b", &cat)?);
                    if a == b {
                        bail!("{cat}: a and b are the same side; an A/B claim needs both sides");
                    }
                    needs_published(a, &c.kind)?;
                    needs_published(b, &c.kind)?;
                    if c.kind == "sign" {
                        let alpha = c.alpha.unwrap_or(0.05);
                        if !(alpha > 0.0 && alpha < 0.5) {
                            bail!("{cat}: alpha = {alpha} must be in (0, 0.5); the standard is 0.05");
                        }
                        Kind::Sign { a, b, alpha }
                    } else {
                        Kind::EffectRatio { a, b, band: band("[0.5, 2.0]")? }
                    }
                }
                "baseline" => {
                    let side = side_idx(&c.side, "side", &cat)?;
                    needs_published(side, "baseline")?;
                    Kind::Baseline { side, band: band("[0.8, 1.25], or [0.5, 2.0] when the setup is not fully stated")? }
                }
                "shape" => {
                    let side = side_idx(&c.side, "side", &cat)?;
                    needs_published(side, "shape")?;
                    let reference = c.reference.as_ref().map(point).transpose()?.unwrap_or(0);
                    if points.len() < 2 {
                        bail!("{cat}: a shape needs at least two points (axis and points)");
                    }
                    Kind::Shape { side, reference, band: band("[0.6667, 1.5]")? }
                }
                "share" => {
                    let side = side_idx(&c.side, "side", &cat)?;
                    match c.metric.as_deref() {
                        Some("cross_group_switches") => {}
                        Some(m) => bail!("{cat}: metric = {m:?} is not a counter share; known: cross_group_switches"),
                        None => bail!("{cat}: share needs metric = \"cross_group_switches\""),
                    }
                    let Some(p) = c.published.filter(|p| (0.0..=100.0).contains(p)) else {
                        bail!("{cat}: share needs published = PERCENT (0-100), the source's share");
                    };
                    let Some(pp) = c.pp.filter(|x| *x > 0.0 && *x < 100.0) else {
                        bail!("{cat}: share needs pp = N, the tolerance in percentage points (0 < N < 100)");
                    };
                    Kind::Share { side, published: p, pp }
                }
                k => bail!("{cat}: kind = {k:?} is unknown; use one of {KINDS}"),
            };
            // Keys that do not belong to the kind are mistakes, not options.
            let stray: Vec<&str> = [
                ("a", c.a.is_some() && !matches!(kind, Kind::Sign { .. } | Kind::EffectRatio { .. })),
                ("b", c.b.is_some() && !matches!(kind, Kind::Sign { .. } | Kind::EffectRatio { .. })),
                ("side", c.side.is_some() && matches!(kind, Kind::Sign { .. } | Kind::EffectRatio { .. })),
                ("band", c.band.is_some() && matches!(kind, Kind::Sign { .. } | Kind::Share { .. })),
                ("alpha", c.alpha.is_some() && !matches!(kind, Kind::Sign { .. })),
                ("ref", c.reference.is_some() && !matches!(kind, Kind::Shape { .. })),
                ("metric", c.metric.is_some() && !matches!(kind, Kind::Share { .. })),
                ("published", c.published.is_some() && !matches!(kind, Kind::Share { .. })),
                ("pp", c.pp.is_some() && !matches!(kind, Kind::Share { .. })),
            ]
            .into_iter()
            .filter_map(|(k, bad)| bad.then_some(k))
            .collect();
            if !stray.is_empty() {
                bail!(
                    "{cat}: kind {} takes no {}; remove it (docs/validation-format.md lists each kind's fields)",
                    c.kind,
                    stray.join(", ")
                );
            }
            let label = match &c.label {
                Some(l) => Label::parse(l, &cat)?,
                None => label,
            };
            if label == Label::Calibration && c.label.is_some() && c.why_label.is_none() {
                bail!("{cat}: label = \"calibration\" on a claim needs why_label = \"which constant it chose\"");
            }
            claims.push(Claim { kind, what: c.what.clone(), label, at: at_idx, not_modelled: c.not_modelled.clone() });
        }
        cases.push(Case {
            name: d.name.clone(),
            file: file.to_string(),
            line,
            source: doc.source.clone(),
            quick: d.quick,
            machine: d.machine.clone(),
            machine_load: d.machine.clone(),
            workload: d.workload.clone(),
            set: d.set.clone(),
            axis: d.axis.clone(),
            points,
            runs,
            duration: d.duration.clone(),
            unit: d.unit.clone(),
            note: d.note.clone(),
            not_modelled: d.not_modelled.clone(),
            sides: d
                .side
                .iter()
                .map(|s| Side { name: s.name.clone(), kernel: s.kernel.clone(), patches: s.patches.clone(), features: s.features.clone() })
                .collect(),
            published,
            claims,
        });
    }
    Ok(cases)
}

/// The case directory: `dir` if given, else ./validation, else the one in the schedlab source tree.
pub fn cases_dir(dir: Option<&Path>) -> PathBuf {
    if let Some(d) = dir {
        return d.to_path_buf();
    }
    let here = PathBuf::from("validation");
    if here.is_dir() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../validation")
}

/// Every case of every `*.toml` file under `dir`, files in name order; names must be unique.
pub fn load_dir(dir: &Path) -> Result<Vec<Case>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read the validation directory {} (give --dir DIR)", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("no case files (*.toml) in {}", dir.display());
    }
    let mut all: Vec<Case> = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).with_context(|| format!("cannot read case file {}", f.display()))?;
        let stem = f.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        for mut c in parse(&text, &f.display().to_string())? {
            if let Some(o) = all.iter().find(|o| o.name == c.name) {
                bail!("{}:{}: case name {:?} is already used at {}:{}; rename one", c.file, c.line, c.name, o.file, o.line);
            }
            c.file = format!("{stem}.toml");
            if let Some(path) = machine_file_in(dir, &c.machine) {
                c.machine_load = path.display().to_string();
            }
            all.push(c);
        }
    }
    Ok(all)
}

// ---------------------------------------------------------------------------
// Verdict logic (pure, unit-tested)

/// True when `x` lies in `[band[0], band[1]]`.
pub fn in_band(x: f64, band: [f64; 2]) -> bool {
    x.is_finite() && band[0] <= x && x <= band[1]
}

/// Sign claim at one point: the simulated change has the published (non-zero) sign
/// and is significant.
pub fn sign_agrees(published_change: f64, simulated_change: f64, p: Option<f64>, alpha: f64) -> bool {
    published_change != 0.0
        && simulated_change.signum() == published_change.signum()
        && simulated_change != 0.0
        && p.is_some_and(|p| p < alpha)
}

/// Ratio of simulated to published effect; None when the published effect is 0.
pub fn effect_ratio(published: f64, simulated: f64) -> Option<f64> {
    (published != 0.0 && published.is_finite() && simulated.is_finite()).then(|| simulated / published)
}

/// Shape: per point, (sim_i / sim_ref) / (pub_i / pub_ref); None where undefined.
pub fn shape_ratios(published: &[f64], simulated: &[f64], reference: usize) -> Vec<Option<f64>> {
    let (pr, sr) = (published[reference], simulated[reference]);
    published
        .iter()
        .zip(simulated)
        .map(|(p, s)| {
            let r = (s / sr) / (p / pr);
            (r.is_finite() && r > 0.0).then_some(r)
        })
        .collect()
}

/// Share claim: within pp percentage points.
pub fn share_agrees(published_pct: f64, simulated_pct: f64, pp: f64) -> bool {
    simulated_pct.is_finite() && (simulated_pct - published_pct).abs() <= pp
}

/// Index (into `xs`) of the value farthest from 1 on a log scale; None values count as farthest.
fn worst(xs: &[(usize, Option<f64>)]) -> Option<(usize, Option<f64>)> {
    xs.iter().copied().max_by(|a, b| {
        let d = |x: Option<f64>| x.map(|v| v.ln().abs()).unwrap_or(f64::INFINITY);
        d(a.1).total_cmp(&d(b.1))
    })
}

// ---------------------------------------------------------------------------
// Running and judging

#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Agree,
    Disagree,
    NotModelled(String),
    NotRunnable(String),
}

impl Verdict {
    pub fn text(&self) -> String {
        match self {
            Verdict::Agree => "agree".into(),
            Verdict::Disagree => "disagree".into(),
            Verdict::NotModelled(r) => format!("not modelled: {r}"),
            Verdict::NotRunnable(r) => format!("not runnable: {r}"),
        }
    }
    pub fn key(&self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Disagree => "disagree",
            Verdict::NotModelled(_) => "not modelled",
            Verdict::NotRunnable(_) => "not runnable",
        }
    }
}

/// The simulated results of one case: per side and point, the runs.
struct Results {
    info: MetricInfo,
    /// Index `(side * points + point) * runs + k`.
    recs: Vec<Rec>,
    runs: usize,
    points: usize,
}

impl Results {
    fn runs_of(&self, side: usize, point: usize) -> &[Rec] {
        let at = (side * self.points + point) * self.runs;
        &self.recs[at..at + self.runs]
    }
    fn values(&self, side: usize, point: usize) -> Vec<f64> {
        self.runs_of(side, point).iter().map(|r| r.metric).collect()
    }
    fn mean(&self, side: usize, point: usize) -> f64 {
        let v = self.values(side, point);
        if self.info.higher_is_better {
            stats::hmean(&v)
        } else {
            stats::amean(&v)
        }
    }
    fn share(&self, side: usize, point: usize) -> f64 {
        let v: Vec<f64> = self
            .runs_of(side, point)
            .iter()
            .map(|r| {
                let all = r.voluntary + r.involuntary;
                if all == 0 {
                    f64::NAN
                } else {
                    100.0 * r.counters[7] as f64 / all as f64
                }
            })
            .collect();
        stats::amean(&v)
    }
}

/// One judged claim (or control): the row's texts, and per point (x, published, simulated) for the plot.
#[derive(Clone, Debug)]
pub struct Judged {
    pub verdict: Verdict,
    pub published: String,
    pub schedlab: String,
    pub tolerance: String,
    pub ylabel: String,
    pub series: Vec<(String, f64, f64)>,
}

fn pct(x: f64) -> String {
    format!("{x:+.1}%")
}

fn num(x: f64) -> String {
    let a = x.abs();
    if !x.is_finite() {
        "n/a".into()
    } else if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 0.1 {
        format!("{x:.3}")
    } else {
        format!("{x:.4}")
    }
}

fn band_text(b: [f64; 2]) -> String {
    format!("x{}..x{}", num(b[0]), num(b[1]))
}

impl Case {
    fn point_name(&self, i: usize) -> String {
        match &self.axis {
            Some(a) => format!("{a}={}", self.points[i]),
            None => "one point".into(),
        }
    }
    fn points_text(&self, at: &[usize]) -> String {
        match &self.axis {
            None => String::new(),
            Some(a) if at.len() == 1 => format!(", {a}={}", self.points[at[0]]),
            Some(a) => format!(", {a}={}..{}", self.points[at[0]], self.points[at[at.len() - 1]]),
        }
    }
}

/// Judges `kind` over `at` against the results; `sim_side` maps a side index to the
/// side whose runs stand for it (identity for the claim, swapped or collapsed for controls).
fn judge(case: &Case, kind: &Kind, at: &[usize], res: &Results, sim_side: &dyn Fn(usize) -> usize) -> Judged {
    let hib = res.info.higher_is_better;
    let pubv = |s: usize, i: usize| case.published[s].as_ref().map(|v| v[i]).unwrap_or(f64::NAN);
    let x = |i: usize| case.points[i].clone();
    match *kind {
        Kind::Sign { a, b, .. } | Kind::EffectRatio { a, b, .. } => {
            let (sa, sb) = (sim_side(a), sim_side(b));
            let mut series = Vec::with_capacity(at.len());
            let mut all_sign = true;
            let mut nsig = 0;
            for &i in at {
                let pc = compare::pct_change(pubv(a, i), pubv(b, i), hib);
                let sc = compare::pct_change(res.mean(sa, i), res.mean(sb, i), hib);
                let p = stats::welch(&res.values(sa, i), &res.values(sb, i)).map(|w| w.p);
                if let Kind::Sign { alpha, .. } = *kind {
                    if sign_agrees(pc, sc, p, alpha) {
                        nsig += 1;
                    } else {
                        all_sign = false;
                    }
                }
                series.push((x(i), pc, sc));
            }
            let pm = stats::amean(&series.iter().map(|s| s.1).collect::<Vec<_>>());
            let sm = stats::amean(&series.iter().map(|s| s.2).collect::<Vec<_>>());
            let n = at.len();
            let mean_note = if n > 1 { format!(" (mean of {n})") } else { String::new() };
            let ylabel = format!("change {} -> {} (%, + is better)", case.sides[a].name, case.sides[b].name);
            if let Kind::Sign { alpha, .. } = *kind {
                Judged {
                    verdict: if all_sign { Verdict::Agree } else { Verdict::Disagree },
                    published: format!("{}{mean_note}", pct(pm)),
                    schedlab: format!("{}{mean_note}, {nsig}/{n} same sign & sig.", pct(sm)),
                    tolerance: format!("same sign, p<{alpha}"),
                    ylabel,
                    series,
                }
            } else {
                let Kind::EffectRatio { band, .. } = *kind else { unreachable!() };
                let r = effect_ratio(pm, sm);
                Judged {
                    verdict: if r.is_some_and(|r| in_band(r, band)) { Verdict::Agree } else { Verdict::Disagree },
                    published: format!("{}{mean_note}", pct(pm)),
                    schedlab: format!("{} (x{})", pct(sm), r.map(num).unwrap_or_else(|| "n/a".into())),
                    tolerance: format!("ratio {}", band_text(band)),
                    ylabel,
                    series,
                }
            }
        }
        Kind::Baseline { side, band } => {
            let s = sim_side(side);
            let rows: Vec<(usize, Option<f64>)> = at
                .iter()
                .map(|&i| {
                    let r = res.mean(s, i) / pubv(side, i);
                    (i, (r.is_finite() && r > 0.0).then_some(r))
                })
                .collect();
            let ok = rows.iter().all(|(_, r)| r.is_some_and(|r| in_band(r, band)));
            let (wi, wr) = worst(&rows).unwrap_or((at[0], None));
            let at_note = if case.axis.is_some() { format!(" at {}", case.point_name(wi)) } else { String::new() };
            Judged {
                verdict: if ok { Verdict::Agree } else { Verdict::Disagree },
                published: format!("{} {}{at_note}", num(pubv(side, wi)), case.unit),
                schedlab: format!("{} {} (x{})", num(res.mean(s, wi)), res.info.unit, wr.map(num).unwrap_or_else(|| "n/a".into())),
                tolerance: format!("ratio {}", band_text(band)),
                ylabel: format!("{} ({}; schedlab: {})", res.info.name, case.unit, res.info.unit),
                series: at.iter().map(|&i| (x(i), pubv(side, i), res.mean(s, i))).collect(),
            }
        }
        Kind::Shape { side, reference, band } => {
            let s = sim_side(side);
            let p: Vec<f64> = (0..case.points.len()).map(|i| pubv(side, i)).collect();
            let m: Vec<f64> = (0..case.points.len()).map(|i| res.mean(s, i)).collect();
            let rr = shape_ratios(&p, &m, reference);
            let rows: Vec<(usize, Option<f64>)> = at.iter().copied().filter(|&i| i != reference).map(|i| (i, rr[i])).collect();
            let ok = !rows.is_empty() && rows.iter().all(|(_, r)| r.is_some_and(|r| in_band(r, band)));
            let (wi, wr) = worst(&rows).unwrap_or((reference, None));
            Judged {
                verdict: if ok { Verdict::Agree } else { Verdict::Disagree },
                published: format!("x{} at {}", num(p[wi] / p[reference]), case.point_name(wi)),
                schedlab: format!("x{} ({}x published)", num(m[wi] / m[reference]), wr.map(num).unwrap_or_else(|| "n/a".into())),
                tolerance: format!("{} each point", band_text(band)),
                ylabel: format!("{} relative to {}", res.info.name, case.point_name(reference)),
                series: at.iter().map(|&i| (x(i), p[i] / p[reference], m[i] / m[reference])).collect(),
            }
        }
        Kind::Share { side, published, pp } => {
            let s = sim_side(side);
            let shares: Vec<f64> = at.iter().map(|&i| res.share(s, i)).collect();
            let ok = shares.iter().all(|&v| share_agrees(published, v, pp));
            let shown = shares.iter().copied().max_by(|a, b| (a - published).abs().total_cmp(&(b - published).abs())).unwrap_or(f64::NAN);
            Judged {
                verdict: if ok { Verdict::Agree } else { Verdict::Disagree },
                published: format!("{published:.1}%"),
                schedlab: format!("{shown:.1}%"),
                tolerance: format!("+-{pp} pp"),
                ylabel: "cross-group switches (% of switches)".into(),
                series: at.iter().zip(&shares).map(|(&i, &v)| (x(i), published, v)).collect(),
            }
        }
    }
}

pub fn kind_name(k: &Kind) -> &'static str {
    match k {
        Kind::Sign { .. } => "sign",
        Kind::EffectRatio { .. } => "effect",
        Kind::Baseline { .. } => "baseline",
        Kind::Shape { .. } => "shape",
        Kind::Share { .. } => "share",
    }
}

/// Which side's runs stand for a side (identity for a claim; swapped or collapsed for a control).
type SideMap = Box<dyn Fn(usize) -> usize>;

/// A/B claims get two negative controls: (name, side mapping).
fn controls(kind: &Kind, nsides: usize) -> Vec<(&'static str, SideMap)> {
    match *kind {
        Kind::Sign { a, b, .. } | Kind::EffectRatio { a, b, .. } => vec![
            (
                "swapped",
                Box::new(move |s: usize| {
                    if s == a {
                        b
                    } else if s == b {
                        a
                    } else {
                        s
                    }
                }),
            ),
            ("no overlay", Box::new(move |s: usize| if s == b { a } else { s })),
        ],
        Kind::Share { .. } if nsides == 2 => vec![("swapped", Box::new(|s: usize| 1 - s))],
        _ => vec![],
    }
}

/// One claim's row of the scorecard.
#[derive(Clone, Debug)]
pub struct ClaimRow {
    /// Index into `Scorecard::cases`.
    pub case: usize,
    /// Index into the case's claims.
    pub claim: usize,
    /// "kind: what, axis=points".
    pub text: String,
    pub label: Label,
    pub judged: Judged,
}

/// One negative control's row: an A/B claim judged on swapped or collapsed sides.
#[derive(Clone, Debug)]
pub struct ControlRow {
    /// Index into `Scorecard::cases`.
    pub case: usize,
    pub text: String,
    /// "swapped" or "no overlay".
    pub control: &'static str,
    pub judged: Judged,
}

/// Everything one validation produced: the cases (as loaded), one row per
/// claim, one per negative control, and the settings it ran with.
#[derive(Clone, Debug)]
pub struct Scorecard {
    pub seed: u64,
    pub quick: bool,
    /// `--runs` when it overrode the cases' own.
    pub runs: Option<u64>,
    pub cases: Vec<Case>,
    pub rows: Vec<ClaimRow>,
    pub controls: Vec<ControlRow>,
}

impl Scorecard {
    /// The counts behind the total line.
    pub fn totals(&self) -> Totals {
        Totals::of(self.rows.iter().map(|r| (r.label, &r.judged.verdict)))
    }

    /// The negative controls that agree: their claims cannot fail.
    pub fn failed_controls(&self) -> Vec<&ControlRow> {
        self.controls.iter().filter(|c| c.judged.verdict == Verdict::Agree).collect()
    }

    /// The error for failed negative controls, if any (the CLI exits with it
    /// after printing the scorecard).
    pub fn control_error(&self) -> Option<String> {
        let failed = self.failed_controls();
        (!failed.is_empty()).then(|| {
            format!(
                "{} negative control(s) AGREE, so these claims cannot fail and measure nothing: {}",
                failed.len(),
                failed.iter().map(|c| format!("{} / {} / {}", self.cases[c.case].name, c.text, c.control)).collect::<Vec<_>>().join("; ")
            )
        })
    }

    /// The runs per side and point of a case in this scorecard.
    pub fn runs_of(&self, case: &Case) -> u64 {
        self.runs.unwrap_or(case.runs)
    }

    /// The JSON document (`schedlab validate --json`; the Python package reads it too).
    pub fn to_json(&self) -> Value {
        let t = self.totals();
        let case_json: Vec<Value> = self
            .cases
            .iter()
            .enumerate()
            .map(|(ci, c)| {
                json!({
                    "name": c.name,
                    "file": c.file,
                    "source": { "title": c.source.title, "author": c.source.author, "date": c.source.date, "lkml": c.source.lkml, "commit": c.source.commit, "text": c.source.text, "checked": c.source.checked },
                    "machine": c.machine,
                    "workload": c.workload,
                    "set": c.set,
                    "axis": c.axis,
                    "points": c.points,
                    "runs": self.runs_of(c),
                    "unit": c.unit,
                    "note": c.note,
                    "sides": c.sides.iter().map(|s| json!({ "name": s.name, "kernel": s.kernel, "patches": s.patches, "features": s.features })).collect::<Vec<_>>(),
                    "claims": self.rows.iter().filter(|r| r.case == ci).map(|r| {
                        let mut v = judged_json(&r.judged);
                        v["claim"] = json!(r.text);
                        v["kind"] = json!(kind_name(&c.claims[r.claim].kind));
                        v["label"] = json!(r.label.name());
                        v
                    }).collect::<Vec<_>>(),
                    "controls": self.controls.iter().filter(|x| x.case == ci).map(|x| {
                        let mut v = judged_json(&x.judged);
                        v["claim"] = json!(x.text);
                        v["control"] = json!(x.control);
                        v
                    }).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "seed": self.seed,
            "quick": self.quick,
            "cases": case_json,
            "totals": {
                "agree": t.agree[0] + t.agree[1],
                "claims": t.judged[0] + t.judged[1],
                "calibration": { "agree": t.agree[0], "claims": t.judged[0] },
                "validation": { "agree": t.agree[1], "claims": t.judged[1] },
                "disagree": t.disagree,
                "not_modelled": t.not_modelled,
                "not_runnable": t.not_runnable,
                "controls": self.controls.len(),
                "controls_agreeing": self.failed_controls().len(),
            },
            "total_line": t.line(),
        })
    }
}

fn judged_json(j: &Judged) -> Value {
    let f = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    json!({
        "verdict": j.verdict.key(),
        "reason": match &j.verdict { Verdict::NotModelled(r) | Verdict::NotRunnable(r) => Some(r.clone()), _ => None },
        "published": j.published,
        "schedlab": j.schedlab,
        "tolerance": j.tolerance,
        "series": { "quantity": j.ylabel, "points": j.series.iter().map(|(x, p, s)| json!({ "x": x, "published": f(*p), "schedlab": f(*s) })).collect::<Vec<_>>() },
    })
}

/// The selected cases, loaded and checked, each with its prepared runs (or
/// why it is not run); nothing run yet.
pub struct Plan {
    pub spec: ValidateSpec,
    pub cases: Vec<Case>,
    /// Per case: a prepared run per (side, point), or the verdict every claim gets.
    pub preps: Vec<std::result::Result<Vec<Prepared>, Verdict>>,
}

impl Plan {
    /// Simulation runs this validation makes.
    pub fn nr_runs(&self) -> usize {
        self.preps
            .iter()
            .zip(&self.cases)
            .map(|(p, c)| p.as_ref().map(|v| v.len()).unwrap_or(0) * self.spec.runs.unwrap_or(c.runs) as usize)
            .sum()
    }
}

/// Loads the case files, selects the cases (`case`, else `quick`, else all)
/// and prepares every run before any runs: errors come out first.
pub fn plan(spec: &ValidateSpec) -> Result<Plan> {
    if spec.runs == Some(0) {
        bail!("--runs must be at least 1 (2 or more for sign claims)");
    }
    if spec.jobs == Some(0) {
        bail!("--jobs must be at least 1");
    }
    let dir = cases_dir(spec.dir.as_deref());
    let all = load_dir(&dir)?;
    let cases: Vec<Case> = all
        .iter()
        .filter(|c| match &spec.case {
            Some(n) => &c.name == n || c.file.strip_suffix(".toml") == Some(n.as_str()),
            None => !spec.quick || c.quick,
        })
        .cloned()
        .collect();
    if cases.is_empty() {
        match &spec.case {
            Some(n) => {
                bail!("no case or case file named {n:?}; cases: {}", all.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", "))
            }
            None => bail!("no case is marked quick = true in {}", dir.display()),
        }
    }
    let mut preps: Vec<std::result::Result<Vec<Prepared>, Verdict>> = Vec::with_capacity(cases.len());
    for c in &cases {
        if let Some(r) = &c.not_modelled {
            preps.push(Err(Verdict::NotModelled(r.clone())));
            continue;
        }
        let p = plan_case(c, spec.seed);
        if let Err(Verdict::NotRunnable(msg)) = &p {
            if !msg.starts_with("unknown patch") {
                bail!("{}:{}: case {}: {msg}", c.file, c.line, c.name);
            }
        }
        preps.push(p);
    }
    Ok(Plan { spec: spec.clone(), cases, preps })
}

/// Runs a planned validation, reporting progress, and judges every claim and
/// control. With `stop` set from another thread the runs end early and this
/// returns an "interrupted" error. Failed negative controls are in the
/// scorecard (`Scorecard::control_error`), not an error here.
pub fn execute(plan: &Plan, progress: &mut Progress, stop: Option<&AtomicBool>) -> Result<Scorecard> {
    let spec = &plan.spec;
    let mut card = Scorecard {
        seed: spec.seed,
        quick: spec.quick,
        runs: spec.runs,
        cases: plan.cases.clone(),
        rows: Vec::new(),
        controls: Vec::new(),
    };
    for (ci, (case, preps)) in plan.cases.iter().zip(&plan.preps).enumerate() {
        let runs = spec.runs.unwrap_or(case.runs) as usize;
        let results = match preps {
            Ok(preps) => {
                let refs: Vec<&Prepared> = preps.iter().collect();
                let n = refs.len() * runs;
                let jobs =
                    spec.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).clamp(1, n.max(1));
                let outs = compare::run_all_stoppable(&refs, runs, jobs, progress, stop)?;
                let info = outs.iter().find_map(|(_, i)| i.clone()).ok_or_else(|| anyhow!("internal error: no metric identity"))?;
                Ok(Results { info, recs: outs.into_iter().map(|(r, _)| r).collect(), runs, points: case.points.len() })
            }
            Err(v) => Err(v.clone()),
        };
        for (k, claim) in case.claims.iter().enumerate() {
            let text = format!("{}: {}{}", kind_name(&claim.kind), claim.what, case.points_text(&claim.at));
            let judged = match (&results, &claim.not_modelled) {
                (_, Some(r)) => skipped(Verdict::NotModelled(r.clone())),
                (Err(v), _) => skipped(v.clone()),
                (Ok(res), None) => {
                    let j = judge(case, &claim.kind, &claim.at, res, &|s| s);
                    for (name, map) in controls(&claim.kind, case.sides.len()) {
                        card.controls.push(ControlRow {
                            case: ci,
                            text: text.clone(),
                            control: name,
                            judged: judge(case, &claim.kind, &claim.at, res, &*map),
                        });
                    }
                    j
                }
            };
            card.rows.push(ClaimRow { case: ci, claim: k, text, label: claim.label, judged });
        }
    }
    Ok(card)
}

/// Plans and runs a validation without progress output.
pub fn validate(spec: &ValidateSpec) -> Result<Scorecard> {
    validate_stoppable(spec, None)
}

/// `validate` that ends with an "interrupted" error once `stop` is set.
pub fn validate_stoppable(spec: &ValidateSpec, stop: Option<&AtomicBool>) -> Result<Scorecard> {
    let p = plan(spec)?;
    let mut progress = Progress::quiet(p.nr_runs());
    execute(&p, &mut progress, stop)
}

pub fn plan_case(case: &Case, seed: u64) -> std::result::Result<Vec<Prepared>, Verdict> {
    let known: Vec<&str> = profile::Patch::ALL.iter().map(|(n, _, _)| *n).collect();
    if let Some(p) = case.sides.iter().flat_map(|s| &s.patches).find(|p| !known.contains(&p.as_str())) {
        return Err(Verdict::NotRunnable(format!("unknown patch {p}")));
    }
    let mut preps = Vec::with_capacity(case.sides.len() * case.points.len());
    for side in &case.sides {
        for (i, _) in case.points.iter().enumerate() {
            let mut set: Vec<String> = case.set.iter().cloned().collect();
            if let Some(a) = &case.axis {
                set.push(format!("{a}={}", case.points[i]));
            }
            let spec = ScenarioSpec {
                machine: case.machine_load.clone(),
                kernel: side.kernel.clone(),
                features: side.features.clone(),
                patch: (!side.patches.is_empty()).then(|| side.patches.join(",")),
                workload: case.workload.clone(),
                seed,
                duration: case.duration.clone(),
                ..ScenarioSpec::default()
            };
            match prepare_sets(spec, &set) {
                Ok(p) => preps.push(p),
                Err(e) => return Err(Verdict::NotRunnable(format!("{e:#}"))),
            }
        }
    }
    Ok(preps)
}

fn skipped(v: Verdict) -> Judged {
    Judged {
        verdict: v,
        published: String::new(),
        schedlab: String::new(),
        tolerance: String::new(),
        ylabel: String::new(),
        series: vec![],
    }
}

/// The counts behind the total line.
#[derive(Debug, Default, PartialEq)]
pub struct Totals {
    pub agree: [usize; 2],
    pub judged: [usize; 2],
    pub disagree: usize,
    pub not_modelled: usize,
    pub not_runnable: usize,
}

impl Totals {
    fn of<'a>(verdicts: impl Iterator<Item = (Label, &'a Verdict)>) -> Totals {
        let mut t = Totals::default();
        for (l, v) in verdicts {
            let li = (l == Label::Validation) as usize;
            match v {
                Verdict::NotRunnable(_) => t.not_runnable += 1,
                _ => {
                    t.judged[li] += 1;
                    match v {
                        Verdict::Agree => t.agree[li] += 1,
                        Verdict::Disagree => t.disagree += 1,
                        _ => t.not_modelled += 1,
                    }
                }
            }
        }
        t
    }
    /// "k of n claims agree (c of C calibration, v of V validation); d disagree, m not modelled, u not runnable (not in n)"
    pub fn line(&self) -> String {
        let (k, n) = (self.agree[0] + self.agree[1], self.judged[0] + self.judged[1]);
        format!(
            "{k} of {n} claims agree ({} of {} calibration, {} of {} validation); {} disagree, {} not modelled, {} not runnable (not in n)",
            self.agree[0], self.judged[0], self.agree[1], self.judged[1], self.disagree, self.not_modelled, self.not_runnable
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Case machine files under validation/machines are presets with a stated
    /// change: numa-2n-96-c6-off is numa-2n-96 without its C6 state, x86-12-c1
    /// is x86-12 without C1E, nothing else.
    #[test]
    fn case_machine_files_differ_from_their_preset_only_as_stated() {
        let dir = cases_dir(None);
        let file = dir.join("machines/numa-2n-96-c6-off.toml");
        let m = schedlab_machine::load(&file.display().to_string()).unwrap();
        let mut p = schedlab_machine::load("numa-2n-96").unwrap();
        assert!(p.idle_states.iter().any(|s| s.name == "C6"), "the preset has C6");
        p.idle_states.retain(|s| s.name != "C6");
        assert_eq!(m.idle_states, p.idle_states);
        assert_eq!(
            m.to_toml().split("[[idle_states]]").next(),
            {
                let t = p
                    .to_toml()
                    .replace("name = \"numa-2n-96\"", "name = \"numa-2n-96-c6-off\"")
                    .replace("SLIT 10/21\"", "SLIT 10/21; C6 disabled (deepest state C1E)\"");
                t.split("[[idle_states]]").next().map(str::to_string)
            }
            .as_deref()
        );
        // The case that uses it loads it relative to the case directory.
        let cases = load_dir(&dir).unwrap();
        let c = cases.iter().find(|c| c.name == "sis-filter-v4-schbench").unwrap();
        assert_eq!(c.machine, "machines/numa-2n-96-c6-off.toml");
        assert!(Path::new(&c.machine_load).is_file(), "{}", c.machine_load);

        // x86-12-c1 is x86-12 without its deepest state (C1E), nothing else.
        let m = schedlab_machine::load(&dir.join("machines/x86-12-c1.toml").display().to_string()).unwrap();
        let mut p = schedlab_machine::load("x86-12").unwrap();
        assert_eq!(p.idle_states.last().map(|s| s.name.as_str()), Some("C1E"), "the preset's deepest state");
        p.idle_states.retain(|s| s.name != "C1E");
        assert_eq!(m.idle_states, p.idle_states);
        assert_eq!(
            m.to_toml().split("[[idle_states]]").next(),
            {
                let t = p
                    .to_toml()
                    .replace("name = \"x86-12\"", "name = \"x86-12-c1\"")
                    .replace("test box)\"", "test box); C1E disabled (deepest state C1)\"");
                t.split("[[idle_states]]").next().map(str::to_string)
            }
            .as_deref()
        );
        for c in cases.iter().filter(|c| c.name.starts_with("seed000-")) {
            assert_eq!(c.machine, "machines/x86-12-c1.toml", "{}", c.name);
        }

        // The other reading of seed 000's box (docs/CALIBRATION.md "Session 19"):
        // x86-12-c1 with one package of 6 cores x 2 threads, nothing else.
        let smt = schedlab_machine::load(&dir.join("../examples/machines/x86-12-smt-c1.toml").display().to_string()).unwrap();
        let c1 = m.to_toml();
        let expected = c1
            .replace("name = \"x86-12-c1\"", "name = \"x86-12-smt-c1\"")
            .replace("packages = 2", "packages = 1")
            .replace("threads_per_core = 1", "threads_per_core = 2")
            .replace("  [10, 20],\n  [20, 10],\n", "  [10],\n");
        let body =
            |t: &str| t.lines().filter(|l| !l.starts_with("description =") && !l.starts_with("source =")).collect::<Vec<_>>().join("\n");
        assert_ne!(expected, c1, "the replacements apply");
        assert_eq!(body(&smt.to_toml()), body(&expected));
        assert!(smt.source.contains("variant (b)") && smt.description.contains("SMT2"), "{}", smt.description);
    }

    /// scripts/pgbench-fit carries its own copy of seed 000's base column
    /// (the only column it may fit to): it must be the case file's, point for
    /// point, so that a corrected figure reaches the fit too.
    #[test]
    fn pgbench_fit_base_column_is_the_case_files() {
        let dir = cases_dir(None);
        let script = std::fs::read_to_string(dir.join("../scripts/pgbench-fit")).expect("scripts/pgbench-fit");
        let cases = load_dir(&dir).unwrap();
        for (size, name) in [(22, "seed000-pgbench-22mb"), (7484, "seed000-pgbench-7484mb"), (15360, "seed000-pgbench-15gb")] {
            let c = cases.iter().find(|c| c.name == name).expect(name);
            assert_eq!(c.points, ["1", "2", "4", "8", "12", "16", "24", "32"], "{name}: the script's CLIENTS");
            let side = c.sides.iter().position(|s| s.name == "base").expect("a base side");
            let published = c.published[side].as_ref().expect("a published base column");
            let line = script
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{size}: [")))
                .unwrap_or_else(|| panic!("scripts/pgbench-fit: no base line for {size}"));
            let inner = line.split_once('[').unwrap().1.split_once(']').unwrap().0;
            let theirs: Vec<f64> = inner.split(',').map(|v| v.trim().parse().unwrap()).collect();
            assert_eq!(&theirs, published, "{name}: scripts/pgbench-fit's BASE[{size}]");
        }
    }

    const GOOD: &str = r#"
[source]
title = "t"
author = "a"
date = "2020-01-01"
checked = "c"

[[case]]
name = "x"
label = "validation"
machine = "x86-12"
workload = "pipe"
axis = "loops"
points = [1, 2]
unit = "ops/s"

[[case.side]]
name = "base"
kernel = "v6.0"

[[case.side]]
name = "new"
kernel = "v6.0"
patches = ["no-such-patch-yet"]

[case.published]
base = [10, 20]
new = [11, 22]

[[case.claim]]
kind = "sign"
a = "base"
b = "new"
what = "gain"
"#;

    #[test]
    fn a_good_file_parses() {
        let c = parse(GOOD, "g.toml").unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].points, vec!["1", "2"]);
        assert_eq!(c[0].claims[0].kind, Kind::Sign { a: 0, b: 1, alpha: 0.05 });
        assert_eq!(c[0].claims[0].at, vec![0, 1]);
        // An unknown patch is not a parse error: the case is "not runnable".
        assert_eq!(plan_case(&c[0], 1).err(), Some(Verdict::NotRunnable("unknown patch no-such-patch-yet".into())));
    }

    fn err(text: &str) -> String {
        parse(text, "bad.toml").expect_err("must be refused").to_string()
    }

    #[test]
    fn bad_files_name_file_line_and_fix() {
        let e = err(&GOOD.replace("unit = \"ops/s\"", "unit = \"ops/s\"\nrunz = 3"));
        assert!(e.starts_with("bad.toml:") && e.contains("runz"), "{e}");
        let e = err(&GOOD.replace("kind = \"sign\"", "kind = \"sgn\""));
        assert!(e.contains("bad.toml:") && e.contains("sgn") && e.contains("effect_ratio"), "{e}");
        let e = err(&GOOD.replace("b = \"new\"", "b = \"neu\""));
        assert!(e.contains("\"neu\" is not a side") && e.contains("base, new"), "{e}");
        let e = err(&GOOD.replace("new = [11, 22]", "new = [11]"));
        assert!(e.contains("1 values for 2 points"), "{e}");
        let e = err(&GOOD.replace("label = \"validation\"", "label = \"valid\""));
        assert!(e.contains("calibration") && e.contains("bad.toml:8:"), "{e}");
        let e = err(&GOOD.replace("what = \"gain\"", "what = \"gain\"\nband = [0.5, 2.0]"));
        assert!(e.contains("takes no band"), "{e}");
        let e = err(&GOOD.replace("kind = \"sign\"", "kind = \"effect_ratio\""));
        assert!(e.contains("needs band") && e.contains("[0.5, 2.0]"), "{e}");
        let e = err(&GOOD.replace("points = [1, 2]", "points = [1, 1]"));
        assert!(e.contains("twice"), "{e}");
        let e = err(&GOOD.replace("what = \"gain\"", "what = \"gain\"\nat = [3]"));
        assert!(e.contains("point 3 is not among") && e.contains("bad.toml:30:"), "{e}");
        let e = err(&GOOD.replace("axis = \"loops\"\n", ""));
        assert!(e.contains("without axis"), "{e}");
    }

    #[test]
    fn sign_verdicts() {
        assert!(sign_agrees(20.0, 3.0, Some(0.01), 0.05));
        assert!(!sign_agrees(20.0, 3.0, Some(0.2), 0.05), "not significant");
        assert!(!sign_agrees(20.0, -3.0, Some(0.01), 0.05), "wrong sign");
        assert!(!sign_agrees(20.0, 3.0, None, 0.05), "no spread, no test");
        assert!(!sign_agrees(0.0, 3.0, Some(0.01), 0.05), "no published effect");
        assert!(!sign_agrees(20.0, 0.0, Some(0.01), 0.05));
        assert!(sign_agrees(-5.0, -1.0, Some(0.001), 0.05));
    }

    #[test]
    fn effect_ratio_and_band_verdicts() {
        assert_eq!(effect_ratio(20.0, 10.0), Some(0.5));
        assert!(in_band(0.5, [0.5, 2.0]) && in_band(2.0, [0.5, 2.0]));
        assert!(!in_band(0.49, [0.5, 2.0]) && !in_band(-1.0, [0.5, 2.0]) && !in_band(f64::NAN, [0.5, 2.0]));
        assert_eq!(effect_ratio(0.0, 1.0), None);
        assert!(effect_ratio(26.0, 3.0).is_some_and(|r| !in_band(r, [0.5, 2.0])), "seed 000's +3% against +26% disagrees");
        assert!(effect_ratio(6.2, -6.2).is_some_and(|r| !in_band(r, [0.5, 2.0])), "opposite sign disagrees");
    }

    #[test]
    fn shape_and_baseline_verdicts() {
        let r = shape_ratios(&[1.0, 2.0, 4.0], &[10.0, 20.0, 60.0], 0);
        assert_eq!(r, vec![Some(1.0), Some(1.0), Some(1.5)]);
        assert!(r.iter().all(|x| x.is_some_and(|x| in_band(x, [0.6667, 1.5]))));
        let r = shape_ratios(&[1.0, 2.0, 4.0], &[10.0, 20.0, 61.0], 0);
        assert!(!in_band(r[2].unwrap(), [0.6667, 1.5]));
        let r = shape_ratios(&[1.0, 2.0], &[0.0, 1.0], 0);
        assert_eq!(r[1], None, "a zero reference gives no ratio");
        assert_eq!(worst(&[(0, Some(1.1)), (1, Some(0.6)), (2, Some(1.9))]), Some((2, Some(1.9))));
        assert_eq!(worst(&[(0, Some(1.1)), (1, None)]), Some((1, None)));
    }

    #[test]
    fn share_verdicts_and_totals() {
        assert!(share_agrees(27.3, 40.0, 25.0));
        assert!(!share_agrees(27.3, 60.0, 25.0));
        assert!(!share_agrees(27.3, f64::NAN, 25.0));
        let v = [
            (Label::Validation, Verdict::Agree),
            (Label::Calibration, Verdict::Agree),
            (Label::Validation, Verdict::Disagree),
            (Label::Validation, Verdict::NotModelled("x".into())),
            (Label::Validation, Verdict::NotRunnable("y".into())),
        ];
        let t = Totals::of(v.iter().map(|(l, v)| (*l, v)));
        assert_eq!(
            t.line(),
            "2 of 4 claims agree (1 of 1 calibration, 1 of 3 validation); 1 disagree, 1 not modelled, 1 not runnable (not in n)"
        );
    }

    #[test]
    fn controls_map_sides() {
        let c = controls(&Kind::Sign { a: 0, b: 1, alpha: 0.05 }, 2);
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].1(0), c[0].1(1)), (1, 0), "swapped");
        assert_eq!((c[1].1(0), c[1].1(1)), (0, 0), "no overlay: a on both sides");
        assert_eq!(controls(&Kind::Share { side: 1, published: 27.0, pp: 25.0 }, 2)[0].1(1), 0);
        assert!(controls(&Kind::Shape { side: 0, reference: 0, band: [0.5, 2.0] }, 1).is_empty());
    }

    #[test]
    fn a_small_validation_returns_a_scorecard() {
        let dir = std::env::temp_dir().join(format!("schedlab-lab-validate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = GOOD
            .replace("workload = \"pipe\"", "workload = \"hackbench\"\nset = \"groups=1\"\nquick = true")
            .replace("patches = [\"no-such-patch-yet\"]", "features = \"NO_WAKEUP_PREEMPTION\"")
            .replace("kind = \"sign\"\na = \"base\"\nb = \"new\"", "kind = \"baseline\"\nside = \"base\"\nband = [0.000001, 1000000.0]");
        std::fs::write(dir.join("t.toml"), text).unwrap();
        let spec = ValidateSpec { quick: true, runs: Some(2), jobs: Some(1), dir: Some(dir.clone()), ..ValidateSpec::default() };
        let p = plan(&spec).unwrap();
        assert_eq!(p.nr_runs(), 2 * 2 * 2, "2 sides x 2 points x 2 runs");
        let card = validate(&spec).unwrap();
        assert_eq!((card.cases.len(), card.rows.len(), card.controls.len()), (1, 1, 0));
        let row = &card.rows[0];
        assert_eq!(row.text, "baseline: gain, loops=1..2");
        assert_eq!(row.judged.verdict, Verdict::Agree, "{row:?}");
        assert_eq!(row.judged.series.len(), 2);
        assert!(card.control_error().is_none());
        let j = card.to_json();
        assert_eq!(j["totals"]["agree"], 1);
        assert_eq!(j["cases"][0]["runs"], 2);
        assert_eq!(j["total_line"], card.totals().line());
        let e = plan(&ValidateSpec { case: Some("nope".into()), ..spec }).err().unwrap().to_string();
        assert!(e.contains("no case or case file named \"nope\"") && e.contains("cases: x"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_case_not_modelled_is_reported_not_run() {
        let dir = std::env::temp_dir().join(format!("schedlab-lab-validate-nm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = GOOD.replace("workload = \"pipe\"", "workload = \"pipe\"\nnot_modelled = \"the pipe has no such mode\"");
        assert_ne!(text, GOOD);
        std::fs::write(dir.join("t.toml"), text).unwrap();
        let spec = ValidateSpec { runs: Some(2), jobs: Some(1), dir: Some(dir.clone()), ..ValidateSpec::default() };
        let card = validate(&spec).unwrap();
        assert_eq!(card.rows.len(), 1);
        assert!(matches!(&card.rows[0].judged.verdict, Verdict::NotModelled(m) if m.contains("no such mode")), "{:?}", card.rows[0]);
        assert!(
            card.totals().line().starts_with("0 of 1 claims agree") && card.totals().line().contains("1 not modelled"),
            "{}",
            card.totals().line()
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_committed_cases_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../validation");
        let all = load_dir(&dir).unwrap_or_else(|e| panic!("{e:#}"));
        // Every committed case is modelled since session 15 (netperf TCP_STREAM);
        // `a_case_not_modelled_is_reported_not_run` keeps that path tested.
        assert!(all.iter().any(|c| c.quick));
        for c in &all {
            if c.not_modelled.is_none() {
                if let Err(Verdict::NotRunnable(m)) = plan_case(c, 1) {
                    assert!(m.starts_with("unknown patch"), "{}: {m}", c.name);
                }
            }
        }
    }
}
