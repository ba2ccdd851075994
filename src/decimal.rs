//! Decimal text of integers, written in place: each number is built in a fixed-size block at a
//! position of a buffer the caller has made room in, with no branch per digit for the sizes a log
//! mostly holds.

/// Bytes [`put_number`] may write from its position: the 8-byte block of the short form, or a
/// sign and 20 digits.
pub const NUMBER_ROOM: usize = 24;

/// `"00"` to `"99"`.
const DIGIT_PAIRS: [[u8; 2]; 100] = {
    let mut pairs = [[0; 2]; 100];
    let mut i = 0;
    while i < 100 {
        pairs[i] = [b'0' + (i / 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    pairs
};

/// −999 to 999 (index `value + 999`), most values a log holds: the text right-aligned in 3
/// columns (4 for "-123"), as `{:3}` writes it, in the low bytes of the word (little endian); the
/// length of the text without padding in byte 6, with padding in byte 7.
static SMALL_NUMBERS: [u64; 1999] = {
    let mut table = [0; 1999];
    let mut i = 0;
    while i < 1999 {
        let value = i as i64 - 999;
        let magnitude = value.unsigned_abs();
        let mut text = [b' '; 4];
        let mut end = 4;
        let mut rest = magnitude;
        loop {
            end -= 1;
            text[end] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        if value < 0 {
            end -= 1;
            text[end] = b'-';
        }
        // Right-aligned in 3 columns, or 4 for "-123".
        let len = if end == 0 { 4 } else { 3 };
        let mut word = (len as u64) << 56 | ((4 - end) as u64) << 48;
        let mut k = 0;
        while k < len {
            word |= (text[4 - len + k] as u64) << (8 * k);
            k += 1;
        }
        table[i] = word;
        i += 1;
    }
    table
};

/// Write a decimal integer (`negative` and `magnitude`) right-aligned in at least `width`
/// columns, the rest filled with `fill`, into `buf` at `at`; returns the end of what was written.
/// `buf` must hold `NUMBER_ROOM.max(width)` bytes from `at`.
///
/// −999 to 999 in at most 3 columns filled with spaces (most values of a log) come from
/// [`SMALL_NUMBERS`]; other numbers under a million in at most 8 columns are built in one 64-bit
/// word, without a branch on the digits. Either is stored as one 8-byte block.
#[inline(always)]
pub fn put_number(
    buf: &mut [u8],
    at: usize,
    negative: bool,
    magnitude: u64,
    width: usize,
    fill: u8,
) -> usize {
    // (−0 is not in the table.)
    if width <= 3 && fill == b' ' && magnitude < 1000 && (magnitude != 0 || !negative) {
        let value = if negative {
            999 - magnitude as usize
        } else {
            999 + magnitude as usize
        };
        let word = SMALL_NUMBERS[value];
        let (len, padded) = (usize::from((word >> 48) as u8), (word >> 56) as usize);
        // The padding the width leaves, and the text.
        let total = width.max(len);
        let text = word >> (8 * (padded - total));
        buf[at..at + 8].copy_from_slice(&text.to_le_bytes());
        return at + total;
    }
    if magnitude < 1_000_000 && width <= 8 {
        // The number right-aligned in eight characters, character i in byte i of the word: six
        // digits with leading zeros in bytes 2..8...
        let m = magnitude as u32;
        let pair = |p: u32| u64::from(u16::from_le_bytes(DIGIT_PAIRS[p as usize]));
        let low = pair(m / 100 % 100) << 32 | pair(m % 100) << 48;
        let text = if m < 10_000 {
            low | 0x3030 << 16
        } else {
            low | pair(m / 10_000) << 16
        };
        // ...where the first digit that is not a leading zero (the last digit at least) starts
        // the number...
        let first = ((text ^ 0x3030_3030_3030_0000) | 1 << 56).trailing_zeros() as usize / 8;
        let kept = u64::MAX << (8 * first);
        let text = (text & kept) | (u64::from_le_bytes([fill; 8]) & !kept);
        // ...the sign goes just before it...
        let sign = (0xFF << (8 * first) >> 8) & u64::from(negative).wrapping_neg();
        let text = (text & !sign) | (u64::from_le_bytes([b'-'; 8]) & sign);
        // ...and the last `total` characters are the field.
        let total = width.max(8 - first + usize::from(negative));
        let text = text >> (8 * (8 - total));
        buf[at..at + 8].copy_from_slice(&text.to_le_bytes());
        return at + total;
    }
    let digits = magnitude.checked_ilog10().map_or(1, |l| l as usize + 1);
    let total = width.max(digits + usize::from(negative));
    if total <= NUMBER_ROOM {
        buf[at..at + NUMBER_ROOM].copy_from_slice(&[fill; NUMBER_ROOM]);
    } else {
        buf[at..at + total].fill(fill);
    }
    let mut end = at + total;
    let mut rest = magnitude;
    while rest >= 100 {
        end -= 2;
        buf[end..end + 2].copy_from_slice(&DIGIT_PAIRS[(rest % 100) as usize]);
        rest /= 100;
    }
    if rest >= 10 {
        end -= 2;
        buf[end..end + 2].copy_from_slice(&DIGIT_PAIRS[rest as usize]);
    } else {
        end -= 1;
        buf[end] = b'0' + rest as u8;
    }
    if negative {
        buf[end - 1] = b'-';
    }
    at + total
}

/// [`put_number`] of `value`, right-aligned in at least `width` columns filled with spaces.
#[inline(always)]
pub fn put_int(buf: &mut [u8], at: usize, value: i64, width: usize) -> usize {
    put_number(buf, at, value < 0, value.unsigned_abs(), width, b' ')
}

/// Grow `out` by `room` bytes, let `put` write from where it ended, and keep what `put` wrote.
#[inline]
pub fn append(out: &mut Vec<u8>, room: usize, put: impl FnOnce(&mut [u8], usize) -> usize) {
    let base = out.len();
    out.resize(base + room, 0);
    let end = put(out, base);
    out.truncate(end);
}

/// [`put_number`] at the end of `out`.
#[inline]
pub fn write_number(out: &mut Vec<u8>, negative: bool, magnitude: u64, width: usize, fill: u8) {
    append(out, NUMBER_ROOM.max(width), |buf, at| {
        put_number(buf, at, negative, magnitude, width, fill)
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_what_integer_formatting_writes() {
        let mut magnitudes = vec![0, u64::MAX, u64::MAX - 1, i64::MAX as u64 + 1];
        for power in 0..20 {
            let p = 10u64.pow(power);
            magnitudes.extend([p - 1, p, p + 1, 3 * p + 7 % p]);
        }
        magnitudes.extend((0..20_000).map(|i| i * 97 % 1_200_000));
        for &m in &magnitudes {
            for negative in [false, true] {
                let sign = if negative { "-" } else { "" };
                for width in [0, 1, 2, 3, 7, 8, 9, 23, 30] {
                    for (fill, padded) in [
                        (b' ', format!("{:>width$}", format!("{sign}{m}"))),
                        (b'0', format!("{:0>width$}", format!("{sign}{m}"))),
                    ] {
                        // What comes before and after is left as it is.
                        let mut out = b"x".to_vec();
                        write_number(&mut out, negative, m, width, fill);
                        out.push(b'y');
                        assert_eq!(
                            String::from_utf8(out).unwrap(),
                            format!("x{padded}y"),
                            "{m} {negative} {width}"
                        );
                    }
                }
            }
        }
    }
}
