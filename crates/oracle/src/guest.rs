//! What runs inside the guest: the workload command for each supported
//! built-in, the initramfs (busybox, rt-tests' hackbench with its libraries,
//! the project's own C programs compiled statically), the /init script, and
//! the kernel image (Debian package, cached).

use super::cpio::Cpio;
use anyhow::{bail, Context, Result};
use schedlab_workload::Workload;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The project's guest programs (crates/oracle/programs/*.c), built at oracle time.
pub const PROGRAMS: &[(&str, &str)] =
    &[("sl-pingpong", include_str!("../programs/pingpong.c")), ("sl-rr", include_str!("../programs/rr.c"))];

/// Built-ins the guest can run, with the program that runs them.
pub const SUPPORTED: &[(&str, &str)] = &[
    ("hackbench", "rt-tests hackbench (-g -l -f -s, -p, -T)"),
    ("pipe", "sl-pingpong -l (perf bench sched pipe)"),
    ("context_switch1", "sl-pingpong -p -d, pairs bound to cores (will-it-scale)"),
    ("netperf", "sl-rr -m tcp|udp over loopback (netperf TCP_RR / UDP_RR)"),
];

/// The guest side of one workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GuestWorkload {
    /// Shell command line run by /init.
    pub command: String,
    /// Host binaries to put into /bin (their libraries come along).
    pub host_bins: Vec<&'static str>,
    /// Own programs to compile into /bin.
    pub programs: Vec<&'static str>,
}

fn param<'a>(w: &'a Workload, key: &str) -> Result<&'a str> {
    w.params.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()).with_context(|| format!("workload {} has no parameter {key}", w.name))
}

/// The guest command for a built-in with its resolved parameters. `duration_ns`
/// bounds time-bounded workloads (the same duration the model simulates; in the
/// guest it is wall-clock time). `cores` are the machine's cores (CPU lists),
/// for workloads that bind to them.
pub fn workload_command(w: &Workload, duration_ns: Option<u64>, cores: &[Vec<u16>]) -> Result<GuestWorkload> {
    let ms = || duration_ns.map(|d| d.div_ceil(1_000_000).max(1)).unwrap_or(1000);
    let flag = |k: &str| -> Result<bool> { Ok(param(w, k)? == "1") };
    Ok(match w.name.as_str() {
        "hackbench" => {
            let mut c = format!(
                "hackbench -g {} -l {} -f {} -s {}",
                param(w, "groups")?,
                param(w, "loops")?,
                param(w, "fds")?,
                param(w, "datasize")?
            );
            if flag("pipe")? {
                c.push_str(" -p");
            }
            c.push_str(if flag("threads")? { " -T" } else { " -P" });
            GuestWorkload { command: c, host_bins: vec!["hackbench"], programs: vec![] }
        }
        "pipe" => {
            let mut c = format!("sl-pingpong -l {}", param(w, "loops")?);
            if flag("threads")? {
                c.push_str(" -T");
            }
            GuestWorkload { command: c, host_bins: vec![], programs: vec!["sl-pingpong"] }
        }
        "context_switch1" => {
            let mut c = format!("sl-pingpong -p {} -d {}", param(w, "pairs")?, ms());
            if flag("threads")? {
                c.push_str(" -T");
            }
            if flag("affinity")? {
                for core in cores {
                    let l: Vec<String> = core.iter().map(|x| x.to_string()).collect();
                    c.push_str(&format!(" -a {}", l.join(",")));
                }
            }
            GuestWorkload { command: c, host_bins: vec![], programs: vec!["sl-pingpong"] }
        }
        "netperf" => {
            if param(w, "mode")? == "TCP_STREAM" {
                bail!("the oracle runs netperf TCP_RR and UDP_RR (its guest program sl-rr); mode=TCP_STREAM has no guest program yet");
            }
            let mode = if param(w, "mode")? == "UDP_RR" { "udp" } else { "tcp" };
            let c = format!(
                "sl-rr -m {mode} -n {} -r {} -R {} -d {}",
                param(w, "instances")?,
                param(w, "request_size")?,
                param(w, "response_size")?,
                ms()
            );
            GuestWorkload { command: c, host_bins: vec![], programs: vec!["sl-rr"] }
        }
        other => {
            let names: Vec<&str> = SUPPORTED.iter().map(|(n, _)| *n).collect();
            bail!(
                "the oracle has no guest program for workload {other:?}; it runs the built-ins {} (workload files are not supported)",
                names.join(", ")
            )
        }
    })
}

/// The cache directory: $SCHEDLAB_CACHE, else $XDG_CACHE_HOME/schedlab/oracle,
/// else ~/.cache/schedlab/oracle.
pub fn cache_dir() -> Result<PathBuf> {
    if let Some(d) = std::env::var_os("SCHEDLAB_CACHE").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("schedlab/oracle"));
    }
    let home = std::env::var_os("HOME")
        .filter(|d| !d.is_empty())
        .context("neither SCHEDLAB_CACHE nor HOME is set; set SCHEDLAB_CACHE to a directory for the oracle's kernel and programs")?;
    Ok(PathBuf::from(home).join(".cache/schedlab/oracle"))
}

fn run_ok(cmd: &mut Command, what: &str, fix: &str) -> Result<String> {
    let out = match cmd.stdin(Stdio::null()).output() {
        Ok(o) => o,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!("{what}: {:?} is not installed; {fix}", cmd.get_program()),
        Err(e) => bail!("{what}: cannot run {:?}: {e}", cmd.get_program()),
    };
    if !out.status.success() {
        bail!("{what} failed ({}): {}; {fix}", out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Version-aware ordering of names like vmlinuz-6.12.117+deb12-amd64: digit
/// runs compare as numbers.
fn version_key(s: &str) -> Vec<(u64, String)> {
    let mut out = Vec::new();
    let mut num = String::new();
    let mut txt = String::new();
    for ch in s.chars() {
        if ch.is_ascii_digit() {
            if !txt.is_empty() {
                out.push((0, std::mem::take(&mut txt)));
            }
            num.push(ch);
        } else {
            if !num.is_empty() {
                out.push((num.parse().unwrap_or(u64::MAX), String::new()));
                num.clear();
            }
            txt.push(ch);
        }
    }
    if !num.is_empty() {
        out.push((num.parse().unwrap_or(u64::MAX), String::new()));
    }
    if !txt.is_empty() {
        out.push((0, txt));
    }
    out
}

/// The Debian kernel release the real-kernel tables in docs/FIDELITY.md were
/// recorded with; booted when the apt archive (or the cache) has it.
pub const PINNED_RELEASE: &str = "6.12.117";

/// The release part of a Debian 6.12 kernel package or image name:
/// `linux-image-6.12.117+deb12-amd64-unsigned` and `vmlinuz-6.12.117+deb12-amd64`
/// give `6.12.117`. Other flavours (cloud, rt), other series and malformed
/// names give None.
fn debian_612_release(name: &str) -> Option<&str> {
    let rest = name
        .strip_prefix("linux-image-")
        .and_then(|r| r.strip_suffix("-amd64-unsigned"))
        .or_else(|| name.strip_prefix("vmlinuz-").and_then(|r| r.strip_suffix("-amd64")))?;
    let (release, abi) = rest.split_once('+')?;
    let deb = abi.strip_prefix("deb")?;
    if deb.is_empty() || !deb.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let patch = release.strip_prefix("6.12.")?;
    (!patch.is_empty() && patch.bytes().all(|b| b.is_ascii_digit())).then_some(release)
}

/// Of a list of names (package or image names), the pinned release if listed,
/// else the newest 6.12.
fn choose_612<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut found: Vec<&str> = names.into_iter().filter(|n| debian_612_release(n).is_some()).collect();
    if let Some(p) = found.iter().find(|n| debian_612_release(n) == Some(PINNED_RELEASE)) {
        return Some(p);
    }
    found.sort_by_key(|n| version_key(n));
    found.pop()
}

fn cached_kernels(cache: &Path) -> Vec<String> {
    std::fs::read_dir(cache.join("boot")).map(|rd| rd.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect()).unwrap_or_default()
}

/// The guest kernel: `--kernel-image`, else Debian's
/// linux-image-6.12.*-amd64-unsigned: the pinned release ([`PINNED_RELEASE`])
/// when the cache or the apt archive has it, otherwise the newest 6.12 the
/// archive lists (or, when apt cannot answer, the newest cached one).
/// Downloaded with apt-get and unpacked (boot/vmlinuz only) on first use.
pub fn kernel_image(explicit: Option<&Path>, cache: &Path) -> Result<PathBuf> {
    if let Some(p) = explicit {
        if !p.is_file() {
            bail!("--kernel-image {}: no such file (give a bzImage / vmlinuz, e.g. boot/vmlinuz-* of a linux-image package)", p.display());
        }
        return Ok(p.to_path_buf());
    }
    let boot = cache.join("boot");
    let cached = cached_kernels(cache);
    let pinned_image = format!("vmlinuz-{PINNED_RELEASE}+");
    if let Some(p) = cached.iter().find(|n| n.starts_with(&pinned_image) && debian_612_release(n).is_some()) {
        return Ok(boot.join(p));
    }
    std::fs::create_dir_all(cache).with_context(|| format!("cannot create the oracle cache {}", cache.display()))?;
    let fix = "the oracle needs Debian's linux-image-6.12.*-amd64-unsigned (bookworm-security) through apt, or pass --kernel-image PATH";
    let listed = run_ok(
        Command::new("apt-cache").args(["search", "--names-only", "^linux-image-6[.]12[.]"]),
        "apt-cache search for the 6.12 kernel",
        fix,
    );
    let list = match listed {
        Ok(l) => l,
        Err(e) => match choose_612(cached.iter().map(String::as_str)) {
            Some(c) => {
                eprintln!("schedlab oracle: {e:#}; booting the cached {c}");
                return Ok(boot.join(c));
            }
            None => return Err(e),
        },
    };
    let Some(pkg) = choose_612(list.lines().filter_map(|l| l.split_whitespace().next())) else {
        if let Some(c) = choose_612(cached.iter().map(String::as_str)) {
            eprintln!("schedlab oracle: apt-cache lists no linux-image-6.12.*+debNN-amd64-unsigned; booting the cached {c}");
            return Ok(boot.join(c));
        }
        bail!("apt-cache lists no linux-image-6.12.*+debNN-amd64-unsigned (run apt-get update; bookworm-security must be in the apt sources); {fix}");
    };
    let release = debian_612_release(pkg).unwrap_or("?").to_string();
    if let Some(c) = cached.iter().find(|n| debian_612_release(n) == Some(release.as_str())) {
        return Ok(boot.join(c));
    }
    if release != PINNED_RELEASE {
        eprintln!("schedlab oracle: the archive has no {PINNED_RELEASE} (the release docs/FIDELITY.md's tables were recorded with); taking the newest, {release}");
    }
    eprintln!("schedlab oracle: downloading {pkg} into {} (once)", cache.display());
    run_ok(Command::new("apt-get").args(["download", "-q", pkg]).current_dir(cache), &format!("apt-get download {pkg}"), fix)?;
    let deb = std::fs::read_dir(cache)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(pkg) && n.ends_with(".deb")))
        .with_context(|| format!("apt-get download {pkg} left no .deb in {}", cache.display()))?;
    let mut dpkg = Command::new("dpkg-deb")
        .arg("--fsys-tarfile")
        .arg(&deb)
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run dpkg-deb (Debian's dpkg) to unpack the kernel package")?;
    let tar_in = dpkg.stdout.take().context("dpkg-deb stdout")?;
    let tar = Command::new("tar")
        .args(["-x", "-C"])
        .arg(cache)
        .args(["--wildcards", "./boot/vmlinuz-*", "./boot/config-*"])
        .stdin(tar_in)
        .status()
        .context("cannot run tar")?;
    let st = dpkg.wait()?;
    if !st.success() || !tar.success() {
        bail!("unpacking {} failed (dpkg-deb {st}, tar {tar})", deb.display());
    }
    let _ = std::fs::remove_file(&deb);
    cached_kernels(cache)
        .into_iter()
        .find(|n| debian_612_release(n) == Some(release.as_str()))
        .map(|n| boot.join(n))
        .with_context(|| format!("{pkg} held no boot/vmlinuz-{release}+*-amd64"))
}

fn fnv(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf29ce484222325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

/// Compile one of [`PROGRAMS`] statically (cached by source hash).
pub fn build_program(name: &str, cache: &Path) -> Result<PathBuf> {
    let src = PROGRAMS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s).with_context(|| format!("no guest program {name}"))?;
    let dir = cache.join("programs");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let stem = format!("{name}-{:016x}", fnv(src.as_bytes()));
    let bin = dir.join(&stem);
    if bin.is_file() {
        return Ok(bin);
    }
    let c = dir.join(format!("{stem}.c"));
    std::fs::write(&c, src)?;
    let tmp = dir.join(format!("{stem}.tmp{}", std::process::id()));
    run_ok(
        Command::new("gcc").args(["-static", "-O2", "-Wall", "-o"]).arg(&tmp).arg(&c).arg("-lpthread"),
        &format!("compiling {name} (crates/oracle/programs) with gcc -static"),
        "install gcc and the C library (apt-get install gcc libc6-dev)",
    )?;
    std::fs::rename(&tmp, &bin)?;
    Ok(bin)
}

/// A host binary on PATH (or /usr/sbin, /sbin).
pub fn host_binary(name: &str, fix: &str) -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .with_context(|| format!("{name} is not installed; {fix}"))
}

/// Shared libraries `ldd` lists for a binary (empty for static binaries):
/// the paths the loader looks for, to be copied to the same paths in the guest.
fn libraries(bin: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(bin)
        .stdin(Stdio::null())
        .output()
        .context("cannot run ldd (libc-bin) to find the libraries of a guest binary")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut libs = Vec::new();
    for l in text.lines() {
        let l = l.trim();
        let path = if let Some((_, rhs)) = l.split_once("=>") { rhs.split_whitespace().next() } else { l.split_whitespace().next() };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            libs.push(PathBuf::from(p));
        }
    }
    Ok(libs)
}

/// The /init script: mounts, topology and node distances, tracing of the
/// workload's migrations, then `reps` runs of the workload, each between two
/// reads of /proc/schedstat and of the trace counters, all written to the
/// second serial port (ttyS1); then power-off.
pub fn init_script(command: &str, reps: u32) -> String {
    format!(
        r#"#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
ip link set lo up 2>/dev/null
echo 1 > /proc/sys/kernel/sched_schedstats
O=/dev/ttyS1
stty -F $O raw -echo 2>/dev/null
T=/sys/kernel/tracing
E=$T/events/sched/sched_migrate_task
migr() {{
  [ -d $E ] || return
  n=0
  for s in $T/per_cpu/cpu*/stats; do
    for v in $(grep -E '^(entries|overrun):' $s | cut -d: -f2); do n=$((n + v)); done
  done
  echo "@@ migrations $1 $n"
}}
{{
echo "@@ schedlab-oracle 2"
echo "@@ uname $(uname -r)"
echo "@@ topology"
for c in /sys/devices/system/cpu/cpu[0-9]*; do
  echo "${{c##*/}} core $(cat $c/topology/core_cpus_list) llc $(cat $c/cache/index3/shared_cpu_list 2>/dev/null) package $(cat $c/topology/package_cpus_list)"
done
for n in /sys/devices/system/node/node[0-9]*; do
  [ -d "$n" ] && echo "${{n##*/}} cpus $(cat $n/cpulist) distance $(cat $n/distance)"
done
if [ -d $E ]; then
  echo 4096 > $T/buffer_size_kb
  echo 'comm == "hackbench" || comm ~ "sl-*"' > $E/filter
  echo 1 > $E/enable
fi
r=1
while [ $r -le {reps} ]; do
  migr before
  echo "@@ schedstat-before $r"
  cat /proc/schedstat
  {command} > /tmp/out 2>&1
  rc=$?
  cat /proc/schedstat > /tmp/after
  migr after
  echo "@@ workload $r {command}"
  cat /tmp/out
  echo "@@ exit $r $rc"
  echo "@@ schedstat-after $r"
  cat /tmp/after
  r=$((r + 1))
done
echo "@@ end"
}} > $O 2>&1
sync
poweroff -f
"#
    )
}

/// Build the initramfs for a guest workload.
pub fn initramfs(gw: &GuestWorkload, reps: u32, cache: &Path) -> Result<Vec<u8>> {
    let mut c = Cpio::new();
    let mut made: Vec<String> = Vec::new();
    for d in ["bin", "dev", "proc", "sys", "tmp"] {
        c.dir(d);
        made.push(d.into());
    }
    let busybox = host_binary("busybox", "apt-get install busybox-static")?;
    let mut bins: Vec<(String, PathBuf)> = vec![("busybox".into(), busybox)];
    for b in &gw.host_bins {
        bins.push((b.to_string(), host_binary(b, "apt-get install rt-tests")?));
    }
    for p in &gw.programs {
        bins.push((p.to_string(), build_program(p, cache)?));
    }
    let mut libs: Vec<PathBuf> = Vec::new();
    for (name, path) in &bins {
        let data = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        c.file(&format!("bin/{name}"), &data, true);
        for l in libraries(path)? {
            if !libs.contains(&l) {
                libs.push(l);
            }
        }
    }
    for l in &libs {
        let p = l.to_string_lossy().into_owned();
        c.parents(&p, &mut made);
        let data = std::fs::read(l).with_context(|| format!("cannot read library {p}"))?;
        c.file(&p, &data, true);
    }
    c.file("init", init_script(&gw.command, reps).as_bytes(), true);
    Ok(c.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use schedlab_workload::Params;

    fn built(name: &str, set: &str) -> Workload {
        schedlab_workload::build(name, &Params::parse(set).unwrap(), 8, &[vec![0, 1], vec![2, 3]]).unwrap()
    }

    #[test]
    fn guest_commands_carry_the_resolved_parameters() {
        let g = workload_command(&built("hackbench", "groups=2,loops=100,pipe=1,threads=1"), None, &[]).unwrap();
        assert_eq!(g.command, "hackbench -g 2 -l 100 -f 20 -s 100 -p -T");
        let g = workload_command(&built("pipe", "loops=5000"), None, &[]).unwrap();
        assert_eq!(g.command, "sl-pingpong -l 5000");
        let g = workload_command(&built("context_switch1", "pairs=2"), Some(500_000_000), &[vec![0, 1], vec![2, 3]]).unwrap();
        assert_eq!(g.command, "sl-pingpong -p 2 -d 500 -a 0,1 -a 2,3");
        let g = workload_command(&built("netperf", "mode=UDP_RR,instances=3"), Some(2_000_000_000), &[]).unwrap();
        assert_eq!(g.command, "sl-rr -m udp -n 3 -r 1 -R 1 -d 2000");
        let err = workload_command(&built("schbench", ""), None, &[]).unwrap_err().to_string();
        assert!(err.contains("no guest program") && err.contains("netperf"), "{err}");
        let err = workload_command(&built("netperf", "mode=TCP_STREAM"), Some(2_000_000_000), &[]).unwrap_err().to_string();
        assert!(err.contains("TCP_STREAM") && err.contains("no guest program"), "{err}");
    }

    #[test]
    fn debian_kernel_names() {
        // apt-cache search output as bookworm-security lists it (issue 13: the
        // old regex had an unescaped `+` and matched none of these).
        let listed = "linux-image-6.12-amd64-dbg - Debugging symbols\n\
                      linux-image-6.12.107+deb12-amd64-unsigned - Linux 6.12 for 64-bit PCs\n\
                      linux-image-6.12.107+deb12-cloud-amd64-unsigned - Linux 6.12 for x86-64 cloud\n\
                      linux-image-6.12.117+deb12-amd64-unsigned - Linux 6.12 for 64-bit PCs\n\
                      linux-image-6.12.117+deb12-rt-amd64-unsigned - PREEMPT_RT\n\
                      linux-image-6.12.121+deb12-amd64-unsigned - Linux 6.12 for 64-bit PCs\n\
                      linux-image-6.12.117+deb12-amd64-dbg - Debug symbols\n";
        let names = || listed.lines().filter_map(|l| l.split_whitespace().next());
        assert_eq!(choose_612(names()), Some("linux-image-6.12.117+deb12-amd64-unsigned"), "the pinned release wins");
        let without_pinned = names().filter(|n| !n.contains("6.12.117"));
        assert_eq!(choose_612(without_pinned), Some("linux-image-6.12.121+deb12-amd64-unsigned"), "else the newest");
        assert_eq!(debian_612_release("vmlinuz-6.12.117+deb12-amd64"), Some("6.12.117"));
        for bad in [
            "linux-image-6.12.117+deb12-cloud-amd64-unsigned",
            "linux-image-6.1.0-9-amd64-unsigned",
            "vmlinuz-6.12.x+deb12-amd64",
            "linux-image-6.12.117+debx-amd64-unsigned",
            "config-6.12.117+deb12-amd64",
        ] {
            assert_eq!(debian_612_release(bad), None, "{bad}");
        }
        assert_eq!(choose_612(["linux-image-6.12-amd64-dbg"]), None);
    }

    #[test]
    fn version_order() {
        let mut v = ["vmlinuz-6.12.99+deb12-amd64", "vmlinuz-6.12.117+deb12-amd64", "vmlinuz-6.12.107+deb12-amd64"];
        v.sort_by_key(|s| version_key(s));
        assert_eq!(v[2], "vmlinuz-6.12.117+deb12-amd64");
    }

    #[test]
    fn init_script_reads_schedstat_around_the_command() {
        let s = init_script("hackbench -g 1", 3);
        let before = s.find("@@ schedstat-before").unwrap();
        let run = s.find("hackbench -g 1 > /tmp/out").unwrap();
        let after = s.find("cat /proc/schedstat > /tmp/after").unwrap();
        assert!(before < run && run < after);
        assert!(s.contains("while [ $r -le 3 ]"));
        assert!(s.contains("poweroff -f"));
    }
}
