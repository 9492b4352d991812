//! The `SCHED_FEAT` table (kernel/sched/features.h), written once as a macro: the
//! enum, the defaults, the names and the parser all come from it.
//!
//! Defaults here are the *table* defaults of the newest kernel that has the bit;
//! each kernel profile (`profile.rs`) sets the bits of its release explicitly.

macro_rules! sched_features {
    ($( $(#[$m:meta])* $name:ident = $default:literal, )*) => {
        /// One scheduler feature bit, named as in /sys/kernel/debug/sched/features.
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum SchedFeat { $( $(#[$m])* $name, )* }
        impl SchedFeat {
            pub const ALL: &'static [SchedFeat] = &[$(SchedFeat::$name),*];
            pub const fn name(self) -> &'static str {
                match self { $(SchedFeat::$name => stringify!($name),)* }
            }
            pub const fn table_default(self) -> bool {
                match self { $(SchedFeat::$name => $default,)* }
            }
        }
    };
}

sched_features! {
    /// EEVDF: preserve lag across sleep+wake (place_entity). v6.6+.
    PLACE_LAG = true,
    /// EEVDF: new tasks start with half a slice (ENQUEUE_INITIAL). v6.6+.
    PLACE_DEADLINE_INITIAL = true,
    /// EEVDF: keep the relative deadline across migration. v6.12+.
    PLACE_REL_DEADLINE = true,
    /// EEVDF: a running eligible task keeps the CPU until its request is consumed. v6.6+.
    RUN_TO_PARITY = true,
    /// EEVDF: shorter-slice wakee may cancel slice protection. v6.12+.
    PREEMPT_SHORT = true,
    /// Mark the wakee as next buddy on every wakeup. Default off in every release.
    NEXT_BUDDY = false,
    /// EEVDF: honour cfs_rq->next at pick if eligible. ~v6.14+.
    PICK_BUDDY = true,
    /// CFS: the preempted task becomes the last buddy. <= v6.5.
    LAST_BUDDY = true,
    /// Consider buddies cache-hot for load balancing.
    CACHE_HOT_BUDDY = true,
    /// CFS: halve the sleeper credit. <= v6.5.
    GENTLE_FAIR_SLEEPERS = true,
    /// CFS: a forked child starts one vslice behind. <= v6.5.
    START_DEBIT = true,
    /// EEVDF: keep ineligible sleepers queued until picked or woken. v6.12+.
    DELAY_DEQUEUE = true,
    /// EEVDF: clip positive lag of delayed entities to 0. v6.12+.
    DELAY_ZERO = true,
    /// Allow wakeup preemption (WAKEUP_PREEMPT in 2.6.x).
    WAKEUP_PREEMPTION = true,
    /// Queue remote wakeups on the target's wake list (ttwu_queue). v3.x+.
    TTWU_QUEUE = true,
    /// select_idle_cpu: give up when avg_idle < avg scan cost. <= v5.10.
    SIS_AVG_CPU = false,
    /// select_idle_cpu: avg_idle-proportional scan limit. On <= v5.19, off 6.0-6.6.
    SIS_PROP = false,
    /// select_idle_cpu: utilisation-based scan limit. v6.0+.
    SIS_UTIL = true,
    /// wake_affine: the idle-based test. v4.14+.
    WA_IDLE = true,
    /// wake_affine: the load-based test. v4.14+.
    WA_WEIGHT = true,
    /// wake_affine: bias toward prev by half the imbalance_pct. v4.14+.
    WA_BIAS = true,
    /// Keep an EWMA of task utilisation across sleeps. v4.17+.
    UTIL_EST = true,
    /// util_est: follow increases immediately. v5.x-v6.8 (then unconditional).
    UTIL_EST_FASTUP = true,
    /// CFS sched_slice: period from the root h_nr_running. v5.13-v6.5.
    ALT_PERIOD = true,
    /// CFS sched_slice: slice at least min_granularity. v5.13-v6.5.
    BASE_SLICE = true,
    /// Short-task RFC (2022, never merged): `--patch shortrun-rfc`.
    SIS_SHORT = false,
}

/// A kernel release as (major, minor, patchlevel): v2.6.38 = (2, 6, 38), v6.12 = (6, 12, 0).
pub type Release = (u16, u16, u16);

/// The release a profile name such as `v2.6.38` or `v6.12` stands for.
pub fn release_of(name: &str) -> Option<Release> {
    let mut it = name.strip_prefix('v')?.split('.').map(|x| x.parse::<u16>().ok());
    let (a, b) = (it.next()??, it.next()??);
    let c = match it.next() {
        Some(x) => x?,
        None => 0,
    };
    Some((a, b, c))
}

impl SchedFeat {
    /// The mainline releases whose kernel/sched/features.h (kernel/sched_features.h
    /// before v3.3) has the bit: (first release with it, first release without it).
    /// `None` as the first release: a bit of a proposed patch only (`patch()`).
    ///
    /// Sources (the commits that added or removed the line): EEVDF bits
    /// 86bfbb7ce4f6 "sched/fair: Add lag based placement", 147f3efaa241 "sched/fair:
    /// Implement an EEVDF-like scheduling policy", 63304558ba5d "sched/eevdf: Curb
    /// wakeup-preemption" (v6.6); 5e963f2bd465 "sched/fair: Commit to EEVDF" drops
    /// the CFS placement and slice bits (v6.6); the delayed-dequeue series, PREEMPT_SHORT
    /// and PLACE_REL_DEADLINE (v6.12); 2f36825b176f "sched: Next buddy hint on sleep
    /// and preempt path" adds NEXT_BUDDY (v2.6.39); 317f394160e9 TTWU_QUEUE (v3.0);
    /// SIS_AVG_CPU (v4.11) until its removal (v5.12), SIS_PROP (v4.13) until
    /// "sched/fair: Remove SIS_PROP" (v6.8); SIS_UTIL 70fb5ccf2ebb (v6.0); WA_* (v4.14);
    /// UTIL_EST (v4.17), UTIL_EST_FASTUP (v5.7) until its removal (v6.9);
    /// ALT_PERIOD/BASE_SLICE 0c2de3f054a5 (v5.13); PICK_BUDDY (v6.14).
    pub const fn releases(self) -> (Option<Release>, Option<Release>) {
        use SchedFeat::*;
        match self {
            PLACE_LAG | PLACE_DEADLINE_INITIAL | RUN_TO_PARITY => (Some((6, 6, 0)), None),
            PLACE_REL_DEADLINE | PREEMPT_SHORT | DELAY_DEQUEUE | DELAY_ZERO => (Some((6, 12, 0)), None),
            NEXT_BUDDY => (Some((2, 6, 39)), None),
            PICK_BUDDY => (Some((6, 14, 0)), None),
            LAST_BUDDY | GENTLE_FAIR_SLEEPERS | START_DEBIT => (Some((2, 6, 31)), Some((6, 6, 0))),
            CACHE_HOT_BUDDY | WAKEUP_PREEMPTION => (Some((2, 6, 31)), None),
            TTWU_QUEUE => (Some((3, 0, 0)), None),
            SIS_AVG_CPU => (Some((4, 11, 0)), Some((5, 12, 0))),
            SIS_PROP => (Some((4, 13, 0)), Some((6, 8, 0))),
            SIS_UTIL => (Some((6, 0, 0)), None),
            WA_IDLE | WA_WEIGHT | WA_BIAS => (Some((4, 14, 0)), None),
            UTIL_EST => (Some((4, 17, 0)), None),
            UTIL_EST_FASTUP => (Some((5, 7, 0)), Some((6, 9, 0))),
            ALT_PERIOD | BASE_SLICE => (Some((5, 13, 0)), Some((6, 6, 0))),
            SIS_SHORT => (None, None),
        }
    }

    /// Whether mainline release `r` has the bit.
    pub fn in_release(self, r: Release) -> bool {
        match self.releases() {
            (Some(first), until) => r >= first && until.is_none_or(|u| r < u),
            (None, _) => false,
        }
    }

    /// "v6.6 and later", "v2.6.31 to v6.5": the releases with the bit, for messages.
    pub fn releases_text(self) -> String {
        let v = |r: Release| if r.2 == 0 { format!("v{}.{}", r.0, r.1) } else { format!("v{}.{}.{}", r.0, r.1, r.2) };
        match self.releases() {
            (Some(f), None) => format!("{} and later", v(f)),
            (Some(f), Some(u)) => format!("{} up to (not including) {}", v(f), v(u)),
            (None, _) => "no mainline release (a proposed patch)".to_string(),
        }
    }
}

/// A set of feature bits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct SchedFeatures(u64);

impl SchedFeatures {
    pub const fn empty() -> Self {
        SchedFeatures(0)
    }
    /// The table defaults.
    pub fn table_defaults() -> Self {
        let mut f = Self::empty();
        for &x in SchedFeat::ALL {
            f.set(x, x.table_default());
        }
        f
    }
    #[inline]
    pub fn has(self, f: SchedFeat) -> bool {
        self.0 & (1 << f as u8) != 0
    }
    pub fn set(&mut self, f: SchedFeat, on: bool) {
        if on {
            self.0 |= 1 << f as u8;
        } else {
            self.0 &= !(1 << f as u8);
        }
    }
    pub fn with(mut self, fs: &[SchedFeat], on: bool) -> Self {
        for &f in fs {
            self.set(f, on);
        }
        self
    }
    /// Apply one token the way /sys/kernel/debug/sched/features takes it:
    /// `NAME` turns a bit on, `NO_NAME` turns it off.
    pub fn apply(&mut self, token: &str) -> Result<(), String> {
        let t = token.trim();
        let (name, on) = match t.strip_prefix("NO_") {
            Some(n) => (n, false),
            None => (t, true),
        };
        match SchedFeat::ALL.iter().find(|f| f.name() == name) {
            Some(&f) => {
                self.set(f, on);
                Ok(())
            }
            None => Err(format!(
                "unknown sched feature {t:?}; valid bits (prefix NO_ to clear): {}",
                SchedFeat::ALL.iter().map(|f| f.name()).collect::<Vec<_>>().join(" ")
            )),
        }
    }
    /// Render like the debugfs file: every bit, `NO_` prefixed when off.
    pub fn render(self) -> String {
        SchedFeat::ALL
            .iter()
            .map(|&f| if self.has(f) { f.name().to_string() } else { format!("NO_{}", f.name()) })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn apply_and_render() {
        let mut f = SchedFeatures::table_defaults();
        assert!(f.has(SchedFeat::PLACE_LAG));
        f.apply("NO_PLACE_LAG").unwrap();
        assert!(!f.has(SchedFeat::PLACE_LAG));
        f.apply("NEXT_BUDDY").unwrap();
        assert!(f.has(SchedFeat::NEXT_BUDDY));
        let e = f.apply("NO_SUCH").unwrap_err();
        assert!(e.contains("RUN_TO_PARITY"), "{e}");
        assert!(f.render().contains("NO_PLACE_LAG"));
    }

    #[test]
    fn release_ranges() {
        assert_eq!(release_of("v2.6.38"), Some((2, 6, 38)));
        assert_eq!(release_of("v6.12"), Some((6, 12, 0)));
        let v6_12 = release_of("v6.12").unwrap();
        // Not in v6.12's features.h (issue 13 item 6).
        for f in [
            SchedFeat::GENTLE_FAIR_SLEEPERS,
            SchedFeat::START_DEBIT,
            SchedFeat::SIS_PROP,
            SchedFeat::PICK_BUDDY,
            SchedFeat::UTIL_EST_FASTUP,
        ] {
            assert!(!f.in_release(v6_12), "{f:?}");
        }
        for f in [SchedFeat::PLACE_LAG, SchedFeat::DELAY_DEQUEUE, SchedFeat::SIS_UTIL, SchedFeat::TTWU_QUEUE] {
            assert!(f.in_release(v6_12), "{f:?}");
        }
        assert!(!SchedFeat::PLACE_LAG.in_release((3, 10, 0)));
        assert!(!SchedFeat::TTWU_QUEUE.in_release((2, 6, 38)));
        assert!(!SchedFeat::SIS_SHORT.in_release(v6_12));
    }
}
