//! Which door a change came through: the HTTP API, MCP (whose tools call the HTTP API, and say
//! so with the `X-Ferry-Door: mcp` header), or the S3 protocol. Change feeds report it, so a
//! watcher can tell an agent's edit from a sync client's upload.

/// The door a change came through: `http`, `mcp`, `s3`, or `command` for a command's changes.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum Door {
    #[default]
    Http,
    Mcp,
    S3,
    /// A command run in the sandbox (`execute`): what it created, changed or removed.
    Command,
}

/// The header with which MCP's tools mark the HTTP requests they make. It only labels a
/// change in feeds; no rule depends on it.
pub const DOOR_HEADER: &str = "x-ferry-door";

impl Door {
    /// `http`, `mcp`, `s3` or `command`.
    pub fn as_str(self) -> &'static str {
        match self {
            Door::Http => "http",
            Door::Mcp => "mcp",
            Door::S3 => "s3",
            Door::Command => "command",
        }
    }

    /// The door named `name`, as [`Door::as_str`] writes it.
    pub fn parse(name: &str) -> Option<Door> {
        [Door::Http, Door::Mcp, Door::S3, Door::Command]
            .into_iter()
            .find(|door| door.as_str() == name)
    }

    /// The door of an HTTP request, from its [`DOOR_HEADER`] (absent or unknown: `http`).
    pub fn of_header(value: Option<&str>) -> Door {
        match value.map(str::trim) {
            Some(v) if v.eq_ignore_ascii_case("mcp") => Door::Mcp,
            _ => Door::Http,
        }
    }
}
