//! A command's output as it is kept: all of it up to a limit, and beyond the limit its head
//! and its tail (the start says what ran, the end how it ended), with how much was left out.

use std::collections::VecDeque;

/// Output kept within `limit` bytes: the first half and the last half once it is over.
#[derive(Debug)]
pub struct HeadTail {
    limit: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

impl HeadTail {
    pub fn new(limit: usize) -> HeadTail {
        HeadTail {
            limit,
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let head_room = (self.limit / 2).saturating_sub(self.head.len());
        if self.tail.is_empty() && head_room > 0 {
            let taken = head_room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..taken]);
            bytes = &bytes[taken..];
        }
        let tail_limit = self.limit - self.limit / 2;
        if bytes.len() >= tail_limit {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - tail_limit..]);
            return;
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(tail_limit);
        self.tail.drain(..overflow);
        self.tail.extend(bytes);
    }

    /// Every byte written.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether some of the output was left out.
    pub fn truncated(&self) -> bool {
        self.total > (self.head.len() + self.tail.len()) as u64
    }

    /// The output as text (invalid UTF-8 replaced), with a line naming what was left out
    /// between head and tail.
    pub fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.truncated() {
            let left_out = self.total - (self.head.len() + self.tail.len()) as u64;
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("… {left_out} bytes left out …\n"));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = a.to_vec();
        tail.extend_from_slice(b);
        text.push_str(&String::from_utf8_lossy(&tail));
        text
    }
}

/// Splits a byte stream into text chunks without cutting a character in two: the bytes of a
/// character that a chunk ends inside are kept for the next.
#[derive(Debug, Default)]
pub struct Utf8Chunks {
    carried: Vec<u8>,
}

impl Utf8Chunks {
    /// The text of `bytes` after what was carried; invalid bytes are replaced.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        let mut all = std::mem::take(&mut self.carried);
        all.extend_from_slice(bytes);
        let cut = incomplete_tail(&all);
        self.carried = all.split_off(all.len() - cut);
        String::from_utf8_lossy(&all).into_owned()
    }

    /// What is left at the end of the stream.
    pub fn finish(&mut self) -> String {
        String::from_utf8_lossy(&std::mem::take(&mut self.carried)).into_owned()
    }
}

/// How many bytes at the end of `bytes` start a character that is not complete yet.
fn incomplete_tail(bytes: &[u8]) -> usize {
    for back in 1..=3.min(bytes.len()) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead
        }
        let needed = match byte {
            b if b & 0xE0 == 0xC0 => 2,
            b if b & 0xF0 == 0xE0 => 3,
            b if b & 0xF8 == 0xF0 => 4,
            _ => return 0,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_within_the_limit_is_kept_whole() {
        let mut kept = HeadTail::new(16);
        kept.push(b"hello ");
        kept.push(b"world");
        assert_eq!(kept.text(), "hello world");
        assert!(!kept.truncated());
        assert_eq!(kept.total(), 11);
    }

    #[test]
    fn beyond_the_limit_the_head_and_the_tail_are_kept() {
        let mut kept = HeadTail::new(8);
        for chunk in [&b"abcdef"[..], b"ghij", b"klmnopqrstuvwxyz"] {
            kept.push(chunk);
        }
        assert!(kept.truncated());
        assert_eq!(kept.total(), 26);
        assert_eq!(kept.text(), "abcd\n… 18 bytes left out …\nwxyz");
        // Byte by byte gives the same.
        let mut bytewise = HeadTail::new(8);
        for b in b"abcdefghijklmnopqrstuvwxyz" {
            bytewise.push(&[*b]);
        }
        assert_eq!(bytewise.text(), kept.text());
    }

    #[test]
    fn characters_are_never_cut_between_chunks() {
        let text = "héllo — wörld 🚢";
        let bytes = text.as_bytes();
        for size in 1..5 {
            let mut chunks = Utf8Chunks::default();
            let mut joined: String = bytes.chunks(size).map(|c| chunks.push(c)).collect();
            joined.push_str(&chunks.finish());
            assert_eq!(joined, text, "chunks of {size}");
        }
        // Invalid bytes are replaced, not carried for ever.
        let mut chunks = Utf8Chunks::default();
        assert_eq!(chunks.push(&[b'a', 0xFF, b'b']), "a\u{FFFD}b");
    }
}
