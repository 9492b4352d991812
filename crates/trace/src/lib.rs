//! Real scheduler traces for schedlab: parse the text that ftrace,
//! `trace-cmd report` and `perf script` print for the sched tracepoints
//! ([`parse`]), reconstruct each task's bursts, blocks and wakeups
//! ([`model`]), summarise them per role ([`profile`]) and turn them into a
//! workload the simulator replays on any machine and kernel ([`import`]).
//!
//! No IO here: callers pass the text (the CLI's `record`, `import` and
//! `profile` subcommands; later a Python binding).

pub mod import;
pub mod model;
pub mod parse;
pub mod profile;
pub mod synth;

pub use import::{import, ImportOptions, Imported};
pub use model::Analysis;
pub use parse::{parse, Format, ParseError, Parsed};
pub use profile::Profile;

/// Parse and analyse in one step; refuses traces that lost events unless `allow_lost`.
pub fn analyse(text: &str, root: Option<u32>, allow_lost: bool) -> Result<(Parsed, Analysis), String> {
    let p = parse(text).map_err(|e| e.to_string())?;
    if p.lost_events > 0 && !allow_lost {
        return Err(format!(
            "the trace lost {} events (the tracer's buffer overflowed): wakeups and switches are missing, so the inferred \
             structure would be wrong; record again with a larger buffer (schedlab record --buffer-kb), or pass --allow-lost to use it anyway",
            p.lost_events
        ));
    }
    let root = root.or(p.root_pid);
    if let Some(r) = root {
        if !p.events.iter().any(|e| e.pid == r) {
            return Err(format!("root pid {r} never runs in the trace: is it the right pid (--pid)?"));
        }
    }
    let a = Analysis::new(&p, root);
    Ok((p, a))
}
