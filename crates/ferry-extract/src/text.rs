//! Text helpers shared by the readers: cutting to a character budget,
//! decoding text files, and keeping table cells on one line.

use crate::error::ExtractError;

/// The mark that ends a preview cut at its character limit.
pub const CUT_MARK: char = '…';

/// Cuts `text` to at most `max_chars` characters (Unicode scalar values).
///
/// A text that fits is returned unchanged. A longer one keeps its first
/// `max_chars - 1` characters and ends with [`CUT_MARK`], so a reader can
/// tell it was cut and the result is still exactly `max_chars` long.
pub fn clip(text: String, max_chars: usize) -> String {
    if text.char_indices().nth(max_chars).is_none() {
        return text;
    }
    mark_cut(text, max_chars)
}

/// Collects preview lines until a little more than the character budget is
/// reached, so readers can stop reading early. [`LineSink::finish`] then
/// cuts to the exact budget with [`clip`].
#[derive(Debug)]
pub(crate) struct LineSink {
    out: String,
    chars: usize,
    max_chars: usize,
}

impl LineSink {
    pub(crate) fn new(max_chars: usize) -> Self {
        LineSink {
            out: String::new(),
            chars: 0,
            max_chars,
        }
    }

    /// True once the collected text is longer than the budget: nothing more
    /// can be shown, so the reader may stop.
    pub(crate) fn full(&self) -> bool {
        self.chars > self.max_chars
    }

    /// Characters that may still be added: one past the budget, so a cut
    /// can be told from a text that fits exactly.
    fn room(&self) -> usize {
        self.max_chars.saturating_add(1).saturating_sub(self.chars)
    }

    /// Adds one line (a newline is put before it unless it is the first).
    pub(crate) fn line(&mut self, line: &str) {
        if self.full() {
            return;
        }
        if !self.out.is_empty() {
            self.push("\n");
        }
        self.push(line);
    }

    /// Adds an empty line between blocks (sheets), unless nothing came yet.
    pub(crate) fn blank(&mut self) {
        if !self.out.is_empty() && !self.full() {
            self.push("\n");
        }
    }

    fn push(&mut self, s: &str) {
        // Keep at most one character past the budget: enough to know the
        // text was cut, never a large string held for nothing.
        let room = self.room();
        match s.char_indices().nth(room) {
            Some((i, _)) => {
                self.out.push_str(&s[..i]);
                self.chars += room;
            }
            None => {
                self.out.push_str(s);
                self.chars += s.chars().count();
            }
        }
    }

    pub(crate) fn finish(self) -> String {
        let was_cut = self.full();
        let mut out = self.out;
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        if was_cut {
            mark_cut(out, self.max_chars)
        } else {
            out
        }
    }
}

/// Ends `text` with [`CUT_MARK`] within `max_chars` characters, whatever its
/// length: used when more text existed than was kept.
pub(crate) fn mark_cut(mut text: String, max_chars: usize) -> String {
    if max_chars == 0 {
        text.clear();
        return text;
    }
    if let Some((i, _)) = text.char_indices().nth(max_chars - 1) {
        text.truncate(i);
    }
    text.push(CUT_MARK);
    text
}

/// Appends `text` to `out` without letting `out` pass `cap` bytes; the
/// excess is dropped at a character boundary. Readers use it so one huge
/// paragraph cannot grow without bound.
pub(crate) fn push_capped(out: &mut String, text: &str, cap: usize) {
    let room = cap.saturating_sub(out.len());
    if text.len() <= room {
        out.push_str(text);
        return;
    }
    let mut end = room;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out.push_str(&text[..end]);
}

/// Replaces line breaks and tabs inside a cell or title with spaces, so one
/// row or slide stays on one line of the preview.
pub(crate) fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(
            c,
            '\n' | '\r' | '\t' | '\u{b}' | '\u{c}' | '\u{2028}' | '\u{2029}'
        ) {
            out.push(' ');
        } else if c.is_control() {
            // Other control characters carry nothing readable.
        } else {
            out.push(c);
        }
    }
    out.trim().to_owned()
}

/// Decodes the first bytes of a text file.
///
/// UTF-8 (with or without BOM) and UTF-16 with a BOM are understood; other
/// bytes are decoded as UTF-8 with replacement characters. `bytes` may be a
/// prefix of the file: an incomplete character at its end is dropped. A NUL
/// byte in UTF-8 data means the file is binary, not text.
pub(crate) fn decode_text(bytes: &[u8]) -> Result<String, ExtractError> {
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return decode_utf8(rest);
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE]) {
        return Ok(decode_utf16(rest, u16::from_le_bytes));
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        return Ok(decode_utf16(rest, u16::from_be_bytes));
    }
    decode_utf8(bytes)
}

fn decode_utf8(bytes: &[u8]) -> Result<String, ExtractError> {
    if bytes.contains(&0) {
        return Err(ExtractError::invalid(
            "text file",
            "it contains binary data",
        ));
    }
    let mut end = bytes.len();
    if let Err(e) = std::str::from_utf8(bytes)
        && e.error_len().is_none()
    {
        // The prefix ends inside a character: drop the partial character.
        end = e.valid_up_to();
    }
    Ok(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

fn decode_utf16(bytes: &[u8], word: fn([u8; 2]) -> u16) -> String {
    let units = bytes.chunks_exact(2).map(|p| word([p[0], p[1]]));
    let mut out: String = char::decode_utf16(units)
        .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect();
    // A prefix may end between the two halves of a surrogate pair.
    if out.ends_with(char::REPLACEMENT_CHARACTER) {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_keeps_short_text_and_marks_long_text() {
        assert_eq!(clip("hello".into(), 5), "hello");
        assert_eq!(clip("hello!".into(), 5), "hell…");
        assert_eq!(clip("héllo wörld".into(), 3), "hé…");
        assert_eq!(clip("abc".into(), 0), "");
        assert_eq!(clip("abc".into(), 1), "…");
        assert_eq!(clip("日本語テキスト".into(), 4).chars().count(), 4);
    }

    #[test]
    fn sink_stops_just_past_the_budget() {
        let mut s = LineSink::new(10);
        s.line("12345");
        assert!(!s.full());
        s.line("67890abc");
        assert!(s.full());
        s.line("never shown");
        assert_eq!(s.finish(), "12345\n678…");

        let mut s = LineSink::new(100);
        s.line("a");
        s.blank();
        s.line("b");
        assert_eq!(s.finish(), "a\n\nb");
    }

    #[test]
    fn sink_marks_a_cut_even_when_only_whitespace_was_kept() {
        let mut s = LineSink::new(5);
        s.line("12345");
        s.line("x");
        assert_eq!(s.finish(), "1234…");
    }

    #[test]
    fn sink_takes_any_budget() {
        let mut s = LineSink::new(usize::MAX);
        s.line("all of it");
        assert_eq!(s.finish(), "all of it");
    }

    #[test]
    fn sink_exactly_at_budget_is_not_cut() {
        let mut s = LineSink::new(5);
        s.line("12345");
        assert!(!s.full());
        assert_eq!(s.finish(), "12345");
    }

    #[test]
    fn push_capped_stops_at_a_char_boundary() {
        let mut s = String::from("ab");
        push_capped(&mut s, "cdé", 5);
        assert_eq!(s, "abcd");
        push_capped(&mut s, "x", 5);
        assert_eq!(s, "abcdx");
        push_capped(&mut s, "y", 5);
        assert_eq!(s, "abcdx");
    }

    #[test]
    fn one_line_flattens_breaks() {
        assert_eq!(one_line(" a\nb\tc\r\n"), "a b c");
        assert_eq!(one_line("x\u{7}y"), "xy");
    }

    #[test]
    fn decoding_handles_boms_prefixes_and_binary() {
        assert_eq!(decode_text(b"\xEF\xBB\xBFhi").unwrap(), "hi");
        assert_eq!(decode_text(&[0xFF, 0xFE, b'h', 0, b'i', 0]).unwrap(), "hi");
        assert_eq!(decode_text(&[0xFE, 0xFF, 0, b'h', 0, b'i']).unwrap(), "hi");
        // "é" is two bytes; a prefix that ends after the first is dropped.
        assert_eq!(decode_text(&[b'a', 0xC3]).unwrap(), "a");
        assert_eq!(decode_text(&[b'a', 0xFF, b'b']).unwrap(), "a\u{FFFD}b");
        assert!(decode_text(b"PK\x03\x04\0\0").is_err());
    }
}
