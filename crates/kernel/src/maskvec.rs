//! [`MaskVec`]: a vector indexed without a bounds test, for the per-task
//! and per-CPU tables a switch indexes dozens of times.

/// A vector whose storage is padded to a power of two entries, so that an
/// index is masked into range (`i & mask`) instead of tested against the
/// length: the test is a load, a compare and a branch to a panic, and the
/// panic path also keeps the compiler from reusing an address across the
/// writes in between. Reads and writes of the entries go through
/// `Deref<Target = [T]>` / `DerefMut` (the `len()` entries pushed) and
/// `Index` / `IndexMut`.
///
/// An index past the last entry is a bug that the debug builds catch; the
/// masked index keeps it inside the allocation (sound, if not meaningful):
/// the padding holds clones of an entry, never read or written otherwise.
#[derive(Clone, Debug)]
pub struct MaskVec<T> {
    /// The entries, then padding up to a power of two (at least one entry).
    v: Vec<T>,
    n: usize,
    /// `v.len() - 1`.
    mask: usize,
}

impl<T: Clone> MaskVec<T> {
    /// An empty vector; `pad` fills the storage until entries replace it.
    pub fn new(pad: T) -> MaskVec<T> {
        MaskVec { v: vec![pad], n: 0, mask: 0 }
    }

    /// The entries of `v` (at least one).
    pub fn from_vec(mut v: Vec<T>) -> MaskVec<T> {
        let n = v.len();
        assert!(n > 0, "MaskVec::from_vec of an empty vector");
        let size = n.next_power_of_two();
        let pad = v[n - 1].clone();
        v.resize(size, pad);
        MaskVec { v, n, mask: size - 1 }
    }

    /// The entries of `v`, which may be empty (`pad` then fills the storage).
    pub fn from_vec_or(v: Vec<T>, pad: T) -> MaskVec<T> {
        if v.is_empty() {
            MaskVec::new(pad)
        } else {
            MaskVec::from_vec(v)
        }
    }

    /// Append `x` (the storage doubles when full, padded with clones of `x`).
    pub fn push(&mut self, x: T) {
        if self.n == self.v.len() {
            let size = 2 * self.v.len();
            self.v.resize(size, x.clone());
            self.mask = size - 1;
        }
        self.v[self.n] = x;
        self.n += 1;
    }
}

impl<T> std::ops::Deref for MaskVec<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: `n` <= `v.len()` (`push` and `from_vec`).
        unsafe { self.v.get_unchecked(..self.n) }
    }
}

impl<T> std::ops::DerefMut for MaskVec<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`.
        unsafe { self.v.get_unchecked_mut(..self.n) }
    }
}

impl<T> std::ops::Index<usize> for MaskVec<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        debug_assert!(i < self.n, "index {i} of {}", self.n);
        // SAFETY: `v.len()` is `mask + 1` (`new`, `from_vec` and `push`
        // keep it so), so `i & mask` < `v.len()`.
        unsafe { self.v.get_unchecked(i & self.mask) }
    }
}

impl<T> std::ops::IndexMut<usize> for MaskVec<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        debug_assert!(i < self.n, "index {i} of {}", self.n);
        // SAFETY: as in `index`.
        unsafe { self.v.get_unchecked_mut(i & self.mask) }
    }
}

/// Ranges index the entries as a slice (with its bounds tests).
macro_rules! range_index {
    ($($r:ty),*) => {$(
        impl<T> std::ops::Index<$r> for MaskVec<T> {
            type Output = [T];
            #[inline]
            fn index(&self, r: $r) -> &[T] {
                &(**self)[r]
            }
        }
        impl<T> std::ops::IndexMut<$r> for MaskVec<T> {
            #[inline]
            fn index_mut(&mut self, r: $r) -> &mut [T] {
                &mut (**self)[r]
            }
        }
    )*};
}
range_index!(
    std::ops::Range<usize>,
    std::ops::RangeTo<usize>,
    std::ops::RangeFrom<usize>,
    std::ops::RangeFull,
    std::ops::RangeInclusive<usize>,
    std::ops::RangeToInclusive<usize>
);

impl<'a, T> IntoIterator for &'a MaskVec<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut MaskVec<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::MaskVec;

    #[test]
    fn entries_pushed_read_back_and_the_storage_stays_a_power_of_two() {
        let mut m = MaskVec::new(0u32);
        assert!(m.is_empty());
        for i in 0..100u32 {
            m.push(i * 3);
            assert_eq!(m.len(), i as usize + 1);
            assert!(m.v.len().is_power_of_two() && m.v.len() >= m.len() && m.mask == m.v.len() - 1);
        }
        assert!((0..100).all(|i| m[i] == i as u32 * 3));
        m[7] = 1;
        assert_eq!(m.iter().filter(|&&x| x == 1).count(), 1);
        let f = MaskVec::from_vec(vec![5u8; 5]);
        assert_eq!((f.len(), f.v.len()), (5, 8));
        // Ranges see the entries only, not the padding.
        assert_eq!((f[..].len(), f[2..].len(), f[..=1].len()), (5, 3, 2));
    }
}
