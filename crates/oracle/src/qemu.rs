//! A schedlab machine as qemu options (docs/oracle.md, "Topology"):
//! sockets / dies / cores / threads for `-smp`, one `-numa node` per NUMA
//! node with a RAM backend, `-numa cpu` mapping each die to its node, and
//! `-numa dist` for the SLIT. One LLC per die: Linux 6.12 takes the L3
//! sharing from CPUID leaf 4 (Intel) or 0x8000001D (AMD family >= 0x19), and
//! qemu reports the L3 as shared per die.

use anyhow::{bail, Result};
use schedlab_machine::Machine;
use schedlab_topology::{CpuId, CpuVendor};

/// The largest guest the oracle boots (TCG boots grow with vCPUs: 32 took ~55 s).
pub const MAX_CPUS: usize = 32;
/// RAM per NUMA node (MiB): enough for an initramfs and the workloads.
pub const MIB_PER_NODE: u64 = 512;

// FIDELITY(F-300): the guest's CPUs progress as emulation lets them, not as
// real hardware's would; timing-dependent decisions (idle CPUs at wakeup) differ.
/// How qemu runs the vCPUs (docs/oracle.md, "Emulation modes"). Both are TCG;
/// they differ in how the vCPUs share the host's cores, which decides how
/// evenly the guest's CPUs progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Accel {
    /// One host thread runs the vCPUs in turn; guest time advances with
    /// executed instructions (-icount shift=auto,sleep=off), so every vCPU
    /// progresses evenly whatever the host's load. Reproducible shares; slower.
    Icount,
    /// One host thread per vCPU (multi-threaded TCG), guest time = host time:
    /// fast, but on a host with fewer free cores than vCPUs the host scheduler
    /// stalls vCPUs at random, which skews idle-CPU-dependent decisions.
    Mttcg,
}

impl Accel {
    pub fn args(self) -> Vec<String> {
        let v: &[&str] = match self {
            Accel::Icount => &["-accel", "tcg,thread=single", "-icount", "shift=auto,sleep=off"],
            Accel::Mttcg => &["-accel", "tcg,thread=multi"],
        };
        v.iter().map(|x| x.to_string()).collect()
    }
}

/// The shape qemu is asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    pub cpus: usize,
    pub sockets: usize,
    /// LLCs per socket, as qemu dies.
    pub dies: usize,
    pub cores: usize,
    pub threads: usize,
    pub nodes: usize,
    /// NUMA node of each (socket, die), socket-major.
    pub die_node: Vec<u32>,
    pub distance: Vec<Vec<u32>>,
    pub vendor: CpuVendor,
}

/// Map ids of one level to qemu's, checking that the partition of CPUs is the
/// same: machine id -> qemu id must be a bijection over all CPUs.
fn same_partition(m: &Machine, level: &str, machine_id: impl Fn(usize) -> u32, qemu_id: impl Fn(usize) -> usize) -> Result<()> {
    let n = m.topology.nr_cpus();
    let mut fwd: Vec<(u32, usize)> = Vec::new();
    for c in 0..n {
        let (a, b) = (machine_id(c), qemu_id(c));
        match fwd.iter().find(|(x, y)| *x == a || *y == b) {
            Some(&(x, y)) if x == a && y == b => {}
            Some(_) => bail!(
                "cpu{c}: qemu numbers vCPUs socket by socket, die by die, core by core, thread by thread (SMT siblings adjacent), \
                 and in that numbering cpu{c} is in another {level} than in machine {}; describe the machine with numbering = \"smt-adjacent\" \
                 and cores filling LLCs and packages in CPU order (docs/machine-format.md)",
                m.name
            ),
            None => fwd.push((a, b)),
        }
    }
    Ok(())
}

/// The qemu shape of a machine, or an error saying what qemu cannot express.
// FIDELITY(F-303): clusters, smt-last numbering and irregular machines are refused.
pub fn shape(m: &Machine) -> Result<Shape> {
    let t = &m.topology;
    let n = t.nr_cpus();
    if n > MAX_CPUS {
        bail!("machine {} has {n} CPUs; the oracle boots at most {MAX_CPUS} vCPUs under qemu TCG (boot time grows with vCPUs); use a smaller machine file", m.name);
    }
    if t.nr_clusters() != t.nr_llcs() {
        bail!(
            "machine {} has cluster groups (CONFIG_SCHED_CLUSTER) inside its LLCs; the oracle cannot make qemu report L2-sharing clusters to the guest yet; use clusters_per_llc = 1",
            m.name
        );
    }
    let sockets = t.nr_packages();
    let llcs = t.nr_llcs();
    let cores = t.nr_cores();
    let threads = t.threads_per_core();
    if !llcs.is_multiple_of(sockets) || !cores.is_multiple_of(llcs) || n != cores * threads {
        bail!("machine {} is irregular (LLCs per socket, cores per LLC or threads per core differ); qemu's -smp needs the same counts everywhere", m.name);
    }
    let dies = llcs / sockets;
    let cores_per_die = cores / llcs;
    // Every core has `threads` CPUs, every LLC `cores_per_die` cores, every package `dies` LLCs.
    for c in t.cpus() {
        let core = t.ids_where(|x| x.core == c.core).count();
        let llc_cores = {
            let mut v: Vec<u32> = t.cpus().iter().filter(|x| x.llc == c.llc).map(|x| x.core).collect();
            v.sort_unstable();
            v.dedup();
            v.len()
        };
        if core != threads || llc_cores != cores_per_die {
            bail!(
                "machine {} is irregular (cores differ in SMT threads or LLCs in cores); qemu's -smp needs the same counts everywhere",
                m.name
            );
        }
    }
    let cpu = |c: usize| *t.cpu(CpuId(c as u16));
    same_partition(m, "core", |c| cpu(c).core, |c| c / threads)?;
    same_partition(m, "LLC (qemu die)", |c| cpu(c).llc, |c| c / (threads * cores_per_die))?;
    same_partition(m, "package (qemu socket)", |c| cpu(c).package, |c| c / (threads * cores_per_die * dies))?;
    let nodes = t.nr_nodes();
    let mut die_node = Vec::with_capacity(sockets * dies);
    let per_die = threads * cores_per_die;
    for d in 0..sockets * dies {
        let node = cpu(d * per_die).node;
        if (d * per_die..(d + 1) * per_die).any(|c| cpu(c).node != node) {
            bail!(
                "machine {}: the LLC of cpu{} spans several NUMA nodes; qemu assigns whole dies (LLCs) to nodes here, so a node must hold whole LLCs",
                m.name,
                d * per_die
            );
        }
        die_node.push(node);
    }
    for node in 0..nodes as u32 {
        if !die_node.contains(&node) {
            bail!("machine {}: NUMA node {node} has no CPUs; the oracle gives qemu only nodes with CPUs", m.name);
        }
    }
    let distance = t.distance_matrix().to_vec();
    for row in &distance {
        if row.iter().any(|&d| !(10..=255).contains(&d)) {
            bail!("machine {}: qemu takes NUMA distances 10..=255 only", m.name);
        }
    }
    Ok(Shape { cpus: n, sockets, dies, cores: cores_per_die, threads, nodes, die_node, distance, vendor: t.vendor() })
}

impl Shape {
    /// `-cpu` model. With several dies the guest must read the L3 sharing per
    /// die: AMD needs topoext and family >= 0x19 (Zen3; Linux 6.12 reads leaf
    /// 0x8000001D only then), Intel needs CPUID level 0x1f (qemu aborts
    /// otherwise). With one LLC per socket qemu's default model is enough; a
    /// machine marked "amd" still gets the Zen3 identity so the kernel's
    /// AMD-specific choices (node_reclaim_distance 32 since v5.4) match.
    pub fn cpu_model(&self) -> &'static str {
        match (self.vendor, self.dies > 1) {
            (CpuVendor::Amd, _) => "max,topoext=on,x-force-features=on,family=25,model=1,xlevel=0x8000001e",
            (_, true) => "max,vendor=GenuineIntel,level=32",
            (_, false) => "qemu64",
        }
    }

    pub fn needs_qemu10(&self) -> bool {
        self.dies > 1 || self.vendor == CpuVendor::Amd
    }

    pub fn smp(&self) -> String {
        format!("{},sockets={},dies={},cores={},threads={}", self.cpus, self.sockets, self.dies, self.cores, self.threads)
    }

    /// Every option but the kernel, initrd, command line and serial ports.
    pub fn args(&self, accel: Accel) -> Vec<String> {
        let mut a: Vec<String> = vec!["-machine".into(), "q35".into()];
        a.extend(accel.args());
        a.extend(["-cpu".into(), self.cpu_model().into(), "-smp".into(), self.smp()]);
        a.extend(["-m".into(), format!("{}M", MIB_PER_NODE * self.nodes as u64)]);
        if self.nodes > 1 {
            for nd in 0..self.nodes {
                a.extend(["-object".into(), format!("memory-backend-ram,id=m{nd},size={MIB_PER_NODE}M")]);
                a.extend(["-numa".into(), format!("node,nodeid={nd},memdev=m{nd}")]);
            }
            for (i, &node) in self.die_node.iter().enumerate() {
                let (s, d) = (i / self.dies, i % self.dies);
                let die = if self.dies > 1 { format!(",die-id={d}") } else { String::new() };
                a.extend(["-numa".into(), format!("cpu,node-id={node},socket-id={s}{die}")]);
            }
            for i in 0..self.nodes {
                for j in i + 1..self.nodes {
                    a.extend(["-numa".into(), format!("dist,src={i},dst={j},val={}", self.distance[i][j])]);
                }
            }
        }
        a
    }

    /// What the guest does not take from the machine file.
    pub fn not_expressed(&self) -> Vec<String> {
        let mut v = vec![
            "costs, cache sizes, idle states and clock: the guest runs under TCG emulation, where timing is not meaningful (decisions are)"
                .to_string(),
        ];
        if self.vendor == CpuVendor::Other {
            v.push("vendor \"other\": the guest CPU is qemu64 (AMD family 15, no Zen-specific choices)".into());
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_cpu_two_socket_smt2() {
        let m = schedlab_machine::load("../../examples/machines/numa-8cpu-2s-smt2.toml").unwrap();
        let s = shape(&m).unwrap();
        assert_eq!(s.smp(), "8,sockets=2,dies=1,cores=2,threads=2");
        assert_eq!(s.die_node, vec![0, 1]);
        let a = s.args(Accel::Icount).join(" ");
        assert!(a.contains("-numa cpu,node-id=1,socket-id=1 "), "{a}");
        assert!(a.contains("-numa dist,src=0,dst=1,val=20"), "{a}");
        assert!(a.contains("-m 1024M"), "{a}");
        assert!(!s.needs_qemu10());
    }

    #[test]
    fn split_llc_machine_uses_dies() {
        let m = schedlab_machine::load("../../examples/machines/numa-16cpu-2s-2llc-smt2.toml").unwrap();
        let s = shape(&m).unwrap();
        assert_eq!(s.smp(), "16,sockets=2,dies=2,cores=2,threads=2");
        assert!(s.needs_qemu10());
        assert!(s.args(Accel::Mttcg).join(" ").contains("-numa cpu,node-id=1,socket-id=1,die-id=1"));
    }

    #[test]
    fn what_qemu_cannot_express_is_an_error() {
        // smt-last numbering (siblings cpu N and N + cores) is not qemu's.
        let text =
            std::fs::read_to_string("../../examples/machines/numa-8cpu-2s-smt2.toml").unwrap().replace("\"smt-adjacent\"", "\"smt-last\"");
        let m = schedlab_machine::from_toml_str(&text, "smt-last-8").unwrap();
        let err = shape(&m).unwrap_err().to_string();
        assert!(err.contains("smt-adjacent"), "{err}");
        let big = schedlab_machine::load("zen3-2s-nps1").unwrap();
        assert!(shape(&big).unwrap_err().to_string().contains("at most 32"));
        let laptop = schedlab_machine::load("laptop-4c8t").unwrap();
        assert_eq!(shape(&laptop).unwrap().smp(), "8,sockets=1,dies=1,cores=4,threads=2");
        assert_eq!(shape(&schedlab_machine::load("x86-12").unwrap()).unwrap().smp(), "12,sockets=2,dies=1,cores=6,threads=1");
        // Clusters inside an LLC have no qemu form here.
        let text = std::fs::read_to_string("../../examples/machines/numa-16cpu-2s-2llc-smt2.toml")
            .unwrap()
            .replace("clusters_per_llc = 1", "clusters_per_llc = 2");
        let m = schedlab_machine::from_toml_str(&text, "cls").unwrap();
        assert!(shape(&m).unwrap_err().to_string().contains("cluster"));
    }
}
