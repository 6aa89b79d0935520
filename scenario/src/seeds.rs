//! Seed ranges, `A..B` with B excluded, as scenario files (`seeds`), the
//! command line (`--seeds`) and study specs write them: one reading of the
//! text for all three, each caller placing the error where its user looks
//! (a file's line and column, or a flag).

use std::ops::Range;

/// Why a text is not a seed range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SeedRangeError {
    /// Not two unsigned numbers around `..`.
    Malformed,
    /// The low end is above the high end.
    Reversed { low: u64, high: u64 },
    /// Both ends equal: the high end is excluded, so no seed is left.
    Empty { low: u64 },
}

/// Reads `A..B` (spaces around either number allowed).
pub fn parse(text: &str) -> Result<Range<u64>, SeedRangeError> {
    let number = |s: &str| {
        let s = s.trim();
        if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
            s.parse::<u64>().ok()
        } else {
            None
        }
    };
    let (low, high) = text.split_once("..").and_then(|(low, high)| Some((number(low)?, number(high)?))).ok_or(SeedRangeError::Malformed)?;
    match low.cmp(&high) {
        std::cmp::Ordering::Greater => Err(SeedRangeError::Reversed { low, high }),
        std::cmp::Ordering::Equal => Err(SeedRangeError::Empty { low }),
        std::cmp::Ordering::Less => Ok(low..high),
    }
}

impl SeedRangeError {
    /// What is wrong with `text`, and how to fix it.
    pub fn explain(&self, text: &str) -> (String, String) {
        match self {
            SeedRangeError::Malformed => {
                (format!("`{text}` is not a seed range"), "write \"A..B\" (B excluded), e.g. \"0..100\"".to_string())
            }
            SeedRangeError::Reversed { low, high } => {
                (format!("`{text}`: low is above high"), format!("write the low end first: \"{high}..{low}\""))
            }
            SeedRangeError::Empty { low } => (
                format!("`{text}` is empty: the high end is excluded"),
                format!("e.g. \"{low}..{}\" for seed {low} alone", low.saturating_add(1)),
            ),
        }
    }
}

/// The command line's reading: the error as one line with its fix.
pub fn parse_flag(text: &str) -> Result<Range<u64>, String> {
    parse(text).map_err(|e| {
        let (what, fix) = e.explain(text);
        format!("{what}; {fix}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_their_errors() {
        assert_eq!(parse("0..100"), Ok(0..100));
        assert_eq!(parse(" 3 .. 9"), Ok(3..9));
        assert_eq!(parse("5..2"), Err(SeedRangeError::Reversed { low: 5, high: 2 }));
        assert_eq!(parse("5..5"), Err(SeedRangeError::Empty { low: 5 }));
        for bad in ["0-100", "-1..5", "..5", "1..", "a..b", "1..2..3"] {
            assert_eq!(parse(bad), Err(SeedRangeError::Malformed), "{bad}");
        }
        assert!(parse_flag("5..2").unwrap_err().contains("write the low end first: \"2..5\""));
    }
}
