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
}
