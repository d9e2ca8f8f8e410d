//! Files as MCP resources (docs/mcp.md, "Resources"): the thread's sandbox files, the user's
//! space files, the thread's uploads and published files, each addressed by a `ferry://` URI.
//!
//! Like the tools, a resource is one request to the HTTP API: its URI names the route that
//! reads it, and the answer's bytes come back as text (for text types) or base64. Nothing here
//! decides who may read what.

use rmcp::model::ResourceTemplate;

/// What a `ferry://` URI names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// A file of the thread's sandbox, by its path below `/sandbox/` (as written in the URI).
    Sandbox(String),
    /// A file of one of the user's spaces.
    Space { space: String, path: String },
    /// One of the thread's uploads, by id.
    Upload(String),
    /// One of the thread's published files (its newest revision), by id.
    Published(String),
}

pub const SANDBOX_TEMPLATE: &str = "ferry://sandbox/{+path}";
pub const SPACE_TEMPLATE: &str = "ferry://spaces/{space}/{+path}";
pub const UPLOAD_TEMPLATE: &str = "ferry://uploads/{uploadId}";
pub const PUBLISHED_TEMPLATE: &str = "ferry://published/{publishedId}";

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
        ResourceTemplate::new(PUBLISHED_TEMPLATE, "published-file")
            .with_title("A file you published")
            .with_description("The newest revision of a file published to the user, by its id"),
    ]
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
                 ferry://spaces/{{space}}/{{path}}, ferry://uploads/{{id}} or \
                 ferry://published/{{id}}"
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
            "published" if !tail.contains('/') => Named::Published(tail.to_owned()),
            _ => return Err(refused()),
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
        for bad in [
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
