//! The file card as an MCP App (docs/mcp.md, "The file card in MCP hosts"): a published file
//! (`publish_file_to_user`) or an upload the agent read (`read_upload`).
//!
//! A host that shows MCP Apps (the `io.modelcontextprotocol/ui` extension) reads the tool's
//! `_meta.ui.resourceUri`, fetches that `ui://` resource — one self-contained HTML page — and
//! runs it in a sandboxed iframe, handing it the tool's result over `postMessage`. The page
//! draws the card from the result — the publish answer (its structured content), or the upload
//! under `_meta["ferry/upload"]`, which the model is not shown — and
//! asks the host for the bytes it shows by `resources/read` of `ferry://…` URIs,
//! which the host forwards to this server with its own credentials: the page holds no token,
//! reaches no network, and a host without Apps still gets the JSON result and the link.

use rmcp::model::{JsonObject, MetaObject, Resource, ResourceContents};
use serde_json::json;

/// Where hosts fetch the card.
pub const URI: &str = "ui://ferry/file-card.html";

/// The MIME type of an MCP App's HTML.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The page: markup, style and script in one file, nothing loaded from elsewhere. `build.rs`
/// makes it from `card/` and the web UI's modules the card's script imports.
const HTML: &str = include_str!(concat!(env!("OUT_DIR"), "/file_card.html"));

fn object(value: serde_json::Value) -> JsonObject {
    value.as_object().cloned().unwrap_or_default()
}

/// The `_meta` of a tool whose result the card shows. `ui/resourceUri` is the key hosts read
/// before `ui.resourceUri` was settled; both are given so that either kind finds the card.
pub fn tool_meta() -> MetaObject {
    MetaObject::from(object(json!({
        "ui": { "resourceUri": URI },
        "ui/resourceUri": URI,
    })))
}

/// The key of a `read_upload` result's `_meta` under which the card finds the upload.
pub const UPLOAD_META_KEY: &str = "ferry/upload";

/// A `read_upload` result's `_meta`: the upload as the thread's upload list shows it.
pub fn upload_meta(upload: serde_json::Value) -> MetaObject {
    let mut meta = JsonObject::new();
    meta.insert(UPLOAD_META_KEY.to_owned(), upload);
    MetaObject::from(meta)
}

/// The `_meta.ui` of the card's contents: no network origins (no `csp` domains), no device
/// permissions, and a border drawn by the host.
fn contents_meta() -> MetaObject {
    MetaObject::from(object(json!({ "ui": { "prefersBorder": true } })))
}

/// The card as `resources/list` shows it.
pub fn resource() -> Resource {
    Resource::new(URI, "file-card")
        .with_title("File card")
        .with_description("How a published file is shown in hosts that display MCP Apps")
        .with_mime_type(MIME_TYPE)
        .with_meta(contents_meta())
}

/// The card as `resources/read` answers it.
pub fn contents() -> ResourceContents {
    ResourceContents::text(HTML, URI)
        .with_mime_type(MIME_TYPE)
        .with_meta(contents_meta())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_card_loads_nothing_from_elsewhere() {
        // Everything the page needs is inline: no external script, style, image or frame.
        for outside in ["src=\"http", "href=\"http", "@import", "url(http", "fetch("] {
            assert!(
                !HTML.contains(outside),
                "the card must not contain {outside}"
            );
        }
        // Text reaches the page as text: no markup is built from strings.
        assert!(!HTML.contains("innerHTML"));
        assert!(!HTML.contains("insertAdjacentHTML"));
    }

    #[test]
    fn tools_name_the_card_both_ways() {
        let meta = serde_json::to_value(tool_meta()).unwrap();
        assert_eq!(meta["ui"]["resourceUri"], URI);
        assert_eq!(meta["ui/resourceUri"], URI);
    }
}
