//! Files as MCP resources (docs/mcp.md, "Resources"): the thread's sandbox files, the user's
//! space files, the thread's uploads and published files, each addressed by a `ferry://` URI.
//!
//! Like the tools, a resource is one request to the HTTP API: its URI names the route that
//! reads it, and the answer's bytes come back as text (for text types) or base64. Nothing here
//! decides who may read what.

use rmcp::ErrorData;
use rmcp::model::ResourceTemplate;

use crate::caller::{Caller, encode, encode_path};

/// What a `ferry://` URI names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// A file of the thread's sandbox, by its path below `/sandbox/` (as written in the URI).
    Sandbox(String),
    /// A file of one of the user's spaces.
    Space { space: String, path: String },
    /// One of the thread's uploads, by id.
    Upload(String),
    /// One page of an uploaded PDF, drawn as an image (the file card shows these).
    UploadPage { id: String, page: u32 },
    /// One of the thread's published files (its newest revision), by id.
    Published(String),
    /// One revision of a published file, or what is drawn of it (the file card shows these).
    Revision {
        id: String,
        revision: u32,
        part: RevisionPart,
    },
}

/// What of a published file's revision a URI names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RevisionPart {
    /// Its bytes: `ferry://published/{id}/revisions/{n}`.
    Content,
    /// Its preview (an image, or sanitized HTML): `…/revisions/{n}/preview`.
    Preview,
    /// One page of a PDF drawn as an image: `…/revisions/{n}/pages/{page}`.
    Page(u32),
}

pub const SANDBOX_TEMPLATE: &str = "ferry://sandbox/{+path}";
pub const SPACE_TEMPLATE: &str = "ferry://spaces/{space}/{+path}";
pub const UPLOAD_TEMPLATE: &str = "ferry://uploads/{uploadId}";
pub const UPLOAD_PAGE_TEMPLATE: &str = "ferry://uploads/{uploadId}/pages/{page}";
pub const PUBLISHED_TEMPLATE: &str = "ferry://published/{publishedId}";
pub const REVISION_TEMPLATE: &str = "ferry://published/{publishedId}/revisions/{revision}";
pub const REVISION_PREVIEW_TEMPLATE: &str =
    "ferry://published/{publishedId}/revisions/{revision}/preview";
pub const REVISION_PAGE_TEMPLATE: &str =
    "ferry://published/{publishedId}/revisions/{revision}/pages/{page}";

/// The URI templates `resources/templates/list` answers.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(SANDBOX_TEMPLATE, "sandbox-file")
            .with_title("A file of your sandbox")
            .with_description(
                "A file of your thread's sandbox by its path below /sandbox/, e.g. \
                 ferry://sandbox/outputs/report.md",
            ),
        ResourceTemplate::new(SPACE_TEMPLATE, "space-file")
            .with_title("A file of the user's spaces")
            .with_description(
                "A file of one of the user's spaces, e.g. ferry://spaces/notes/ideas/plan.md",
            ),
        ResourceTemplate::new(UPLOAD_TEMPLATE, "upload")
            .with_title("A file the user uploaded")
            .with_description("One of the thread's uploads, by its id (see list_uploads)"),
        ResourceTemplate::new(UPLOAD_PAGE_TEMPLATE, "upload-page")
            .with_title("A page of an uploaded PDF, as an image")
            .with_description(
                "One page of one of the thread's uploaded PDFs, drawn (1 is the first)",
            ),
        ResourceTemplate::new(PUBLISHED_TEMPLATE, "published-file")
            .with_title("A file you published")
            .with_description("The newest revision of a file published to the user, by its id"),
        ResourceTemplate::new(REVISION_TEMPLATE, "published-revision")
            .with_title("One revision of a file you published")
            .with_description("A published file as it was at one revision (1 is the first)"),
        ResourceTemplate::new(REVISION_PREVIEW_TEMPLATE, "published-preview")
            .with_title("The preview of a published file")
            .with_description(
                "What the user's preview shows of one revision: the image, or the document as \
                 sanitized HTML (a PDF's pages are reached one by one)",
            ),
        ResourceTemplate::new(REVISION_PAGE_TEMPLATE, "published-page")
            .with_title("A page of a published PDF, as an image")
            .with_description(
                "One page of one revision of a published PDF, drawn (1 is the first)",
            ),
    ]
}

/// A revision or page number: counted from 1.
fn counted(number: &str) -> Option<u32> {
    number.parse::<u32>().ok().filter(|n| *n > 0)
}

/// Why a URI names nothing here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotOurs(pub String);

impl Named {
    /// Reads a `ferry://` URI. Paths are kept as written (percent-encoded or not): the server's
    /// validator reads them, so a traversal is refused there, not silently normalised here.
    pub fn parse(uri: &str) -> Result<Named, NotOurs> {
        let refused = || {
            NotOurs(format!(
                "'{uri}' is not a ferry resource: use ferry://sandbox/{{path}}, \
                 ferry://spaces/{{space}}/{{path}}, ferry://uploads/{{id}}[/pages/{{page}}] or \
                 ferry://published/{{id}}[/revisions/{{n}}[/preview|/pages/{{page}}]]"
            ))
        };
        let rest = uri.strip_prefix("ferry://").ok_or_else(refused)?;
        if rest.contains(['?', '#']) {
            return Err(refused());
        }
        let (kind, tail) = rest.split_once('/').ok_or_else(refused)?;
        if tail.is_empty() {
            return Err(refused());
        }
        Ok(match kind {
            "sandbox" => Named::Sandbox(tail.to_owned()),
            "spaces" => {
                let (space, path) = tail.split_once('/').ok_or_else(refused)?;
                if space.is_empty() || path.is_empty() {
                    return Err(refused());
                }
                Named::Space {
                    space: space.to_owned(),
                    path: path.to_owned(),
                }
            }
            "uploads" if !tail.contains('/') => Named::Upload(tail.to_owned()),
            "uploads" => match tail.split('/').collect::<Vec<_>>().as_slice() {
                [id, "pages", page] if !id.is_empty() => Named::UploadPage {
                    id: (*id).to_owned(),
                    page: counted(page).ok_or_else(refused)?,
                },
                _ => return Err(refused()),
            },
            "published" if !tail.contains('/') => Named::Published(tail.to_owned()),
            "published" => Named::revision(tail).ok_or_else(refused)?,
            _ => return Err(refused()),
        })
    }

    /// `{id}/revisions/{n}`, `{id}/revisions/{n}/preview` or `{id}/revisions/{n}/pages/{page}`;
    /// revisions and pages count from 1.
    fn revision(tail: &str) -> Option<Named> {
        let segments: Vec<&str> = tail.split('/').collect();
        let (id, revision, part) = match segments.as_slice() {
            [id, "revisions", n] => (id, counted(n)?, RevisionPart::Content),
            [id, "revisions", n, "preview"] => (id, counted(n)?, RevisionPart::Preview),
            [id, "revisions", n, "pages", page] => {
                (id, counted(n)?, RevisionPart::Page(counted(page)?))
            }
            _ => return None,
        };
        (!id.is_empty()).then(|| Named::Revision {
            id: (*id).to_owned(),
            revision,
            part,
        })
    }

    /// Whether reading it needs the caller's thread.
    pub fn in_thread(&self) -> bool {
        !matches!(self, Named::Space { .. })
    }

    /// The URI of a sandbox file, from its `/sandbox/…` path.
    pub fn sandbox_uri(sandbox_path: &str) -> String {
        format!(
            "ferry://sandbox/{}",
            sandbox_path.trim_start_matches("/sandbox/")
        )
    }
}

/// The HTTP route that reads a resource.
pub(crate) fn route_of(caller: &Caller, named: &Named) -> Result<String, ErrorData> {
    let thread = || {
        caller.thread.as_deref().ok_or_else(|| {
            ErrorData::invalid_params(
                "this resource belongs to a thread, and the token names none: use an \
                 agent token",
                None,
            )
        })
    };
    // As written in the URI, decoded once and encoded again segment by segment, so the
    // server's validator sees exactly the path the URI named.
    let path = |raw: &str| {
        percent_encoding::percent_decode_str(raw)
            .decode_utf8()
            .map(|decoded| encode_path(&decoded))
            .map_err(|_| ErrorData::invalid_params("the URI's path is not UTF-8", None))
    };
    Ok(match named {
        Named::Sandbox(raw) => {
            format!("/api/threads/{}/sandbox/{}", encode(thread()?), path(raw)?)
        }
        Named::Space { space, path: raw } => {
            format!("/api/spaces/{}/files/{}", encode(space), path(raw)?)
        }
        Named::Upload(id) => format!(
            "/api/threads/{}/uploads/{}/content",
            encode(thread()?),
            encode(id)
        ),
        Named::UploadPage { id, page } => format!(
            "/api/threads/{}/uploads/{}/pages/{page}",
            encode(thread()?),
            encode(id)
        ),
        Named::Published(id) => format!(
            "/api/threads/{}/published/{}/content",
            encode(thread()?),
            encode(id)
        ),
        Named::Revision { id, revision, part } => {
            let file = format!(
                "/api/threads/{}/published/{}",
                encode(thread()?),
                encode(id)
            );
            match part {
                RevisionPart::Content => format!("{file}/content?revision={revision}"),
                RevisionPart::Preview => format!("{file}/preview?revision={revision}"),
                RevisionPart::Page(page) => {
                    format!("{file}/pages/{page}?revision={revision}")
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_one_place_each() {
        assert_eq!(
            Named::parse("ferry://sandbox/outputs/r.md"),
            Ok(Named::Sandbox("outputs/r.md".into()))
        );
        assert_eq!(
            Named::parse("ferry://spaces/notes/ideas/a.md"),
            Ok(Named::Space {
                space: "notes".into(),
                path: "ideas/a.md".into()
            })
        );
        assert_eq!(
            Named::parse("ferry://uploads/u1"),
            Ok(Named::Upload("u1".into()))
        );
        assert_eq!(
            Named::parse("ferry://published/p1/revisions/2/pages/3"),
            Ok(Named::Revision {
                id: "p1".into(),
                revision: 2,
                part: RevisionPart::Page(3)
            })
        );
        assert_eq!(
            Named::parse("ferry://published/p1/revisions/1/preview"),
            Ok(Named::Revision {
                id: "p1".into(),
                revision: 1,
                part: RevisionPart::Preview
            })
        );
        assert_eq!(
            Named::parse("ferry://uploads/u1/pages/2"),
            Ok(Named::UploadPage {
                id: "u1".into(),
                page: 2
            })
        );
        for bad in [
            "ferry://uploads/u1/pages/0",
            "ferry://uploads/u1/preview",
            "ferry://published/p1/revisions/0",
            "ferry://published/p1/revisions/x",
            "ferry://published/p1/revisions/1/pages/0",
            "ferry://published/p1/revisions/1/thumbnail",
            "ferry://published//revisions/1",
            "file:///etc/passwd",
            "ferry://sandbox/",
            "ferry://spaces/notes",
            "ferry://uploads/a/b",
            "ferry://sandbox/a?x=1",
            "ferry://elsewhere/a",
        ] {
            assert!(Named::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Named::sandbox_uri("/sandbox/outputs/r.md"),
            "ferry://sandbox/outputs/r.md"
        );
    }
}
