//! `--set key=value,key=value` parameters of a built-in workload.

use crate::WorkloadError;

/// One documented parameter of a built-in.
#[derive(Clone, Copy, Debug)]
pub struct ParamDoc {
    pub key: &'static str,
    pub default: &'static str,
    pub help: &'static str,
}

/// Parsed `key=value` pairs, in the order given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params(pub Vec<(String, String)>);

impl Params {
    /// Parse `a=1,b=2` (repeated `--set` flags are joined by the caller).
    pub fn parse(s: &str) -> Result<Params, WorkloadError> {
        let mut v = Vec::new();
        for kv in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
            let (k, val) = kv
                .split_once('=')
                .ok_or_else(|| WorkloadError(format!("--set expects key=value, got {kv:?}; e.g. --set groups=8,loops=100")))?;
            v.push((k.trim().to_string(), val.trim().to_string()));
        }
        Ok(Params(v))
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    pub(crate) fn check_known(&self, workload: &str, docs: &[ParamDoc]) -> Result<(), WorkloadError> {
        for (k, _) in &self.0 {
            if !docs.iter().any(|d| d.key == k) {
                return Err(WorkloadError(format!(
                    "workload {workload} has no parameter {k:?}; it takes: {}",
                    docs.iter().map(|d| format!("{}={}", d.key, d.default)).collect::<Vec<_>>().join(", ")
                )));
            }
        }
        Ok(())
    }

    /// An unsigned integer parameter in `[min, max]`, or its default.
    pub fn u64_in(&self, key: &str, default: u64, min: u64, max: u64) -> Result<u64, WorkloadError> {
        let Some(v) = self.get(key) else {
            return Ok(default);
        };
        let n: u64 =
            v.replace('_', "").parse().map_err(|_| WorkloadError(format!("{key}={v:?} is not a whole number; e.g. {key}={default}")))?;
        if n < min || n > max {
            return Err(WorkloadError(format!("{key}={n} is out of range; it must be between {min} and {max}")));
        }
        Ok(n)
    }

    /// A 0/1 flag.
    pub fn flag(&self, key: &str, default: bool) -> Result<bool, WorkloadError> {
        match self.get(key) {
            None => Ok(default),
            Some("1") | Some("true") | Some("yes") => Ok(true),
            Some("0") | Some("false") | Some("no") => Ok(false),
            Some(v) => Err(WorkloadError(format!("{key}={v:?}: expected 0 or 1"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parse_and_ranges() {
        let p = Params::parse("groups=8, loops=1_000,pipe=1").unwrap();
        assert_eq!(p.u64_in("groups", 10, 1, 100).unwrap(), 8);
        assert_eq!(p.u64_in("loops", 100, 1, u64::MAX).unwrap(), 1000);
        assert!(p.flag("pipe", false).unwrap());
        assert!(p.u64_in("groups", 10, 1, 4).unwrap_err().0.contains("between 1 and 4"));
        assert!(Params::parse("groups").is_err());
        assert!(Params::parse("x=abc").unwrap().u64_in("x", 1, 0, 9).is_err());
    }
}
