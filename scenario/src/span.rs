//! Byte offsets to `line:col`.
//!
//! The TOML parser reports positions as byte offsets into the file; people
//! read `line:col`. Columns count characters (not bytes) so that a caret
//! lines up under non-ASCII text too. Lines and columns start at 1.

use std::ops::Range;

/// Where each line of one file starts, for turning offsets into positions.
pub(crate) struct LineIndex<'a> {
    text: &'a str,
    /// Byte offset of the first character of each line.
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts }
    }

    /// The 1-based line and character column of a byte offset. Offsets past
    /// the end or inside a character are clamped rather than trusted, since
    /// they come from another crate.
    pub(crate) fn locate(&self, offset: usize) -> (usize, usize) {
        let offset = self.floor_boundary(offset.min(self.text.len()));
        let line = self.starts.partition_point(|&start| start <= offset).max(1);
        let start = self.starts[line - 1];
        let col = self.text[start..offset].chars().count() + 1;
        (line, col)
    }

    /// The text of a 1-based line, without its line break.
    pub(crate) fn line_text(&self, line: usize) -> &'a str {
        let Some(&start) = self.starts.get(line.wrapping_sub(1)) else {
            return "";
        };
        let end = self.starts.get(line).map_or(self.text.len(), |&next| next - 1);
        self.text[start..end].trim_end_matches('\r')
    }

    /// The source text a span covers (empty for a span outside the file).
    pub(crate) fn slice(&self, span: &Range<usize>) -> &'a str {
        let start = self.floor_boundary(span.start.min(self.text.len()));
        let end = self.floor_boundary(span.end.min(self.text.len())).max(start);
        &self.text[start..end]
    }

    fn floor_boundary(&self, mut offset: usize) -> usize {
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_to_one_based_lines_and_char_columns() {
        let index = LineIndex::new("ab\nçd = 1\n\nx");
        assert_eq!(index.locate(0), (1, 1));
        assert_eq!(index.locate(1), (1, 2));
        assert_eq!(index.locate(3), (2, 1));
        // `d` is byte 5 but the second character of its line.
        assert_eq!(index.locate(5), (2, 2));
        assert_eq!(index.locate(11), (3, 1));
        assert_eq!(index.locate(12), (4, 1));
        assert_eq!(index.locate(999), (4, 2));
        // Inside the two-byte `ç`: clamped to its start.
        assert_eq!(index.locate(4), (2, 1));
        assert_eq!(index.line_text(2), "çd = 1");
        assert_eq!(index.line_text(3), "");
        assert_eq!(index.line_text(9), "");
    }

    #[test]
    fn crlf_line_breaks_are_not_part_of_the_line() {
        let index = LineIndex::new("a = 1\r\nb = 2\r\n");
        assert_eq!(index.line_text(1), "a = 1");
        assert_eq!(index.locate(7), (2, 1));
    }
}
