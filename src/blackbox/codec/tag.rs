//! Grouped encodings that share a header between several fields: TAG8_8SVB (6), TAG2_3S32 (7),
//! TAG8_4S16 (8, in its Data version 1 and 2 layouts) and TAG2_3SVARIABLE (10 in Betaflight/INAV).

use super::varint::{signed_vb, write_signed_vb};
use super::{CodecError, CodecErrorKind, CodecResult, byte, bytes, sign_extend};

/// Decode a TAG8_8SVB group of `count` (1..=8) fields. A group of one is a plain signed varint.
#[inline]
pub fn tag8_8svb(input: &[u8], count: usize) -> CodecResult<'_, [i32; 8]> {
    let mut values = [0i32; 8];
    if count == 1 {
        let (rest, v) = signed_vb(input)?;
        values[0] = v;
        return Ok((rest, values));
    }
    let (mut rest, mut header) = byte(input)?;
    for value in values.iter_mut().take(count.min(8)) {
        if header & 1 != 0 {
            let (r, v) = signed_vb(rest)?;
            rest = r;
            *value = v;
        }
        header >>= 1;
    }
    Ok((rest, values))
}

/// Encode a TAG8_8SVB group (1..=8 values).
pub fn write_tag8_8svb(out: &mut Vec<u8>, values: &[i32]) {
    if values.len() == 1 {
        write_signed_vb(out, values[0]);
        return;
    }
    let header = values
        .iter()
        .take(8)
        .enumerate()
        .fold(0u8, |h, (i, &v)| if v != 0 { h | (1 << i) } else { h });
    out.push(header);
    for &v in values.iter().take(8).filter(|&&v| v != 0) {
        write_signed_vb(out, v);
    }
}

/// Read `width` (0..=3 meaning 1..=4) bytes little-endian and sign-extend them.
#[inline]
fn le_signed(input: &[u8], width: u8) -> CodecResult<'_, i32> {
    match width {
        0 => byte(input).map(|(r, b)| (r, b as i8 as i32)),
        1 => bytes::<2>(input).map(|(r, b)| (r, i16::from_le_bytes(b) as i32)),
        2 => bytes::<3>(input).map(|(r, b)| {
            let v = u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16;
            (r, sign_extend(v, 24))
        }),
        _ => bytes::<4>(input).map(|(r, b)| (r, i32::from_le_bytes(b))),
    }
}

/// Bytes (0..=3 meaning 1..=4) a value needs as a little-endian signed integer.
fn le_width(v: i32) -> u8 {
    if (-128..128).contains(&v) {
        0
    } else if (-32768..32768).contains(&v) {
        1
    } else if (-8388608..8388608).contains(&v) {
        2
    } else {
        3
    }
}

/// The "full" form shared by TAG2_3S32 and TAG2_3SVARIABLE: a 2-bit byte count per field.
fn read_sized_triple(input: &[u8], lead: u8) -> CodecResult<'_, [i32; 3]> {
    let mut values = [0i32; 3];
    let mut rest = input;
    let mut sizes = lead;
    for value in &mut values {
        let (r, v) = le_signed(rest, sizes & 3)?;
        rest = r;
        *value = v;
        sizes >>= 2;
    }
    Ok((rest, values))
}

fn write_sized_triple(out: &mut Vec<u8>, values: [i32; 3]) {
    let widths = values.map(le_width);
    out.push(0xC0 | widths[0] | widths[1] << 2 | widths[2] << 4);
    for (v, w) in values.iter().zip(widths) {
        out.extend_from_slice(&v.to_le_bytes()[..usize::from(w) + 1]);
    }
}

/// Decode TAG2_3S32: three signed values behind a 2-bit layout selector.
#[inline]
pub fn tag2_3s32(input: &[u8]) -> CodecResult<'_, [i32; 3]> {
    let (rest, lead) = byte(input)?;
    let lead32 = u32::from(lead);
    match lead >> 6 {
        0 => Ok((
            rest,
            [
                sign_extend((lead32 >> 4) & 3, 2),
                sign_extend((lead32 >> 2) & 3, 2),
                sign_extend(lead32 & 3, 2),
            ],
        )),
        1 => {
            let (rest, b) = byte(rest)?;
            let b = u32::from(b);
            Ok((
                rest,
                [
                    sign_extend(lead32 & 0x0F, 4),
                    sign_extend(b >> 4, 4),
                    sign_extend(b & 0x0F, 4),
                ],
            ))
        }
        2 => {
            let (rest, [b1, b2]) = bytes::<2>(rest)?;
            Ok((
                rest,
                [
                    sign_extend(lead32 & 0x3F, 6),
                    sign_extend(u32::from(b1) & 0x3F, 6),
                    sign_extend(u32::from(b2) & 0x3F, 6),
                ],
            ))
        }
        _ => read_sized_triple(rest, lead),
    }
}

/// Encode TAG2_3S32 exactly as the firmware does.
pub fn write_tag2_3s32(out: &mut Vec<u8>, values: [i32; 3]) {
    let mut selector = 0u8;
    for &v in &values {
        if !(-32..32).contains(&v) {
            selector = 3;
            break;
        }
        if !(-8..8).contains(&v) {
            selector = selector.max(2);
        } else if !(-2..2).contains(&v) {
            selector = selector.max(1);
        }
    }
    let [a, b, c] = values.map(|v| v as u8);
    match selector {
        0 => out.push((a & 3) << 4 | (b & 3) << 2 | (c & 3)),
        1 => out.extend_from_slice(&[0x40 | (a & 0x0F), b << 4 | (c & 0x0F)]),
        2 => out.extend_from_slice(&[0x80 | (a & 0x3F), b, c]),
        _ => write_sized_triple(out, values),
    }
}

/// Decode TAG2_3SVARIABLE: three signed values in 2/2/2, 5/5/4 or 8/7/7 bits, or whole bytes.
#[inline]
pub fn tag2_3svariable(input: &[u8]) -> CodecResult<'_, [i32; 3]> {
    let (rest, lead) = byte(input)?;
    let l = u32::from(lead);
    match lead >> 6 {
        0 => Ok((
            rest,
            [
                sign_extend((l >> 4) & 3, 2),
                sign_extend((l >> 2) & 3, 2),
                sign_extend(l & 3, 2),
            ],
        )),
        1 => {
            let (rest, b) = byte(rest)?;
            let b = u32::from(b);
            Ok((
                rest,
                [
                    sign_extend((l & 0x3E) >> 1, 5),
                    sign_extend((l & 1) << 4 | (b & 0xF0) >> 4, 5),
                    sign_extend(b & 0x0F, 4),
                ],
            ))
        }
        2 => {
            let (rest, [b, c]) = bytes::<2>(rest)?;
            let (b, c) = (u32::from(b), u32::from(c));
            Ok((
                rest,
                [
                    sign_extend((l & 0x3F) << 2 | (b & 0xC0) >> 6, 8),
                    sign_extend((b & 0x3F) << 1 | (c & 0x80) >> 7, 7),
                    sign_extend(c & 0x7F, 7),
                ],
            ))
        }
        _ => read_sized_triple(rest, lead),
    }
}

/// Encode TAG2_3SVARIABLE with the smallest layout that holds all three values.
pub fn write_tag2_3svariable(out: &mut Vec<u8>, values: [i32; 3]) {
    let fits = |v: i32, bits: u32| (-(1 << (bits - 1))..(1 << (bits - 1))).contains(&v);
    let [a, b, c] = values;
    let [ua, ub, uc] = values.map(|v| v as u32);
    if values.iter().all(|&v| fits(v, 2)) {
        out.push(((ua & 3) << 4 | (ub & 3) << 2 | (uc & 3)) as u8);
    } else if fits(a, 5) && fits(b, 5) && fits(c, 4) {
        out.push((0x40 | (ua & 0x1F) << 1 | (ub & 0x1F) >> 4) as u8);
        out.push(((ub & 0x0F) << 4 | (uc & 0x0F)) as u8);
    } else if fits(a, 8) && fits(b, 7) && fits(c, 7) {
        out.push((0x80 | (ua & 0xFF) >> 2) as u8);
        out.push(((ua & 3) << 6 | (ub & 0x7F) >> 1) as u8);
        out.push(((ub & 1) << 7 | (uc & 0x7F)) as u8);
    } else {
        write_sized_triple(out, values);
    }
}

/// Decode TAG8_4S16 as Data version 2 writes it: a nibble stream, high nibble first, each value 0,
/// 4, 8 or 16 bits wide by its 2-bit selector; a last half byte is padding.
///
/// The values are cut from the (up to) 8 bytes after the selector without a branch on their
/// widths, which vary from frame to frame.
#[inline]
pub fn tag8_4s16_v2(input: &[u8]) -> CodecResult<'_, [i32; 4]> {
    let (rest, selector) = byte(input)?;
    let stream = match rest.first_chunk::<8>() {
        Some(chunk) => u64::from_be_bytes(*chunk),
        None => {
            let mut padded = [0u8; 8];
            padded[..rest.len()].copy_from_slice(rest);
            u64::from_be_bytes(padded)
        }
    };
    let mut values = [0i32; 4];
    let mut bits_read = 0u32;
    for (k, value) in values.iter_mut().enumerate() {
        let width = [0u32, 4, 8, 16][usize::from(selector >> (2 * k) & 3)];
        // At most 48 bits precede the last value, so the shifts stay below 64; a width of 0
        // shifts the sign bit all the way down, which the mask clears.
        let top = (stream << bits_read) as i64;
        let signed = (top >> 1) >> (63 - width);
        *value = (signed & -i64::from(width != 0)) as i32;
        bits_read += width;
    }
    let len = bits_read.div_ceil(8) as usize;
    match rest.get(len..) {
        Some(after) => Ok((after, values)),
        None => Err(CodecError::at(&[], CodecErrorKind::Eof)),
    }
}

fn s16_selector(v: i32) -> u8 {
    if v == 0 {
        0
    } else if (-8..8).contains(&v) {
        1
    } else if (-128..128).contains(&v) {
        2
    } else {
        3
    }
}

/// Encode TAG8_4S16 as the firmware does for Data version 2 (values are kept to 16 bits).
pub fn write_tag8_4s16_v2(out: &mut Vec<u8>, values: [i32; 4]) {
    let selector = values
        .iter()
        .rev()
        .fold(0u8, |s, &v| s << 2 | s16_selector(v));
    out.push(selector);
    let mut pending: Option<u8> = None; // high nibble waiting for its low half
    for &v in &values {
        let u = v as u32;
        match (s16_selector(v), pending) {
            (0, _) => {}
            (1, None) => pending = Some((u as u8) << 4),
            (1, Some(high)) => {
                out.push(high | (u as u8 & 0x0F));
                pending = None;
            }
            (2, None) => out.push(u as u8),
            (2, Some(high)) => {
                out.push(high | ((u >> 4) as u8 & 0x0F));
                pending = Some((u as u8) << 4);
            }
            (_, None) => out.extend_from_slice(&[(u >> 8) as u8, u as u8]),
            (_, Some(high)) => {
                out.push(high | ((u >> 12) as u8 & 0x0F));
                out.push((u >> 4) as u8);
                pending = Some((u as u8) << 4);
            }
        }
    }
    if let Some(high) = pending {
        out.push(high);
    }
}

/// Decode TAG8_4S16 as Data version 1 writes it: 4-bit fields come in pairs (low nibble first) and
/// 16-bit fields are little-endian.
#[inline]
pub fn tag8_4s16_v1(input: &[u8]) -> CodecResult<'_, [i32; 4]> {
    let (mut rest, selector) = byte(input)?;
    let mut values = [0i32; 4];
    let mut i = 0;
    while i < 4 {
        match (selector >> (2 * i)) & 3 {
            0 => {}
            1 => {
                let (r, b) = byte(rest)?;
                rest = r;
                values[i] = sign_extend(u32::from(b) & 0x0F, 4);
                i += 1;
                if i < 4 {
                    values[i] = sign_extend(u32::from(b) >> 4, 4);
                }
            }
            2 => {
                let (r, b) = byte(rest)?;
                rest = r;
                values[i] = b as i8 as i32;
            }
            _ => {
                let (r, b) = bytes::<2>(rest)?;
                rest = r;
                values[i] = i16::from_le_bytes(b) as i32;
            }
        }
        i += 1;
    }
    Ok((rest, values))
}

/// Encode TAG8_4S16 in the Data version 1 layout: a 4-bit field is paired with the next one when
/// that fits in 4 bits too, and otherwise widened to 8 bits.
pub fn write_tag8_4s16_v1(out: &mut Vec<u8>, values: [i32; 4]) {
    let mut sizes = values.map(s16_selector);
    let mut i = 0;
    while i < 4 {
        if sizes[i] == 1 {
            if i == 3 {
                break;
            }
            if sizes[i + 1] <= 1 {
                sizes[i + 1] = 1;
                i += 2;
                continue;
            }
            sizes[i] = 2;
        }
        i += 1;
    }
    out.push(sizes.iter().rev().fold(0u8, |s, &z| s << 2 | z));
    let mut i = 0;
    while i < 4 {
        let u = values[i] as u32;
        match sizes[i] {
            0 => {}
            1 => {
                let high = values.get(i + 1).map_or(0, |&n| (n as u8 & 0x0F) << 4);
                out.push(u as u8 & 0x0F | high);
                i += 1;
            }
            2 => out.push(u as u8),
            _ => out.extend_from_slice(&(values[i] as i16).to_le_bytes()),
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag8_8svb_example_from_the_spec() {
        let mut out = Vec::new();
        write_tag8_8svb(&mut out, &[0, 0, 4, 0, 8]);
        // The spec's example lists the raw values; they are written as signed varints.
        assert_eq!(out, [0b0001_0100, 0x08, 0x10]);
        let (rest, values) = tag8_8svb(&out, 5).unwrap();
        assert!(rest.is_empty());
        assert_eq!(values[..5], [0, 0, 4, 0, 8]);
    }

    #[test]
    fn tag8_8svb_round_trips() {
        for group in [
            &[i32::MIN, i32::MAX, 0, 1, -1, 0, 7, 8][..],
            &[5][..],
            &[0, 0][..],
            &[-1, 0, 0][..],
        ] {
            let mut out = Vec::new();
            write_tag8_8svb(&mut out, group);
            let (rest, values) = tag8_8svb(&out, group.len()).unwrap();
            assert!(rest.is_empty());
            assert_eq!(&values[..group.len()], group);
        }
    }

    #[test]
    fn tag8_4s16_example_from_the_spec() {
        let mut out = Vec::new();
        write_tag8_4s16_v2(&mut out, [13, 0, 4, 2]);
        assert_eq!(out, [0b0101_0010, 0x0D, 0x42]);
        assert_eq!(tag8_4s16_v2(&out), Ok((&[][..], [13, 0, 4, 2])));
    }

    #[test]
    fn tag8_4s16_round_trips_both_versions() {
        let cases = [
            [0, 0, 0, 0],
            [1, -8, 7, -1],
            [i16::MIN as i32, i16::MAX as i32, -1, 1],
            [5, 100, -3000, 7],
            [-128, 127, 8, -9],
            [3, 200, 0, 4],
            [0, 5, 0, -5],
        ];
        for values in cases {
            let mut v2 = Vec::new();
            write_tag8_4s16_v2(&mut v2, values);
            assert_eq!(tag8_4s16_v2(&v2), Ok((&[][..], values)), "v2 {values:?}");
            let mut v1 = Vec::new();
            write_tag8_4s16_v1(&mut v1, values);
            assert_eq!(tag8_4s16_v1(&v1), Ok((&[][..], values)), "v1 {values:?}");
        }
    }

    #[test]
    fn tag2_3s32_round_trips_every_layout() {
        let cases = [
            [0, -1, 1],
            [-2, 1, 0],
            [7, -8, 3],
            [31, -32, 0],
            [32, 0, -1],
            [i32::MIN, i32::MAX, -129],
            [-8388608, 8388607, 40000],
        ];
        for values in cases {
            let mut out = Vec::new();
            write_tag2_3s32(&mut out, values);
            assert_eq!(tag2_3s32(&out), Ok((&[][..], values)), "{values:?}");
        }
        let mut out = Vec::new();
        write_tag2_3s32(&mut out, [1, -1, 0]);
        assert_eq!(out, [0b0001_1100]);
    }

    #[test]
    fn tag2_3svariable_round_trips_every_layout() {
        let cases = [
            [0, -2, 1],
            [15, -16, 7],
            [-16, 15, -8],
            [127, -64, 63],
            [-128, 63, -64],
            [128, 0, 0],
            [i32::MIN, i32::MAX, 1],
        ];
        for values in cases {
            let mut out = Vec::new();
            write_tag2_3svariable(&mut out, values);
            assert_eq!(tag2_3svariable(&out), Ok((&[][..], values)), "{values:?}");
        }
    }

    #[test]
    fn truncated_groups_fail_cleanly() {
        assert!(tag8_4s16_v2(&[0xFF, 0x01]).is_err());
        assert!(tag2_3s32(&[0xFF, 0x01]).is_err());
        assert!(tag2_3svariable(&[0x80]).is_err());
        assert!(tag8_8svb(&[0xFF, 0x02], 8).is_err());
    }
}
