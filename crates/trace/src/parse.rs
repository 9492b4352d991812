//! Text trace parsers: the tracefs `trace` file (and `schedlab run --ftrace`,
//! `schedlab record`), `trace-cmd report` and `perf script`, autodetected.
//!
//! All three print one event per line as
//! `TASK [CPU] [FLAGS] SECS.FRAC: [SUBSYS:]EVENT: PAYLOAD`, where TASK is
//! `COMM-PID` (ftrace, trace-cmd; optionally followed by the `(TGID)` column
//! of `options/record-tgid`) or `COMM PID` / `COMM PID/TID` (perf), and the
//! payload is the event's TP_printk output (include/trace/events/sched.h and
//! irq.h). Comms may contain spaces, so payload fields are cut at the next
//! known key, never at whitespace.
//!
//! Unknown events are skipped; a line that is not an event, or a known event
//! with a missing or malformed field, is an error naming the line.

use std::collections::BTreeMap;

/// Which tool wrote the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Ftrace,
    TraceCmd,
    PerfScript,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Format::Ftrace => "ftrace",
            Format::TraceCmd => "trace-cmd report",
            Format::PerfScript => "perf script",
        }
    }
}

/// `prev_state` of a switch, reduced to what placement needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrevState {
    /// `R` / `R+`: still runnable (preempted, or yielded).
    Runnable,
    /// `S`, `D`, `I`, `T`, `t`, `P`, `W`, `K`, `N`... : blocked.
    Blocked,
    /// `X` / `Z`: exiting.
    Dead,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Switch { prev: u32, prev_state: PrevState, next: u32 },
    Waking { pid: u32, target_cpu: u16 },
    Wakeup { pid: u32 },
    WakeupNew { pid: u32, target_cpu: u16 },
    Migrate { pid: u32, orig_cpu: u16, dest_cpu: u16 },
    Fork { parent: u32, child: u32 },
    Exit { pid: u32 },
    IrqEntry,
    IrqExit,
    SoftirqEntry,
    SoftirqExit,
}

/// One event: at `ts` (ns) on `cpu`, in the context of `pid` (0 = idle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    pub ts: u64,
    pub cpu: u16,
    pub pid: u32,
    /// The flags column says hardirq or softirq context (`h`, `H`, `s`); None when the text has no flags column.
    pub irq_flag: Option<bool>,
    /// 1-based line number in the text.
    pub line: u32,
    pub kind: Kind,
}

/// A parsed trace.
#[derive(Clone, Debug, Default)]
pub struct Parsed {
    pub format: Option<Format>,
    pub events: Vec<Event>,
    /// Last comm seen for each pid (the idle task is not listed).
    pub comms: BTreeMap<u32, String>,
    /// Thread-group id of each pid, where the text says it (tgid column, perf `PID/TID`).
    pub tgids: BTreeMap<u32, u32>,
    /// Root of the traced process tree (`# schedlab record: root_pid=`).
    pub root_pid: Option<u32>,
    /// The command recorded (`# schedlab record: ... command=`).
    pub command: Option<String>,
    /// Events the tracer lost (LOST/DROPPED markers, the record header, entries-in-buffer < entries-written).
    pub lost_events: u64,
    /// CPUs (`#P:N`, `cpus=N`, or the highest CPU seen + 1).
    pub nr_cpus: u16,
    /// Lines of events this parser does not use.
    pub skipped: u64,
}

/// A parse error: the line number and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub msg: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.msg)
    }
}
impl std::error::Error for ParseError {}

fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.trim().parse::<T>().map_err(|_| format!("{what} {:?} is not a number", s.trim()))
}

/// The value of each key, in order: a value runs to the next key's ` key=`
/// (so comms with spaces survive); the last runs to the first space.
fn fields<'a>(payload: &'a str, keys: &[&str]) -> Result<Vec<&'a str>, String> {
    let mut out = Vec::with_capacity(keys.len());
    let mut pos = 0;
    for (k, key) in keys.iter().enumerate() {
        let pat = format!("{key}=");
        let start = find_key(payload, pos, &pat).ok_or_else(|| format!("field {key}= missing"))? + pat.len();
        let end = match keys.get(k + 1) {
            Some(next) => find_key(payload, start, &format!("{next}=")).ok_or_else(|| format!("field {next}= missing"))?,
            None => payload[start..].find(' ').map_or(payload.len(), |e| start + e),
        };
        out.push(payload[start..end].trim_end());
        pos = end;
    }
    Ok(out)
}

/// Position of `pat` at or after `from`, at the start or after a space.
fn find_key(s: &str, from: usize, pat: &str) -> Option<usize> {
    let mut i = from;
    while let Some(off) = s.get(i..)?.find(pat) {
        let p = i + off;
        if p == 0 || s.as_bytes()[p - 1] == b' ' {
            return Some(p);
        }
        i = p + 1;
    }
    None
}

fn prev_state(s: &str) -> Result<PrevState, String> {
    let s = s.trim().trim_end_matches(" ==>").trim();
    // Old kernels print `prev_state=0` style numbers in some tools; TASK_REPORT letters otherwise.
    match s.chars().next() {
        Some('R') => Ok(PrevState::Runnable),
        Some('X' | 'Z') => Ok(PrevState::Dead),
        Some('S' | 'D' | 'I' | 'T' | 't' | 'P' | 'W' | 'K' | 'N' | 'x') => Ok(PrevState::Blocked),
        Some(c) if c.is_ascii_digit() => match num::<u64>(s, "prev_state")? {
            0 => Ok(PrevState::Runnable),
            v if v & 0x30 != 0 => Ok(PrevState::Dead),
            v if v & 0x100 != 0 => Ok(PrevState::Runnable),
            _ => Ok(PrevState::Blocked),
        },
        _ => Err(format!("prev_state {s:?} is not a task state")),
    }
}

/// `SECS.FRAC` to ns (FRAC of 1..9 digits).
fn timestamp(s: &str) -> Result<u64, String> {
    let (a, b) = s.split_once('.').ok_or_else(|| format!("timestamp {s:?} has no '.'"))?;
    if b.is_empty() || b.len() > 9 || !b.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!("timestamp {s:?} is malformed"));
    }
    let secs: u64 = num(a, "timestamp seconds")?;
    let frac: u64 = num(b, "timestamp fraction")?;
    let ns = frac * 10u64.pow(9 - b.len() as u32);
    secs.checked_mul(1_000_000_000).and_then(|x| x.checked_add(ns)).ok_or_else(|| format!("timestamp {s:?} is too large"))
}

/// Header lines: record metadata, lost-event counts, CPU counts.
fn header(l: &str, p: &mut Parsed) {
    if let Some(rest) = l.strip_prefix("# schedlab record:") {
        for part in rest.split_whitespace() {
            if let Some(v) = part.strip_prefix("root_pid=") {
                p.root_pid = v.parse().ok();
            }
            if let Some(v) = part.strip_prefix("lost_events=") {
                p.lost_events = p.lost_events.max(v.parse().unwrap_or(0));
            }
        }
        if let Some((_, c)) = rest.split_once("command=") {
            p.command = Some(c.trim().to_string());
        }
        return;
    }
    if let Some(rest) = l.strip_prefix("# entries-in-buffer/entries-written:") {
        p.format.get_or_insert(Format::Ftrace);
        let mut it = rest.split_whitespace();
        if let Some((a, b)) = it.next().and_then(|x| x.split_once('/')) {
            if let (Ok(a), Ok(b)) = (a.parse::<u64>(), b.parse::<u64>()) {
                p.lost_events = p.lost_events.max(b.saturating_sub(a));
            }
        }
        if let Some(n) = it.find_map(|x| x.strip_prefix("#P:")) {
            p.nr_cpus = n.parse().unwrap_or(0);
        }
    }
    if l.starts_with("# tracer:") {
        p.format.get_or_insert(Format::Ftrace);
    }
}

/// Parse a whole text trace.
pub fn parse(text: &str) -> Result<Parsed, ParseError> {
    let mut p = Parsed::default();
    let mut max_cpu = 0u16;
    let mut last_ts = 0u64;
    let mut unsorted = false;
    let nlines = text.lines().count();
    for (i, l) in text.lines().enumerate() {
        let ln = i + 1;
        let err = |msg: String| {
            let hint = if ln == nlines && !text.ends_with('\n') { " (the last line is cut: is the trace truncated?)" } else { "" };
            ParseError { line: ln, msg: format!("{msg}{hint}: {:?}", l.chars().take(160).collect::<String>()) }
        };
        let t = l.trim();
        if t.is_empty() {
            continue;
        }
        if t.starts_with('#') {
            header(t, &mut p);
            continue;
        }
        if let Some(n) = t.strip_prefix("cpus=") {
            p.format.get_or_insert(Format::TraceCmd);
            p.nr_cpus = num(n, "cpus").map_err(err)?;
            continue;
        }
        if t.starts_with("version =") || t.starts_with("CPU ") && t.contains("is empty") {
            continue;
        }
        // Lost-event markers: ftrace `CPU:1 [LOST 12 EVENTS]`, trace-cmd `CPU:1 [12 EVENTS DROPPED]`.
        if t.contains("[LOST ") || t.contains("EVENTS DROPPED]") {
            let n = t
                .split(|c: char| !c.is_ascii_digit())
                .filter(|s| !s.is_empty())
                .filter_map(|s| s.parse::<u64>().ok())
                .next_back()
                .unwrap_or(1);
            p.lost_events += n.max(1);
            continue;
        }
        if t.starts_with("##### CPU") {
            continue;
        }
        match line(l, &mut p) {
            Ok(Some(mut e)) => {
                e.line = ln as u32;
                max_cpu = max_cpu.max(e.cpu);
                if e.ts < last_ts {
                    unsorted = true;
                }
                last_ts = e.ts;
                p.events.push(e);
            }
            Ok(None) => p.skipped += 1,
            Err(m) => return Err(err(m)),
        }
    }
    if p.events.is_empty() {
        return Err(ParseError {
            line: nlines.max(1),
            msg: "no scheduler events (sched_switch, sched_waking, ...) in the trace: was it recorded with the sched events enabled?"
                .into(),
        });
    }
    if unsorted {
        // perf script without --ordered, or concatenated per-CPU files.
        p.events.sort_by_key(|e| e.ts);
    }
    p.nr_cpus = p.nr_cpus.max(max_cpu + 1);
    Ok(p)
}

/// One event line; Ok(None) for an event this parser does not use.
fn line(l: &str, p: &mut Parsed) -> Result<Option<Event>, String> {
    // The CPU column: the first `[digits]`.
    let bytes = l.as_bytes();
    let mut open = None;
    let mut k = 0;
    while let Some(off) = l[k..].find('[') {
        let a = k + off;
        let close = l[a..].find(']').map(|c| a + c);
        if let Some(c) = close {
            if c > a + 1 && bytes[a + 1..c].iter().all(|b| b.is_ascii_digit()) {
                open = Some((a, c));
                break;
            }
        }
        k = a + 1;
    }
    let (a, c) = open.ok_or("not an event line: no [CPU] column")?;
    let cpu: u16 = num(&l[a + 1..c], "CPU")?;
    let mut task = l[..a].trim_end();
    let mut tgid = None;
    if task.ends_with(')') {
        if let Some(o) = task.rfind('(') {
            let v = task[o + 1..task.len() - 1].trim();
            if v != "-------" {
                tgid = Some(num::<u32>(v, "tgid")?);
            }
            task = task[..o].trim_end();
        }
    }
    let mut task = task.trim_start();
    // trace-cmd report of an instance buffer (`trace-cmd extract -B NAME`)
    // prefixes every line with `NAME:`.
    if let Some((first, rest)) = task.split_once(char::is_whitespace) {
        if first.len() > 1 && first.ends_with(':') && !rest.trim().is_empty() {
            task = rest.trim_start();
        }
    }
    // perf: `COMM PID` or `COMM PID/TID`; ftrace/trace-cmd: `COMM-PID`.
    let (comm, pid, perf) = match task.rsplit_once(' ') {
        Some((cm, last)) if !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit() || b == b'/') => {
            let (pid, tgid2) = match last.split_once('/') {
                Some((tg, tid)) => (num::<u32>(tid, "tid")?, Some(num::<u32>(tg, "pid")?)),
                None => (num::<u32>(last, "pid")?, None),
            };
            if let Some(t) = tgid2 {
                tgid = Some(t);
            }
            (cm.trim(), pid, true)
        }
        _ => {
            let (cm, pid) = task.rsplit_once('-').ok_or("the task column is neither COMM-PID nor COMM PID")?;
            (cm, num::<u32>(pid, "pid")?, false)
        }
    };
    // After the CPU: optional flags, the timestamp ending in ':', the event name ending in ':'.
    let rest = l[c + 1..].trim_start();
    let (mut first, mut after) = rest.split_once(' ').ok_or("no timestamp after the CPU column")?;
    let mut irq_flag = None;
    if !first.ends_with(':') {
        // A flags column (`d..2.`, `dNs3`): the third character is the hardirq/softirq state.
        let f = first.as_bytes();
        irq_flag = Some(f.len() >= 3 && matches!(f[2], b'h' | b'H' | b's'));
        let r = after.trim_start();
        (first, after) = r.split_once(' ').ok_or("no timestamp after the flags column")?;
    }
    let ts = timestamp(first.strip_suffix(':').ok_or_else(|| format!("timestamp {first:?} does not end in ':'"))?)?;
    let after = after.trim_start();
    let (ev, payload) = match after.split_once(": ") {
        Some((e, pl)) => (e, pl),
        None => (after.strip_suffix(':').unwrap_or(after), ""),
    };
    let ev = ev.rsplit(':').next().unwrap_or(ev).trim();
    if ev.is_empty() || ev.contains(' ') {
        return Err(format!("event name {ev:?} is malformed"));
    }
    let fmt = if perf {
        Format::PerfScript
    } else if p.format == Some(Format::Ftrace) || tgid.is_some() {
        Format::Ftrace
    } else {
        Format::TraceCmd
    };
    if p.format.is_none() || (perf && p.format != Some(Format::PerfScript)) {
        p.format = Some(fmt);
    }
    if pid != 0 {
        if let Some(tg) = tgid {
            p.tgids.insert(pid, tg);
        }
        if comm != "<idle>" && comm != "<...>" && !comm.is_empty() {
            note_comm(p, pid, comm);
        }
    }
    let kind = match ev {
        "sched_switch" if find_key(payload, 0, "prev_comm=").is_none() => {
            // trace-cmd's sched plugin: `PREV:PID [PRIO] STATE ==> NEXT:PID [PRIO]`.
            let (l, r) = payload
                .split_once(" ==> ")
                .ok_or("sched_switch: neither prev_comm= fields nor the `A:PID [PRIO] S ==> B:PID [PRIO]` form")?;
            let (prev_comm, prev, rest) = plugin_task(l)?;
            let (next_comm, next, _) = plugin_task(r)?;
            note_comm(p, prev, prev_comm);
            note_comm(p, next, next_comm);
            Kind::Switch { prev, prev_state: prev_state(rest)?, next }
        }
        "sched_wakeup" | "sched_wakeup_new" if find_key(payload, 0, "comm=").is_none() => {
            // trace-cmd's sched plugin: `COMM:PID [PRIO] CPU:NNN` (older: `success=1 CPU:NNN`).
            let (comm, pid, rest) = plugin_task(payload)?;
            note_comm(p, pid, comm);
            let target_cpu = match rest.split_whitespace().find_map(|w| w.strip_prefix("CPU:")) {
                Some(c) => num(c, "target CPU")?,
                None => 0,
            };
            if ev == "sched_wakeup" {
                Kind::Wakeup { pid }
            } else {
                Kind::WakeupNew { pid, target_cpu }
            }
        }
        "sched_switch" => {
            let f = fields(payload, &["prev_comm", "prev_pid", "prev_prio", "prev_state", "next_comm", "next_pid", "next_prio"])?;
            let (prev, next) = (num(f[1], "prev_pid")?, num(f[5], "next_pid")?);
            note_comm(p, prev, f[0]);
            note_comm(p, next, f[4]);
            Kind::Switch { prev, prev_state: prev_state(f[3])?, next }
        }
        "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => {
            let f = fields(payload, &["comm", "pid", "prio"])?;
            let pid = num(f[1], "pid")?;
            note_comm(p, pid, f[0]);
            let target_cpu = match find_key(payload, 0, "target_cpu=") {
                Some(x) => num(payload[x + 11..].split(' ').next().unwrap_or(""), "target_cpu")?,
                None => 0,
            };
            match ev {
                "sched_waking" => Kind::Waking { pid, target_cpu },
                "sched_wakeup" => Kind::Wakeup { pid },
                _ => Kind::WakeupNew { pid, target_cpu },
            }
        }
        "sched_migrate_task" => {
            let f = fields(payload, &["comm", "pid", "prio", "orig_cpu", "dest_cpu"])?;
            Kind::Migrate { pid: num(f[1], "pid")?, orig_cpu: num(f[3], "orig_cpu")?, dest_cpu: num(f[4], "dest_cpu")? }
        }
        "sched_process_fork" => {
            let f = fields(payload, &["comm", "pid", "child_comm", "child_pid"])?;
            let child = num(f[3], "child_pid")?;
            note_comm(p, child, f[2]);
            Kind::Fork { parent: num(f[1], "pid")?, child }
        }
        "sched_process_exit" => {
            let f = fields(payload, &["comm", "pid"])?;
            Kind::Exit { pid: num(f[1], "pid")? }
        }
        "irq_handler_entry" => Kind::IrqEntry,
        "irq_handler_exit" => Kind::IrqExit,
        "softirq_entry" => Kind::SoftirqEntry,
        "softirq_exit" => Kind::SoftirqExit,
        _ => return Ok(None),
    };
    Ok(Some(Event { ts, cpu, pid, irq_flag, line: 0, kind }))
}

/// trace-cmd sched plugin task: `COMM:PID [PRIO] rest` -> (comm, pid, rest).
fn plugin_task(s: &str) -> Result<(&str, u32, &str), String> {
    let s = s.trim();
    let (head, rest) = match s.find(" [") {
        Some(b) => {
            let close = s[b..].find(']').map(|c| b + c + 1).ok_or_else(|| format!("task {s:?}: `[PRIO]` not closed"))?;
            (&s[..b], s[close..].trim())
        }
        None => (s, ""),
    };
    let (comm, pid) = head.rsplit_once(':').ok_or_else(|| format!("task {head:?} is not COMM:PID"))?;
    Ok((comm, num(pid, "pid")?, rest))
}

fn note_comm(p: &mut Parsed, pid: u32, comm: &str) {
    if pid == 0 || comm.is_empty() || comm == "<...>" {
        return;
    }
    match p.comms.get_mut(&pid) {
        Some(c) if c == comm => {}
        Some(c) => *c = comm.to_string(),
        None => {
            p.comms.insert(pid, comm.to_string());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_formats_parse_to_the_same_event() {
        let lines = [
            ("       opt cgu.3-23793   (  23784) [001] dNs2. 10431.622079: sched_waking: comm=rcu preempt pid=15 prio=120 target_cpu=001\n", Format::Ftrace),
            ("       opt cgu.3-23793 [001] 10431.622079: sched_waking:         comm=rcu preempt pid=15 prio=120 target_cpu=001\n", Format::TraceCmd),
            ("       opt cgu.3 23784/23793 [001] 10431.622079:       sched:sched_waking: comm=rcu preempt pid=15 prio=120 target_cpu=001\n", Format::PerfScript),
        ];
        for (l, f) in lines {
            let p = parse(l).unwrap();
            assert_eq!(p.format, Some(f), "{l}");
            let e = p.events[0];
            assert_eq!((e.ts, e.cpu, e.pid, e.kind), (10_431_622_079_000, 1, 23793, Kind::Waking { pid: 15, target_cpu: 1 }), "{l}");
            assert_eq!(p.comms[&15], "rcu preempt");
            assert_eq!(p.comms[&23793], "opt cgu.3");
            if f != Format::TraceCmd {
                assert_eq!(p.tgids[&23793], 23784);
            }
            assert_eq!(e.irq_flag, if f == Format::Ftrace { Some(true) } else { None });
        }
    }

    #[test]
    fn switch_fields_survive_spaces_in_comms() {
        let l = "x-1 [000] d..2. 5.000001: sched_switch: prev_comm=a b prev_pid=7 prev_prio=120 prev_state=R+ ==> next_comm=c d next_pid=8 next_prio=120\n";
        let p = parse(l).unwrap();
        assert_eq!(p.events[0].kind, Kind::Switch { prev: 7, prev_state: PrevState::Runnable, next: 8 });
        assert_eq!((p.comms[&7].as_str(), p.comms[&8].as_str()), ("a b", "c d"));
        assert_eq!(p.events[0].ts, 5_000_001_000);
    }

    #[test]
    fn errors_name_the_line() {
        let good = "x-1 [000] 5.000001: sched_waking: comm=a pid=2 prio=120 target_cpu=000\n";
        let e = parse(&format!("{good}garbage here\n")).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.msg.contains("no [CPU] column"), "{e}");
        let e = parse(&format!("{good}x-1 [000] 5.000002: sched_switch: prev_comm=a prev_pid=1 prev_prio=120 prev_st")).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.msg.contains("truncated"), "{e}");
        let e = parse("x-1 [000] 5.0000x1: sched_waking: comm=a pid=2 prio=120\n").unwrap_err();
        assert!(e.msg.contains("timestamp"), "{e}");
        assert!(parse("# only a header\n").unwrap_err().msg.contains("no scheduler events"));
    }

    #[test]
    fn lost_events_are_counted() {
        let good = "x-1 [000] 5.000001: sched_waking: comm=a pid=2 prio=120 target_cpu=000\n";
        assert_eq!(parse(good).unwrap().lost_events, 0);
        assert_eq!(parse(&format!("CPU:1 [LOST 42 EVENTS]\n{good}")).unwrap().lost_events, 42);
        assert_eq!(parse(&format!("# entries-in-buffer/entries-written: 10/15   #P:4\n{good}")).unwrap().lost_events, 5);
        assert_eq!(parse(&format!("# schedlab record: lost_events=3 buffer_kb=1\n{good}")).unwrap().lost_events, 3);
    }

    #[test]
    fn unknown_events_are_skipped_and_nanoseconds_kept() {
        let t = "perf 5 [000] 1.000000001: sched:sched_stat_runtime: comm=perf pid=5 runtime=1 [ns]\nperf 5 [000] 1.000000002: sched:sched_process_exit: comm=perf pid=5 prio=120\n";
        let p = parse(t).unwrap();
        assert_eq!(p.skipped, 1);
        assert_eq!(p.events[0].ts, 1_000_000_002);
    }

    #[test]
    fn trace_cmd_plugin_forms_and_instance_prefix() {
        let t = "cpus=2\n\
tcx:             bash-9119  [000] 27032.185990: sched_wakeup_new:     bash:9122 [120] CPU:001\n\
tcx:             bash-9119  [000] 27032.186098: sched_switch:         bash:9119 [120] S ==> my:comm:9122 [120]\n\
tcx:       sched-pipe-9122  [000] 27032.186249: sched_wakeup:         migration/0:18 [0] CPU:000\n";
        let p = parse(t).unwrap();
        assert_eq!(p.format, Some(Format::TraceCmd));
        assert!(matches!(p.events[0].kind, Kind::WakeupNew { pid: 9122, target_cpu: 1 }), "{:?}", p.events[0]);
        assert!(matches!(p.events[1].kind, Kind::Switch { prev: 9119, prev_state: PrevState::Blocked, next: 9122 }));
        assert_eq!(p.comms[&9122], "sched-pipe", "a comm with a colon parsed, then renamed by the later line (exec)");
        assert_eq!(p.comms[&9119], "bash", "the instance prefix is not part of the comm");
        assert!(matches!(p.events[2].kind, Kind::Wakeup { pid: 18 }));
        let e = parse("cpus=1\nx-1 [000] 5.000001: sched_switch: a:1 [120] S -> b:2 [120]\n").unwrap_err();
        assert!(e.to_string().contains("line 2") && e.to_string().contains("==>"), "{e}");
    }
}
