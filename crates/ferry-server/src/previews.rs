//! Server-rendered HTML previews of published files, made once per content and kept.

use ferry_store::published::Revision;
use std::path::PathBuf;

use crate::error::ApiResult;
use crate::state::AppState;

/// The sanitized HTML rendering of a revision. Renderings are cached by content and type, so
/// a document is read by the extraction worker once, not on every view; a document that
/// cannot be rendered is remembered too, so a hostile file costs a worker once, not on every
/// view. A cache entry is shared by everyone who has the same bytes, so nothing in it may be
/// theirs: the document is rendered under a neutral name (only its extension matters), never
/// the name its owner gave it.
pub async fn rendered_html(state: &AppState, revision: &Revision) -> ApiResult<String> {
    let cache_dir = state.config.data_dir.join("cache").join("html");
    let cached = cache_dir.join(format!(
        "{}{}.html",
        revision.sha256,
        revision.file_type.replace('.', "-")
    ));
    if let Ok(html) = tokio::fs::read_to_string(&cached).await {
        return Ok(html);
    }
    let source = state.blobs.local_copy(&revision.blob_key).await?;
    let neutral_name = format!("document{}", revision.file_type);
    let owner = state
        .db
        .thread(&revision.thread_id)
        .await?
        .map(|t| t.owner)
        .unwrap_or_default();
    let html = match state
        .extractor
        .render_html(&owner, source.path(), &neutral_name)
        .await
    {
        Ok(html) => html,
        // A document that cannot be rendered gets a page saying so.
        Err(e) => failure_page(&e.to_string()),
    };
    write_atomically(cache_dir, cached, html.clone()).await;
    Ok(html)
}

async fn write_atomically(dir: PathBuf, target: PathBuf, html: String) {
    let tmp = dir.join(format!(".{}.tmp", uuid::Uuid::now_v7().simple()));
    let result = async {
        tokio::fs::create_dir_all(&dir).await?;
        tokio::fs::write(&tmp, html).await?;
        tokio::fs::rename(&tmp, &target).await
    }
    .await;
    if let Err(e) = result {
        // The cache is an optimisation: failing to fill it only costs a later re-render.
        tracing::warn!(error = %e, "could not cache a rendered preview");
        let _ = tokio::fs::remove_file(&tmp).await;
    }
}

fn failure_page(reason: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Preview</title>\
         <style>{}</style></head>\
         <body><p>This preview could not be made: {}.</p><p>Download the file to view it.</p>\
         </body></html>",
        ferry_extract::PREVIEW_STYLE,
        ferry_core::attachment::escape(reason)
    )
}
