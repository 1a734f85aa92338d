//! The built-in element types a reduction understands.

use core::fmt;

/// A built-in datatype. Pairs are the MINLOC/MAXLOC types: a value followed by an `i32`
/// index, laid out as the matching C struct (the index at offset `max(value size, 4)`, the
/// whole padded to the larger alignment).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Datatype {
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `{i16, i32}` (MPI_SHORT_INT).
    PairI16I32,
    /// `{i32, i32}` (MPI_2INT).
    PairI32I32,
    /// `{i64, i32}` (MPI_LONG_INT).
    PairI64I32,
    /// `{f32, i32}` (MPI_FLOAT_INT).
    PairF32I32,
    /// `{f64, i32}` (MPI_DOUBLE_INT).
    PairF64I32,
}

impl Datatype {
    /// Every built-in datatype.
    pub const ALL: [Datatype; 15] = [
        Self::I8,
        Self::I16,
        Self::I32,
        Self::I64,
        Self::U8,
        Self::U16,
        Self::U32,
        Self::U64,
        Self::F32,
        Self::F64,
        Self::PairI16I32,
        Self::PairI32I32,
        Self::PairI64I32,
        Self::PairF32I32,
        Self::PairF64I32,
    ];

    /// Bytes per element.
    #[inline]
    pub const fn size(self) -> usize {
        match self {
            Self::I8 | Self::U8 => 1,
            Self::I16 | Self::U16 => 2,
            Self::I32 | Self::U32 | Self::F32 => 4,
            Self::I64 | Self::U64 | Self::F64 => 8,
            Self::PairI16I32 | Self::PairI32I32 | Self::PairF32I32 => 8,
            Self::PairI64I32 | Self::PairF64I32 => 16,
        }
    }

    /// Whether this is a signed or unsigned integer type.
    #[inline]
    pub const fn is_integer(self) -> bool {
        matches!(
            self,
            Self::I8
                | Self::I16
                | Self::I32
                | Self::I64
                | Self::U8
                | Self::U16
                | Self::U32
                | Self::U64
        )
    }

    /// Whether this is `f32` or `f64`.
    #[inline]
    pub const fn is_float(self) -> bool {
        matches!(self, Self::F32 | Self::F64)
    }

    /// Whether this is a value–index pair.
    #[inline]
    pub const fn is_pair(self) -> bool {
        !self.is_integer() && !self.is_float()
    }

    /// The lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::I8 => "i8",
            Self::I16 => "i16",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::U8 => "u8",
            Self::U16 => "u16",
            Self::U32 => "u32",
            Self::U64 => "u64",
            Self::F32 => "f32",
            Self::F64 => "f64",
            Self::PairI16I32 => "i16_i32",
            Self::PairI32I32 => "i32_i32",
            Self::PairI64I32 => "i64_i32",
            Self::PairF32I32 => "f32_i32",
            Self::PairF64I32 => "f64_i32",
        }
    }
}

impl fmt::Display for Datatype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
