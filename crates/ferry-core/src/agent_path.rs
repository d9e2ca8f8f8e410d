//! The one path space an agent's file tools work in (docs/agent-files.md): the thread's
//! sandbox under `/sandbox/…` and the user's spaces under `/spaces/{space}/…`, with a relative
//! path taken under `/sandbox/workspace/`, the agent's scratch folder.
//!
//! Each part is checked by the validator of its own place ([`ValidPath`], [`SpaceName`]), so a
//! path here is exactly as safe as the same file named through the sandbox or spaces routes.

use std::fmt;

use crate::path::WORKSPACE;
use crate::space_name::SpaceNameError;
use crate::{PathError, SpaceName, ValidPath};

/// A path of the agent's file system.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum AgentPath {
    /// `/sandbox` itself (`None`), or a file or folder below it, relative to `/sandbox/`.
    Sandbox(Option<ValidPath>),
    /// `/spaces`: the folder whose entries are the user's spaces.
    Spaces,
    /// A space itself (`path: None`), or a file or folder in it.
    Space {
        space: SpaceName,
        path: Option<ValidPath>,
    },
}

/// Why a path of the agent's file system was refused; the message of its `INVALID_PATH`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentPathError {
    #[error(
        "'{0}' is outside the agent's files: paths start with /sandbox/ or /spaces/{{space}}/ \
         (a relative path is taken under /sandbox/workspace/)"
    )]
    Outside(String),
    #[error("{0}")]
    Path(#[from] PathError),
    #[error("{0}")]
    Space(#[from] SpaceNameError),
}

impl AgentPath {
    /// Parses a path as an agent writes it. One trailing `/` is allowed (a folder).
    pub fn parse(text: &str) -> Result<AgentPath, AgentPathError> {
        let trimmed = match text.strip_suffix('/') {
            Some(rest) if !rest.is_empty() => rest,
            _ => text,
        };
        if trimmed == "/sandbox" {
            return Ok(AgentPath::Sandbox(None));
        }
        if let Some(rest) = trimmed.strip_prefix("/sandbox/") {
            return Ok(AgentPath::Sandbox(Some(ValidPath::parse(rest)?)));
        }
        if trimmed == "/spaces" {
            return Ok(AgentPath::Spaces);
        }
        if let Some(rest) = trimmed.strip_prefix("/spaces/") {
            let (space, path) = match rest.split_once('/') {
                Some((space, path)) => (space, Some(ValidPath::parse(path)?)),
                None => (rest, None),
            };
            return Ok(AgentPath::Space {
                space: SpaceName::parse(space)?,
                path,
            });
        }
        if trimmed.starts_with('/') || trimmed.is_empty() {
            return Err(AgentPathError::Outside(text.to_owned()));
        }
        Ok(AgentPath::Sandbox(Some(ValidPath::parse(&format!(
            "{WORKSPACE}/{trimmed}"
        ))?)))
    }

    /// A path below this one (`self` must be a folder); `relative` is already valid.
    pub fn join(&self, relative: &str) -> Result<AgentPath, AgentPathError> {
        AgentPath::parse(&format!("{self}/{relative}"))
    }

    /// Whether the two name the same place (the sandbox, or one space), so that one step can
    /// move between them.
    pub fn same_place(&self, other: &AgentPath) -> bool {
        match (self, other) {
            (AgentPath::Sandbox(_), AgentPath::Sandbox(_)) => true,
            (AgentPath::Space { space: a, .. }, AgentPath::Space { space: b, .. }) => a == b,
            _ => false,
        }
    }

    /// The path within its place: relative to `/sandbox/` or to the space; `None` for a root.
    pub fn within(&self) -> Option<&ValidPath> {
        match self {
            AgentPath::Sandbox(path) | AgentPath::Space { path, .. } => path.as_ref(),
            AgentPath::Spaces => None,
        }
    }

    /// The last segment of the path (the place's own name for a root).
    pub fn file_name(&self) -> &str {
        match self {
            AgentPath::Sandbox(Some(path))
            | AgentPath::Space {
                path: Some(path), ..
            } => path.file_name(),
            AgentPath::Sandbox(None) => "sandbox",
            AgentPath::Spaces => "spaces",
            AgentPath::Space { space, .. } => space.as_str(),
        }
    }
}

impl fmt::Display for AgentPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentPath::Sandbox(None) => f.write_str("/sandbox"),
            AgentPath::Sandbox(Some(path)) => write!(f, "/sandbox/{path}"),
            AgentPath::Spaces => f.write_str("/spaces"),
            AgentPath::Space { space, path: None } => write!(f, "/spaces/{space}"),
            AgentPath::Space {
                space,
                path: Some(path),
            } => write!(f, "/spaces/{space}/{path}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        AgentPath::parse(text).unwrap().to_string()
    }

    #[test]
    fn the_two_places_and_the_workspace() {
        assert_eq!(shown("/sandbox"), "/sandbox");
        assert_eq!(shown("/sandbox/"), "/sandbox");
        assert_eq!(shown("/sandbox/outputs/r.md"), "/sandbox/outputs/r.md");
        assert_eq!(shown("/sandbox/outputs/"), "/sandbox/outputs");
        assert_eq!(shown("notes/a.md"), "/sandbox/workspace/notes/a.md");
        assert_eq!(shown("/spaces"), "/spaces");
        assert_eq!(shown("/spaces/notes"), "/spaces/notes");
        assert_eq!(
            shown("/spaces/notes/ideas/a.md"),
            "/spaces/notes/ideas/a.md"
        );
    }

    #[test]
    fn every_part_is_checked_by_its_own_validator() {
        for bad in [
            "/etc/passwd",
            "/sandboxes/x",
            "",
            "/",
            "/sandbox/../etc",
            "/sandbox//x",
            "../x",
            "/spaces/.sandbox/x",
            "/spaces/a b/x",
            "/spaces/notes/../x",
            "/sandbox/a\0b",
            "/sandbox/a\\b",
        ] {
            assert!(AgentPath::parse(bad).is_err(), "{bad:?}");
        }
    }

    proptest::proptest! {
        /// Whatever text comes in, a path that parses names something in the sandbox or the
        /// spaces, shows as such, and parses back to itself.
        #[test]
        fn a_parsed_path_stays_in_its_place_and_round_trips(text in "[a-z/.\\\\ %\u{0}-\u{1f}éü]{0,40}") {
            if let Ok(path) = AgentPath::parse(&text) {
                let shown = path.to_string();
                proptest::prop_assert!(shown == "/sandbox" || shown.starts_with("/sandbox/")
                    || shown == "/spaces" || shown.starts_with("/spaces/"), "{shown}");
                proptest::prop_assert!(!shown.split('/').any(|s| s == ".." || s == "."), "{shown}");
                proptest::prop_assert_eq!(AgentPath::parse(&shown).unwrap(), path);
            }
        }
    }

    #[test]
    fn places_and_joins() {
        let a = AgentPath::parse("/spaces/notes/a").unwrap();
        let b = AgentPath::parse("/spaces/notes/b/c").unwrap();
        let c = AgentPath::parse("/spaces/other/a").unwrap();
        assert!(a.same_place(&b) && !a.same_place(&c));
        assert!(!a.same_place(&AgentPath::parse("/sandbox/a").unwrap()));
        assert_eq!(
            AgentPath::parse("/sandbox/outputs")
                .unwrap()
                .join("x/y.md")
                .unwrap()
                .to_string(),
            "/sandbox/outputs/x/y.md"
        );
    }
}
