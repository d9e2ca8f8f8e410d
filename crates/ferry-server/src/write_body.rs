//! The JSON bodies that carry files' content, read as they arrive: `write_file`'s (one file)
//! and `upload_files`' (a batch). Such a body carries whole files, as text or as base64, up to
//! the largest file a sandbox or space takes; read whole it would sit in memory once as the
//! body, once as the parsed text and once as the decoded bytes. Read here with a streaming JSON
//! reader instead, each file's content goes straight into a scratch file of its own as it
//! arrives and the other fields, which are short, are kept: the request holds a few buffers
//! whatever the files' sizes, and each write then streams from its scratch file
//! ([`ferry_app::files::write_spooled`]).
//!
//! A body must be exactly the JSON object its operation takes: for `write_file` the fields
//! `path`, `content`, `encoding`, `ifNoneMatch`, `ifMatch`, `contentType`, each at most once,
//! nothing else; for
//! `upload_files` the one field `files`, an array of up to 1,000 such objects. What is not is
//! `INVALID_REQUEST` saying what was wrong; a body over the limit is `REQUEST_TOO_LARGE` once it
//! passes it.

use std::io::{Read, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::{FromRequest, Request};
use ferry_app::files::{Fields, SpooledUpload, SpooledWrite};
use ferry_core::agent_files::{Encoding, MAX_BATCH_FILES};
use futures::TryStreamExt as _;
use struson::reader::{JsonReader, JsonStreamReader, ValueType};

use crate::error::ApiError;
use crate::state::AppState;

/// The longest a field other than `content` may be.
const MAX_FIELD_BYTES: u64 = 64 << 10;

/// Bytes copied from the body to the scratch file at a time.
const COPY_BYTES: usize = 64 << 10;

/// A request whose body carries files' content, with each content spooled: a
/// [`SpooledWrite`] (`write_file`) or a [`SpooledUpload`] (`upload_files`).
#[derive(Debug)]
pub struct StreamedWrite<T>(pub T);

impl<T: Spooled> FromRequest<AppState> for StreamedWrite<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, ApiError> {
        let limit = content_json_limit(state);
        if crate::write_headers::declared_length(req.headers()).is_some_and(|len| len > limit) {
            return Err(ApiError::too_large(limit));
        }
        let scratch = state.app.scratch_root();
        let body = req
            .into_body()
            .into_data_stream()
            .map_err(std::io::Error::other);
        let body = Bounded {
            inner: tokio_util::io::SyncIoBridge::new(tokio_util::io::StreamReader::new(body)),
            left: limit,
            over: Arc::default(),
            failed: Arc::default(),
        };
        let (over, failed) = (Arc::clone(&body.over), Arc::clone(&body.failed));
        let read = tokio::task::spawn_blocking(move || {
            read_body(body, |json| T::read(json, &mut Spools(&scratch)))
        })
        .await
        .map_err(ApiError::internal)?;
        match read {
            Err(Refused::Json(_)) if over.load(Ordering::Relaxed) => {
                Err(ApiError::too_large(limit))
            }
            Err(Refused::Json(why)) if failed.load(Ordering::Relaxed) => Err(
                ApiError::invalid_request(format!("the request body could not be read: {why}")),
            ),
            Err(Refused::Json(why)) => Err(ApiError::invalid_request(format!(
                "the JSON body is not valid: {why}"
            ))),
            Err(Refused::Said(error)) => Err(error),
            Ok(read) => Ok(StreamedWrite(read)),
        }
    }
}

/// The largest JSON body that carries files' content: the largest file a sandbox or space
/// takes, as base64 (4 bytes for every 3), and 1 MiB for the JSON around it.
pub fn content_json_limit(state: &AppState) -> u64 {
    let limits = &state.app.limits;
    let largest = limits.sandbox_max_bytes.max(limits.space_max_bytes);
    largest.saturating_mul(4) / 3 + (1 << 20)
}

/// A body read with its contents spooled.
pub trait Spooled: Sized + Send + 'static {
    /// Reads the body's object (its `{` already checked to come next).
    fn read<R: Read>(json: &mut JsonStreamReader<R>, spools: &mut Spools) -> Result<Self, Refused>;
}

impl Spooled for SpooledWrite {
    fn read<R: Read>(json: &mut JsonStreamReader<R>, spools: &mut Spools) -> Result<Self, Refused> {
        read_write(json, spools)
    }
}

impl Spooled for SpooledUpload {
    fn read<R: Read>(json: &mut JsonStreamReader<R>, spools: &mut Spools) -> Result<Self, Refused> {
        json.begin_object()?;
        let mut files = None;
        while json.has_next()? {
            let name = json.next_name_owned()?;
            if name != "files" {
                return Err(Refused::Json(format!(
                    "unknown field `{name}`, expected `files`"
                )));
            }
            if json.peek()? != ValueType::Array {
                return Err(Refused::Json(
                    "invalid type for `files`: expected an array".into(),
                ));
            }
            json.begin_array()?;
            let mut writes = Vec::new();
            while json.has_next()? {
                if writes.len() == MAX_BATCH_FILES {
                    return Err(ApiError::invalid_request(format!(
                        "a batch names 1 to {MAX_BATCH_FILES} files; this one names more"
                    ))
                    .into());
                }
                writes.push(read_write(json, spools)?);
            }
            json.end_array()?;
            once(&mut files, &name, writes)?;
        }
        json.end_object()?;
        let files = files.ok_or_else(|| Refused::Json("missing field `files`".into()))?;
        Ok(SpooledUpload { files })
    }
}

/// Where contents are spooled: new scratch files in one folder.
#[derive(Debug)]
pub struct Spools<'a>(&'a std::path::Path);

impl Spools<'_> {
    fn create(&mut self) -> Result<tempfile::NamedTempFile, Refused> {
        std::fs::create_dir_all(self.0).map_err(storage)?;
        tempfile::NamedTempFile::new_in(self.0).map_err(storage)
    }
}

/// Why a body was not taken: a JSON reader's error, described as the body's fault unless the
/// body itself failed or ran over; or an answer already decided.
#[derive(Debug)]
pub enum Refused {
    Json(String),
    Said(ApiError),
}

impl From<struson::reader::ReaderError> for Refused {
    fn from(e: struson::reader::ReaderError) -> Refused {
        Refused::Json(e.to_string())
    }
}

impl From<ApiError> for Refused {
    fn from(e: ApiError) -> Refused {
        Refused::Said(e)
    }
}

/// Reads a whole body: one JSON object, read by `read`, and nothing after it.
fn read_body<R: Read, T>(
    body: R,
    read: impl FnOnce(&mut JsonStreamReader<R>) -> Result<T, Refused>,
) -> Result<T, Refused> {
    let mut json = JsonStreamReader::new(body);
    match json.peek() {
        Ok(ValueType::Object) => {}
        Ok(_) => return Err(ApiError::invalid_request("the JSON body must be an object").into()),
        Err(_) => return Err(ApiError::invalid_request("the request needs a JSON body").into()),
    }
    let read = read(&mut json)?;
    json.consume_trailing_whitespace()?;
    Ok(read)
}

/// Reads one `write_file` object, copying its `content` into a new scratch file and keeping the
/// other fields.
fn read_write<R: Read>(
    json: &mut JsonStreamReader<R>,
    spools: &mut Spools,
) -> Result<SpooledWrite, Refused> {
    if json.peek()? != ValueType::Object {
        return Err(Refused::Json("a write must be an object".into()));
    }
    json.begin_object()?;
    let (mut path, mut content, mut encoding) = (None, None, None);
    let (mut if_none_match, mut if_match, mut content_type) = (None, None, None);
    while json.has_next()? {
        let name = json.next_name_owned()?;
        match name.as_str() {
            "path" => once(&mut path, &name, short_string(json, &name)?)?,
            "content" => {
                let mut spool = spools.create()?;
                let len = copy_string(json, &mut spool)?;
                once(&mut content, &name, (spool, len))?;
            }
            "encoding" => {
                let value = match short_string(json, &name)?.as_str() {
                    "utf-8" => Encoding::Utf8,
                    "base64" => Encoding::Base64,
                    other => {
                        return Err(Refused::Json(format!(
                            "unknown variant `{other}` of encoding, expected `utf-8` or `base64`"
                        )));
                    }
                };
                once(&mut encoding, &name, value)?;
            }
            "ifNoneMatch" => once(&mut if_none_match, &name, optional_string(json, &name)?)?,
            "ifMatch" => once(&mut if_match, &name, optional_string(json, &name)?)?,
            "contentType" => once(&mut content_type, &name, optional_string(json, &name)?)?,
            other => {
                return Err(Refused::Json(format!(
                    "unknown field `{other}`, expected one of `path`, `content`, `encoding`, \
                     `ifNoneMatch`, `ifMatch`, `contentType`"
                )));
            }
        }
    }
    json.end_object()?;
    let missing = |field: &str| Refused::Json(format!("missing field `{field}`"));
    let fields = Fields {
        path: path.ok_or_else(|| missing("path"))?,
        encoding: encoding.unwrap_or_default(),
        if_none_match: if_none_match.flatten(),
        if_match: if_match.flatten(),
        content_type: content_type.flatten(),
    };
    let (mut spool, len) = content.ok_or_else(|| missing("content"))?;
    spool.flush().map_err(storage)?;
    Ok(SpooledWrite {
        fields,
        content: spool.into_temp_path(),
        len,
    })
}

/// Sets a field read once; a second time is an error, as a JSON object's field may appear once.
fn once<T>(slot: &mut Option<T>, name: &str, value: T) -> Result<(), Refused> {
    if slot.is_some() {
        return Err(Refused::Json(format!("duplicate field `{name}`")));
    }
    *slot = Some(value);
    Ok(())
}

/// Copies the next value, a string, into `spool` as it is read (its text, unescaped, in
/// UTF-8); answers its length in bytes.
fn copy_string<R: Read>(
    json: &mut JsonStreamReader<R>,
    spool: &mut tempfile::NamedTempFile,
) -> Result<u64, Refused> {
    expect_string(json, "content")?;
    let mut text = json.next_string_reader()?;
    let mut buffer = vec![0; COPY_BYTES];
    let mut len = 0u64;
    loop {
        let n = text
            .read(&mut buffer)
            .map_err(|e| Refused::Json(e.to_string()))?;
        if n == 0 {
            return Ok(len);
        }
        spool.write_all(&buffer[..n]).map_err(storage)?;
        len += n as u64;
    }
}

/// The next value, a string of at most [`MAX_FIELD_BYTES`].
fn short_string<R: Read>(json: &mut JsonStreamReader<R>, name: &str) -> Result<String, Refused> {
    expect_string(json, name)?;
    let mut text = String::new();
    json.next_string_reader()?
        .take(MAX_FIELD_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| Refused::Json(e.to_string()))?;
    if text.len() as u64 > MAX_FIELD_BYTES {
        return Err(Refused::Json(format!(
            "`{name}` is longer than {MAX_FIELD_BYTES} bytes"
        )));
    }
    Ok(text)
}

/// The next value: a short string, or `null` (`None`).
fn optional_string<R: Read>(
    json: &mut JsonStreamReader<R>,
    name: &str,
) -> Result<Option<String>, Refused> {
    if json.peek()? == ValueType::Null {
        json.next_null()?;
        return Ok(None);
    }
    short_string(json, name).map(Some)
}

fn expect_string<R: Read>(json: &mut JsonStreamReader<R>, name: &str) -> Result<(), Refused> {
    match json.peek()? {
        ValueType::String => Ok(()),
        other => Err(Refused::Json(format!(
            "invalid type for `{name}`: {other:?}, expected a string"
        ))),
    }
}

fn storage(e: std::io::Error) -> Refused {
    Refused::Said(ferry_app::Error::io(e).into())
}

/// The body, refusing to read past `left` bytes; it marks whether it ran over or failed, so
/// that a JSON reader's error can be told apart from the body's own.
struct Bounded<R> {
    inner: R,
    left: u64,
    over: Arc<AtomicBool>,
    failed: Arc<AtomicBool>,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buffer).inspect_err(|_| {
            self.failed.store(true, Ordering::Relaxed);
        })?;
        match self.left.checked_sub(n as u64) {
            Some(left) => {
                self.left = left;
                Ok(n)
            }
            None => {
                self.over.store(true, Ordering::Relaxed);
                Err(std::io::Error::other("the body is larger than allowed"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spooled<T: Spooled>(body: impl Read, dir: &std::path::Path) -> Result<T, String> {
        read_body(body, |json| T::read(json, &mut Spools(dir))).map_err(|e| match e {
            Refused::Json(why) => why,
            Refused::Said(error) => format!("{error:?}"),
        })
    }

    fn read(body: &str) -> Result<SpooledWrite, String> {
        let dir = tempfile::tempdir().unwrap();
        // The scratch file outlives its folder's guard only as long as the test needs it.
        spooled(body.as_bytes(), &dir.keep())
    }

    #[test]
    fn the_content_goes_to_the_scratch_file_and_the_fields_are_kept() {
        // JSON's escapes, a surrogate pair among them, as a client writes them.
        let content = r#"line one\n\"quoted\" \u00e9 \ud83d\ude00 "#.repeat(20_000);
        let body = format!(
            r#"{{"content": "{content}", "path": "/sandbox/outputs/a.md", "ifMatch": null,
                "encoding": "utf-8", "ifNoneMatch": "*"}}"#
        );
        let write = read(&body).unwrap();
        let expected = "line one\n\"quoted\" é 😀 ".repeat(20_000);
        assert_eq!(std::fs::read_to_string(&write.content).unwrap(), expected);
        assert_eq!(write.len, expected.len() as u64);
        assert_eq!(write.fields.path, "/sandbox/outputs/a.md");
        assert_eq!(write.fields.encoding, Encoding::Utf8);
        assert_eq!(write.fields.if_none_match.as_deref(), Some("*"));
        assert_eq!(write.fields.if_match, None);
        let base64 =
            read(r#"{"path": "/spaces/n/x.bin", "content": "aGk=", "encoding": "base64"}"#)
                .unwrap();
        assert_eq!(base64.fields.encoding, Encoding::Base64);
        assert_eq!(std::fs::read(&base64.content).unwrap(), b"aGk=");
    }

    #[test]
    fn a_body_that_is_not_exactly_write_files_object_is_refused_saying_why() {
        for (body, why) in [
            ("", "needs a JSON body"),
            ("[1]", "must be an object"),
            (r#"{"path": "/sandbox/a"}"#, "missing field `content`"),
            (r#"{"content": "x"}"#, "missing field `path`"),
            (
                r#"{"path": "/a", "content": "x", "size": 1}"#,
                "unknown field `size`",
            ),
            (
                r#"{"path": "/a", "content": "x", "path": "/b"}"#,
                "duplicate field `path`",
            ),
            (r#"{"path": "/a", "content": 12}"#, "expected a string"),
            (
                r#"{"path": "/a", "content": "x", "encoding": "utf8"}"#,
                "unknown variant `utf8`",
            ),
            (r#"{"path": "/a", "content": "x"} {}"#, ""),
            (r#"{"path": "/a", "content": "x"#, ""),
            (r#"{"path": "/a", "content": "\ud800"}"#, ""),
        ] {
            let refused = read(body)
                .err()
                .unwrap_or_else(|| panic!("{body} was taken"));
            assert!(refused.contains(why), "{body}: {refused}");
        }
    }

    #[test]
    fn a_body_over_its_limit_stops_being_read_and_says_so() {
        let over = Arc::new(AtomicBool::new(false));
        let text = format!(r#"{{"path": "/a", "content": "{}"}}"#, "x".repeat(10_000));
        let body = Bounded {
            inner: text.as_bytes(),
            left: 1_000,
            over: Arc::clone(&over),
            failed: Arc::default(),
        };
        let dir = tempfile::tempdir().unwrap();
        assert!(spooled::<SpooledWrite>(body, dir.path()).is_err());
        assert!(over.load(Ordering::Relaxed));
    }

    #[test]
    fn a_batch_spools_each_files_content_on_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let body = r##"{"files": [
            {"path": "/sandbox/outputs/a.md", "content": "# A"},
            {"content": "aGk=", "encoding": "base64", "path": "/spaces/notes/b.bin"}
        ]}"##;
        let upload: SpooledUpload = spooled(body.as_bytes(), dir.path()).unwrap();
        let [a, b] = &upload.files[..] else {
            panic!("{upload:?}")
        };
        assert_eq!(std::fs::read(&a.content).unwrap(), b"# A");
        assert_eq!(b.fields.path, "/spaces/notes/b.bin");
        assert_eq!(std::fs::read(&b.content).unwrap(), b"aGk=");
        for (body, why) in [
            (r#"{"files": {}}"#, "expected an array"),
            (r#"{}"#, "missing field `files`"),
            (r#"{"files": [], "more": 1}"#, "unknown field `more`"),
            (r#"{"files": [{"path": "/a"}]}"#, "missing field `content`"),
            (r#"{"files": [1]}"#, "must be an object"),
        ] {
            let refused = spooled::<SpooledUpload>(body.as_bytes(), dir.path()).unwrap_err();
            assert!(refused.contains(why), "{body}: {refused}");
        }
        let many = format!(
            r#"{{"files": [{}]}}"#,
            vec![r#"{"path": "/a", "content": ""}"#; MAX_BATCH_FILES + 1].join(",")
        );
        let refused = spooled::<SpooledUpload>(many.as_bytes(), dir.path()).unwrap_err();
        assert!(refused.contains("1 to 1000 files"), "{refused}");
    }
}
