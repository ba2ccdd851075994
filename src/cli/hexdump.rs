//! The bytes around a span, as `check --hexdump` prints them and the HTML page embeds them.

use std::io::{self, Write};

/// Bytes shown before and after a span, and at most at each end of a long one.
const CONTEXT: usize = 16;
const SPAN_ENDS: usize = 48;

/// Write `data[start..end]` as hex and ASCII, 16 bytes a line, marking bytes inside the span.
fn write_hex(
    out: &mut impl Write,
    data: &[u8],
    from: usize,
    to: usize,
    span: (usize, usize),
) -> io::Result<()> {
    for line in (from..to).step_by(16) {
        write!(out, "    {line:08x} ")?;
        let end = (line + 16).min(to);
        for (i, byte) in (line..end).zip(&data[line..end]) {
            let mark = if (span.0..span.1).contains(&i) {
                '>'
            } else {
                ' '
            };
            write!(out, "{mark}{byte:02x}")?;
        }
        write!(out, "{}", "   ".repeat(16 - (end - line)))?;
        let text: String = data[line..end]
            .iter()
            .map(|&b| {
                if b.is_ascii_graphic() || b == b' ' {
                    b as char
                } else {
                    '.'
                }
            })
            .collect();
        writeln!(out, "  |{text}|")?;
    }
    Ok(())
}

/// The bytes around a span: some context, and both ends of a long span.
pub fn write_span_bytes(
    out: &mut impl Write,
    data: &[u8],
    start: usize,
    end: usize,
) -> io::Result<()> {
    let from = start.saturating_sub(CONTEXT) / 16 * 16;
    let to = (end + CONTEXT).min(data.len());
    if end - start <= 2 * SPAN_ENDS {
        return write_hex(out, data, from, to, (start, end));
    }
    let head_end = (start + SPAN_ENDS).div_ceil(16) * 16;
    let tail_start = (end - SPAN_ENDS) / 16 * 16;
    write_hex(out, data, from, head_end, (start, end))?;
    writeln!(out, "    ... {} bytes ...", tail_start - head_end)?;
    write_hex(out, data, tail_start, to, (start, end))
}
