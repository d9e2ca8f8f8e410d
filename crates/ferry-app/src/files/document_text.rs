//! `grep` with `documents: true`: a PDF, Word, Excel or PowerPoint file is searched in the
//! text a model is given of it ([`ferry_extract::document_text_reader`]: a page, a sheet as a
//! Markdown table, a slide with its notes), not in its bytes.
//!
//! The text is read by the extraction worker, under its limits, and kept in the derived cache
//! by the content's SHA-256, so a folder of documents is read once, whoever searches it next.
//! A document that cannot be read (damaged, encrypted, past the worker's limits) is kept as
//! such too, and counted by `grep` with its reason rather than failing the search.

use ferry_extract::{DocumentText, ExtractError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Caller;
use crate::error::Result;

/// A document's text as kept in the cache, or why it has none.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub(super) enum Searchable {
    Text(DocumentText),
    Unreadable { reason: String },
}

/// The text of the document `name` whose bytes are `bytes`, as `grep` searches it.
pub(super) async fn searchable(
    caller: Caller<'_>,
    name: &str,
    bytes: Vec<u8>,
) -> Result<Searchable> {
    let sha256 = hex::encode(Sha256::digest(&bytes));
    // The name picks the reader, so a document renamed to another kind is read again.
    let kind = name
        .rsplit_once('.')
        .map_or("", |(_, ext)| ext)
        .to_ascii_lowercase();
    let entry = format!("search-text/v1/{sha256}.{kind}.json");
    if let Some(kept) = caller.app.cache.read_json::<Searchable>(&entry).await {
        return Ok(kept);
    }
    let scratch = caller.app.cache.scratch(bytes).await?;
    let owner = caller.principal.identity_key();
    let kept = match caller
        .app
        .extractor
        .document_text(&owner, &scratch, name)
        .await
    {
        Ok(text) => Searchable::Text(text),
        // The worker failing to start, or the scratch copy failing to be read, says nothing
        // about the document: it is read again next time. (A document that takes the worker
        // past its time is kept as unreadable: a hostile file costs the worker once.)
        Err(e @ (ExtractError::Worker(_) | ExtractError::Io(_))) => {
            return Ok(Searchable::Unreadable {
                reason: e.to_string(),
            });
        }
        Err(e) => Searchable::Unreadable {
            reason: e.to_string(),
        },
    };
    caller.app.cache.write_json(&entry, &kept).await;
    Ok(kept)
}
