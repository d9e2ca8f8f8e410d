//! File changes as the change feeds report them: a thread's sandbox changes (events of the
//! thread) and a space's changes (events of the space's feed) use the same three kinds.

use serde::{Deserialize, Serialize};

use crate::door::Door;

/// What happened to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum ChangeKind {
    FileWritten,
    FileDeleted,
    FileMoved,
}

impl ChangeKind {
    /// `file_written`, `file_deleted` or `file_moved`: the event's `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::FileWritten => "file_written",
            ChangeKind::FileDeleted => "file_deleted",
            ChangeKind::FileMoved => "file_moved",
        }
    }

    /// The kind named `name`, as [`ChangeKind::as_str`] writes it.
    pub fn parse(name: &str) -> Option<ChangeKind> {
        [
            ChangeKind::FileWritten,
            ChangeKind::FileDeleted,
            ChangeKind::FileMoved,
        ]
        .into_iter()
        .find(|kind| kind.as_str() == name)
    }
}

/// What an event says of a changed file: in a thread's events a sandbox path (`/sandbox/…`), in
/// a space's feed a path in the space.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FileChange {
    pub path: String,
    /// Where a moved file went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destination: Option<String>,
    /// The file's quoted ETag after a write or move (in a space's feed, before a removal too).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    pub door: Door,
}

/// One event of a space's change feed, as a subscriber receives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SpaceEvent {
    /// Its number in the space: 1, 2, 3… without gaps.
    pub id: i64,
    #[serde(rename = "type")]
    pub kind: ChangeKind,
    pub space: String,
    #[serde(flatten)]
    pub change: FileChange,
    /// When the change was stored: RFC 3339 in UTC with milliseconds.
    pub created_at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_parses_back_from_its_name() {
        for kind in [
            ChangeKind::FileWritten,
            ChangeKind::FileDeleted,
            ChangeKind::FileMoved,
        ] {
            assert_eq!(ChangeKind::parse(kind.as_str()), Some(kind));
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::from(kind.as_str())
            );
        }
        assert_eq!(ChangeKind::parse("file_read"), None);
    }

    #[test]
    fn a_space_event_leaves_out_what_its_change_does_not_have() {
        let event = SpaceEvent {
            id: 3,
            kind: ChangeKind::FileDeleted,
            space: "notes".into(),
            change: FileChange {
                path: "a.md".into(),
                destination: None,
                etag: None,
                size: None,
                door: Door::S3,
            },
            created_at: "1970-01-01T00:00:00.000Z".into(),
        };
        assert_eq!(
            serde_json::to_string(&event).unwrap(),
            r#"{"id":3,"type":"file_deleted","space":"notes","path":"a.md","door":"s3","createdAt":"1970-01-01T00:00:00.000Z"}"#
        );
    }
}
