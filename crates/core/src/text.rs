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
}
