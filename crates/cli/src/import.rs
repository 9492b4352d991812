//! `schedlab import TRACE -o workload.toml`: a recorded trace as a workload
//! file (crates/trace: parse, model, import).

use anyhow::{Context, Result};
use std::path::PathBuf;

#[derive(clap::Args, Clone)]
pub struct ImportArgs {
    /// Trace text: tracefs `trace` / `schedlab record` / `schedlab run --ftrace`, `trace-cmd report`, or `perf script` output.
    pub trace: PathBuf,
    /// Output workload file (default: stdout).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Root pid of the process tree to import (default: the `schedlab record` root, else every task).
    #[arg(long)]
    pub pid: Option<u32>,
    /// Use a trace that lost events (its structure is then incomplete).
    #[arg(long)]
    pub allow_lost: bool,
    /// Op budget of the file after loop folding; a longer trace is cut (and the file says where).
    #[arg(long, default_value_t = 20_000)]
    pub max_ops: usize,
}

pub fn read_trace(p: &std::path::Path) -> Result<String> {
    let b = std::fs::read(p).with_context(|| format!("cannot read trace {}", p.display()))?;
    String::from_utf8(b).map_err(|e| {
        anyhow::anyhow!(
            "{}: not UTF-8 text at byte {} (a binary trace.dat or perf.data? convert it with `trace-cmd report` or `perf script`)",
            p.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// Parse, analyse and import a trace file.
pub fn import_file(
    path: &std::path::Path,
    pid: Option<u32>,
    allow_lost: bool,
    max_ops: usize,
) -> Result<(schedlab_trace::Parsed, schedlab_trace::Analysis, schedlab_trace::Imported)> {
    let text = read_trace(path)?;
    let (p, a) = schedlab_trace::analyse(&text, pid, allow_lost).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let name =
        format!("import:{}", p.command.clone().unwrap_or_else(|| path.file_name().map_or("trace".into(), |f| f.to_string_lossy().into())));
    let opt = schedlab_trace::ImportOptions { name, max_ops, ..Default::default() };
    let imp = schedlab_trace::import(&a, &opt).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok((p, a, imp))
}

pub fn import(a: &ImportArgs) -> Result<()> {
    let (p, an, imp) = import_file(&a.trace, a.pid, a.allow_lost, a.max_ops)?;
    let w = &imp.workload;
    let mut header = format!(
        "schedlab workload file (docs/workload-format.md), imported by `schedlab import` from {} ({}, {} events)\n{} tasks, {} semaphores; {} replay ops folded to {}",
        a.trace.display(),
        p.format.map_or("?", |f| f.name()),
        p.events.len(),
        w.tasks.len(),
        w.sems.len(),
        imp.raw_ops,
        imp.folded_ops
    );
    for n in &imp.notes {
        header += &format!("\nnote: {n}");
        eprintln!("schedlab: note: {n}");
    }
    let text = schedlab_workload::file::to_toml(w, &header);
    match &a.output {
        Some(o) => std::fs::write(o, &text).with_context(|| format!("cannot write {}", o.display()))?,
        None => print!("{text}"),
    }
    if a.output.is_some() {
        eprintln!(
            "schedlab: imported {} tasks ({} processes) from {} {} events: {} ops ({} before folding), {} bytes",
            w.tasks.len(),
            w.tasks.iter().map(|t| t.mm).collect::<std::collections::BTreeSet<_>>().len(),
            p.events.len(),
            p.format.map_or("?", |f| f.name()),
            imp.folded_ops,
            imp.raw_ops,
            text.len()
        );
    }
    let _ = an;
    Ok(())
}
