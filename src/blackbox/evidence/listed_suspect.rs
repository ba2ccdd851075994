//! A log that `salvage` wrote holds frames that were suspect in its input, with the values that
//! put them in doubt. Some of that evidence does not survive the writing: a line feed whose
//! reading was in doubt is written as the reading chosen, under a header that says the log's line
//! feeds were checked. So salvage lists, in `H Suspect frames:` header lines, the loop iterations
//! of the main frames it kept as suspect, and each frame listed there is suspect again
//! (`listed-suspect`), whatever the other rules find: the written log's groups need not be the
//! ones whose evidence put them in doubt. Threshold: none; the listing is the evidence. A clean log lists nothing, and a log
//! salvaged twice lists the same frames.

use crate::blackbox::group::Group;
use crate::blackbox::header::Header;

/// The name of the header lines that list the frames a salvage kept as suspect.
pub const SUSPECT_FRAMES: &str = "Suspect frames";

/// Ranges written on one header line, so that every line stays far below the 1,024 bytes the
/// reference decoders read of one.
const RANGES_PER_LINE: usize = 24;

/// Loop iterations (first and last, inclusive) of runs of main frames listed as suspect, in the
/// order written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SuspectFrames {
    ranges: Vec<(u32, u32)>,
}

impl SuspectFrames {
    /// The frames the header's `Suspect frames` lines list; a range that does not read as
    /// `first-last` (or one iteration) is left out.
    pub fn from_header(header: &Header) -> SuspectFrames {
        let mut ranges: Vec<(u32, u32)> = header
            .lines
            .iter()
            .filter(|l| l.name == SUSPECT_FRAMES)
            .flat_map(|l| l.value.split(','))
            .filter_map(|range| {
                let (first, last) = range.split_once('-').unwrap_or((range, range));
                let (first, last) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
                (first <= last).then_some((first, last))
            })
            .collect();
        ranges.sort_unstable();
        SuspectFrames { ranges }
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether the main frame of loop iteration `iteration` is listed.
    pub fn contains(&self, iteration: u32) -> bool {
        let after = self
            .ranges
            .partition_point(|&(first, _)| first <= iteration);
        after > 0 && self.ranges[after - 1].1 >= iteration
    }

    /// Note the next main frame written, of loop iteration `iteration`: a suspect one extends the
    /// run of the suspect frame written right before it, or starts a run (unless the last run
    /// holds its iteration already: a listing names iterations, and a frame written twice, as
    /// around a logging pause, is listed once).
    pub fn note(&mut self, iteration: u32, suspect: bool, previous_suspect: bool) {
        match self.ranges.last_mut() {
            Some(run) if suspect && (run.0..=run.1).contains(&iteration) => {}
            Some(run) if suspect && previous_suspect && iteration > run.1 => run.1 = iteration,
            _ if suspect => self.ranges.push((iteration, iteration)),
            _ => {}
        }
    }

    /// The header lines that list these frames (none when there are none).
    pub fn header_lines(&self) -> String {
        self.ranges
            .chunks(RANGES_PER_LINE)
            .map(|chunk| {
                let ranges: Vec<String> = chunk
                    .iter()
                    .map(|&(first, last)| match first == last {
                        true => first.to_string(),
                        false => format!("{first}-{last}"),
                    })
                    .collect();
                format!("H {SUSPECT_FRAMES}:{}\n", ranges.join(","))
            })
            .collect()
    }
}

impl Group {
    /// The first main frame item of the group that `listed` names, read with its loop iteration
    /// at `iteration_index`.
    pub fn first_listed_suspect(
        &self,
        listed: &SuspectFrames,
        iteration_index: usize,
    ) -> Option<usize> {
        if listed.is_empty() {
            return None;
        }
        self.main_items().find_map(|(index, item)| {
            let iteration = *self.values(item).get(iteration_index)?;
            listed.contains(iteration as u32).then_some(index)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_suspect_frames_are_listed_and_read_back() {
        let mut listed = SuspectFrames::default();
        let frames = [
            (10, false),
            (11, true),
            (12, true),
            (14, true),
            (15, false),
            (16, true),
        ];
        let mut previous = false;
        for (iteration, suspect) in frames {
            listed.note(iteration, suspect, previous);
            previous = suspect;
        }
        assert_eq!(listed.header_lines(), "H Suspect frames:11-14,16\n");
        let bytes: &[u8] = b"H Product:Blackbox flight data recorder by Nicholas Sherlock\n\
              H Suspect frames:11-14,16\nH Suspect frames:x,30-20,40\n";
        let header = Header::parse(bytes, 0, bytes.len());
        let read = SuspectFrames::from_header(&header);
        let holds: Vec<u32> = (0..50).filter(|&i| read.contains(i)).collect();
        assert_eq!(holds, [11, 12, 13, 14, 16, 40]);
    }

    #[test]
    fn long_listings_are_split_into_short_lines() {
        let mut listed = SuspectFrames::default();
        for run in 0..100u32 {
            listed.note(run * 1000, true, false);
            listed.note(run * 1000 + 999, true, true);
        }
        let lines = listed.header_lines();
        assert_eq!(lines.lines().count(), 5);
        assert!(lines.lines().all(|l| l.len() < 400));
    }
}
