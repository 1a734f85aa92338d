//! One-pass detection of a regular pattern in a sequence of processes.

use crate::av::Pgid;

/// The shape of a sequence `x(0), x(1), …` of `(pgid, lpid)` values (lpids as `i64` so that
/// strides and differences never overflow).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// No elements.
    Empty,
    /// One group; `x(i) = first + i`.
    Contiguous { pgid: Pgid, first: i64 },
    /// One group; `x(i) = first + i × stride` (stride ≠ 1, possibly negative or zero).
    Stride { pgid: Pgid, first: i64, stride: i64 },
    /// One group; runs of `block ≥ 2` consecutive values whose starts are `step` apart:
    /// `x(i) = first + (i / block) × step + i mod block`. At least two runs.
    BlockStride { pgid: Pgid, first: i64, block: u64, step: i64 },
    /// None of the above, or an element could not be produced (`at` returned `None`).
    Irregular,
}

/// Detects the shape of the `n` values `at(0..n)` in one pass, reading each at most twice and
/// stopping at the first value that breaks every candidate. `at` returning `None` makes the
/// sequence irregular (the caller rediscovers the error when it fills a table).
pub(crate) fn detect(n: usize, mut at: impl FnMut(usize) -> Option<(Pgid, i64)>) -> Shape {
    if n == 0 {
        return Shape::Empty;
    }
    let Some((pgid, first)) = at(0) else { return Shape::Irregular };
    if n == 1 {
        return Shape::Contiguous { pgid, first };
    }
    let Some((p1, second)) = at(1) else { return Shape::Irregular };
    if p1 != pgid {
        return Shape::Irregular;
    }
    let stride = second - first;
    if stride != 1 {
        let mut expected = second;
        for i in 2..n {
            expected += stride;
            match at(i) {
                Some((p, x)) if p == pgid && x == expected => {}
                _ => return Shape::Irregular,
            }
        }
        return Shape::Stride { pgid, first, stride };
    }
    // A run of consecutive values: find where it ends; its length is the block.
    let mut prev = second;
    let mut block = n;
    let mut next_start = 0;
    for i in 2..n {
        match at(i) {
            Some((p, x)) if p == pgid && x == prev + 1 => prev = x,
            Some((p, x)) if p == pgid => {
                block = i;
                next_start = x;
                break;
            }
            _ => return Shape::Irregular,
        }
    }
    if block == n {
        return Shape::Contiguous { pgid, first };
    }
    let step = next_start - first;
    let mut base = next_start;
    let mut pos = 1;
    for i in block + 1..n {
        if pos == block {
            pos = 0;
            base += step;
        }
        match at(i) {
            Some((p, x)) if p == pgid && x == base + pos as i64 => pos += 1,
            _ => return Shape::Irregular,
        }
    }
    Shape::BlockStride { pgid, first, block: block as u64, step }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(values: &[i64]) -> Shape {
        detect(values.len(), |i| Some((Pgid(3), values[i])))
    }

    #[test]
    fn detects_each_shape() {
        let p = Pgid(3);
        assert_eq!(shape(&[]), Shape::Empty);
        assert_eq!(shape(&[9]), Shape::Contiguous { pgid: p, first: 9 });
        assert_eq!(shape(&[4, 5, 6, 7]), Shape::Contiguous { pgid: p, first: 4 });
        assert_eq!(shape(&[0, 2, 4, 6]), Shape::Stride { pgid: p, first: 0, stride: 2 });
        assert_eq!(shape(&[9, 6, 3, 0]), Shape::Stride { pgid: p, first: 9, stride: -3 });
        assert_eq!(shape(&[5, 5, 5]), Shape::Stride { pgid: p, first: 5, stride: 0 });
        assert_eq!(
            shape(&[0, 1, 8, 9, 16]),
            Shape::BlockStride { pgid: p, first: 0, block: 2, step: 8 }
        );
        assert_eq!(
            shape(&[6, 7, 8, 0, 1, 2]),
            Shape::BlockStride { pgid: p, first: 6, block: 3, step: -6 }
        );
        for irregular in
            [&[0, 2, 3][..], &[0, 1, 8, 9, 17], &[0, 1, 2, 8, 9, 10, 16, 18], &[3, 1, 2]]
        {
            assert_eq!(shape(irregular), Shape::Irregular, "{irregular:?}");
        }
    }

    #[test]
    fn mixed_groups_and_missing_values_are_irregular() {
        let groups = [(Pgid(0), 0), (Pgid(1), 1)];
        assert_eq!(detect(2, |i| Some(groups[i])), Shape::Irregular);
        assert_eq!(detect(3, |i| (i != 2).then_some((Pgid(0), i as i64))), Shape::Irregular);
    }
}
