//! Which stored events tell that a resource changed (docs/mcp.md, "Resources"): a subscribed
//! resource is followed by reading the feed its changes are stored on — the space's change
//! feed, or the thread's channel for sandbox files and published files — from where it stood
//! when the subscription began. The feeds are the server's record of every change, through
//! every door and on every node, so nothing here depends on which node a change was made on.
//!
//! Events are read as the server's own types: a thread's as `ferry_core::thread_event`'s
//! [`ThreadEvent`], a space's as `ferry_core::change`'s [`SpaceEvent`].

use ferry_core::change::{FileChange, SpaceEvent};
use ferry_core::thread_event::{EventKind, ThreadEvent};
use serde::Deserialize;
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
    /// A path in a thread's sandbox (`/sandbox/…`).
    SandboxPath(String),
    /// A path within a space, on the space's feed.
    SpacePath(String),
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
                watched: Watched::SandboxPath(format!("/sandbox/{}", decoded(raw))),
            },
            Named::Space { space, path } => Feed {
                route: format!("/api/spaces/{}/events", encode(space)),
                watched: Watched::SpacePath(decoded(path)),
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
    pub fn concerns(&self, event: &FeedEvent) -> bool {
        match (&self.watched, event) {
            (Watched::SpacePath(path), FeedEvent::Space(event)) => touches(&event.change, path),
            (Watched::SandboxPath(path), FeedEvent::Thread(event)) => match &event.kind {
                EventKind::FileWritten(change)
                | EventKind::FileDeleted(change)
                | EventKind::FileMoved(change) => touches(change, path),
                // An upload puts its copy in `/sandbox/user_uploads/`: a resource there may be
                // followed before the person uploads it.
                EventKind::Upload { upload } => upload.sandbox_path == *path,
                _ => false,
            },
            (Watched::Published(id), FeedEvent::Thread(event)) => matches!(
                &event.kind,
                EventKind::FilePublished(published) if published.file.id == *id
            ),
            _ => false,
        }
    }
}

/// One event of a followed feed, read once however many resources it is checked against: a
/// thread's, a space's, or one this version cannot read (of a newer server, say), which
/// concerns nothing it follows.
#[derive(Debug)]
pub enum FeedEvent {
    Thread(Box<ThreadEvent>),
    Space(SpaceEvent),
    Unreadable,
}

impl FeedEvent {
    pub fn read(event: &Value) -> FeedEvent {
        if let Ok(event) = ThreadEvent::deserialize(event) {
            FeedEvent::Thread(Box::new(event))
        } else if let Ok(event) = SpaceEvent::deserialize(event) {
            FeedEvent::Space(event)
        } else {
            FeedEvent::Unreadable
        }
    }
}

/// Whether a change is to `path`, or moved a file there.
fn touches(change: &FileChange, path: &str) -> bool {
    change.path == path || change.destination.as_deref() == Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Whether `event`, read as a follower reads it, concerns `feed`'s resource.
    fn told(feed: &Feed, event: &Value) -> bool {
        feed.concerns(&FeedEvent::read(event))
    }

    fn feed(uri: &str) -> Feed {
        Feed::of(&Named::parse(uri).unwrap(), Some("t1"), str::to_owned).unwrap()
    }

    /// An event of thread `t1` as the server sends it: the head, then `own`'s fields.
    fn event(own: Value) -> Value {
        let mut event = json!({
            "id": 1, "role": "agent", "agentId": "agent", "sessionId": "t1",
            "content": null, "timestamp": "1970-01-01T00:00:00.000Z",
        });
        event
            .as_object_mut()
            .unwrap()
            .extend(own.as_object().unwrap().clone());
        event
    }

    fn change(kind: &str, path: &str) -> Value {
        event(json!({"type": kind, "path": path, "door": "http"}))
    }

    fn published(id: &str) -> Value {
        let file = ferry_core::file_views::PublishedView {
            success: true,
            id: id.into(),
            display_name: "Report".into(),
            description: String::new(),
            filename: "r.md".into(),
            file_type: ".md".into(),
            mime_type: "text/markdown".into(),
            file_size: 1,
            storage_path: "s".into(),
            sandbox_path: "/sandbox/r.md".into(),
            revision: 1,
            published_at: "1970-01-01T00:00:00.000Z".into(),
            preview_kind: "html".into(),
        };
        event(json!({
            "type": "file_published", "publishId": "x", "display_name": "Report",
            "file_path": "/sandbox/r.md", "file": file,
        }))
    }

    fn upload(sandbox_path: &str) -> Value {
        let upload = ferry_core::file_views::UploadView {
            id: "u1".into(),
            file_name: "new.csv".into(),
            file_type: ".csv".into(),
            size: 1,
            sha256: String::new(),
            kind: "document".into(),
            preview_kind: "html".into(),
            storage_path: "s".into(),
            sandbox_path: sandbox_path.into(),
            preview: None,
            preview_error: None,
            width: None,
            height: None,
            attachment_xml: String::new(),
            created_at: "1970-01-01T00:00:00.000Z".into(),
        };
        event(json!({"type": "upload", "upload": upload}))
    }

    #[test]
    fn each_resource_is_told_by_its_own_events() {
        let report = feed("ferry://sandbox/outputs/my%20report.md");
        assert_eq!(report.route, "/api/threads/t1/events");
        assert!(told(
            &report,
            &change("file_written", "/sandbox/outputs/my report.md")
        ));
        let mut moved_in = change("file_moved", "/sandbox/a.md");
        moved_in["destination"] = "/sandbox/outputs/my report.md".into();
        assert!(told(&report, &moved_in));
        assert!(!told(
            &report,
            &event(json!({"type": "message", "path": "/sandbox/outputs/my report.md"}))
        ));
        assert!(!told(
            &report,
            &change("file_written", "/sandbox/outputs/other.md")
        ));
        // A change without the fields every event has is not one the server sent.
        assert!(!told(
            &report,
            &json!({"type": "file_written", "path": "/sandbox/outputs/my report.md"})
        ));

        let note = feed("ferry://spaces/notes/ideas/a.md");
        assert_eq!(note.route, "/api/spaces/notes/events");
        let deleted = json!({
            "id": 3, "type": "file_deleted", "space": "notes", "path": "ideas/a.md",
            "door": "s3", "createdAt": "1970-01-01T00:00:00.000Z",
        });
        assert!(told(&note, &deleted));

        let card = feed("ferry://published/p1");
        assert!(told(&card, &published("p1")));
        assert!(!told(&card, &published("p2")));
        assert!(!told(
            &feed("ferry://uploads/u1"),
            &upload("/sandbox/user_uploads/new.csv")
        ));
        // A file of user_uploads/ followed before it was uploaded is told when it arrives.
        let arriving = feed("ferry://sandbox/user_uploads/new.csv");
        assert!(told(&arriving, &upload("/sandbox/user_uploads/new.csv")));
        assert!(!told(
            &arriving,
            &upload("/sandbox/user_uploads/new (2).csv")
        ));
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
