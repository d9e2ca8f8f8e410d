//! Space names (docs/reference/spaces.md): 1–64 of `A-Za-z0-9._-`, not starting with `.` and
//! not starting with `sandbox-` (over S3, `sandbox-{thread id}` names a thread's sandbox).

use std::fmt;

/// Why a space name was refused; reported as `INVALID_PATH`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpaceNameError {
    #[error("space name must be 1 to 64 characters long")]
    Length,
    #[error("space name may only contain A-Z, a-z, 0-9, '.', '_' and '-'")]
    Character,
    #[error("space name may not start with '.'")]
    LeadingDot,
    #[error(
        "space names starting with 'sandbox-' are reserved: over S3 they name thread sandboxes"
    )]
    Reserved,
}

/// The S3 bucket name prefix of thread sandboxes; no space may take it.
pub const SANDBOX_BUCKET_PREFIX: &str = "sandbox-";

/// The rules as a regular expression, for the OpenAPI document: 1 to 64 of the allowed
/// characters, not starting with a dot. (The reserved `sandbox-` prefix is left out of it.)
pub const SPACE_NAME_PATTERN: &str = "^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$";

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpaceName(String);

impl SpaceName {
    pub fn parse(text: &str) -> Result<Self, SpaceNameError> {
        if text.is_empty() || text.len() > 64 {
            return Err(SpaceNameError::Length);
        }
        if !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            return Err(SpaceNameError::Character);
        }
        if text.starts_with('.') {
            return Err(SpaceNameError::LeadingDot);
        }
        if text.starts_with(SANDBOX_BUCKET_PREFIX) {
            return Err(SpaceNameError::Reserved);
        }
        Ok(SpaceName(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The reserved space that holds a thread's sandbox when sandboxes live in the blob store
    /// (owned by the thread's id). No client can name it: [`SpaceName::parse`] refuses a
    /// leading `.`.
    pub fn sandbox() -> SpaceName {
        SpaceName(".sandbox".to_owned())
    }
}

impl fmt::Display for SpaceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The OpenAPI document's expression agrees with the parser, but for the reserved
        /// prefix, which it leaves out.
        #[test]
        fn the_documented_expression_matches_the_parser(text in "[a-z0-9._/ -]{0,70}") {
            let documented = regex::Regex::new(SPACE_NAME_PATTERN).unwrap().is_match(&text);
            // The prefix is checked last: `Reserved` means every other rule held.
            let parsed = matches!(SpaceName::parse(&text), Ok(_) | Err(SpaceNameError::Reserved));
            proptest::prop_assert_eq!(documented, parsed, "{:?}", text);
        }
    }

    #[test]
    fn rules() {
        assert!(SpaceName::parse("notes").is_ok());
        assert_eq!(
            SpaceName::parse("sandbox-0190"),
            Err(SpaceNameError::Reserved)
        );
        assert!(SpaceName::parse("sandbox").is_ok());
        assert!(SpaceName::parse("my-sandbox-notes").is_ok());
        assert!(SpaceName::parse("my-space_1.v2").is_ok());
        assert!(SpaceName::parse(&"a".repeat(64)).is_ok());
        assert_eq!(SpaceName::parse(""), Err(SpaceNameError::Length));
        assert_eq!(
            SpaceName::parse(&"a".repeat(65)),
            Err(SpaceNameError::Length)
        );
        assert_eq!(SpaceName::parse(".hidden"), Err(SpaceNameError::LeadingDot));
        assert_eq!(SpaceName::parse(".."), Err(SpaceNameError::LeadingDot));
        assert_eq!(SpaceName::parse("a/b"), Err(SpaceNameError::Character));
        assert_eq!(SpaceName::parse("a b"), Err(SpaceNameError::Character));
        assert_eq!(SpaceName::parse("é"), Err(SpaceNameError::Character));
        assert!(SpaceName::parse(SpaceName::sandbox().as_str()).is_err());
    }
}
