//! Which stored events tell that a resource changed (docs/mcp.md, "Resources"): a subscribed
//! resource is followed by reading the feed its changes are stored on — the space's change
//! feed, or the thread's channel for sandbox files and published files — from where it stood
//! when the subscription began. The feeds are the server's record of every change, through
//! every door and on every node, so nothing here depends on which node a change was made on.

use serde_json::Value;

use crate::resources::Named;

/// How often a followed feed is read again.
pub const POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// The feed a resource's changes are stored on, and how to tell its events from the others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Feed {
    /// The route of the feed's stored events (read with `?after=N&format=json`).
    pub route: String,
    watched: Watched,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Watched {
    /// A path as the feed's events name it (`/sandbox/…`, or a path within a space).
    Path(String),
    /// A published file, by id.
    Published(String),
    /// Nothing ever changes it (an upload, a published file's revision).
    Nothing,
}

impl Feed {
    /// The feed of `named`; `encode` percent-encodes one path segment for a route. `None`
    /// when the resource needs a thread and there is none.
    pub fn of(
        named: &Named,
        thread: Option<&str>,
        encode: impl Fn(&str) -> String,
    ) -> Option<Feed> {
        let decoded = |raw: &str| {
            percent_encoding::percent_decode_str(raw)
                .decode_utf8_lossy()
                .into_owned()
        };
        let thread_route = |thread: &str| format!("/api/threads/{}/events", encode(thread));
        Some(match named {
            Named::Sandbox(raw) => Feed {
                route: thread_route(thread?),
                watched: Watched::Path(format!("/sandbox/{}", decoded(raw))),
            },
            Named::Space { space, path } => Feed {
                route: format!("/api/spaces/{}/events", encode(space)),
                watched: Watched::Path(decoded(path)),
            },
            Named::Published(id) => Feed {
                route: thread_route(thread?),
                watched: Watched::Published(id.clone()),
            },
            // Neither an upload nor a revision ever changes.
            Named::Upload(_) | Named::UploadPage { .. } | Named::Revision { .. } => Feed {
                route: thread_route(thread?),
                watched: Watched::Nothing,
            },
        })
    }

    /// Whether `event` is a change of the watched resource.
    pub fn concerns(&self, event: &Value) -> bool {
        match &self.watched {
            Watched::Path(path) => match event["type"].as_str() {
                Some("file_written" | "file_deleted" | "file_moved") => {
                    event["path"].as_str() == Some(path)
                        || event["destination"].as_str() == Some(path)
                }
                // An upload puts its copy in `/sandbox/user_uploads/`: a resource there may be
                // followed before the person uploads it.
                Some("upload") => event["upload"]["sandboxPath"].as_str() == Some(path),
                _ => false,
            },
            Watched::Published(id) => {
                event["type"] == "file_published" && event["file"]["id"].as_str() == Some(id)
            }
            Watched::Nothing => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn feed(uri: &str) -> Feed {
        Feed::of(&Named::parse(uri).unwrap(), Some("t1"), str::to_owned).unwrap()
    }

    #[test]
    fn each_resource_is_told_by_its_own_events() {
        let report = feed("ferry://sandbox/outputs/my%20report.md");
        assert_eq!(report.route, "/api/threads/t1/events");
        let written = json!({"type": "file_written", "path": "/sandbox/outputs/my report.md"});
        assert!(report.concerns(&written));
        let moved_in = json!({"type": "file_moved", "path": "/sandbox/a.md", "destination": "/sandbox/outputs/my report.md"});
        assert!(report.concerns(&moved_in));
        assert!(
            !report.concerns(&json!({"type": "message", "path": "/sandbox/outputs/my report.md"}))
        );
        assert!(
            !report.concerns(&json!({"type": "file_written", "path": "/sandbox/outputs/other.md"}))
        );

        let note = feed("ferry://spaces/notes/ideas/a.md");
        assert_eq!(note.route, "/api/spaces/notes/events");
        assert!(note.concerns(&json!({"type": "file_deleted", "path": "ideas/a.md"})));

        let card = feed("ferry://published/p1");
        assert!(card.concerns(&json!({"type": "file_published", "file": {"id": "p1"}})));
        assert!(!card.concerns(&json!({"type": "file_published", "file": {"id": "p2"}})));
        assert!(!feed("ferry://uploads/u1").concerns(&json!({"type": "upload"})));
        // A file of user_uploads/ followed before it was uploaded is told when it arrives.
        let arriving = feed("ferry://sandbox/user_uploads/new.csv");
        assert!(arriving.concerns(
            &json!({"type": "upload", "upload": {"sandboxPath": "/sandbox/user_uploads/new.csv"}})
        ));
        assert!(!arriving.concerns(&json!({"type": "upload", "upload": {"sandboxPath": "/sandbox/user_uploads/new (2).csv"}})));
        assert_eq!(
            Feed::of(
                &Named::parse("ferry://sandbox/a").unwrap(),
                None,
                str::to_owned
            ),
            None
        );
    }
}
