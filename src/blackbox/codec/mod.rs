//! Field encodings of the Blackbox format: one module per family, each with a nom decoder and the
//! matching encoder so that every codec can be tested as encode → decode identity.
//!
//! Decoders take `&[u8]` (or nom's bit input `(&[u8], usize)` for the Elias bit streams) and return
//! nom's `IResult` with [`CodecError`], which records how many bytes were left when decoding failed so
//! that the caller can turn it back into an absolute file offset.

pub mod elias;
pub mod tag;
pub mod varint;

use nom::error::{ErrorKind, ParseError};

/// Why a field could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodecErrorKind {
    /// The data ended inside the field.
    Eof,
    /// A variable-byte integer longer than a 32-bit value can need (the firmware never writes one).
    OverlongVarint,
    /// An Elias code whose length prefix describes more than 32 bits.
    OverlongElias,
    /// Any other nom failure.
    Other,
}

/// A decoding failure: its kind and the number of input bytes left where it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodecError {
    pub kind: CodecErrorKind,
    pub remaining: usize,
}

impl CodecError {
    pub(crate) fn at(input: &[u8], kind: CodecErrorKind) -> nom::Err<Self> {
        nom::Err::Error(CodecError {
            kind,
            remaining: input.len(),
        })
    }
}

fn kind_of(kind: ErrorKind) -> CodecErrorKind {
    match kind {
        ErrorKind::Eof => CodecErrorKind::Eof,
        _ => CodecErrorKind::Other,
    }
}

impl ParseError<&[u8]> for CodecError {
    fn from_error_kind(input: &[u8], kind: ErrorKind) -> Self {
        CodecError {
            kind: kind_of(kind),
            remaining: input.len(),
        }
    }
    fn append(_: &[u8], _: ErrorKind, other: Self) -> Self {
        other
    }
}

impl ParseError<(&[u8], usize)> for CodecError {
    fn from_error_kind(input: (&[u8], usize), kind: ErrorKind) -> Self {
        CodecError {
            kind: kind_of(kind),
            remaining: input.0.len(),
        }
    }
    fn append(_: (&[u8], usize), _: ErrorKind, other: Self) -> Self {
        other
    }
}

/// Result of a byte-level codec.
pub type CodecResult<'a, T> = nom::IResult<&'a [u8], T, CodecError>;
/// Result of a bit-level codec (the Elias family).
pub type BitResult<'a, T> = nom::IResult<(&'a [u8], usize), T, CodecError>;

/// Read one byte.
#[inline]
pub fn byte(input: &[u8]) -> CodecResult<'_, u8> {
    match input.split_first() {
        Some((&b, rest)) => Ok((rest, b)),
        None => Err(CodecError::at(input, CodecErrorKind::Eof)),
    }
}

/// Read `N` bytes.
#[inline]
pub fn bytes<const N: usize>(input: &[u8]) -> CodecResult<'_, [u8; N]> {
    match input.split_first_chunk::<N>() {
        Some((chunk, rest)) => Ok((rest, *chunk)),
        None => Err(CodecError::at(input, CodecErrorKind::Eof)),
    }
}

/// Sign-extend the low `bits` bits of `value`.
#[inline]
pub fn sign_extend(value: u32, bits: u32) -> i32 {
    let shift = 32 - bits;
    ((value << shift) as i32) >> shift
}

/// The field encodings, by their header id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// 0: zigzag then unsigned variable byte.
    SignedVb,
    /// 1: unsigned variable byte.
    UnsignedVb,
    /// 3: negated, 14-bit, unsigned variable byte (battery voltage).
    Neg14Bit,
    /// 4: Elias delta, unsigned 32-bit (bit stream).
    EliasDeltaU32,
    /// 5: Elias delta of the zigzag value (bit stream).
    EliasDeltaS32,
    /// 6: a header byte of non-zero flags, then the non-zero values as signed varints (up to 8 fields).
    Tag8_8Svb,
    /// 7: three signed values sharing a 2-bit size header.
    Tag2_3S32,
    /// 8: four signed values of 0, 4, 8 or 16 bits.
    Tag8_4S16,
    /// 9: no bytes; the value is its prediction.
    Null,
    /// 10 (Betaflight, INAV): three signed values in 2/2/2, 5/5/4, 8/7/7 bit layouts or whole bytes.
    Tag2_3SVariable,
    /// 10 (original Cleanflight tools): Elias gamma, unsigned 32-bit (bit stream).
    EliasGammaU32,
    /// 11 (original Cleanflight tools): Elias gamma of the zigzag value (bit stream).
    EliasGammaS32,
}

/// Which meaning header id 10 takes in a log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding10 {
    /// TAG2_3SVARIABLE, as Betaflight and INAV write it.
    Tag2_3SVariable,
    /// Elias gamma, as the original Cleanflight tools define it.
    EliasGamma,
}

impl Encoding {
    /// The encoding for a header id, or `None` for an id no firmware defines.
    pub fn from_id(id: u32, ten: Encoding10) -> Option<Encoding> {
        Some(match id {
            0 => Encoding::SignedVb,
            1 => Encoding::UnsignedVb,
            3 => Encoding::Neg14Bit,
            4 => Encoding::EliasDeltaU32,
            5 => Encoding::EliasDeltaS32,
            6 => Encoding::Tag8_8Svb,
            7 => Encoding::Tag2_3S32,
            8 => Encoding::Tag8_4S16,
            9 => Encoding::Null,
            10 => match ten {
                Encoding10::Tag2_3SVariable => Encoding::Tag2_3SVariable,
                Encoding10::EliasGamma => Encoding::EliasGammaU32,
            },
            11 if ten == Encoding10::EliasGamma => Encoding::EliasGammaS32,
            _ => return None,
        })
    }

    /// The header id of this encoding.
    pub fn id(self) -> u32 {
        match self {
            Encoding::SignedVb => 0,
            Encoding::UnsignedVb => 1,
            Encoding::Neg14Bit => 3,
            Encoding::EliasDeltaU32 => 4,
            Encoding::EliasDeltaS32 => 5,
            Encoding::Tag8_8Svb => 6,
            Encoding::Tag2_3S32 => 7,
            Encoding::Tag8_4S16 => 8,
            Encoding::Null => 9,
            Encoding::Tag2_3SVariable | Encoding::EliasGammaU32 => 10,
            Encoding::EliasGammaS32 => 11,
        }
    }

    /// Whether the encoding reads from the bit stream rather than whole bytes.
    pub fn is_bitstream(self) -> bool {
        matches!(
            self,
            Encoding::EliasDeltaU32
                | Encoding::EliasDeltaS32
                | Encoding::EliasGammaU32
                | Encoding::EliasGammaS32
        )
    }

    /// How many consecutive fields one code covers (TAG8_8SVB: the run is decided by the header).
    pub fn group_size(self) -> usize {
        match self {
            Encoding::Tag2_3S32 | Encoding::Tag2_3SVariable => 3,
            Encoding::Tag8_4S16 => 4,
            _ => 1,
        }
    }
}
