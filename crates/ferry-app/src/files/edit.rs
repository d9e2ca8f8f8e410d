//! `edit_file`: replace an exact string in a text file, against the version that was read.
//!
//! The edit reads the file, replaces, and writes back on condition that the file still has
//! the ETag it was read at (`If-Match`), decided where every conditional write is decided (the
//! database, or the sandbox's commit lock). A write that lands in between makes the edit fail
//! with `PRECONDITION_FAILED`; it is never overwritten unseen.

use ferry_core::agent_files::{EditFileInput, bare_etag};
use ferry_core::write::WriteCondition;
use serde::Serialize;
use utoipa::ToSchema;

use super::read::as_text;
use super::{Caller, READ_MAX_BYTES, in_memory, open, parse, put};
use crate::error::{Error, Result};
use ferry_core::conditions::quoted_etag;

/// `edit_file`'s answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Edited {
    pub path: String,
    /// Occurrences replaced.
    pub replacements: usize,
    /// The new ETag, quoted.
    pub etag: String,
}

/// `edit_file`.
pub async fn edit(caller: Caller<'_>, input: &EditFileInput) -> Result<Edited> {
    let path = parse(&input.path)?;
    if input.old_string.is_empty() {
        return Err(Error::invalid_request(
            "old_string is empty; give the exact text to replace (write_file writes a whole file)",
        ));
    }
    if input.old_string == input.new_string {
        return Err(Error::invalid_request(
            "old_string and new_string are the same; there is nothing to change",
        ));
    }
    let current = open(caller, &path).await?;
    let read_at = current.etag.clone();
    if let Some(expected) = input.if_match.as_deref().map(bare_etag)
        && expected != "*"
        && expected != read_at
    {
        return Err(changed(&path));
    }
    let content_type = current.content_type.clone();
    let bytes = current.bytes_for_answer(caller.app, READ_MAX_BYTES).await?;
    let text = as_text(&bytes).ok_or_else(|| {
        Error::invalid_request(format!(
            "'{path}' is not a text file (not UTF-8, or it holds NUL bytes); edit_file changes \
             text only"
        ))
    })?;
    let found = text.matches(input.old_string.as_str()).count();
    let replaced = match found {
        0 => {
            return Err(Error::invalid_request(format!(
                "old_string was not found in '{path}': read the file again and copy the text \
                 exactly, whitespace and line breaks included"
            )));
        }
        1 => text.replacen(&input.old_string, &input.new_string, 1),
        _ if input.replace_all => text.replace(&input.old_string, &input.new_string),
        n => {
            return Err(Error::invalid_request(format!(
                "old_string occurs {n} times in '{path}'; include more of the surrounding text \
                 to make it unique, or pass replace_all: true to replace every one"
            )));
        }
    };
    let condition = WriteCondition::IfMatch(vec![read_at]);
    let (_, _, etag) = put(
        caller,
        &path,
        &content_type,
        &condition,
        in_memory(replaced.into_bytes()),
    )
    .await
    .map_err(|e| match e {
        Error::PreconditionFailed(_) | Error::NotFound(_) => changed(&path),
        other => other,
    })?;
    Ok(Edited {
        path: path.to_string(),
        replacements: found,
        etag: quoted_etag(&etag),
    })
}

fn changed(path: &ferry_core::AgentPath) -> Error {
    Error::PreconditionFailed(format!(
        "'{path}' changed since it was read; read it again and redo the edit on what is there now"
    ))
}
