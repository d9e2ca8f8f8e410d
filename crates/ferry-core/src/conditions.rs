//! Conditional requests (RFC 9110 §13): the entity-tag lists of `If-Match` and
//! `If-None-Match`, and how the four conditions of a read are evaluated. Every door reads
//! its own headers (HTTP's, S3's) into these values; the evaluation is this one.

/// A file's entity tag as an `ETag` header, a listing and an event show it: quoted, strong.
/// Stored tags are kept bare (a content hash); this is the one place the quotes are added.
pub fn quoted_etag(tag: &str) -> String {
    format!("\"{tag}\"")
}

/// The entity tags of an `If-Match` / `If-None-Match` header: `*`, or a list of tags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagList {
    Any,
    /// (tag without quotes, weak?)
    Tags(Vec<(String, bool)>),
}

impl TagList {
    /// Reads `*` or a comma-separated list of quoted tags (weak ones with `W/`); `None` for
    /// anything else.
    pub fn parse(value: &str) -> Option<TagList> {
        let value = value.trim();
        if value == "*" {
            return Some(TagList::Any);
        }
        let mut tags = Vec::new();
        for item in value.split(',') {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let (weak, quoted) = match item.strip_prefix("W/") {
                Some(rest) => (true, rest),
                None => (false, item),
            };
            let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
            if inner.contains('"') {
                return None;
            }
            tags.push((inner.to_owned(), weak));
        }
        if tags.is_empty() {
            None
        } else {
            Some(TagList::Tags(tags))
        }
    }

    /// `If-Match`'s strong comparison (§13.1.1): a weak tag never matches; `*` matches any
    /// current representation.
    pub fn matches_strongly(&self, etag: &str) -> bool {
        match self {
            TagList::Any => true,
            TagList::Tags(tags) => tags.iter().any(|(tag, weak)| !weak && tag == etag),
        }
    }

    /// `If-None-Match`'s weak comparison (§13.1.2): tags compare by their value.
    pub fn matches_weakly(&self, etag: &str) -> bool {
        match self {
            TagList::Any => true,
            TagList::Tags(tags) => tags.iter().any(|(tag, _)| tag == etag),
        }
    }
}

/// The conditions a read may carry; times are whole seconds since the epoch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadConditions {
    pub if_match: Option<TagList>,
    pub if_none_match: Option<TagList>,
    pub if_modified_since: Option<i64>,
    pub if_unmodified_since: Option<i64>,
}

/// The request header a condition came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    IfMatch,
    IfNoneMatch,
    IfModifiedSince,
    IfUnmodifiedSince,
}

/// Why a read's conditions stop it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmet {
    /// A condition failed: 412.
    Failed(Precondition),
    /// The client's copy is current: 304.
    NotModified(Precondition),
}

impl ReadConditions {
    /// Evaluates the conditions against the current representation, in RFC 9110 §13.2.2's
    /// order (which S3 follows too): `If-Match`, else `If-Unmodified-Since`, may fail the
    /// read; then `If-None-Match`, else `If-Modified-Since`, may answer "not modified".
    pub fn unmet(&self, etag: &str, modified_seconds: i64) -> Option<Unmet> {
        if let Some(tags) = &self.if_match {
            if !tags.matches_strongly(etag) {
                return Some(Unmet::Failed(Precondition::IfMatch));
            }
        } else if let Some(since) = self.if_unmodified_since
            && modified_seconds > since
        {
            return Some(Unmet::Failed(Precondition::IfUnmodifiedSince));
        }
        if let Some(tags) = &self.if_none_match {
            if tags.matches_weakly(etag) {
                return Some(Unmet::NotModified(Precondition::IfNoneMatch));
            }
        } else if let Some(since) = self.if_modified_since
            && modified_seconds <= since
        {
            return Some(Unmet::NotModified(Precondition::IfModifiedSince));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_etag_is_what_if_match_reads_back() {
        let tag = quoted_etag("3a7bd3e2");
        assert_eq!(tag, "\"3a7bd3e2\"");
        assert_eq!(
            TagList::parse(&tag),
            Some(TagList::Tags(vec![("3a7bd3e2".into(), false)]))
        );
        assert_eq!(crate::agent_files::bare_etag(&tag), "3a7bd3e2");
    }

    #[test]
    fn tag_lists() {
        assert_eq!(TagList::parse("*"), Some(TagList::Any));
        assert_eq!(
            TagList::parse("\"abc\", W/\"def\""),
            Some(TagList::Tags(vec![
                ("abc".into(), false),
                ("def".into(), true)
            ]))
        );
        assert_eq!(TagList::parse("abc"), None);
        assert_eq!(TagList::parse(""), None);
        let list = TagList::parse("W/\"abc\"").unwrap();
        assert!(list.matches_weakly("abc") && !list.matches_strongly("abc"));
    }

    #[test]
    fn conditions_are_evaluated_in_the_rfc_order() {
        let tags = |v: &str| TagList::parse(v);
        let read = |c: ReadConditions| c.unmet("e1", 1_000);
        assert_eq!(read(ReadConditions::default()), None);
        let stale = ReadConditions {
            if_match: tags("\"e0\""),
            if_none_match: tags("\"e1\""),
            ..Default::default()
        };
        // If-Match fails first, even though If-None-Match would say "not modified".
        assert_eq!(read(stale), Some(Unmet::Failed(Precondition::IfMatch)));
        let current = ReadConditions {
            if_none_match: tags("*"),
            if_modified_since: Some(0),
            ..Default::default()
        };
        assert_eq!(
            read(current),
            Some(Unmet::NotModified(Precondition::IfNoneMatch))
        );
        // A date is looked at only without the matching tag condition.
        let dated = ReadConditions {
            if_unmodified_since: Some(999),
            ..Default::default()
        };
        assert_eq!(
            read(dated),
            Some(Unmet::Failed(Precondition::IfUnmodifiedSince))
        );
        let matched_despite_date = ReadConditions {
            if_match: tags("\"e1\""),
            if_unmodified_since: Some(999),
            ..Default::default()
        };
        assert_eq!(read(matched_despite_date), None);
        let unchanged = ReadConditions {
            if_modified_since: Some(1_000),
            ..Default::default()
        };
        assert_eq!(
            read(unchanged),
            Some(Unmet::NotModified(Precondition::IfModifiedSince))
        );
    }
}
