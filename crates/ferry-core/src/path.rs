//! The one path validator (docs/reference/paths.md).
//!
//! Every path a client names — a space file, a sandbox file, an upload's file name — is turned
//! into a [`ValidPath`] here before anything else looks at it. A `ValidPath` is relative,
//! `/`-separated, and cannot name anything outside the root it is later joined to: no `.` or
//! `..` segment, no empty segment, no backslash, no control character.
//!
//! URL paths are percent-decoded exactly once, by [`ValidPath::from_url`]; text that arrives
//! already decoded (a JSON field, a query parameter) goes through [`ValidPath::parse`].

use std::fmt;

/// The longest a single segment may be, in bytes (the common file-system name limit).
pub const MAX_SEGMENT_BYTES: usize = 255;
/// The longest a whole path may be, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;

/// The rules as a regular expression (ECMA-262, the dialect of OpenAPI documents), without
/// anchors: what the OpenAPI document says a path looks like. The expression counts characters,
/// so for text beyond ASCII the byte limits above are stricter than it is.
pub fn path_regex() -> String {
    const CHAR: &str = r"[^/\\\x00-\x1F\x7F]";
    const FIRST: &str = r"[^./\\\x00-\x1F\x7F]";
    // A segment is not `.` or `..`: it starts with something other than a dot, or with one dot
    // and then something else, or with two dots and then at least one more character.
    let segment =
        format!(r"(?:{FIRST}{CHAR}{{0,254}}|\.{FIRST}{CHAR}{{0,253}}|\.\.{CHAR}{{1,253}})");
    format!("{segment}(?:/{segment})*")
}

/// Why a path was refused. The `Display` text is the message of the `INVALID_PATH` envelope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path is empty")]
    Empty,
    #[error("path has a malformed percent-escape; write '%' as '%25'")]
    BadPercentEncoding,
    #[error("path is not valid UTF-8 after percent-decoding")]
    NotUtf8,
    #[error("path contains a NUL byte")]
    Nul,
    #[error("path contains the control character U+{0:04X}")]
    Control(u32),
    #[error("path contains a backslash; use '/' to separate segments")]
    Backslash,
    #[error("path must be relative: it may not start with '/'")]
    Absolute,
    #[error("path may not end with '/'")]
    TrailingSlash,
    #[error("path has an empty segment ('//')")]
    EmptySegment,
    #[error("path segment '.' is not allowed")]
    DotSegment,
    #[error("path segment '..' is not allowed")]
    DotDotSegment,
    #[error("path segment is longer than {MAX_SEGMENT_BYTES} bytes")]
    SegmentTooLong,
    #[error("path is longer than {MAX_PATH_BYTES} bytes")]
    TooLong,
    #[error("sandbox paths start with '/sandbox/' (or are relative to /sandbox/workspace/)")]
    OutsideSandbox,
    #[error("the file needs a name (a multipart filename, or ?filename=)")]
    NoFileName,
}

/// The name a user's browser or client sends with an upload, made into one safe path
/// segment: any folder part (`C:\fakepath\`, `../`) is dropped, surrounding white space is
/// trimmed, then the name must pass the path rules.
pub fn upload_file_name(raw: &str) -> Result<ValidPath, PathError> {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or("").trim();
    if base.is_empty() {
        return Err(PathError::NoFileName);
    }
    ValidPath::parse(base)
}

/// A path that passed every rule of docs/reference/paths.md.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ValidPath(String);

impl ValidPath {
    /// Validates text that is already decoded (a JSON string, a query parameter).
    pub fn parse(text: &str) -> Result<Self, PathError> {
        check(text)?;
        Ok(ValidPath(text.to_owned()))
    }

    /// Percent-decodes a raw URL path once, then validates the decoded text.
    /// `%2e%2e` therefore is `..`, and `%252e` is the literal three characters `%2e`.
    pub fn from_url(raw: &str) -> Result<Self, PathError> {
        let decoded = percent_decode(raw)?;
        Self::parse(&decoded)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    pub fn segments(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// The last segment.
    pub fn file_name(&self) -> &str {
        self.0.rsplit('/').next().unwrap_or(&self.0)
    }

    /// Everything before the last segment, or `None` for a single-segment path.
    pub fn parent(&self) -> Option<&str> {
        self.0.rsplit_once('/').map(|(parent, _)| parent)
    }

    /// Every proper ancestor, nearest last: `a/b/c` gives `a`, `a/b`.
    pub fn ancestors(&self) -> impl Iterator<Item = &str> {
        self.0
            .match_indices('/')
            .map(move |(index, _)| &self.0[..index])
    }

    /// `self/child`, validated as a whole (the result may be too long).
    pub fn join(&self, child: &ValidPath) -> Result<ValidPath, PathError> {
        ValidPath::parse(&format!("{}/{}", self.0, child.0))
    }

    /// True when `self` is `dir` or lies below it.
    pub fn starts_with(&self, dir: &ValidPath) -> bool {
        self.0 == dir.0
            || (self.0.len() > dir.0.len()
                && self.0.starts_with(&dir.0)
                && self.0.as_bytes()[dir.0.len()] == b'/')
    }
}

impl fmt::Display for ValidPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for ValidPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Whether a name found on disk (made there by a command, say) is one a door can address: a
/// single valid path segment, so no control character, NUL or backslash. The sandbox's
/// listings give every name that is not (and every name that is not UTF-8) apart from their
/// entries, escaped and marked: such a file is never listed raw (a newline or an escape
/// sequence in a client's terminal), and a folder holding one still lists, zips and searches
/// whole.
pub fn is_addressable_name(name: &str) -> bool {
    !name.contains('/') && check(name).is_ok()
}

fn check(text: &str) -> Result<(), PathError> {
    if text.is_empty() {
        return Err(PathError::Empty);
    }
    // Characters first: a NUL or a control character is the more telling complaint, and it
    // must be reported even when the path is also too long or badly shaped.
    for c in text.chars() {
        match c {
            '\0' => return Err(PathError::Nul),
            '\u{1}'..='\u{1f}' | '\u{7f}' => return Err(PathError::Control(c as u32)),
            '\\' => return Err(PathError::Backslash),
            _ => {}
        }
    }
    if text.starts_with('/') {
        return Err(PathError::Absolute);
    }
    if text.ends_with('/') {
        return Err(PathError::TrailingSlash);
    }
    for segment in text.split('/') {
        match segment {
            "" => return Err(PathError::EmptySegment),
            "." => return Err(PathError::DotSegment),
            ".." => return Err(PathError::DotDotSegment),
            s if s.len() > MAX_SEGMENT_BYTES => return Err(PathError::SegmentTooLong),
            _ => {}
        }
    }
    if text.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong);
    }
    Ok(())
}

fn percent_decode(raw: &str) -> Result<String, PathError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hi = bytes.get(i + 1).and_then(|b| hex_value(*b));
            let lo = bytes.get(i + 2).and_then(|b| hex_value(*b));
            match (hi, lo) {
                (Some(hi), Some(lo)) => out.push(hi << 4 | lo),
                _ => return Err(PathError::BadPercentEncoding),
            }
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| PathError::NotUtf8)
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// A path inside a thread's sandbox, held relative to `/sandbox/` (`outputs/report.md`).
///
/// Clients write sandbox paths the agent's way, `/sandbox/outputs/report.md`; a relative path
/// is taken relative to `/sandbox/workspace/`, the agent's scratch directory.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SandboxPath(ValidPath);

/// The agent's scratch folder below `/sandbox/`, which relative sandbox paths start from.
pub const WORKSPACE: &str = "workspace";

/// The top-level folders every sandbox starts with (docs/reference/threads-and-sandbox.md).
pub const SANDBOX_LAYOUT: [&str; 7] = [
    "skills",
    "user_uploads",
    "shared",
    "shared/research",
    "shared/drafts",
    "outputs",
    WORKSPACE,
];

impl SandboxPath {
    /// Parses `/sandbox/...` or a path relative to `/sandbox/workspace/`.
    pub fn parse(text: &str) -> Result<Self, PathError> {
        if let Some(rest) = text.strip_prefix("/sandbox/") {
            return Ok(SandboxPath(ValidPath::parse(rest)?));
        }
        if text.starts_with('/') {
            return Err(PathError::OutsideSandbox);
        }
        Ok(SandboxPath(ValidPath::parse(&format!(
            "{WORKSPACE}/{text}"
        ))?))
    }

    /// Parses a folder to list: `/sandbox` (or `/sandbox/`) is the root and gives `None`.
    pub fn parse_dir(text: &str) -> Result<Option<Self>, PathError> {
        match text {
            "/sandbox" | "/sandbox/" => Ok(None),
            _ => Self::parse(text.strip_suffix('/').unwrap_or(text)).map(Some),
        }
    }

    /// Wraps a path that is already relative to `/sandbox/` (the URL form of the sandbox routes).
    pub fn from_relative(path: ValidPath) -> Self {
        SandboxPath(path)
    }

    /// The path relative to `/sandbox/`.
    pub fn relative(&self) -> &ValidPath {
        &self.0
    }

    /// The path as agents write it: `/sandbox/outputs/report.md`.
    pub fn display(&self) -> String {
        format!("/sandbox/{}", self.0)
    }

    pub fn file_name(&self) -> &str {
        self.0.file_name()
    }

    /// Skill packages are copied in when the thread starts and may not be changed through ferry.
    pub fn is_read_only(&self) -> bool {
        self.0.segments().next() == Some("skills")
    }
}

impl fmt::Display for SandboxPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/sandbox/{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn err(text: &str) -> PathError {
        ValidPath::parse(text).unwrap_err()
    }

    #[test]
    fn accepts_ordinary_paths() {
        for ok in [
            "a",
            "ideas/20261121-0930-tea-shop.md",
            "a/b/c/d.txt",
            "...",
            ".hidden",
            "na me with spaces.txt",
            "ünïcødé/文件.md",
            "a..b",
        ] {
            assert_eq!(ValidPath::parse(ok).unwrap().as_str(), ok);
        }
    }

    #[test]
    fn each_rule_has_its_own_message() {
        assert_eq!(err(""), PathError::Empty);
        assert_eq!(err("/etc/passwd"), PathError::Absolute);
        assert_eq!(err("a/"), PathError::TrailingSlash);
        assert_eq!(err("a//b"), PathError::EmptySegment);
        assert_eq!(err("./a"), PathError::DotSegment);
        assert_eq!(err("a/."), PathError::DotSegment);
        assert_eq!(err("../a"), PathError::DotDotSegment);
        assert_eq!(err("a/../../b"), PathError::DotDotSegment);
        assert_eq!(err("a\0b"), PathError::Nul);
        assert_eq!(err("a\nb"), PathError::Control(0x0a));
        assert_eq!(err("a\u{1f}b"), PathError::Control(0x1f));
        assert_eq!(err("a\u{7f}b"), PathError::Control(0x7f));
        assert_eq!(err("a\\b"), PathError::Backslash);
        assert_eq!(err("..\\..\\windows"), PathError::Backslash);
        assert_eq!(err(&"x".repeat(256)), PathError::SegmentTooLong);
        let long = vec!["x".repeat(200); 6].join("/");
        assert_eq!(err(&long), PathError::TooLong);
        assert_eq!(
            err("a/../b").to_string(),
            "path segment '..' is not allowed"
        );
    }

    #[test]
    fn limits_are_inclusive() {
        assert!(ValidPath::parse(&"x".repeat(255)).is_ok());
        let exactly = format!("{}/{}", "x".repeat(255), "y".repeat(768));
        assert_eq!(exactly.len(), 1024);
        assert_eq!(err(&exactly), PathError::SegmentTooLong);
        let exactly = [
            "a".repeat(255),
            "b".repeat(255),
            "c".repeat(255),
            "d".repeat(255),
        ]
        .join("/");
        assert_eq!(exactly.len(), 1023);
        assert!(ValidPath::parse(&exactly).is_ok());
        assert!(ValidPath::parse(&format!("{exactly}/e")).is_err());
        let with_short_last = format!("{exactly}/");
        assert_eq!(with_short_last.len(), 1024);
        assert_eq!(err(&format!("{with_short_last}e")), PathError::TooLong);
        // Multi-byte characters count in bytes, not characters.
        assert_eq!(err(&"é".repeat(128)), PathError::SegmentTooLong);
    }

    #[test]
    fn url_form_is_decoded_exactly_once() {
        assert_eq!(
            ValidPath::from_url("%2e%2e/x").unwrap_err(),
            PathError::DotDotSegment
        );
        assert_eq!(
            ValidPath::from_url("%2E%2E%2Fetc%2Fpasswd").unwrap_err(),
            PathError::DotDotSegment
        );
        assert_eq!(
            ValidPath::from_url("%2Fetc%2Fpasswd").unwrap_err(),
            PathError::Absolute
        );
        assert_eq!(ValidPath::from_url("a%00b").unwrap_err(), PathError::Nul);
        assert_eq!(
            ValidPath::from_url("a%5Cb").unwrap_err(),
            PathError::Backslash
        );
        assert_eq!(
            ValidPath::from_url("a%0Db").unwrap_err(),
            PathError::Control(0x0d)
        );
        assert_eq!(
            ValidPath::from_url("a%zz").unwrap_err(),
            PathError::BadPercentEncoding
        );
        assert_eq!(
            ValidPath::from_url("a%2").unwrap_err(),
            PathError::BadPercentEncoding
        );
        assert_eq!(ValidPath::from_url("%ff").unwrap_err(), PathError::NotUtf8);
        // Double encoding is not decoded twice: the result is a literal name.
        assert_eq!(
            ValidPath::from_url("%252e%252e").unwrap().as_str(),
            "%2e%2e"
        );
        assert_eq!(
            ValidPath::from_url("notes/tea%20shop.md").unwrap().as_str(),
            "notes/tea shop.md"
        );
        assert_eq!(
            ValidPath::from_url("%E6%96%87.md").unwrap().as_str(),
            "文.md"
        );
    }

    #[test]
    fn path_helpers() {
        let p = ValidPath::parse("a/b/c.md").unwrap();
        assert_eq!(p.file_name(), "c.md");
        assert_eq!(p.parent(), Some("a/b"));
        assert_eq!(p.ancestors().collect::<Vec<_>>(), ["a", "a/b"]);
        let top = ValidPath::parse("c.md").unwrap();
        assert_eq!(top.parent(), None);
        assert_eq!(top.ancestors().count(), 0);
        let a = ValidPath::parse("a").unwrap();
        assert!(p.starts_with(&a));
        assert!(!ValidPath::parse("ab/c").unwrap().starts_with(&a));
        assert!(a.starts_with(&a));
    }

    #[test]
    fn sandbox_paths() {
        let p = SandboxPath::parse("/sandbox/outputs/report.docx").unwrap();
        assert_eq!(p.relative().as_str(), "outputs/report.docx");
        assert_eq!(p.display(), "/sandbox/outputs/report.docx");
        assert_eq!(p.file_name(), "report.docx");
        assert!(!p.is_read_only());
        let rel = SandboxPath::parse("notes/a.md").unwrap();
        assert_eq!(rel.display(), "/sandbox/workspace/notes/a.md");
        assert_eq!(
            SandboxPath::parse("/etc/passwd").unwrap_err(),
            PathError::OutsideSandbox
        );
        assert_eq!(
            SandboxPath::parse("/sandbox/../etc/passwd").unwrap_err(),
            PathError::DotDotSegment
        );
        assert_eq!(
            SandboxPath::parse("/sandbox/").unwrap_err(),
            PathError::Empty
        );
        assert!(
            SandboxPath::parse("/sandbox/skills/x/SKILL.md")
                .unwrap()
                .is_read_only()
        );
        assert_eq!(SandboxPath::parse_dir("/sandbox").unwrap(), None);
        assert_eq!(SandboxPath::parse_dir("/sandbox/").unwrap(), None);
        assert_eq!(
            SandboxPath::parse_dir("/sandbox/outputs/")
                .unwrap()
                .unwrap()
                .display(),
            "/sandbox/outputs"
        );
    }

    /// The OpenAPI document's expression says of every path what the validator says, as long
    /// as the byte limits do not come into it (the expression counts characters).
    fn documented(text: &str) -> bool {
        static REGEX: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
        REGEX
            .get_or_init(|| regex::Regex::new(&format!("^(?:{})$", path_regex())).unwrap())
            .is_match(text)
    }

    #[test]
    fn the_documented_expression_agrees_on_the_edge_cases() {
        for ok in [
            "a",
            ".hidden",
            "...",
            "a..b",
            "..a",
            "a/.b/c",
            &"x".repeat(255),
        ] {
            assert!(documented(ok), "{ok:?}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a/./b",
            "a/../b",
            "/a",
            "a/",
            "a//b",
            "a\\b",
            "a\u{1}b",
            &"x".repeat(256),
        ] {
            assert!(!documented(bad), "{bad:?}");
        }
    }

    proptest! {
        #[test]
        fn never_panics_and_accepted_paths_are_safe(text in "\\PC{0,64}|[a./\\\\%0-9A-F]{0,40}") {
            if let Ok(p) = ValidPath::parse(&text) {
                prop_assert!(!p.as_str().starts_with('/'));
                prop_assert!(p.segments().all(|s| !s.is_empty() && s != "." && s != ".."));
                prop_assert!(!p.as_str().contains('\\'));
                prop_assert!(p.as_str().len() <= MAX_PATH_BYTES);
            }
            if let Ok(p) = ValidPath::from_url(&text) {
                prop_assert!(p.segments().all(|s| s != ".." && !s.is_empty()));
            }
            let _ = SandboxPath::parse(&text);
        }

        #[test]
        fn the_documented_expression_matches_the_validator(
            text in "[a./\\\\\\x01\\x7F é文]{0,40}"
        ) {
            prop_assert_eq!(documented(&text), ValidPath::parse(&text).is_ok(), "{:?}", text);
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let text = String::from_utf8_lossy(&bytes);
            let _ = ValidPath::parse(&text);
            let _ = ValidPath::from_url(&text);
        }
    }

    #[test]
    fn names_with_control_characters_are_not_addressable() {
        for name in ["report.md", "q3 (final).xlsx", "été.txt", ".hidden"] {
            assert!(is_addressable_name(name), "{name}");
        }
        for name in [
            "a\nb",
            "\u{1b}[31mred",
            "del\u{7f}",
            "nul\0",
            "back\\slash",
            "",
            ".",
            "..",
        ] {
            assert!(!is_addressable_name(name), "{name:?}");
        }
    }
}
