//! `upload_files` and `download_files` (docs/agent-files.md, "Batches"): several files in one
//! request, each written or read by the very operation a single request runs, and each answered
//! on its own, so one refusal does not fail the rest.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ferry_core::agent_files::{DownloadFilesInput, MAX_BATCH_FILES};
use serde::Serialize;
use utoipa::ToSchema;

use super::{Caller, READ_MAX_BYTES, SpooledWrite, Written, open, parse, write_spooled};
use crate::error::{Error, Result};
use ferry_core::conditions::quoted_etag;

/// Bytes one `download_files` answer carries at most, all files together; a file past it is
/// refused on its own (`REQUEST_TOO_LARGE`), and the ones before it are answered.
pub const BATCH_READ_MAX_BYTES: u64 = READ_MAX_BYTES;

/// Why one file of a batch was refused: the error envelope's code and message, as a single
/// request for that file would have answered.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FileError {
    /// An error code of the envelope, e.g. NOT_FOUND, INVALID_PATH, FORBIDDEN.
    pub code: &'static str,
    pub message: String,
}

impl From<Error> for FileError {
    fn from(e: Error) -> FileError {
        FileError {
            code: e.code().as_str(),
            message: e.to_string(),
        }
    }
}

/// A file of a batch that was refused.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Failed {
    /// The path as it was asked for.
    pub path: String,
    pub error: FileError,
}

/// One write of `upload_files`: `write_file`'s answer, or why it was refused.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum UploadResult {
    Written(Written),
    Failed(Failed),
}

/// `upload_files`' answer: one result per file, in the order asked.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Uploaded {
    pub files: Vec<UploadResult>,
}

/// One file's bytes, as `download_files` answers them.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Fetched {
    /// The path as it was asked for.
    pub path: String,
    /// The bytes, base64-encoded (standard alphabet, padded).
    pub content: String,
    /// Always "base64".
    pub encoding: &'static str,
    pub size: u64,
    /// The file's ETag, quoted as in an `ETag` header.
    pub etag: String,
    /// The stored type (spaces), or the one its name implies (the sandbox).
    pub content_type: String,
}

/// One file of `download_files`: its bytes, or why it was refused.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(untagged)]
pub enum DownloadResult {
    Fetched(Fetched),
    Failed(Failed),
}

/// `download_files`' answer: one result per path, in the order asked.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Downloaded {
    pub files: Vec<DownloadResult>,
}

fn batch_size(n: usize) -> Result<()> {
    if n == 0 || n > MAX_BATCH_FILES {
        return Err(Error::invalid_request(format!(
            "a batch names 1 to {MAX_BATCH_FILES} files; this one names {n}"
        )));
    }
    Ok(())
}

/// `upload_files` as the HTTP route reads it: each file's content spooled as the body arrived
/// (the route's JSON carries files whole, [`super::SpooledWrite`]).
#[derive(Debug)]
pub struct SpooledUpload {
    pub files: Vec<SpooledWrite>,
}

/// `upload_files`: each file is a `write_file`, done in order (so of two writes to one path the
/// later one stands), with every rule of a single write.
pub async fn upload_files(caller: Caller<'_>, input: &SpooledUpload) -> Result<Uploaded> {
    batch_size(input.files.len())?;
    let mut files = Vec::with_capacity(input.files.len());
    for file in &input.files {
        files.push(match write_spooled(caller, file).await {
            Ok(written) => UploadResult::Written(written),
            Err(e) => UploadResult::Failed(Failed {
                path: file.fields.path.clone(),
                error: e.into(),
            }),
        });
    }
    Ok(Uploaded { files })
}

/// `download_files`: each file's whole bytes, read in order, while the answer stays within
/// [`BATCH_READ_MAX_BYTES`].
pub async fn download_files(caller: Caller<'_>, input: &DownloadFilesInput) -> Result<Downloaded> {
    batch_size(input.paths.len())?;
    let mut budget = BATCH_READ_MAX_BYTES;
    let mut files = Vec::with_capacity(input.paths.len());
    for asked in &input.paths {
        files.push(match fetch(caller, asked, budget).await {
            Ok(fetched) => {
                budget -= fetched.size;
                DownloadResult::Fetched(fetched)
            }
            Err(e) => DownloadResult::Failed(Failed {
                path: asked.clone(),
                error: e.into(),
            }),
        });
    }
    Ok(Downloaded { files })
}

async fn fetch(caller: Caller<'_>, asked: &str, budget: u64) -> Result<Fetched> {
    let path = parse(asked)?;
    let current = open(caller, &path).await?;
    if current.size > budget {
        return Err(Error::TooLarge(format!(
            "'{path}' ({}) does not fit in what one download_files answer carries ({} in all); \
             read it with GET, or in a batch of its own",
            crate::error::describe_bytes(current.size),
            crate::error::describe_bytes(BATCH_READ_MAX_BYTES)
        )));
    }
    let etag = quoted_etag(&current.etag);
    let content_type = current.content_type.clone();
    let bytes = current.bytes_for_answer(caller.app, budget).await?;
    Ok(Fetched {
        path: asked.to_owned(),
        content: STANDARD.encode(&bytes),
        encoding: "base64",
        size: bytes.len() as u64,
        etag,
        content_type,
    })
}
