//! Which pages of a document a model is shown: `pages=1-3,7` (docs/reference/uploads.md,
//! "Model content").
//!
//! A selection is a comma-separated list of page numbers (from 1) and inclusive ranges
//! `a-b` (`a ≤ b`), spaces around the parts allowed. Without one, the first
//! [`DEFAULT_PAGES`] pages are shown; with one, at most [`MAX_PAGES`] pages, counted after
//! overlaps are merged. Whether the pages exist is known only once the document is open:
//! [`PageSelection::resolve`] checks them against its page count.

use std::fmt;
use std::str::FromStr;

/// Pages shown when no selection is given.
pub const DEFAULT_PAGES: u32 = 5;
/// Pages one request may ask for at most.
pub const MAX_PAGES: u32 = 100;

/// A parsed selection of pages: inclusive ranges, in the order written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageSelection {
    ranges: Vec<(u32, u32)>,
}

/// Why a selection is refused. Each message says what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PagesError {
    #[error("pages must list page numbers and ranges such as 1-3,7; '{0}' is not one")]
    Malformed(String),
    #[error("pages are numbered from 1; '{0}' asks for page 0")]
    Zero(String),
    #[error("the range '{0}' ends before it starts")]
    Backwards(String),
    #[error("pages asks for {asked} pages; one request shows at most {MAX_PAGES}")]
    TooMany { asked: u64 },
    #[error("the document has {pages} pages; there is no page {page}")]
    OutOfRange { page: u32, pages: u32 },
}

impl FromStr for PageSelection {
    type Err = PagesError;

    fn from_str(s: &str) -> Result<Self, PagesError> {
        let mut ranges = Vec::new();
        for part in s.split(',') {
            let part = part.trim();
            let number = |n: &str| {
                let n = n.trim();
                if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(PagesError::Malformed(part.to_owned()));
                }
                // Digits only, so the one failure left is overflow: a page no document has.
                let n = n.parse::<u32>().unwrap_or(u32::MAX);
                if n == 0 {
                    return Err(PagesError::Zero(part.to_owned()));
                }
                Ok(n)
            };
            let range = match part.split_once('-') {
                Some((first, last)) => (number(first)?, number(last)?),
                None => {
                    let n = number(part)?;
                    (n, n)
                }
            };
            if range.0 > range.1 {
                return Err(PagesError::Backwards(part.to_owned()));
            }
            ranges.push(range);
        }
        let selection = PageSelection { ranges };
        let asked = selection.count();
        if asked > u64::from(MAX_PAGES) {
            return Err(PagesError::TooMany { asked });
        }
        Ok(selection)
    }
}

impl PageSelection {
    /// The pages asked for, ascending, each once.
    fn numbers(&self) -> Vec<u32> {
        let mut sorted = self.ranges.clone();
        sorted.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::new();
        for (first, last) in sorted {
            match merged.last_mut() {
                Some(prev) if first <= prev.1.saturating_add(1) => prev.1 = prev.1.max(last),
                _ => merged.push((first, last)),
            }
        }
        merged.into_iter().flat_map(|(a, b)| a..=b).collect()
    }

    /// How many distinct pages are asked for (without listing them: `1-4000000000` is counted,
    /// not walked).
    fn count(&self) -> u64 {
        let mut sorted = self.ranges.clone();
        sorted.sort_unstable();
        // Pages 1..=covered_to are counted already.
        let (mut total, mut covered_to) = (0u64, 0u64);
        for (first, last) in sorted {
            let (first, last) = (u64::from(first).max(covered_to + 1), u64::from(last));
            if first <= last {
                total += last - first + 1;
                covered_to = last;
            }
        }
        total
    }

    /// The first page asked for: the one to open the document with, which tells its count.
    pub fn first(selection: Option<&Self>) -> u32 {
        selection
            .and_then(|s| s.ranges.iter().map(|r| r.0).min())
            .unwrap_or(1)
    }

    /// The pages to show of a document of `pages` pages, ascending: the selection's, each of
    /// which must exist, or without one the first [`DEFAULT_PAGES`].
    pub fn resolve(selection: Option<&Self>, pages: u32) -> Result<Vec<u32>, PagesError> {
        let Some(selection) = selection else {
            return Ok((1..=pages.min(DEFAULT_PAGES)).collect());
        };
        let numbers = selection.numbers();
        if let Some(&page) = numbers.iter().find(|&&n| n > pages) {
            return Err(PagesError::OutOfRange { page, pages });
        }
        Ok(numbers)
    }
}

/// Read from its written form (`"1-3,7"`), so that an input struct holding one is refused at
/// once, with the selection's own message, when the selection is malformed.
impl<'de> serde::Deserialize<'de> for PageSelection {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let written = String::deserialize(deserializer)?;
        written.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for PageSelection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (first, last)) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if first == last {
                write!(f, "{first}")?;
            } else {
                write!(f, "{first}-{last}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<PageSelection, PagesError> {
        s.parse()
    }

    #[test]
    fn numbers_and_ranges_resolve_ascending_and_once() {
        let selection = parse(" 9-10, 2,3-4 ,2").unwrap();
        assert_eq!(
            PageSelection::resolve(Some(&selection), 10).unwrap(),
            [2, 3, 4, 9, 10]
        );
        assert_eq!(PageSelection::first(Some(&selection)), 2);
        assert_eq!(selection.to_string(), "9-10,2,3-4,2");
    }

    #[test]
    fn without_a_selection_the_first_five_pages_are_shown() {
        assert_eq!(PageSelection::resolve(None, 12).unwrap(), [1, 2, 3, 4, 5]);
        assert_eq!(PageSelection::resolve(None, 2).unwrap(), [1, 2]);
        assert_eq!(PageSelection::first(None), 1);
    }

    #[test]
    fn a_page_past_the_end_is_out_of_range() {
        let selection = parse("2,9-10").unwrap();
        assert_eq!(
            PageSelection::resolve(Some(&selection), 9).unwrap_err(),
            PagesError::OutOfRange { page: 10, pages: 9 }
        );
    }

    #[test]
    fn malformed_selections_say_which_part() {
        for (input, part) in [
            ("", ""),
            ("a", "a"),
            ("1,,2", ""),
            ("1-", "1-"),
            ("-3", "-3"),
            ("1-2-3", "1-2-3"),
            ("+1", "+1"),
            ("1.5", "1.5"),
        ] {
            assert_eq!(
                parse(input),
                Err(PagesError::Malformed(part.to_owned())),
                "{input}"
            );
        }
        assert_eq!(parse("0-2"), Err(PagesError::Zero("0-2".to_owned())));
        assert_eq!(parse("5-3"), Err(PagesError::Backwards("5-3".to_owned())));
    }

    #[test]
    fn at_most_a_hundred_pages_counted_after_overlaps() {
        assert!(parse("1-100").is_ok());
        assert!(parse("1-60,41-100,50").is_ok());
        assert_eq!(parse("1-101"), Err(PagesError::TooMany { asked: 101 }));
        assert_eq!(
            parse("1-4294967295"),
            Err(PagesError::TooMany {
                asked: 4_294_967_295
            })
        );
        // A number too large for any document is a page no document has, not a parse error.
        assert_eq!(
            parse("99999999999"),
            Ok(PageSelection {
                ranges: vec![(u32::MAX, u32::MAX)]
            })
        );
    }
}
