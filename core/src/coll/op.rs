//! Reduction operations: the built-in ones over the built-in datatypes, and user callbacks.

use core::fmt;

use super::datatype::Datatype;

/// A built-in reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (integers wrap).
    Sum,
    /// Product (integers wrap).
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Logical and (non-zero is true; the result is 0 or 1).
    Land,
    /// Logical or.
    Lor,
    /// Logical exclusive or.
    Lxor,
    /// Bitwise and.
    Band,
    /// Bitwise or.
    Bor,
    /// Bitwise exclusive or.
    Bxor,
    /// Minimum value and the lowest index holding it (pairs only).
    MinLoc,
    /// Maximum value and the lowest index holding it (pairs only).
    MaxLoc,
}

impl ReduceOp {
    /// Every built-in reduction.
    pub const ALL: [ReduceOp; 12] = [
        Self::Sum,
        Self::Prod,
        Self::Min,
        Self::Max,
        Self::Land,
        Self::Lor,
        Self::Lxor,
        Self::Band,
        Self::Bor,
        Self::Bxor,
        Self::MinLoc,
        Self::MaxLoc,
    ];

    /// Whether the operation is defined on `dtype` (MPI's rules: arithmetic and ordering on
    /// integers and floats, logical and bitwise on integers, MINLOC/MAXLOC on pairs).
    pub const fn supports(self, dtype: Datatype) -> bool {
        match self {
            Self::Sum | Self::Prod | Self::Min | Self::Max => !dtype.is_pair(),
            Self::Land | Self::Lor | Self::Lxor | Self::Band | Self::Bor | Self::Bxor => {
                dtype.is_integer()
            }
            Self::MinLoc | Self::MaxLoc => dtype.is_pair(),
        }
    }

    /// The lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Sum => "sum",
            Self::Prod => "prod",
            Self::Min => "min",
            Self::Max => "max",
            Self::Land => "land",
            Self::Lor => "lor",
            Self::Lxor => "lxor",
            Self::Band => "band",
            Self::Bor => "bor",
            Self::Bxor => "bxor",
            Self::MinLoc => "minloc",
            Self::MaxLoc => "maxloc",
        }
    }
}

/// A user reduction: `func(src, dst, dtype, src_left)` sets `dst = src ∘ dst` when
/// `src_left`, else `dst = dst ∘ src`, over whole elements of `dtype`.
#[derive(Clone, Copy, Debug)]
pub struct UserOp {
    /// The callback.
    pub func: fn(src: &[u8], dst: &mut [u8], dtype: Datatype, src_left: bool),
    /// Whether `a ∘ b = b ∘ a`; a non-commutative operation gets algorithms that combine in
    /// rank order.
    pub commutative: bool,
}

/// A reduction: built-in or user-defined. Every operation is assumed associative.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    /// A built-in reduction.
    Builtin(ReduceOp),
    /// A user callback.
    User(UserOp),
}

/// A reduction that cannot run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpError {
    /// The built-in operation is not defined on the datatype.
    Unsupported(ReduceOp, Datatype),
    /// The two regions differ in length or are not whole elements.
    Length,
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unsupported(op, dtype) => write!(f, "{} is not defined on {}", op.name(), dtype),
            Self::Length => f.write_str("reduction operands differ in length or split an element"),
        }
    }
}

impl Op {
    /// Whether the operation commutes (every built-in does).
    #[inline]
    pub const fn is_commutative(&self) -> bool {
        match self {
            Self::Builtin(_) => true,
            Self::User(u) => u.commutative,
        }
    }

    /// Whether the operation may be applied to `dtype`.
    #[inline]
    pub const fn supports(&self, dtype: Datatype) -> bool {
        match self {
            Self::Builtin(op) => op.supports(dtype),
            Self::User(_) => true,
        }
    }

    /// The name (`"user"` for a callback).
    pub const fn name(&self) -> &'static str {
        match self {
            Self::Builtin(op) => op.name(),
            Self::User(_) => "user",
        }
    }
}

/// Applies `op` element-wise: `dst = src ∘ dst` when `src_left`, else `dst = dst ∘ src`.
pub fn reduce(
    op: &Op,
    dtype: Datatype,
    src: &[u8],
    dst: &mut [u8],
    src_left: bool,
) -> Result<(), OpError> {
    if src.len() != dst.len() || src.len() % dtype.size() != 0 {
        return Err(OpError::Length);
    }
    let builtin = match op {
        Op::User(user) => {
            (user.func)(src, dst, dtype, src_left);
            return Ok(());
        }
        Op::Builtin(b) => *b,
    };
    if !builtin.supports(dtype) {
        return Err(OpError::Unsupported(builtin, dtype));
    }
    match dtype {
        Datatype::I8 => int::<i8>(builtin, src, dst),
        Datatype::I16 => int::<i16>(builtin, src, dst),
        Datatype::I32 => int::<i32>(builtin, src, dst),
        Datatype::I64 => int::<i64>(builtin, src, dst),
        Datatype::U8 => int::<u8>(builtin, src, dst),
        Datatype::U16 => int::<u16>(builtin, src, dst),
        Datatype::U32 => int::<u32>(builtin, src, dst),
        Datatype::U64 => int::<u64>(builtin, src, dst),
        Datatype::F32 => float::<f32>(builtin, src, dst),
        Datatype::F64 => float::<f64>(builtin, src, dst),
        Datatype::PairI16I32 => pair::<i16>(builtin, src, dst),
        Datatype::PairI32I32 => pair::<i32>(builtin, src, dst),
        Datatype::PairI64I32 => pair::<i64>(builtin, src, dst),
        Datatype::PairF32I32 => pair::<f32>(builtin, src, dst),
        Datatype::PairF64I32 => pair::<f64>(builtin, src, dst),
    }
    Ok(())
}

/// A fixed-size number read from and written to native-endian bytes.
trait Element: Copy + PartialOrd {
    const SIZE: usize;
    fn load(bytes: &[u8]) -> Self;
    fn store(self, bytes: &mut [u8]);
}

trait Integer: Element {
    fn add(self, other: Self) -> Self;
    fn mul(self, other: Self) -> Self;
    fn and(self, other: Self) -> Self;
    fn or(self, other: Self) -> Self;
    fn xor(self, other: Self) -> Self;
    fn truth(value: bool) -> Self;
    fn is_true(self) -> bool;
}

trait Float: Element {
    fn add(self, other: Self) -> Self;
    fn mul(self, other: Self) -> Self;
}

macro_rules! element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            #[inline]
            fn load(bytes: &[u8]) -> Self {
                let mut raw = [0u8; core::mem::size_of::<$t>()];
                raw.copy_from_slice(&bytes[..Self::SIZE]);
                <$t>::from_ne_bytes(raw)
            }
            #[inline]
            fn store(self, bytes: &mut [u8]) {
                bytes[..Self::SIZE].copy_from_slice(&self.to_ne_bytes());
            }
        }
    )*};
}
element!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

macro_rules! integer {
    ($($t:ty),*) => {$(
        impl Integer for $t {
            #[inline] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline] fn and(self, o: Self) -> Self { self & o }
            #[inline] fn or(self, o: Self) -> Self { self | o }
            #[inline] fn xor(self, o: Self) -> Self { self ^ o }
            #[inline] fn truth(v: bool) -> Self { v as $t }
            #[inline] fn is_true(self) -> bool { self != 0 }
        }
    )*};
}
integer!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float {
    ($($t:ty),*) => {$(
        impl Float for $t {
            #[inline] fn add(self, o: Self) -> Self { self + o }
            #[inline] fn mul(self, o: Self) -> Self { self * o }
        }
    )*};
}
float!(f32, f64);

#[inline]
fn each<T: Element>(src: &[u8], dst: &mut [u8], f: impl Fn(T, T) -> T) {
    for (s, d) in src.chunks_exact(T::SIZE).zip(dst.chunks_exact_mut(T::SIZE)) {
        f(T::load(s), T::load(d)).store(d);
    }
}

#[inline]
fn min<T: PartialOrd>(a: T, b: T) -> T {
    if b < a {
        b
    } else {
        a
    }
}

#[inline]
fn max<T: PartialOrd>(a: T, b: T) -> T {
    if b > a {
        b
    } else {
        a
    }
}

// Built-in operations commute, so the operand order does not matter below.
fn int<T: Integer>(op: ReduceOp, src: &[u8], dst: &mut [u8]) {
    match op {
        ReduceOp::Sum => each::<T>(src, dst, T::add),
        ReduceOp::Prod => each::<T>(src, dst, T::mul),
        ReduceOp::Min => each::<T>(src, dst, min),
        ReduceOp::Max => each::<T>(src, dst, max),
        ReduceOp::Land => each::<T>(src, dst, |a, b| T::truth(a.is_true() && b.is_true())),
        ReduceOp::Lor => each::<T>(src, dst, |a, b| T::truth(a.is_true() || b.is_true())),
        ReduceOp::Lxor => each::<T>(src, dst, |a, b| T::truth(a.is_true() != b.is_true())),
        ReduceOp::Band => each::<T>(src, dst, T::and),
        ReduceOp::Bor => each::<T>(src, dst, T::or),
        ReduceOp::Bxor => each::<T>(src, dst, T::xor),
        ReduceOp::MinLoc | ReduceOp::MaxLoc => debug_assert!(false, "checked by supports"),
    }
}

fn float<T: Float>(op: ReduceOp, src: &[u8], dst: &mut [u8]) {
    match op {
        ReduceOp::Sum => each::<T>(src, dst, T::add),
        ReduceOp::Prod => each::<T>(src, dst, T::mul),
        ReduceOp::Min => each::<T>(src, dst, min),
        ReduceOp::Max => each::<T>(src, dst, max),
        _ => debug_assert!(false, "checked by supports"),
    }
}

fn pair<T: Element>(op: ReduceOp, src: &[u8], dst: &mut [u8]) {
    let index_at = if T::SIZE > 4 { T::SIZE } else { 4 };
    let size = if T::SIZE > 4 { 2 * T::SIZE } else { 8 };
    let want_min = matches!(op, ReduceOp::MinLoc);
    for (s, d) in src.chunks_exact(size).zip(dst.chunks_exact_mut(size)) {
        let (sv, si) = (T::load(s), i32::load(&s[index_at..]));
        let (dv, di) = (T::load(d), i32::load(&d[index_at..]));
        let src_wins = if want_min { sv < dv } else { sv > dv };
        if src_wins {
            sv.store(d);
            si.store(&mut d[index_at..]);
        } else if sv == dv && si < di {
            si.store(&mut d[index_at..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_sum_wraps_and_logical_ops_give_zero_or_one() {
        let mut dst = 250u8.to_ne_bytes();
        reduce(&Op::Builtin(ReduceOp::Sum), Datatype::U8, &10u8.to_ne_bytes(), &mut dst, true)
            .unwrap();
        assert_eq!(dst, [4]);
        let mut dst = 7i32.to_ne_bytes();
        reduce(&Op::Builtin(ReduceOp::Land), Datatype::I32, &(-3i32).to_ne_bytes(), &mut dst, true)
            .unwrap();
        assert_eq!(i32::from_ne_bytes(dst), 1);
    }

    #[test]
    fn minloc_prefers_lower_index_on_ties() {
        let enc = |v: f64, i: i32| {
            let mut b = [0u8; 16];
            b[..8].copy_from_slice(&v.to_ne_bytes());
            b[8..12].copy_from_slice(&i.to_ne_bytes());
            b
        };
        let mut dst = enc(1.5, 7);
        reduce(&Op::Builtin(ReduceOp::MinLoc), Datatype::PairF64I32, &enc(1.5, 3), &mut dst, false)
            .unwrap();
        assert_eq!(dst, enc(1.5, 3));
        reduce(&Op::Builtin(ReduceOp::MinLoc), Datatype::PairF64I32, &enc(2.0, 0), &mut dst, false)
            .unwrap();
        assert_eq!(dst, enc(1.5, 3));
    }

    #[test]
    fn bad_pairings_are_errors() {
        let mut dst = [0u8; 4];
        assert_eq!(
            reduce(&Op::Builtin(ReduceOp::Band), Datatype::F32, &[0; 4], &mut dst, true),
            Err(OpError::Unsupported(ReduceOp::Band, Datatype::F32))
        );
        assert_eq!(
            reduce(&Op::Builtin(ReduceOp::Sum), Datatype::I32, &[0; 3], &mut dst[..3], true),
            Err(OpError::Length)
        );
    }
}
