//! Messages of a type whose FMT was lost. Their header `A3 95 <type>` still marks where each one
//! starts, and a logger writes a message right after the one before: the distance from a header
//! of the type to the next header is its length, the same for hundreds of messages. [`infer`]
//! reads that from the whole file, once, when the scan first meets a header no FMT defines; the
//! scan then steps over such messages (their values stay unreadable without a definition) and
//! keeps the messages beside them.

use super::fmt::HEADER;

/// Headers of a type a length is inferred from, at least.
pub const MIN_MESSAGES: u32 = 8;

/// Of a type's headers, at least this many in ten must be followed by the next header at the
/// inferred distance (a byte pair `A3 95` inside a message, or damage, shortens a few).
pub const MIN_TENTHS_AGREEING: u32 = 9;

/// The length inferred for a type, and from how many of its headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inferred {
    /// The whole message, header included.
    pub length: usize,
    /// Headers followed by the next at that distance.
    pub agreeing: u32,
}

/// Per type byte, the length its headers' spacing shows, if they agree on one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lengths(Box<[Option<Inferred>; 256]>);

impl Lengths {
    /// The length inferred for `type_id`.
    #[inline]
    pub fn get(&self, type_id: u8) -> Option<Inferred> {
        self.0[usize::from(type_id)]
    }
}

/// Infer, for every type byte, the length its headers' spacing in `data` shows: the most common
/// distance (4 to 255 bytes, as a length byte allows) from one of its headers to the next header
/// of any type, when at least [`MIN_MESSAGES`] headers and [`MIN_TENTHS_AGREEING`] in ten of them
/// agree. One pass over the data; 256 KiB of counts.
pub fn infer(data: &[u8]) -> Lengths {
    let mut votes = vec![[0u32; 256]; 256];
    let mut headers = [0u32; 256];
    let mut previous: Option<(usize, u8)> = None;
    for at in memchr::memmem::find_iter(data, &HEADER) {
        let Some(&type_id) = data.get(at + HEADER.len()) else {
            break;
        };
        if let Some((before, before_type)) = previous {
            let t = usize::from(before_type);
            headers[t] = headers[t].saturating_add(1);
            if let Some(count) = votes[t].get_mut(at - before) {
                *count = count.saturating_add(1);
            }
        }
        previous = Some((at, type_id));
    }
    let mut lengths = Box::new([None; 256]);
    for (t, counts) in votes.iter().enumerate() {
        let Some((length, &agreeing)) = counts.iter().enumerate().skip(4).max_by_key(|(_, c)| **c)
        else {
            continue;
        };
        let enough = agreeing >= MIN_MESSAGES
            && u64::from(agreeing) * 10 >= u64::from(headers[t]) * u64::from(MIN_TENTHS_AGREEING);
        if enough {
            lengths[t] = Some(Inferred { length, agreeing });
        }
    }
    Lengths(lengths)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` messages of `type_id` and `length`, each followed by one of type 1 (9 bytes).
    fn interleaved(type_id: u8, length: usize, count: usize) -> Vec<u8> {
        let mut data = Vec::new();
        for i in 0..count {
            data.extend_from_slice(&[0xA3, 0x95, type_id]);
            data.extend(std::iter::repeat_n(i as u8 & 0x7F, length - 3));
            data.extend_from_slice(&[0xA3, 0x95, 1, 0, 0, 0, 0, 0, 0]);
        }
        data
    }

    #[test]
    fn a_length_shows_in_the_spacing_of_the_headers() {
        let data = interleaved(138, 33, 40);
        let lengths = infer(&data);
        assert_eq!(
            lengths.get(138),
            Some(Inferred {
                length: 33,
                agreeing: 40
            })
        );
        assert_eq!(lengths.get(1).map(|i| i.length), Some(9));
        assert_eq!(lengths.get(2), None);
    }

    #[test]
    fn few_or_disagreeing_headers_give_no_length() {
        assert_eq!(infer(&interleaved(138, 33, 7)).get(138), None);
        // Two lengths for one type byte, half each: no length.
        let mut data = interleaved(138, 33, 20);
        data.extend(interleaved(138, 40, 20));
        assert_eq!(infer(&data).get(138), None);
        assert_eq!(infer(&[]).get(0), None);
        assert_eq!(infer(&[0xA3, 0x95]).get(0), None);
    }
}
