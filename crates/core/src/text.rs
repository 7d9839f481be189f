//! Small text helpers for messages people read: plurals, and values echoed on one line.

use std::borrow::Cow;

/// `n thing` or `n things`: `plural(1, "fault")` is `1 fault`, `plural(3, "fault")` is
/// `3 faults`.
pub fn plural(n: impl Into<u64>, thing: &str) -> String {
    let n = n.into();
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// `text` with every control character (a newline, a carriage return, a tab, an escape …)
/// written as Rust writes it in a string literal (`\n`, `\r`, `\t`, `\u{1b}`), so that a value
/// echoed in a one-line message stays on one line; text without control characters is
/// returned as it is.
pub fn one_line(text: &str) -> Cow<'_, str> {
    if !text.chars().any(char::is_control) {
        return Cow::Borrowed(text);
    }
    let mut s = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if c.is_control() {
            s.extend(c.escape_debug());
        } else {
            s.push(c);
        }
    }
    Cow::Owned(s)
}

/// Where the lines of a text start, to turn byte offsets (a TOML span's start) into 1-based
/// line numbers in O(log lines) each; counting the newlines before every offset afresh made
/// reading a file of 20,000 `[[fault]]` entries quadratic.
pub struct LineIndex {
    /// Byte offset of each line's first byte; the first is 0.
    starts: Vec<usize>,
}

impl LineIndex {
    /// Indexes `text` (one pass).
    pub fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { starts }
    }

    /// The 1-based line that byte `offset` is on (an offset past the end is on the last line).
    pub fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_and_escapes() {
        assert_eq!(plural(1u64, "fault"), "1 fault");
        assert_eq!(plural(0u32, "fault"), "0 faults");
        assert_eq!(one_line("ttl=2s"), "ttl=2s");
        assert_eq!(one_line("pa\nxos\tü\r"), "pa\\nxos\\tü\\r");
        assert_eq!(one_line("a\u{1b}[2J"), "a\\u{1b}[2J");
        assert!(!one_line("x\ny").contains('\n'));
    }

    #[test]
    fn line_numbers_as_counting_newlines_gives_them() {
        let text = "a\nbc\n\nd\n";
        let lines = LineIndex::new(text);
        for offset in 0..text.len() + 3 {
            let counted = text[..offset.min(text.len())].matches('\n').count() + 1;
            assert_eq!(lines.line(offset), counted, "offset {offset}");
        }
        assert_eq!(LineIndex::new("").line(0), 1);
    }
}
