//! `struct cpumask`: a fixed-size CPU bitmap (up to `MAX_CPUS` bits).

use schedlab_topology::CpuId;

/// Words of the largest mask (schedlab_topology::MAX_CPUS = 1024 CPUs).
const MAX_WORDS: usize = schedlab_topology::MAX_CPUS / 64;

/// A CPU bitmap sized for the machine. Iteration is ascending, as
/// `for_each_cpu()` iterates. Stored inline (no heap): copying one, as the
/// balancer does with a group's span, never allocates.
#[derive(Clone, PartialEq, Eq, Default, Hash)]
pub struct CpuMask {
    /// Words `len..` are always zero.
    w: [u64; MAX_WORDS],
    len: u8,
}

impl std::fmt::Debug for CpuMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuMask").field("words", &self.words()).finish()
    }
}

impl CpuMask {
    pub fn new(nr_cpus: usize) -> Self {
        let len = nr_cpus.div_ceil(64);
        assert!(len <= MAX_WORDS, "{nr_cpus} CPUs: schedlab models at most {} CPUs", schedlab_topology::MAX_CPUS);
        CpuMask { w: [0; MAX_WORDS], len: len as u8 }
    }
    #[inline]
    fn words(&self) -> &[u64] {
        &self.w[..self.len as usize]
    }
    #[inline]
    fn words_mut(&mut self) -> &mut [u64] {
        &mut self.w[..self.len as usize]
    }
    pub fn from_cpus(nr_cpus: usize, cpus: impl IntoIterator<Item = CpuId>) -> Self {
        let mut m = Self::new(nr_cpus);
        for c in cpus {
            m.set(c);
        }
        m
    }
    #[inline]
    pub fn set(&mut self, c: CpuId) {
        self.words_mut()[c.idx() / 64] |= 1 << (c.idx() % 64);
    }
    #[inline]
    pub fn clear(&mut self, c: CpuId) {
        self.words_mut()[c.idx() / 64] &= !(1 << (c.idx() % 64));
    }
    #[inline]
    pub fn test(&self, c: CpuId) -> bool {
        self.words()[c.idx() / 64] & (1 << (c.idx() % 64)) != 0
    }
    pub fn weight(&self) -> u32 {
        self.words().iter().map(|w| w.count_ones()).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.words().iter().all(|&w| w == 0)
    }
    pub fn first(&self) -> Option<CpuId> {
        self.iter().next()
    }
    pub fn iter(&self) -> impl Iterator<Item = CpuId> + '_ {
        self.words().iter().enumerate().flat_map(|(i, &w)| BitIter(w).map(move |b| CpuId((i * 64 + b) as u16)))
    }
    /// Call `f` with each CPU of `self & other`, ascending (`iter_and` as a
    /// plain loop over the words, for a hot caller).
    #[inline]
    pub fn for_each_and(&self, other: &CpuMask, mut f: impl FnMut(CpuId)) {
        for (i, (&a, &b)) in self.words().iter().zip(other.words()).enumerate() {
            let mut bits = a & b;
            while bits != 0 {
                f(CpuId((i * 64 + bits.trailing_zeros() as usize) as u16));
                bits &= bits - 1;
            }
        }
    }
    /// `cpumask_and` followed by iteration, without allocating.
    pub fn iter_and<'a>(&'a self, other: &'a CpuMask) -> impl Iterator<Item = CpuId> + 'a {
        self.words()
            .iter()
            .zip(other.words().iter())
            .enumerate()
            .flat_map(|(i, (&a, &b))| BitIter(a & b).map(move |bit| CpuId((i * 64 + bit) as u16)))
    }
    /// Iterate from `start` (inclusive) wrapping around, as `for_each_cpu_wrap()`:
    /// lazily, word by word from `start`'s word, no allocation.
    pub fn iter_wrap(&self, start: CpuId) -> WrapIter<'_> {
        let s = start.idx();
        let n = self.words().len();
        let w0 = (s / 64).min(n);
        let cur = if w0 < n { self.words()[w0] & (!0u64 << (s % 64)) } else { 0 };
        WrapIter { words: self.words(), start: s, word: w0, cur, pass2: false }
    }
    pub fn is_subset_of(&self, other: &CpuMask) -> bool {
        self.words().iter().zip(other.words().iter()).all(|(&a, &b)| a & !b == 0)
    }
    pub fn intersects(&self, other: &CpuMask) -> bool {
        self.words().iter().zip(other.words().iter()).any(|(&a, &b)| a & b != 0)
    }
    /// `cpumask_copy()`
    pub fn copy_from(&mut self, other: &CpuMask) {
        self.words_mut().copy_from_slice(other.words());
    }
    /// `cpumask_clear()`
    pub fn clear_all(&mut self) {
        self.words_mut().iter_mut().for_each(|w| *w = 0);
    }
    pub fn or_with(&mut self, other: &CpuMask) {
        for (a, b) in self.words_mut().iter_mut().zip(other.words().iter()) {
            *a |= b;
        }
    }
    /// `cpumask_and(self, self, other)`
    pub fn and_with(&mut self, other: &CpuMask) {
        for (a, b) in self.words_mut().iter_mut().zip(other.words().iter()) {
            *a &= b;
        }
    }
    /// `cpumask_and(self, a, b)`
    pub fn and_from(&mut self, a: &CpuMask, b: &CpuMask) {
        for ((d, x), y) in self.words_mut().iter_mut().zip(a.words().iter()).zip(b.words().iter()) {
            *d = x & y;
        }
    }
    /// `cpumask_andnot(self, a, b)`
    pub fn andnot_from(&mut self, a: &CpuMask, b: &CpuMask) {
        for ((d, x), y) in self.words_mut().iter_mut().zip(a.words().iter()).zip(b.words().iter()) {
            *d = x & !y;
        }
    }
    /// Words of the mask (64 CPUs each).
    #[inline]
    pub fn nr_words(&self) -> usize {
        self.len as usize
    }
    /// Word `i` (CPUs `64 i .. 64 i + 64`).
    #[inline]
    pub fn word(&self, i: usize) -> u64 {
        self.words()[i]
    }
    /// `Some((first, last + 1))`: the lowest CPU set and one past the highest.
    pub fn bounds(&self) -> Option<(usize, usize)> {
        let w = self.words();
        let first = w.iter().position(|&x| x != 0)?;
        let last = w.iter().rposition(|&x| x != 0)?;
        Some((first * 64 + w[first].trailing_zeros() as usize, last * 64 + 64 - w[last].leading_zeros() as usize))
    }
    /// `Some((lo, hi))` when the mask's CPUs are exactly `lo..hi` (one
    /// contiguous, non-empty range, as an LLC's span without affinity limits).
    pub fn contiguous(&self) -> Option<(usize, usize)> {
        let (lo, hi) = self.bounds()?;
        (self.weight() as usize == hi - lo).then_some((lo, hi))
    }
    /// Number of CPUs set in `lo..hi` (word operations).
    pub fn count_range(&self, lo: usize, hi: usize) -> u32 {
        if lo >= hi {
            return 0;
        }
        let (wl, wh) = (lo / 64, (hi - 1) / 64);
        let lo_mask = !0u64 << (lo % 64);
        let hi_mask = !0u64 >> (63 - (hi - 1) % 64);
        if wl == wh {
            return (self.words()[wl] & lo_mask & hi_mask).count_ones();
        }
        let mut n = (self.words()[wl] & lo_mask).count_ones() + (self.words()[wh] & hi_mask).count_ones();
        for w in &self.words()[wl + 1..wh] {
            n += w.count_ones();
        }
        n
    }
    /// How many CPUs of the mask `for_each_cpu_wrap(start)` visits before `c`.
    pub fn count_wrap_before(&self, start: CpuId, c: CpuId) -> u32 {
        let (s, c) = (start.idx(), c.idx());
        if c >= s {
            self.count_range(s, c)
        } else {
            self.count_range(s, self.words().len() * 64) + self.count_range(0, c)
        }
    }
    /// How many CPUs of the mask `for_each_cpu_wrap(start)` visits at or
    /// after `from` and before `to`, where `from` comes no later than `to` in
    /// that order: `count_wrap_before(start, to) - count_wrap_before(start,
    /// from)`, in word operations over the CPUs between the two only (a walk
    /// that counts as it goes pays for the distance it covers, not for the
    /// size of the mask).
    #[inline]
    pub fn count_wrap_between(&self, start: CpuId, from: CpuId, to: CpuId) -> u32 {
        let (s, f, t) = (start.idx(), from.idx(), to.idx());
        if (f >= s) == (t >= s) {
            self.count_range(f, t)
        } else {
            self.count_range(f, self.words().len() * 64) + self.count_range(0, t)
        }
    }
}

/// A [`CpuMask`] that also keeps which of its words have a CPU set (bit `w`
/// of [`Self::nonempty_words`] for word `w`), so a walk can go from one
/// non-empty word to the next without reading the empty ones. Read it as a
/// `CpuMask` (`Deref`); change it only with [`Self::set`], [`Self::clear`]
/// and [`Self::copy_from`], which keep the summary true.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryMask {
    mask: CpuMask,
    nonempty: u64,
}

// The summary is one u64: a word per bit.
const _: () = assert!(MAX_WORDS <= 64);

impl SummaryMask {
    pub fn new(mask: CpuMask) -> Self {
        let mut s = SummaryMask { mask, nonempty: 0 };
        s.resummarize();
        s
    }
    fn resummarize(&mut self) {
        self.nonempty = self.mask.words().iter().enumerate().filter(|(_, &w)| w != 0).fold(0, |a, (i, _)| a | 1 << i);
    }
    #[inline]
    pub fn set(&mut self, c: CpuId) {
        self.mask.set(c);
        self.nonempty |= 1 << (c.idx() / 64);
    }
    #[inline]
    pub fn clear(&mut self, c: CpuId) {
        self.mask.clear(c);
        let w = c.idx() / 64;
        if self.mask.word(w) == 0 {
            self.nonempty &= !(1 << w);
        }
    }
    /// `cpumask_copy()`
    pub fn copy_from(&mut self, other: &CpuMask) {
        self.mask.copy_from(other);
        self.resummarize();
    }
    /// Bit `w` set iff word `w` has a CPU set.
    #[inline]
    pub fn nonempty_words(&self) -> u64 {
        self.nonempty
    }
}

impl std::ops::Deref for SummaryMask {
    type Target = CpuMask;
    #[inline]
    fn deref(&self) -> &CpuMask {
        &self.mask
    }
}

/// `for_each_cpu_wrap()` iterator: the bits at and above `start`, then the
/// bits below it, each visited once.
pub struct WrapIter<'a> {
    words: &'a [u64],
    start: usize,
    /// Index of the word `cur` came from.
    word: usize,
    /// Bits of `words[word]` not yet returned (already masked to the pass).
    cur: u64,
    /// Second pass: bits below `start`.
    pass2: bool,
}

impl Iterator for WrapIter<'_> {
    type Item = CpuId;
    #[inline]
    fn next(&mut self) -> Option<CpuId> {
        loop {
            if self.cur != 0 {
                let b = self.cur.trailing_zeros() as usize;
                self.cur &= self.cur - 1;
                let c = self.word * 64 + b;
                if self.pass2 && c >= self.start {
                    return None;
                }
                return Some(CpuId(c as u16));
            }
            self.word += 1;
            if self.word >= self.words.len() || (self.pass2 && self.word * 64 >= self.start) {
                if self.pass2 || self.start == 0 {
                    return None;
                }
                self.pass2 = true;
                self.word = 0;
                // Bits at or above `start` in this word are cut off when returned.
                self.cur = self.words.first().copied().unwrap_or(0);
                continue;
            }
            self.cur = self.words[self.word];
        }
    }
}

struct BitIter(u64);
impl Iterator for BitIter {
    type Item = usize;
    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let b = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    // SummaryMask's word summary stays that of its mask through random
    // sets, clears (emptying words and refilling them) and copies.
    #[test]
    fn summary_mask_tracks_its_nonempty_words() {
        let mut rnd = crate::test_topology::xorshift(0x1234_5678_9abc_def1);
        for n in [1usize, 64, 65, 300, 1024] {
            let mut m = SummaryMask::new(CpuMask::new(n));
            for i in 0..20_000 {
                // Few CPUs per word set at a time, so words go empty often.
                let c = CpuId(rnd(n as u64) as u16);
                match rnd(10) {
                    0..=3 => m.set(c),
                    4 => m.copy_from(&CpuMask::from_cpus(n, (0..n).filter(|_| rnd(50) == 0).map(|c| CpuId(c as u16)))),
                    _ => m.clear(c),
                }
                let want = (0..m.nr_words()).filter(|&w| m.word(w) != 0).fold(0u64, |a, w| a | 1 << w);
                assert_eq!(m.nonempty_words(), want, "{n} CPUs, step {i}");
            }
        }
    }

    use super::*;
    #[test]
    fn set_iter_wrap() {
        let m = CpuMask::from_cpus(130, [1, 64, 65, 129].map(CpuId));
        assert_eq!(m.weight(), 4);
        assert_eq!(m.iter().map(|c| c.0).collect::<Vec<_>>(), vec![1, 64, 65, 129]);
        assert_eq!(m.iter_wrap(CpuId(65)).map(|c| c.0).collect::<Vec<_>>(), vec![65, 129, 1, 64]);
        // for_each_cpu_wrap() from every start, against the two-pass filter.
        for bits in [vec![], vec![0], vec![63], vec![0, 63, 64, 127, 128, 129], vec![1, 64, 65, 129], (0..130).collect::<Vec<u16>>()] {
            let m = CpuMask::from_cpus(130, bits.iter().map(|&b| CpuId(b)));
            for s in 0..130u16 {
                let want: Vec<u16> = m.iter().filter(|c| c.0 >= s).chain(m.iter().filter(|c| c.0 < s)).map(|c| c.0).collect();
                assert_eq!(m.iter_wrap(CpuId(s)).map(|c| c.0).collect::<Vec<_>>(), want, "bits {bits:?} start {s}");
            }
        }
        let o = CpuMask::from_cpus(130, [64, 129].map(CpuId));
        assert!(o.is_subset_of(&m));
        assert_eq!(m.iter_and(&o).count(), 2);
    }

    #[test]
    fn counts_and_word_ops_match_iteration() {
        for bits in [vec![], vec![0], vec![63, 64], vec![0, 63, 64, 127, 128, 129], (0..130).step_by(3).collect::<Vec<u16>>()] {
            let m = CpuMask::from_cpus(130, bits.iter().map(|&b| CpuId(b)));
            for s in 0..130u16 {
                let order: Vec<CpuId> = m.iter_wrap(CpuId(s)).collect();
                for (i, &c) in order.iter().enumerate() {
                    assert_eq!(m.count_wrap_before(CpuId(s), c) as usize, i, "bits {bits:?} start {s} cpu {c:?}");
                    // Counted in steps from every earlier point of the walk.
                    for (j, &f) in order[..=i].iter().enumerate() {
                        assert_eq!(m.count_wrap_between(CpuId(s), f, c) as usize, i - j, "bits {bits:?} start {s} {f:?}..{c:?}");
                    }
                    assert_eq!(m.count_wrap_between(CpuId(s), CpuId(s), c) as usize, i, "bits {bits:?} start {s} cpu {c:?}");
                }
                for hi in s..=130u16 {
                    assert_eq!(m.count_range(s as usize, hi as usize) as usize, m.iter().filter(|c| c.0 >= s && c.0 < hi).count());
                }
            }
        }
        for (bits, want) in [
            (vec![], None),
            (vec![5], Some((5, 6))),
            (vec![63, 64], Some((63, 65))),
            (vec![0, 2], None),
            ((3..130).collect::<Vec<u16>>(), Some((3, 130))),
            ((0..130).filter(|&c| c != 64).collect::<Vec<u16>>(), None),
        ] {
            assert_eq!(CpuMask::from_cpus(130, bits.iter().map(|&b| CpuId(b))).contiguous(), want, "bits {bits:?}");
        }
        let a = CpuMask::from_cpus(130, [1, 64, 65, 129].map(CpuId));
        let b = CpuMask::from_cpus(130, [64, 129, 3].map(CpuId));
        let mut d = CpuMask::new(130);
        d.and_from(&a, &b);
        assert_eq!(d, CpuMask::from_cpus(130, [64, 129].map(CpuId)));
        d.andnot_from(&a, &b);
        assert_eq!(d, CpuMask::from_cpus(130, [1, 65].map(CpuId)));
        d.copy_from(&a);
        d.and_with(&b);
        assert_eq!(d, CpuMask::from_cpus(130, [64, 129].map(CpuId)));
    }
}
