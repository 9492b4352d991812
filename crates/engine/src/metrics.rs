//! Streaming metrics: a bounded log-linear histogram (HDR-style, 1/16 relative
//! precision) for latencies, so memory never grows with simulated time.

const SUB: usize = 16;
const EXPS: usize = 64;

/// Log-linear histogram of u64 values with ~6% bucket width.
#[derive(Clone, Debug)]
pub struct Histogram {
    buckets: Box<[u64]>,
    count: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram { buckets: vec![0; SUB * EXPS].into_boxed_slice(), count: 0, max: 0 }
    }
}

#[inline]
fn bucket_of(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros() as usize; // >= 4
    let shift = exp - 4;
    let sub = ((v >> shift) as usize) & (SUB - 1);
    (exp - 3) * SUB + sub
}

/// Lower bound of a bucket's range.
fn bucket_low(b: usize) -> u64 {
    if b < SUB {
        return b as u64;
    }
    let exp = b / SUB + 3;
    let sub = (b % SUB) as u64;
    (SUB as u64 + sub) << (exp - 4)
}

impl Histogram {
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.buckets[bucket_of(v)] += 1;
        self.count += 1;
        self.max = self.max.max(v);
    }
    pub fn count(&self) -> u64 {
        self.count
    }
    pub fn max(&self) -> u64 {
        self.max
    }
    /// The value at quantile `q` (0..=1): the lower bound of the bucket holding it
    /// (exact below 16), never above `max`.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (b, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return bucket_low(b).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn quantiles_within_bucket_precision() {
        let mut h = Histogram::default();
        for v in 1..=10_000u64 {
            h.record(v);
        }
        for (q, want) in [(0.5, 5000.0), (0.9, 9000.0), (0.99, 9900.0)] {
            let got = h.quantile(q) as f64;
            assert!((got - want).abs() / want < 0.07, "q{q}: {got} vs {want}");
        }
        assert_eq!(h.max(), 10_000);
        assert_eq!(h.quantile(0.0001), 1);
        for v in [0u64, 15, 16, 17, 1 << 40, u64::MAX] {
            assert!(bucket_low(bucket_of(v)) <= v);
        }
    }
}
