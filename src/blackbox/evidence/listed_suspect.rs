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
/// order written; none of them spans the iteration of a frame written trusted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SuspectFrames {
    ranges: Vec<(u32, u32)>,
    /// The highest iteration noted: a run extends only past every frame written before.
    highest: Option<u32>,
}

impl SuspectFrames {
    /// The frames the header's `Suspect frames` lines list; a range that does not read as
    /// `first-last` (or one iteration) is left out.
    pub fn from_header(header: &Header) -> SuspectFrames {
        let ranges: Vec<(u32, u32)> = header
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
        SuspectFrames::sorted(ranges)
    }

    /// The frames `written` lists, as [`SuspectFrames::contains`] looks them up.
    pub fn for_lookup(written: &SuspectFrames) -> SuspectFrames {
        SuspectFrames::sorted(written.ranges.clone())
    }

    /// `ranges` sorted, overlapping ones joined.
    fn sorted(mut ranges: Vec<(u32, u32)>) -> SuspectFrames {
        ranges.sort_unstable();
        // Overlapping ranges become one, so that each iteration is looked up in one range.
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
        for (first, last) in ranges {
            match merged.last_mut() {
                Some(run) if first <= run.1 => run.1 = run.1.max(last),
                _ => merged.push((first, last)),
            }
        }
        SuspectFrames {
            ranges: merged,
            highest: None,
        }
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
    /// run of the suspect frame written right before it when it goes past every iteration written
    /// so far, or starts a run (unless a run holds its iteration already: a listing names
    /// iterations, and a frame written twice, as around a logging pause, is listed once). A
    /// trusted one whose iteration lies inside a run (iterations went back after damage) is taken
    /// out of it; one of a run's first or last iteration, a suspect frame's, stays listed.
    pub fn note(&mut self, iteration: u32, suspect: bool, previous_suspect: bool) {
        let onwards = self.highest.is_none_or(|highest| iteration > highest);
        let highest = self.highest;
        self.highest = Some(highest.map_or(iteration, |h| h.max(iteration)));
        let holds = |&(first, last): &(u32, u32)| (first..=last).contains(&iteration);
        if suspect {
            let listed = match onwards {
                true => self.ranges.last().is_some_and(holds),
                false => self.ranges.iter().any(holds),
            };
            match self.ranges.last_mut() {
                _ if listed => {}
                Some(run) if onwards && previous_suspect && Some(run.1) == highest => {
                    run.1 = iteration
                }
                _ => self.ranges.push((iteration, iteration)),
            }
        } else if !onwards {
            let Some(at) = self
                .ranges
                .iter()
                .position(|&(first, last)| first < iteration && iteration < last)
            else {
                return;
            };
            let (first, last) = self.ranges[at];
            self.ranges[at] = (first, iteration - 1);
            self.ranges.insert(at + 1, (iteration + 1, last));
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

    /// The listing of main frames written in the order of `frames`: (iteration, suspect).
    fn listing(frames: &[(u32, bool)]) -> SuspectFrames {
        let mut listed = SuspectFrames::default();
        let mut previous = false;
        for &(iteration, suspect) in frames {
            listed.note(iteration, suspect, previous);
            previous = suspect;
        }
        listed
    }

    #[test]
    fn runs_of_suspect_frames_are_listed_and_read_back() {
        let frames = [
            (10, false),
            (11, true),
            (12, true),
            (14, true),
            (15, false),
            (16, true),
        ];
        assert_eq!(
            listing(&frames).header_lines(),
            "H Suspect frames:11-14,16\n"
        );
        let bytes: &[u8] = b"H Product:Blackbox flight data recorder by Nicholas Sherlock\n\
              H Suspect frames:11-14,16\nH Suspect frames:x,30-20,40\n";
        let header = Header::parse(bytes, 0, bytes.len());
        let read = SuspectFrames::from_header(&header);
        let holds: Vec<u32> = (0..50).filter(|&i| read.contains(i)).collect();
        assert_eq!(holds, [11, 12, 13, 14, 16, 40]);
    }

    #[test]
    fn a_run_never_spans_a_trusted_frame_when_iterations_go_back() {
        // After damage the iterations went back: frames of iterations the first run spans
        // are written later.
        let frames = [
            (272, true),
            (1872, true),
            (392, false),
            (384, true),
            (1900, true),
            (2000, false),
            (1950, true),
            (1960, true),
            (1000, true),
        ];
        let lines = listing(&frames).header_lines();
        let bytes =
            format!("H Product:Blackbox flight data recorder by Nicholas Sherlock\n{lines}");
        let read = SuspectFrames::from_header(&Header::parse(bytes.as_bytes(), 0, bytes.len()));
        for (iteration, suspect) in frames {
            assert_eq!(read.contains(iteration), suspect, "{iteration}: {lines}");
        }
        // Short of the highest iteration written, a suspect frame starts a run of its own.
        assert_eq!(lines, "H Suspect frames:272-391,393-1900,1950,1960\n");
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
