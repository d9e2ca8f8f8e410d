//! What a write of a file says besides its bytes, whichever door it came through and whatever
//! keeps it: the condition it must meet, and what is recorded with the file.

use crate::door::Door;

/// The precondition a write must meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteCondition {
    /// Create or overwrite.
    None,
    /// `If-None-Match: *`: only when nothing is at the path.
    CreateOnly,
    /// `If-Match`: only when the current SHA-256 is one of these (`*` matches any existing file).
    IfMatch(Vec<String>),
    /// Both headers at once: the file must exist and match, and must not exist; always fails,
    /// but the answer says which rule failed first.
    IfMatchAndCreateOnly(Vec<String>),
}

impl WriteCondition {
    /// The condition of a write that asked for create-only (`If-None-Match: *`), for one of
    /// `if_match`'s strong ETags (`*` for any existing file), both, or neither: the one way
    /// every door builds it.
    pub fn of(create_only: bool, if_match: Option<Vec<String>>) -> WriteCondition {
        match (create_only, if_match) {
            (false, None) => WriteCondition::None,
            (true, None) => WriteCondition::CreateOnly,
            (false, Some(tags)) => WriteCondition::IfMatch(tags),
            (true, Some(tags)) => WriteCondition::IfMatchAndCreateOnly(tags),
        }
    }
}

/// What a write records about a file besides its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileMeta<'a> {
    pub content_type: &'a str,
    /// What the S3 door keeps of an object beyond its type (user metadata, content headers,
    /// the checksum it was written with), as JSON only that door reads. Every write replaces
    /// it: a write through another door leaves none.
    pub attributes: Option<&'a str>,
    /// The door the write came through, for the space's change feed.
    pub door: Door,
}

impl<'a> FileMeta<'a> {
    /// A file described by its content type alone.
    pub fn typed(content_type: &'a str) -> FileMeta<'a> {
        FileMeta {
            content_type,
            attributes: None,
            door: Door::Http,
        }
    }
}
