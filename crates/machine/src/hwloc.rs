//! Import of hwloc XML topologies (`lstopo --of xml`, hwloc 2.x; hwloc 1.x files
//! work too where their structure is the same).
//!
//! Mapping: PU `os_index` -> CPU id (must be 0..n); Core -> core (a PU without a
//! Core is its own core); Package -> package; the highest-level data/unified
//! cache (L3 normally) -> LLC (the package when there is none); an L2 shared by
//! more than one core -> cluster, else cluster = LLC; NUMANode (in hwloc 2 a
//! memory child of the object it is attached to) -> node, by its `cpuset`;
//! `distances2` over NUMANodes (hwloc 2) or `distances` (hwloc 1) -> SLIT, scaled
//! so that the diagonal is 10; Linux's 10/20 when absent. Costs are generic
//! ([assumed], docs/CALIBRATION.md).

use std::collections::BTreeMap;

use roxmltree::{Document, Node, ParsingOptions};

use crate::format::default_distance;
use crate::{generic_costs, shape, vendor_from_cpuid, CacheSizes, CpuInfo, CpuTopology, IdleState, Machine, MachineError, Renumber};

/// Parse an hwloc bitmap ("0x00000003", "0x000000ff,0xffffffff", with "0xf...f"
/// for an infinite prefix) into set bits.
fn cpuset(s: &str) -> Result<Vec<u16>, String> {
    let mut words: Vec<&str> = s.trim().split(',').collect();
    if words.first().is_some_and(|w| w.trim().eq_ignore_ascii_case("0xf...f")) {
        words.remove(0);
    }
    let mut out = Vec::new();
    for (i, w) in words.iter().rev().enumerate() {
        let w = w.trim();
        let hex = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")).unwrap_or(w);
        let v = if hex.is_empty() { 0 } else { u32::from_str_radix(hex, 16).map_err(|_| format!("bad cpuset word {w:?} in {s:?}"))? };
        for b in 0..32 {
            if v & (1 << b) != 0 {
                let bit = i * 32 + b;
                out.push(u16::try_from(bit).map_err(|_| format!("cpuset {s:?} is too large"))?);
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

fn ty<'a>(n: &Node<'a, '_>) -> &'a str {
    n.attribute("type").unwrap_or("")
}

/// Cache level of a data or unified cache object, `None` for anything else.
fn cache_level(n: &Node) -> Option<u32> {
    let t = ty(n);
    if n.attribute("cache_type") == Some("2") || t.contains("iCache") {
        return None; // instruction cache
    }
    if t == "Cache" {
        return n.attribute("depth")?.parse().ok();
    }
    let rest = t.strip_prefix('L')?.strip_suffix("Cache")?;
    rest.parse().ok()
}

fn err(name: &str, msg: impl std::fmt::Display) -> MachineError {
    MachineError(format!("hwloc file {name:?}: {msg}"))
}

/// The deepest element nesting a topology file may have: real lstopo files
/// nest about ten levels (Machine, Package, Die, caches, Core, PU).
const MAX_XML_DEPTH: usize = 256;

/// The element nesting depth of `text`, scanning tags without building a tree
/// (so that a hostile file cannot exhaust the stack of a recursive consumer).
/// Stops counting at `limit + 1`.
fn xml_depth(text: &str, limit: usize) -> usize {
    let b = text.as_bytes();
    let (mut i, mut depth, mut max) = (0usize, 0usize, 0usize);
    while i < b.len() {
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        if text[i..].starts_with("<!--") {
            i = text[i..].find("-->").map_or(b.len(), |k| i + k + 3);
            continue;
        }
        let close = b.get(i + 1) == Some(&b'/');
        let decl = matches!(b.get(i + 1), Some(b'?') | Some(b'!'));
        // Find the tag's end, skipping quoted attribute values.
        let mut j = i + 1;
        let mut quote: Option<u8> = None;
        while j < b.len() {
            match (quote, b[j]) {
                (Some(q), c) if c == q => quote = None,
                (None, b'"') | (None, b'\'') => quote = Some(b[j]),
                (None, b'>') => break,
                _ => {}
            }
            j += 1;
        }
        let self_closing = j > 0 && j < b.len() && b[j - 1] == b'/';
        if close {
            depth = depth.saturating_sub(1);
        } else if !decl && !self_closing {
            depth += 1;
            max = max.max(depth);
            if max > limit {
                return max;
            }
        }
        i = j + 1;
    }
    max
}

pub(crate) fn from_hwloc_xml_str(text: &str, name: &str) -> Result<Machine, MachineError> {
    if xml_depth(text, MAX_XML_DEPTH) > MAX_XML_DEPTH {
        return Err(err(
            name,
            format!("elements nested more than {MAX_XML_DEPTH} deep; an lstopo topology nests about ten levels: give the output of `lstopo --of xml`"),
        ));
    }
    let opts = ParsingOptions { allow_dtd: true, ..ParsingOptions::default() };
    let doc = Document::parse_with_options(text, opts)
        .map_err(|e| err(name, format!("not well-formed XML: {e}; give the output of `lstopo --of xml`")))?;
    if doc.root_element().tag_name().name() != "topology" {
        return Err(err(name, "root element is not <topology>; give the output of `lstopo --of xml`"));
    }
    let objects: Vec<Node> = doc.descendants().filter(|n| n.is_element() && n.tag_name().name() == "object").collect();
    let llc_level = objects.iter().filter_map(cache_level).max();

    // PUs by os_index.
    let mut pus: BTreeMap<u16, Node> = BTreeMap::new();
    for n in objects.iter().filter(|n| ty(n) == "PU") {
        let idx: u16 = n
            .attribute("os_index")
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| err(name, "a PU object has no numeric os_index; the file is not an lstopo topology"))?;
        if pus.insert(idx, *n).is_some() {
            return Err(err(name, format!("PU os_index {idx} appears twice")));
        }
    }
    let nr = pus.len();
    if nr == 0 {
        return Err(err(name, "no PU objects; give the output of `lstopo --of xml` (not --no-io --of synthetic...)"));
    }
    if nr > schedlab_topology::MAX_CPUS {
        return Err(err(name, format!("{nr} PUs; schedlab models at most {}", schedlab_topology::MAX_CPUS)));
    }
    if let Some((i, c)) = pus.keys().enumerate().find(|(i, c)| **c as usize != *i) {
        return Err(err(name, format!("PU os_index {c} found where {i} was expected; schedlab needs CPUs numbered 0..n without gaps")));
    }

    // NUMA nodes with CPUs, in os_index order.
    let mut numa: Vec<(u32, Vec<u16>)> = Vec::new();
    for n in objects.iter().filter(|n| ty(n) == "NUMANode") {
        let os: u32 = n.attribute("os_index").and_then(|s| s.parse().ok()).unwrap_or(numa.len() as u32);
        let set = cpuset(n.attribute("cpuset").unwrap_or("")).map_err(|e| err(name, e))?;
        let set: Vec<u16> = set.into_iter().filter(|&c| (c as usize) < nr).collect();
        if !set.is_empty() {
            numa.push((os, set));
        }
    }
    numa.sort();
    let mut node_of: Vec<Option<u32>> = vec![None; nr];
    for (i, (_, set)) in numa.iter().enumerate() {
        for &c in set {
            node_of[c as usize].get_or_insert(i as u32);
        }
    }
    if numa.is_empty() {
        node_of = vec![Some(0); nr];
    } else if let Some(c) = node_of.iter().position(|x| x.is_none()) {
        return Err(err(name, format!("PU {c} is in no NUMANode's cpuset; the file is inconsistent")));
    }

    // Per-PU ancestry.
    struct Raw {
        core: usize,
        package: Option<usize>,
        llc: Option<usize>,
        l2: Option<usize>,
    }
    let raw: Vec<Raw> = pus
        .values()
        .map(|pu| {
            let anc = || pu.ancestors().filter(|a| a.is_element() && a.tag_name().name() == "object");
            Raw {
                core: anc().find(|a| ty(a) == "Core").map(|a| a.id().get_usize()).unwrap_or(pu.id().get_usize()),
                package: anc().find(|a| ty(a) == "Package").map(|a| a.id().get_usize()),
                llc: anc().find(|a| llc_level.is_some() && cache_level(a) == llc_level).map(|a| a.id().get_usize()),
                l2: anc().find(|a| cache_level(a) == Some(2)).map(|a| a.id().get_usize()),
            }
        })
        .collect();
    let (mut core_r, mut pkg_r, mut llc_r, mut cl_r) = (Renumber::default(), Renumber::default(), Renumber::default(), Renumber::default());
    let mut base: Vec<CpuInfo> = raw
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let package = pkg_r.id(r.package);
            let llc = llc_r.id(r.llc.map(Ok).unwrap_or(Err(package)));
            CpuInfo { core: core_r.id(r.core), cluster: llc, llc, node: node_of[i].unwrap_or(0), package }
        })
        .collect();
    // Clusters: L2s below the LLC that hold several cores.
    if llc_level.is_some_and(|l| l > 2) {
        let mut cores_of_l2: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
        for (r, c) in raw.iter().zip(&base) {
            if let Some(l2) = r.l2 {
                cores_of_l2.entry(l2).or_default().push(c.core);
            }
        }
        let shared = |l2: &usize| {
            let mut v = cores_of_l2[l2].clone();
            v.sort_unstable();
            v.dedup();
            v.len() > 1
        };
        if raw.iter().all(|r| r.l2.as_ref().is_some_and(shared)) {
            for (r, c) in raw.iter().zip(base.iter_mut()) {
                c.cluster = cl_r.id(r.l2);
            }
        }
    }

    let nr_nodes = numa.len().max(1);
    let distance = distances(&doc, &numa).map_err(|e| err(name, e))?.unwrap_or_else(|| default_distance(nr_nodes));
    // Vendor: the CPUVendor info of the first Package that has one (hwloc puts it
    // on every Package on x86); none -> Other.
    let vendor = objects
        .iter()
        .filter(|n| ty(n) == "Package")
        .find_map(|p| {
            p.children().find(|c| c.has_tag_name("info") && c.attribute("name") == Some("CPUVendor")).and_then(|c| c.attribute("value"))
        })
        .map(vendor_from_cpuid)
        .unwrap_or_default();
    let topology = CpuTopology::new(base, distance).map_err(|e| err(name, format!("inconsistent topology: {e}")))?.with_vendor(vendor);

    // Caches of PU 0.
    let pu0 = pus[&0];
    let cache_of = |lvl: u32| -> Result<Option<(Option<u32>, bool)>, MachineError> {
        let Some(a) = pu0.ancestors().find(|a| a.is_element() && cache_level(a) == Some(lvl)) else {
            return Ok(None);
        };
        let kib = match a.attribute("cache_size") {
            None => None,
            Some(s) => match s.trim().parse::<u64>() {
                Ok(b) if b >= 1024 => Some(u32::try_from(b / 1024).map_err(|_| err(name, format!("L{lvl} cache_size=\"{s}\" is too large")))?),
                _ => {
                    return Err(err(
                        name,
                        format!("the L{lvl} cache of PU 0 has cache_size=\"{s}\"; it must be the size in bytes, at least 1024 (lstopo writes e.g. cache_size=\"33554432\" for 32 MiB)"),
                    ))
                }
            },
        };
        let incl =
            a.children().any(|c| c.has_tag_name("info") && c.attribute("name") == Some("Inclusive") && c.attribute("value") == Some("1"));
        Ok(Some((kib, incl)))
    };
    let llc_c = match llc_level {
        Some(l) => cache_of(l)?,
        None => None,
    };
    let caches = CacheSizes {
        l1d_kib: cache_of(1)?.and_then(|c| c.0).unwrap_or(32),
        l2_kib: cache_of(2)?.and_then(|c| c.0).unwrap_or(1024),
        llc_kib: llc_c.and_then(|c| c.0).unwrap_or(32 * 1024),
        llc_inclusive: llc_c.is_some_and(|c| c.1),
    };

    let info = |key: &str| {
        doc.descendants().find(|n| n.has_tag_name("info") && n.attribute("name") == Some(key)).and_then(|n| n.attribute("value"))
    };
    let model = info("CPUModel").unwrap_or("unknown CPU");
    let m = Machine {
        name: name.to_string(),
        description: format!("{model} (hwloc import): {}", shape(&topology)),
        source: format!(
            "hwloc XML {name:?}{}; costs and idle states are generic [assumed] values (docs/CALIBRATION.md, imported machines)",
            info("hwlocVersion").map(|v| format!(" (hwloc {v})")).unwrap_or_default()
        ),
        topology,
        caches,
        costs: generic_costs(2500, false),
        idle_states: vec![
            IdleState { name: "POLL".into(), exit_latency_ns: 0, target_residency_ns: 0 },
            IdleState { name: "C1".into(), exit_latency_ns: 1000, target_residency_ns: 2000 },
        ],
        noise: crate::Noise::BARE_METAL_DEFAULT,
    };
    m.validate()?;
    Ok(m)
}

/// Node distance matrix over `numa` (sorted by os_index), scaled so the diagonal
/// is 10. `Ok(None)` when the file has none.
fn distances(doc: &Document, numa: &[(u32, Vec<u16>)]) -> Result<Option<Vec<Vec<u32>>>, String> {
    let n = numa.len();
    if n == 0 {
        return Ok(None);
    }
    let nums = |node: Option<Node>| -> Vec<f64> {
        node.and_then(|x| x.text()).unwrap_or("").split_whitespace().filter_map(|t| t.parse().ok()).collect()
    };
    // hwloc 2: <distances2 type="NUMANode" nbobjs=N kind=K indexing="os"><indexes>..</indexes><u64values>..</u64values>
    let d2: Vec<Node> = doc.descendants().filter(|x| x.has_tag_name("distances2") && x.attribute("type") == Some("NUMANode")).collect();
    // Prefer latency-like matrices (kind bit 4 = MEANS_LATENCY), then the first.
    let pick = d2.iter().find(|x| x.attribute("kind").and_then(|k| k.parse::<u32>().ok()).is_some_and(|k| k & 4 != 0)).or(d2.first());
    let (index, values): (Vec<u32>, Vec<f64>) = if let Some(d) = pick {
        let idx = nums(d.children().find(|c| c.has_tag_name("indexes")));
        let vals = nums(d.children().find(|c| c.has_tag_name("u64values")));
        if d.attribute("indexing") == Some("gp") {
            return Err("distances2 indexed by gp_index are not supported; re-export with a current `lstopo --of xml`".into());
        }
        (idx.into_iter().map(|v| v as u32).collect(), vals)
    } else if let Some(d) = doc.descendants().find(|x| x.has_tag_name("distances")) {
        // hwloc 1: <distances nbobjs=N relative_depth=.. latency_base=B><latency value=V/>...; objects in logical
        // (= os_index order for NUMA nodes, normally) order.
        let vals: Vec<f64> =
            d.children().filter(|c| c.has_tag_name("latency")).filter_map(|c| c.attribute("value")?.parse().ok()).collect();
        let k = (vals.len() as f64).sqrt() as usize;
        (numa.iter().take(k).map(|(os, _)| *os).collect(), vals)
    } else {
        return Ok(None);
    };
    let k = index.len();
    if k * k != values.len() || k == 0 {
        return Err(format!("a NUMA distance matrix has {} indexes but {} values; the file is damaged", k, values.len()));
    }
    let mut out = vec![vec![0u32; n]; n];
    for (a, (osa, _)) in numa.iter().enumerate() {
        let ia = index.iter().position(|x| x == osa).ok_or_else(|| format!("NUMA node {osa} is missing from the distance matrix"))?;
        let diag = values[ia * k + ia];
        if diag <= 0.0 {
            return Err(format!("distance of NUMA node {osa} to itself is {diag}; the file is damaged"));
        }
        for (b, (osb, _)) in numa.iter().enumerate() {
            let ib = index.iter().position(|x| x == osb).ok_or_else(|| format!("NUMA node {osb} is missing from the distance matrix"))?;
            let v = (values[ia * k + ib] * 10.0 / diag).round() as u32;
            out[a][b] = if a == b { 10 } else { v.max(11) };
        }
    }
    // Make symmetric (hwloc matrices from SLIT are; averaged latencies may not be).
    let out = (0..n).map(|a| (0..n).map(|b| out[a][b].max(out[b][a])).collect()).collect();
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) const HAND: &str = include_str!("../../../examples/machines/hwloc-2s-2c-smt2.xml");
    const LOCAL: &str = include_str!("../../../examples/machines/local-sample.xml");

    #[test]
    fn bitmaps() {
        assert_eq!(cpuset("0x00000003").unwrap(), vec![0, 1]);
        assert_eq!(cpuset("0x00000001,0x80000000").unwrap(), vec![31, 32]);
        assert_eq!(cpuset("0xf...f,0x00000002").unwrap(), vec![1]);
        assert!(cpuset("0xzz").is_err());
    }

    #[test]
    fn hand_written_two_socket_file() {
        let m = from_hwloc_xml_str(HAND, "hwloc-2s-2c-smt2").unwrap();
        let t = &m.topology;
        assert_eq!((t.nr_cpus(), t.nr_cores(), t.nr_packages(), t.nr_llcs(), t.nr_nodes()), (8, 4, 2, 2, 2));
        // Linux server numbering in the file: siblings N and N+4.
        assert_eq!(t.smt_siblings(crate::CpuId(1)).map(|c| c.0).collect::<Vec<_>>(), vec![1, 5]);
        assert_eq!(crate::cpulist(t.ids_where(|c| c.node == 1)), "2-3,6-7");
        assert_eq!(t.distance_matrix(), &[vec![10, 21], vec![21, 10]]);
        assert!(t.cpus().iter().all(|c| c.cluster == c.llc));
        assert_eq!(m.caches, CacheSizes { l1d_kib: 32, l2_kib: 1024, llc_kib: 22528, llc_inclusive: false });
        assert!(m.description.contains("Xeon"), "{}", m.description);
        assert_eq!(t.vendor(), crate::CpuVendor::Intel);
        assert_eq!(crate::from_toml_str(&m.to_toml(), &m.name).unwrap(), m);
        // through load(), named after the file stem
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/machines/hwloc-2s-2c-smt2.xml");
        assert_eq!(crate::load(path).unwrap(), m);
    }

    #[test]
    fn real_lstopo_sample() {
        let m = from_hwloc_xml_str(LOCAL, "local-sample").unwrap();
        let t = &m.topology;
        assert_eq!((t.nr_cpus(), t.nr_nodes(), t.nr_llcs()), (2, 1, 1));
        assert_eq!(t.threads_per_core(), 1);
        assert_eq!(m.caches.llc_kib, 32 * 1024);
        assert_eq!(t.vendor(), crate::CpuVendor::Amd);
        assert_eq!(crate::from_toml_str(&m.to_toml(), &m.name).unwrap(), m);
    }

    #[test]
    fn vendor_from_package_info() {
        let hygon = HAND.replace("GenuineIntel", "HygonGenuine");
        let m = from_hwloc_xml_str(&hygon, "x").unwrap();
        assert_eq!(m.topology.vendor(), crate::CpuVendor::Amd);
        let other = HAND.replace("GenuineIntel", "CentaurHauls");
        let m = from_hwloc_xml_str(&other, "x").unwrap();
        assert_eq!(m.topology.vendor(), crate::CpuVendor::Other);
        let none = HAND.replace(r#"<info name="CPUVendor" value="GenuineIntel"/>"#, "");
        assert_ne!(none, HAND);
        let m = from_hwloc_xml_str(&none, "x").unwrap();
        assert_eq!(m.topology.vendor(), crate::CpuVendor::Other);
    }

    #[test]
    fn shared_l2_makes_clusters() {
        // 1 package, 1 L3, two L2s of two cores each (a Jacobsville / Kunpeng-like cluster layout).
        let mut objs = String::new();
        for l2 in 0..2 {
            let set = format!("0x{:08x}", 0b11 << (2 * l2));
            objs.push_str(&format!(r#"<object type="L2Cache" cpuset="{set}" cache_size="4194304" depth="2" cache_type="0">"#));
            for c in 0..2 {
                let pu = l2 * 2 + c;
                objs.push_str(&format!(
                    r#"<object type="L1Cache" cpuset="0x{b:08x}" cache_size="32768" depth="1" cache_type="1"><object type="Core" os_index="{pu}" cpuset="0x{b:08x}"><object type="PU" os_index="{pu}" cpuset="0x{b:08x}"/></object></object>"#,
                    b = 1 << pu
                ));
            }
            objs.push_str("</object>");
        }
        let xml = format!(
            r#"<?xml version="1.0"?><topology version="2.0"><object type="Machine" os_index="0" cpuset="0x0000000f"><object type="Package" os_index="0" cpuset="0x0000000f"><object type="NUMANode" os_index="0" cpuset="0x0000000f"/><object type="L3Cache" cpuset="0x0000000f" cache_size="8388608" depth="3" cache_type="0">{objs}</object></object></object></topology>"#
        );
        let m = from_hwloc_xml_str(&xml, "clusters").unwrap();
        assert_eq!(m.topology.nr_clusters(), 2);
        assert_eq!(m.topology.nr_llcs(), 1);
        assert_eq!(m.topology.cpu(crate::CpuId(3)).cluster, m.topology.cpu(crate::CpuId(2)).cluster);
    }

    #[test]
    fn bad_files_are_explained() {
        assert!(from_hwloc_xml_str("<x/>", "x").unwrap_err().0.contains("lstopo"));
        assert!(from_hwloc_xml_str("<topology", "x").unwrap_err().0.contains("XML"));
        let gap = HAND.replace(r#"type="PU" os_index="7""#, r#"type="PU" os_index="9""#);
        assert!(from_hwloc_xml_str(&gap, "x").unwrap_err().0.contains("without gaps"));
    }
}

#[cfg(test)]
mod hostile_files {
    use super::*;

    /// Issue 13 item 8: a 50,000-deep nesting is refused before any tree is
    /// built (it overflowed the stack), and a zero or negative LLC size is an
    /// error instead of a silent 32 MiB default.
    #[test]
    fn deep_nesting_and_bad_cache_sizes_are_errors() {
        let deep = format!(
            r#"<?xml version="1.0"?><topology version="2.0">{}{}</topology>"#,
            r#"<object type="Group" cpuset="0x1">"#.repeat(50_000),
            "</object>".repeat(50_000)
        );
        let e = from_hwloc_xml_str(&deep, "deep.xml").unwrap_err().0;
        assert!(e.contains("nested more than"), "{e}");
        for bad in ["0", "-5", "abc", "512"] {
            let x = tests::HAND.replacen(r#"cache_size="#, &format!(r#"cache_size="{bad}" old_size="#), 1);
            let e = from_hwloc_xml_str(&x, "bad.xml").unwrap_err().0;
            assert!(e.contains(&format!(r#"cache_size="{bad}""#)), "{bad}: {e}");
        }
        assert_eq!(xml_depth(r#"<a x="1>2"><b/><c><d></d></c><!-- <e> --></a>"#, 10), 3);
    }
}
