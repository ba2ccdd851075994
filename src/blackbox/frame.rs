//! Frame definitions from the header, and the decoding and encoding of one frame's fields.

use super::codec::elias::{self, BitWriter};
use super::codec::{CodecError, CodecErrorKind, CodecResult, Encoding, tag, varint};
use super::predictor::{Context, Predictor, high_bits, keep_32_bits};

/// Frames are at most this long, type byte included (as in every reference decoder), unless
/// their layout is wider than those decoders read (see [`max_frame_len`]).
pub const MAX_FRAME_LEN: usize = 256;

/// Fields in one frame type that the reference decoders read at most.
const REFERENCE_MAX_FIELDS: usize = 128;

/// No field's code takes more than this many bytes.
const MAX_FIELD_BYTES: usize = 8;

/// How long a frame of a layout whose widest frame type has `fields` fields can be: forks log
/// wider frames than the reference decoders read (Indiflight: 171–202 fields, frames of several
/// hundred bytes); those may take the bytes their fields' codes can.
pub fn max_frame_len(fields: usize) -> usize {
    if fields > REFERENCE_MAX_FIELDS {
        MAX_FRAME_LEN.max(1 + MAX_FIELD_BYTES * fields)
    } else {
        MAX_FRAME_LEN
    }
}

/// The frame types, by their type byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub enum FrameKind {
    /// Intra main frame.
    I,
    /// Inter main frame.
    P,
    /// Slow-changing state.
    S,
    /// GPS position.
    G,
    /// GPS home.
    H,
    /// Event.
    E,
}

impl FrameKind {
    /// Every kind, in the order reports list them.
    pub const ALL: [FrameKind; 6] = [
        FrameKind::I,
        FrameKind::P,
        FrameKind::S,
        FrameKind::G,
        FrameKind::H,
        FrameKind::E,
    ];

    /// The kind a type byte announces.
    #[inline]
    pub fn from_byte(b: u8) -> Option<FrameKind> {
        match b {
            b'I' => Some(FrameKind::I),
            b'P' => Some(FrameKind::P),
            b'S' => Some(FrameKind::S),
            b'G' => Some(FrameKind::G),
            b'H' => Some(FrameKind::H),
            b'E' => Some(FrameKind::E),
            _ => None,
        }
    }

    /// The type byte.
    pub fn byte(self) -> u8 {
        match self {
            FrameKind::I => b'I',
            FrameKind::P => b'P',
            FrameKind::S => b'S',
            FrameKind::G => b'G',
            FrameKind::H => b'H',
            FrameKind::E => b'E',
        }
    }

    /// The type letter as a string.
    pub fn as_str(self) -> &'static str {
        match self {
            FrameKind::I => "I",
            FrameKind::P => "P",
            FrameKind::S => "S",
            FrameKind::G => "G",
            FrameKind::H => "H",
            FrameKind::E => "E",
        }
    }
}

/// How one field is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSpec {
    pub predictor: Predictor,
    pub encoding: Encoding,
    /// Whether the value is read as `i32` (otherwise `u32`).
    pub signed: bool,
}

/// One code in the byte stream: an encoding covering `count` fields from `first`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Step {
    encoding: Encoding,
    first: usize,
    count: usize,
}

/// Consecutive fields sharing one predictor, predicted in one loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    predictor: Predictor,
    start: usize,
    end: usize,
}

/// The layout of one frame type, as the header defines it.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameDef {
    pub kind: FrameKind,
    pub names: Vec<String>,
    pub fields: Vec<FieldSpec>,
    /// Data version 1 lays TAG8_4S16 out differently.
    pub data_version: u32,
    steps: Vec<Step>,
    runs: Vec<Run>,
    /// Per field, the bits above 32 a normalised value keeps from its sign extension: all of
    /// them for a signed field, none for an unsigned one (see [`high_bits`]).
    high_bits: Vec<i64>,
}

impl FrameDef {
    /// Per field, the bits above 32 a normalised value keeps (see [`high_bits`]).
    pub fn high_bits(&self) -> &[i64] {
        &self.high_bits
    }

    /// Build a definition; `names` and `fields` have the same length.
    pub fn new(
        kind: FrameKind,
        names: Vec<String>,
        fields: Vec<FieldSpec>,
        data_version: u32,
    ) -> FrameDef {
        let mut steps = Vec::new();
        let mut i = 0;
        while i < fields.len() {
            let encoding = fields[i].encoding;
            let run = |limit| {
                fields[i..]
                    .iter()
                    .take(limit)
                    .take_while(|f| f.encoding == encoding)
                    .count()
            };
            let group = match encoding {
                Encoding::Tag8_8Svb => run(8),
                // Consecutive variable-byte fields are read in one loop.
                Encoding::SignedVb | Encoding::UnsignedVb => run(usize::MAX),
                other => other.group_size(),
            };
            let count = group.min(fields.len() - i);
            steps.push(Step {
                encoding,
                first: i,
                count,
            });
            i += count;
        }
        let mut runs: Vec<Run> = Vec::new();
        for (i, field) in fields.iter().enumerate() {
            match runs.last_mut() {
                Some(run) if run.predictor == field.predictor => run.end = i + 1,
                _ => runs.push(Run {
                    predictor: field.predictor,
                    start: i,
                    end: i + 1,
                }),
            }
        }
        let high_bits = fields.iter().map(|f| high_bits(f.signed)).collect();
        FrameDef {
            kind,
            names,
            fields,
            data_version,
            steps,
            runs,
            high_bits,
        }
    }

    /// Index of the field with this name.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether the frame has no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Decode the fields that follow a type byte into `out` (one value per field, normalised to 32
    /// bits) and return how many bytes they took.
    pub fn decode(
        &self,
        body: &[u8],
        ctx: &Context<'_>,
        out: &mut [i64],
    ) -> Result<usize, CodecError> {
        if out.len() < self.fields.len() {
            return Err(CodecError {
                kind: CodecErrorKind::Other,
                remaining: body.len(),
            });
        }
        let out = &mut out[..self.fields.len()];
        // The residuals first, in place; then the predictions, in field order (a motor[0]
        // prediction reads an earlier field of the same frame).
        let mut rest = body;
        let mut bit = 0usize;
        for step in &self.steps {
            let residuals = &mut out[step.first..step.first + step.count];
            if step.encoding.is_bitstream() {
                let (next, value) = decode_bits(step.encoding, (rest, bit)).map_err(flatten)?;
                rest = next.0;
                bit = next.1;
                residuals[0] = value;
            } else {
                if bit != 0 {
                    rest = &rest[1..];
                    bit = 0;
                }
                rest = self.decode_bytes(step, rest, residuals).map_err(flatten)?;
            }
        }
        for run in &self.runs {
            self.predict_run(run, ctx, out);
        }
        let consumed = body.len() - rest.len() + usize::from(bit != 0);
        Ok(consumed)
    }

    /// Add the run's predictions to the residuals in `out` and normalise the values.
    #[inline]
    fn predict_run(&self, run: &Run, ctx: &Context<'_>, out: &mut [i64]) {
        let (start, end) = (run.start, run.end);
        let high_bits = &self.high_bits[start..end];
        // History as long as the run needs, or none at all (then predictions read 0).
        fn whole(frame: Option<&[i64]>, start: usize, end: usize) -> Result<Option<&[i64]>, ()> {
            match frame {
                Some(f) if f.len() >= end => Ok(Some(&f[start..end])),
                Some(_) => Err(()),
                None => Ok(None),
            }
        }
        let previous = whole(ctx.previous, start, end);
        let previous2 = whole(ctx.previous2, start, end);
        let constant =
            |out: &mut [i64], c: i64| fill(&mut out[start..end], high_bits, std::iter::repeat(c));
        match (run.predictor, previous, previous2) {
            (Predictor::Zero, _, _) => constant(out, 0),
            (Predictor::MinThrottle(c) | Predictor::VbatRef(c) | Predictor::MinMotor(c), _, _) => {
                constant(out, c)
            }
            (Predictor::Fixed1500, _, _) => constant(out, 1500),
            (Predictor::Motor0(m), _, _) if m < start => {
                let motor0 = out[m];
                constant(out, motor0)
            }
            (Predictor::Previous, Ok(None), _) => constant(out, 0),
            (Predictor::Previous, Ok(Some(p1)), _) => {
                fill(&mut out[start..end], high_bits, p1.iter().copied())
            }
            (Predictor::StraightLine | Predictor::Average2, Ok(None), Ok(_))
            | (Predictor::StraightLine | Predictor::Average2, Ok(_), Ok(None)) => constant(out, 0),
            (Predictor::StraightLine, Ok(Some(p1)), Ok(Some(p2))) => fill(
                &mut out[start..end],
                high_bits,
                p1.iter().zip(p2).map(|(a, b)| 2 * a - b),
            ),
            (Predictor::Average2, Ok(Some(p1)), Ok(Some(p2))) => fill(
                &mut out[start..end],
                high_bits,
                p1.iter().zip(p2).map(|(a, b)| (a + b) / 2),
            ),
            // Rare predictors, and history shorter than the frame: one field at a time.
            (predictor, _, _) => {
                for i in start..end {
                    let prediction = predictor.predict(i, ctx, out);
                    out[i] = keep_32_bits(out[i].wrapping_add(prediction), self.high_bits[i]);
                }
            }
        }
    }

    #[inline]
    fn decode_bytes<'a>(
        &self,
        step: &Step,
        input: &'a [u8],
        raw: &mut [i64],
    ) -> Result<&'a [u8], nom::Err<CodecError>> {
        let widen = |raw: &mut [i64], values: &[i32]| {
            for (r, &v) in raw.iter_mut().zip(values) {
                *r = i64::from(v);
            }
        };
        let rest = match step.encoding {
            Encoding::SignedVb => read_each(input, raw, varint::signed_vb)?,
            Encoding::UnsignedVb => read_each(input, raw, varint::unsigned_vb)?,
            Encoding::Neg14Bit => {
                let (rest, v) = varint::neg_14bit(input)?;
                raw[0] = i64::from(v);
                rest
            }
            Encoding::Tag8_8Svb => {
                let (rest, v) = tag::tag8_8svb(input, step.count)?;
                widen(raw, &v);
                rest
            }
            Encoding::Tag2_3S32 => {
                let (rest, v) = tag::tag2_3s32(input)?;
                widen(raw, &v);
                rest
            }
            Encoding::Tag2_3SVariable => {
                let (rest, v) = tag::tag2_3svariable(input)?;
                widen(raw, &v);
                rest
            }
            Encoding::Tag8_4S16 => {
                let (rest, v) = if self.data_version < 2 {
                    tag::tag8_4s16_v1(input)?
                } else {
                    tag::tag8_4s16_v2(input)?
                };
                widen(raw, &v);
                rest
            }
            Encoding::Null => {
                raw[0] = 0;
                input
            }
            Encoding::EliasDeltaU32
            | Encoding::EliasDeltaS32
            | Encoding::EliasGammaU32
            | Encoding::EliasGammaS32 => {
                unreachable!("bit-stream encodings are decoded by decode_bits")
            }
        };
        Ok(rest)
    }

    /// What field `i` of `values` writes: its value less its prediction, in 32 bits.
    fn residual(&self, i: usize, ctx: &Context<'_>, values: &[i64]) -> i32 {
        let prediction = self.fields[i].predictor.predict(i, ctx, values);
        values[i].wrapping_sub(prediction) as i32
    }

    /// Encode `values` (one per field) as the firmware would, given the same prediction context.
    pub fn encode(&self, values: &[i64], ctx: &Context<'_>, out: &mut Vec<u8>) {
        let mut bits = BitWriter::default();
        let mut residuals = [0i32; 8];
        for step in &self.steps {
            if matches!(step.encoding, Encoding::SignedVb | Encoding::UnsignedVb) {
                bits.flush(out);
                for i in step.first..step.first + step.count {
                    let r = self.residual(i, ctx, values);
                    match step.encoding {
                        Encoding::SignedVb => varint::write_signed_vb(out, r),
                        _ => varint::write_unsigned_vb(out, r as u32),
                    }
                }
                continue;
            }
            for (j, r) in residuals.iter_mut().enumerate() {
                let i = step.first + j;
                *r = if j < step.count {
                    self.residual(i, ctx, values)
                } else {
                    0
                };
            }
            if !step.encoding.is_bitstream() {
                bits.flush(out);
            }
            let r = residuals;
            match step.encoding {
                Encoding::SignedVb | Encoding::UnsignedVb => {
                    unreachable!("variable-byte runs are written above")
                }
                Encoding::Neg14Bit => varint::write_neg_14bit(out, r[0]),
                Encoding::Tag8_8Svb => tag::write_tag8_8svb(out, &r[..step.count]),
                Encoding::Tag2_3S32 => tag::write_tag2_3s32(out, [r[0], r[1], r[2]]),
                Encoding::Tag2_3SVariable => tag::write_tag2_3svariable(out, [r[0], r[1], r[2]]),
                Encoding::Tag8_4S16 if self.data_version < 2 => {
                    tag::write_tag8_4s16_v1(out, [r[0], r[1], r[2], r[3]])
                }
                Encoding::Tag8_4S16 => tag::write_tag8_4s16_v2(out, [r[0], r[1], r[2], r[3]]),
                Encoding::Null => {}
                Encoding::EliasDeltaU32 => {
                    elias::write_elias_delta_u32(&mut bits, out, r[0] as u32)
                }
                Encoding::EliasDeltaS32 => elias::write_elias_delta_s32(&mut bits, out, r[0]),
                Encoding::EliasGammaU32 => {
                    elias::write_elias_gamma_u32(&mut bits, out, r[0] as u32)
                }
                Encoding::EliasGammaS32 => elias::write_elias_gamma_s32(&mut bits, out, r[0]),
            }
        }
        bits.flush(out);
    }
}

/// Read one value per slot of `raw` with `read`, one after the other.
#[inline(always)]
fn read_each<'a, T: Into<i64>>(
    mut input: &'a [u8],
    raw: &mut [i64],
    read: impl Fn(&'a [u8]) -> CodecResult<'a, T>,
) -> Result<&'a [u8], nom::Err<CodecError>> {
    for r in raw.iter_mut() {
        let (rest, v) = read(input)?;
        *r = v.into();
        input = rest;
    }
    Ok(input)
}

/// Add each prediction to its residual in `values`, and reduce the sums to 32 bits (see
/// [`keep_32_bits`]).
#[inline(always)]
fn fill(values: &mut [i64], high_bits: &[i64], predictions: impl Iterator<Item = i64>) {
    for ((v, &high), p) in values.iter_mut().zip(high_bits).zip(predictions) {
        *v = keep_32_bits(v.wrapping_add(p), high);
    }
}

#[inline]
fn decode_bits(
    encoding: Encoding,
    input: (&[u8], usize),
) -> nom::IResult<(&[u8], usize), i64, CodecError> {
    Ok(match encoding {
        Encoding::EliasDeltaU32 => {
            let (r, v) = elias::elias_delta_u32(input)?;
            (r, i64::from(v))
        }
        Encoding::EliasDeltaS32 => {
            let (r, v) = elias::elias_delta_s32(input)?;
            (r, i64::from(v))
        }
        Encoding::EliasGammaU32 => {
            let (r, v) = elias::elias_gamma_u32(input)?;
            (r, i64::from(v))
        }
        _ => {
            let (r, v) = elias::elias_gamma_s32(input)?;
            (r, i64::from(v))
        }
    })
}

fn flatten(e: nom::Err<CodecError>) -> CodecError {
    match e {
        nom::Err::Error(e) | nom::Err::Failure(e) => e,
        nom::Err::Incomplete(_) => CodecError {
            kind: CodecErrorKind::Eof,
            remaining: 0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blackbox::predictor::normalise;

    fn field(predictor: Predictor, encoding: Encoding) -> FieldSpec {
        FieldSpec {
            predictor,
            encoding,
            signed: true,
        }
    }

    #[test]
    fn motor_p_frame_example_from_the_spec() {
        let def = FrameDef::new(
            FrameKind::P,
            (0..4).map(|i| format!("motor[{i}]")).collect(),
            vec![field(Predictor::Previous, Encoding::SignedVb); 4],
            2,
        );
        let previous = [1430i64, 1500, 1470, 1490];
        let ctx = Context {
            previous: Some(&previous),
            previous2: Some(&previous),
            ..Context::default()
        };
        let mut out = Vec::new();
        def.encode(&[1635, 1501, 1469, 1532], &ctx, &mut out);
        assert_eq!(out, [0x9A, 0x03, 0x02, 0x01, 0x54]);
        let mut values = [0i64; 4];
        assert_eq!(def.decode(&out, &ctx, &mut values), Ok(5));
        assert_eq!(values, [1635, 1501, 1469, 1532]);
    }

    #[test]
    fn mixed_bit_and_byte_fields_round_trip() {
        let encodings = [
            Encoding::EliasDeltaU32,
            Encoding::EliasDeltaS32,
            Encoding::SignedVb,
            Encoding::EliasGammaS32,
            Encoding::Tag8_4S16,
            Encoding::Tag8_4S16,
            Encoding::Tag8_4S16,
            Encoding::Tag8_4S16,
            Encoding::Tag8_8Svb,
            Encoding::Tag8_8Svb,
            Encoding::Tag2_3S32,
            Encoding::Tag2_3S32,
            Encoding::Tag2_3S32,
            Encoding::Null,
            Encoding::EliasDeltaU32,
        ];
        let fields: Vec<_> = encodings
            .iter()
            .map(|&e| field(Predictor::Zero, e))
            .collect();
        let names: Vec<String> = (0..fields.len()).map(|i| format!("f{i}")).collect();
        for version in [1, 2] {
            let def = FrameDef::new(FrameKind::I, names.clone(), fields.clone(), version);
            let values = [
                7,
                -3,
                1000,
                -70000,
                1,
                -300,
                0,
                5,
                i32::MIN as i64,
                0,
                3,
                -40,
                100000,
                0,
                0,
            ];
            let mut out = Vec::new();
            def.encode(&values, &Context::default(), &mut out);
            let mut decoded = [0i64; 15];
            assert_eq!(
                def.decode(&out, &Context::default(), &mut decoded),
                Ok(out.len())
            );
            assert_eq!(decoded, values, "data version {version}");
        }
    }

    #[test]
    fn fill_normalises_as_the_signed_flag_says() {
        let sums = [
            0i64,
            1,
            -1,
            i32::MAX as i64 + 1,
            u32::MAX as i64,
            -(1 << 40) - 5,
        ];
        for signed in [true, false] {
            let def = FrameDef::new(
                FrameKind::I,
                vec!["v".into()],
                vec![FieldSpec {
                    signed,
                    ..field(Predictor::Zero, Encoding::SignedVb)
                }],
                2,
            );
            for sum in sums {
                let mut value = [sum - 7];
                fill(&mut value, &def.high_bits, std::iter::once(7));
                assert_eq!(value[0], normalise(sum, signed), "{sum} signed {signed}");
            }
        }
    }

    #[test]
    fn a_group_past_the_last_field_still_consumes_the_whole_code() {
        // Two TAG2_3S32 fields: the code carries three values, the third is dropped.
        let fields = vec![field(Predictor::Zero, Encoding::Tag2_3S32); 2];
        let def = FrameDef::new(FrameKind::S, vec!["a".into(), "b".into()], fields, 2);
        let mut out = Vec::new();
        tag::write_tag2_3s32(&mut out, [100, -100, 5]);
        let mut values = [0i64; 2];
        assert_eq!(
            def.decode(&out, &Context::default(), &mut values),
            Ok(out.len())
        );
        assert_eq!(values, [100, -100]);
    }
}
