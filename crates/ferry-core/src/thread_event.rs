//! The events of a thread's channel as one type: what every event carries ([`EventHead`])
//! and, by its `type`, its own fields ([`EventKind`]).
//!
//! The server builds every event it stores from these declarations, the OpenAPI document
//! describes [`ThreadEvent`] from them, and a client in Rust (the MCP tools, a webhook's
//! payload) reads events back into them, so what is read cannot drift from what is sent.

use serde::de::Error as _;
use serde::ser::{Error as _, SerializeMap};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::agent_files::Encoding;
use crate::change::{ChangeKind, FileChange};
use crate::error_code::ErrorCode;
use crate::file_views::{AttachmentView, PublishedView, UploadView};

/// One event of a thread: the common fields, then its type's own. Serialized with `id` and
/// `type` first and the type's own fields last, in the documented order.
#[derive(Debug, Clone)]
pub struct ThreadEvent {
    pub head: EventHead,
    pub kind: EventKind,
}

/// The fields every event of a thread has.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct EventHead {
    /// Its number in the thread: 1, 2, 3… without gaps.
    pub id: i64,
    pub role: EventRole,
    /// For agent events, the agent token's `agent` claim (or `agent`); user events name the
    /// thread's agent, `agent`.
    pub agent_id: String,
    /// The thread's id.
    pub session_id: String,
    /// Text, or null.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub content: Option<String>,
    /// When it was stored: RFC 3339 in UTC with milliseconds.
    pub timestamp: String,
}

/// Who an event speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum EventRole {
    User,
    Agent,
}

/// What happened, by the event's `type`, with that type's own fields.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// A message (`POST …/messages`, or a say-mode reply).
    Message {
        /// Uploads with their notes, on a user message that named `uploadIds`.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        uploads: Vec<UploadView>,
        /// Attachments, on the last message of a say-mode reply.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files: Vec<AttachmentView>,
    },
    /// A file the user uploaded.
    Upload { upload: UploadView },
    /// A small text file sent by `send_file`.
    FileSend {
        #[serde(rename = "fileContents")]
        file_contents: FileContents,
    },
    /// A publish started.
    FilePublishing(PublishAttempt),
    /// A publish ended with a new revision.
    FilePublished(PublishSucceeded),
    /// A publish failed.
    FilePublishFailed(PublishFailed),
    /// A sandbox file written through ferry.
    FileWritten(FileChange),
    /// A sandbox file removed through ferry (one event per file of a removed folder).
    FileDeleted(FileChange),
    /// A sandbox file moved through ferry (one event per file of a moved folder).
    FileMoved(FileChange),
    /// A command the agent ran in the sandbox (`execute`), once it ended.
    CommandExecuted(CommandExecuted),
}

/// A command that ran, as the person is shown it: what ran, how it ended, and its output
/// within the event's size.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CommandExecuted {
    /// The command, whole up to 4 KiB, else cut with `…`.
    pub command: String,
    /// The folder it ran in, e.g. `/sandbox/workspace`.
    pub cwd: String,
    /// `sh`'s exit status; null when a signal or the timeout ended it.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    /// Every byte it wrote to its output.
    pub output_bytes: u64,
    pub timed_out: bool,
    /// Its output (standard output and standard error as written): whole up to 8 KiB, else
    /// its head and tail around a line saying how much was left out.
    pub output: String,
    /// Whether `output` leaves some of it out.
    pub output_truncated: bool,
    /// Why ferry stopped it, when it did: `timeout`, `memory` or `disk`.
    #[cfg_attr(feature = "openapi", schema(required = true))]
    pub stopped_by: Option<StopReason>,
}

/// Why ferry stopped a command before it ended by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum StopReason {
    /// Its wall time ran out.
    Timeout,
    /// A process of it used more memory than a command may.
    Memory,
    /// The sandbox came to hold more than commands may leave in it.
    Disk,
}

/// The file a `file_send` event carries.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FileContents {
    pub filename: String,
    pub content: String,
    pub encoding: Encoding,
    pub mime_type: String,
    pub size_bytes: u64,
}

/// Which publish an event belongs to: its id, the display name and the path the agent asked
/// for.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PublishAttempt {
    #[serde(rename = "publishId")]
    pub publish_id: String,
    pub display_name: String,
    pub file_path: String,
}

/// A publish's good end: the attempt and the revision it made.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PublishSucceeded {
    #[serde(flatten)]
    pub attempt: PublishAttempt,
    pub file: PublishedView,
}

/// A publish's failure: the attempt and the error's envelope.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PublishFailed {
    #[serde(flatten)]
    pub attempt: PublishAttempt,
    pub error: EventError,
}

/// An error as the envelope states it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EventError {
    pub code: ErrorCode,
    pub message: String,
}

impl EventKind {
    /// The event of a sandbox change.
    pub fn sandbox(kind: ChangeKind, change: FileChange) -> EventKind {
        match kind {
            ChangeKind::FileWritten => EventKind::FileWritten(change),
            ChangeKind::FileDeleted => EventKind::FileDeleted(change),
            ChangeKind::FileMoved => EventKind::FileMoved(change),
        }
    }
}

impl ThreadEvent {
    /// The event's JSON, as it is stored and sent.
    pub fn to_json(&self) -> String {
        // Serializing views and strings into a String cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The event's `type`.
    pub fn type_name(&self) -> &'static str {
        match self.kind {
            EventKind::Message { .. } => "message",
            EventKind::Upload { .. } => "upload",
            EventKind::FileSend { .. } => "file_send",
            EventKind::FilePublishing(_) => "file_publishing",
            EventKind::FilePublished(_) => "file_published",
            EventKind::FilePublishFailed(_) => "file_publish_failed",
            EventKind::FileWritten(_) => "file_written",
            EventKind::FileDeleted(_) => "file_deleted",
            EventKind::FileMoved(_) => "file_moved",
            EventKind::CommandExecuted(_) => "command_executed",
        }
    }
}

impl Serialize for ThreadEvent {
    /// `id` and `type` first, then the rest of the head, then the type's own fields: the order
    /// the reference promises, which a derived flatten cannot give (it writes an internally
    /// tagged enum's tag beside its fields).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let head = object(&self.head).map_err(S::Error::custom)?;
        let own = object(&self.kind).map_err(S::Error::custom)?;
        let mut map = serializer.serialize_map(Some(head.len() + own.len()))?;
        for (name, value) in &head {
            map.serialize_entry(name, value)?;
            if name == "id" {
                map.serialize_entry("type", self.type_name())?;
            }
        }
        for (name, value) in own.iter().filter(|(name, _)| *name != "type") {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

fn object(
    value: &impl Serialize,
) -> serde_json::Result<serde_json::Map<String, serde_json::Value>> {
    match serde_json::to_value(value)? {
        serde_json::Value::Object(map) => Ok(map),
        _ => Err(<serde_json::Error as serde::ser::Error>::custom(
            "an event part is not an object",
        )),
    }
}

impl<'de> Deserialize<'de> for ThreadEvent {
    /// The head's fields and the kind's are read from the one object the event is: each part
    /// takes its own names and leaves the other's.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Ok(ThreadEvent {
            head: EventHead::deserialize(&value).map_err(D::Error::custom)?,
            kind: EventKind::deserialize(&value).map_err(D::Error::custom)?,
        })
    }
}

/// The OpenAPI schema of an event: its head and one of the kinds.
#[cfg(feature = "openapi")]
mod schema {
    use utoipa::openapi::schema::{AllOfBuilder, Schema};
    use utoipa::openapi::{Ref, RefOr};
    use utoipa::{PartialSchema, ToSchema};

    use super::{EventHead, EventKind, ThreadEvent};

    impl PartialSchema for ThreadEvent {
        /// Every event is its head and one of the kinds.
        fn schema() -> RefOr<Schema> {
            AllOfBuilder::new()
                .item(Ref::from_schema_name(EventHead::name()))
                .item(Ref::from_schema_name(EventKind::name()))
                .description(Some(
                    "An event of a thread's channel: the common fields, then its type's own",
                ))
                .into()
        }
    }

    impl ToSchema for ThreadEvent {
        fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
            schemas.push((EventHead::name().into(), EventHead::schema()));
            EventHead::schemas(schemas);
            schemas.push((EventKind::name().into(), EventKind::schema()));
            EventKind::schemas(schemas);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::door::Door;

    fn head() -> EventHead {
        EventHead {
            id: 7,
            role: EventRole::Agent,
            agent_id: "bot".into(),
            session_id: "t1".into(),
            content: None,
            timestamp: "1970-01-01T00:00:00.000Z".into(),
        }
    }

    #[test]
    fn the_common_fields_come_first_with_the_type_second() {
        let event = ThreadEvent {
            head: head(),
            kind: EventKind::FileMoved(FileChange {
                path: "/sandbox/a.txt".into(),
                destination: Some("/sandbox/b.txt".into()),
                etag: None,
                size: None,
                door: Door::Mcp,
            }),
        };
        let json = event.to_json();
        let names: Vec<String> = serde_json::from_str::<serde_json::Map<_, _>>(&json)
            .unwrap()
            .keys()
            .cloned()
            .collect();
        // The head (`id`, then `type`, then the rest) comes first, the change's fields last.
        assert_eq!(names[..2], ["id", "type"]);
        assert_eq!(names[names.len() - 3..], ["path", "destination", "door"]);
        assert!(json.contains(r#""type":"file_moved""#), "{json}");
        assert!(json.contains(r#""door":"mcp""#), "{json}");
        assert!(json.contains(r#""content":null"#), "{json}");
    }

    #[test]
    fn a_publish_event_carries_its_attempt_beside_its_own_fields() {
        let attempt = PublishAttempt {
            publish_id: "p1".into(),
            display_name: "Report".into(),
            file_path: "/sandbox/r.md".into(),
        };
        let event = ThreadEvent {
            head: head(),
            kind: EventKind::FilePublishFailed(PublishFailed {
                attempt,
                error: EventError {
                    code: ErrorCode::NotFound,
                    message: "File not found".into(),
                },
            }),
        };
        let value: serde_json::Value = serde_json::from_str(&event.to_json()).unwrap();
        assert_eq!(value["type"], "file_publish_failed");
        assert_eq!(value["publishId"], "p1");
        assert_eq!(value["display_name"], "Report");
        assert_eq!(value["error"]["code"], "NOT_FOUND");
        assert_eq!(value["role"], "agent");
        assert_eq!(value["agentId"], "bot");
    }

    /// One of each kind, as the server sends them.
    fn every_kind() -> Vec<EventKind> {
        let change = FileChange {
            path: "/sandbox/a.txt".into(),
            destination: None,
            etag: None,
            size: None,
            door: Door::Http,
        };
        let attempt = PublishAttempt {
            publish_id: "p1".into(),
            display_name: "Report".into(),
            file_path: "/sandbox/r.md".into(),
        };
        vec![
            EventKind::Message {
                uploads: Vec::new(),
                files: Vec::new(),
            },
            EventKind::FileSend {
                file_contents: FileContents {
                    filename: "a.txt".into(),
                    content: "hi".into(),
                    encoding: Encoding::Utf8,
                    mime_type: "text/plain".into(),
                    size_bytes: 2,
                },
            },
            EventKind::FilePublishing(attempt.clone()),
            EventKind::FilePublishFailed(PublishFailed {
                attempt,
                error: EventError {
                    code: ErrorCode::NotFound,
                    message: "gone".into(),
                },
            }),
            EventKind::FileWritten(change.clone()),
            EventKind::FileDeleted(change.clone()),
            EventKind::FileMoved(change),
            EventKind::CommandExecuted(CommandExecuted {
                command: "ls".into(),
                cwd: "/sandbox/workspace".into(),
                exit_code: None,
                duration_ms: 1,
                output_bytes: 0,
                timed_out: true,
                output: String::new(),
                output_truncated: false,
                stopped_by: Some(StopReason::Timeout),
            }),
        ]
    }

    #[test]
    fn every_kind_reads_back_as_it_was_sent() {
        for kind in every_kind() {
            // The enum's own serde tag is what the OpenAPI schema names and the store records.
            let tag = serde_json::to_value(&kind).unwrap()["type"].clone();
            let event = ThreadEvent { head: head(), kind };
            assert_eq!(tag, event.type_name());
            let sent = event.to_json();
            let read: ThreadEvent = serde_json::from_str(&sent).unwrap();
            assert_eq!(read.to_json(), sent);
            assert_eq!(read.head.id, 7);
        }
    }

    #[test]
    fn a_message_without_uploads_or_files_reads_back_with_none() {
        let sent = r#"{"id":1,"type":"message","role":"user","agentId":"agent","sessionId":"t1","content":"hi","timestamp":"1970-01-01T00:00:00.000Z"}"#;
        let read: ThreadEvent = serde_json::from_str(sent).unwrap();
        assert!(
            matches!(read.kind, EventKind::Message { ref uploads, ref files } if uploads.is_empty() && files.is_empty())
        );
        assert_eq!(read.head.content.as_deref(), Some("hi"));
        assert!(serde_json::from_str::<ThreadEvent>(r#"{"id":1,"type":"nothing"}"#).is_err());
    }
}
