//! Per-user spaces (docs/reference/spaces.md): make, list and remove spaces; list, read,
//! create-or-overwrite and delete files.
//!
//! A space belongs to the user a principal speaks for ([`Principal::space_owner`]); nobody
//! reaches another user's spaces, so there is no "not yours" answer here, only "not found".

use bytes::Bytes;
use ferry_core::door::Door;
use ferry_core::{SpaceName, ValidPath, content_type};
pub use ferry_store::space_names::Removal;
use ferry_store::{Spooled, StoredBlob};
// The records a door reads and writes spaces with: a door names them from here.
use ferry_core::write::{FileMeta, WriteCondition};
pub use ferry_store::spaces::{
    ListCursor, ListPage, ListQuery, SpaceEntry, SpaceFile, SpaceSummary,
};
use futures::Stream;

use crate::access::principal::Principal;
use crate::app::App;
use crate::body::Incoming;
use crate::error::{Error, Result};

/// The caller's spaces, empty ones included, sorted by name.
pub async fn list_spaces(app: &App, principal: &Principal) -> Result<Vec<SpaceSummary>> {
    let owner = principal.space_owner()?;
    Ok(app.db.spaces_of(owner).await?)
}

/// Whether the caller has a space of this name (a file written into a space makes it).
pub async fn exists(app: &App, principal: &Principal, space: &SpaceName) -> Result<bool> {
    let owner = principal.space_owner()?;
    Ok(app.db.space_exists(owner, space).await?)
}

/// Makes an empty space; answers whether it is new (an existing one is left as it is).
pub async fn create(app: &App, principal: &Principal, space: &SpaceName) -> Result<bool> {
    let owner = principal.space_owner()?;
    Ok(app.db.space_create(owner, space).await?)
}

/// Removes a space if it holds no file (its empty folders go with it); says what it did.
pub async fn remove(app: &App, principal: &Principal, space: &SpaceName) -> Result<Removal> {
    let owner = principal.space_owner()?;
    Ok(app.db.space_remove(owner, space).await?)
}

/// Removes a space with every file and folder in it (the web UI's "Delete space"). Files
/// written into it meanwhile are removed too, up to a few rounds; a space that keeps filling
/// faster than that is left, answered as busy.
pub async fn remove_with_files(
    app: &App,
    principal: &Principal,
    space: &SpaceName,
    door: Door,
) -> Result<()> {
    const ROUNDS: usize = 3;
    let owner = principal.space_owner()?;
    if !app.db.space_exists(owner, space).await? {
        return Err(Error::not_found(format!("no space '{space}'")));
    }
    let feed = ferry_store::space_events::channel_key(owner, space);
    for _ in 0..ROUNDS {
        let removed = app.db.space_remove_tree(owner, space, None, door).await?;
        if !removed.is_empty() {
            app.events.poke(&feed);
        }
        match app.db.space_remove(owner, space).await? {
            Removal::Removed | Removal::Missing => return Ok(()),
            Removal::NotEmpty => continue,
        }
    }
    Err(Error::Busy(format!(
        "files keep being written into '{space}'; it was emptied {ROUNDS} times and is not removed"
    )))
}

/// Makes the folder `path` (and the folders above it, and the space) so that it is listed
/// while empty; answers whether it is new. A file in its way — at `path` or at a folder above
/// it — is [`Error::AlreadyExists`].
pub async fn make_folder(
    app: &App,
    principal: &Principal,
    space: &SpaceName,
    path: &ValidPath,
) -> Result<bool> {
    use ferry_store::space_moves::Found;
    let owner = principal.space_owner()?;
    for dir in path.ancestors().chain(std::iter::once(path.as_str())) {
        let dir = ValidPath::parse(dir)?;
        if let Found::File(_) = app.db.space_find(owner, space, &dir).await? {
            return Err(Error::AlreadyExists(format!(
                "a file is at '{dir}', where the folder '{path}' would go"
            )));
        }
    }
    let new = !matches!(app.db.space_find(owner, space, path).await?, Found::Folder);
    app.db.space_mkdirs(owner, space, &[path.as_str()]).await?;
    Ok(new)
}

/// One page of a space's listing; a missing space or folder lists nothing.
pub async fn list(
    app: &App,
    principal: &Principal,
    space: &SpaceName,
    query: &ListQuery<'_>,
) -> Result<ListPage> {
    let owner = principal.space_owner()?;
    Ok(app.db.space_list(owner, space, query).await?)
}

/// One file's record (its bytes are the blob it names).
pub async fn file(
    app: &App,
    principal: &Principal,
    space: &SpaceName,
    path: &ValidPath,
) -> Result<SpaceFile> {
    let owner = principal.space_owner()?;
    app.db
        .space_file(owner, space, path)
        .await?
        .ok_or_else(|| Error::not_found(format!("no file at '{path}'")))
}

/// What a successful write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Whether the path was free before.
    pub created: bool,
    pub file: SpaceFile,
}

/// Creates or overwrites one file with `body`, if `condition` holds. The content type must be
/// valid ([`ferry_core::content_type::check`]); a declared length over the space limit is
/// refused before anything is read, and the body is streamed to the blob store and refused
/// once it passes the limit or its declared length; the database decides the condition
/// atomically with the write, so of racing conditional writes exactly one wins.
pub async fn write<S, E>(
    app: &App,
    principal: &Principal,
    space: &SpaceName,
    path: &ValidPath,
    meta: FileMeta<'_>,
    condition: &WriteCondition,
    body: Incoming<S>,
) -> Result<Written>
where
    S: Stream<Item = std::result::Result<Bytes, E>>,
    E: std::fmt::Display,
{
    let owner = principal.space_owner()?;
    let meta = checked(meta)?;
    let body = body.admit(app.limits.space_max_bytes)?;
    if *condition == WriteCondition::CreateOnly
        && app.db.space_file(owner, space, path).await?.is_some()
    {
        // Refuse before reading the body; the database still has the final word below.
        return Err(already_exists(path));
    }
    let blob = app.blobs.write(body, app.limits.space_max_bytes).await?;
    put(app, owner, space, path, blob, meta, condition).await
}

/// Creates or overwrites one file with bytes spooled already (a finished resumable upload),
/// under the rules of [`write`].
pub async fn write_spooled(
    app: &App,
    principal: &Principal,
    space: &SpaceName,
    path: &ValidPath,
    meta: FileMeta<'_>,
    condition: &WriteCondition,
    spooled: Spooled,
) -> Result<Written> {
    let owner = principal.space_owner()?;
    let meta = checked(meta)?;
    let limit = app.limits.space_max_bytes;
    if spooled.size() > limit {
        return Err(Error::too_large(limit));
    }
    let blob = app.blobs.commit(spooled).await?;
    put(app, owner, space, path, blob, meta, condition).await
}

/// A write's metadata with its content type checked ([`ferry_core::content_type::check`]).
fn checked(meta: FileMeta<'_>) -> Result<FileMeta<'_>> {
    let content_type = content_type::check(meta.content_type)?;
    Ok(FileMeta {
        content_type,
        ..meta
    })
}

fn already_exists(path: &ValidPath) -> Error {
    Error::AlreadyExists(format!("'{path}' already exists (If-None-Match: *)"))
}

/// Points `path` at a new blob, if `condition` holds (decided by the database, atomically with
/// the write); a blob that ends up unnamed is removed.
async fn put(
    app: &App,
    owner: &str,
    space: &SpaceName,
    path: &ValidPath,
    blob: StoredBlob,
    meta: FileMeta<'_>,
    condition: &WriteCondition,
) -> Result<Written> {
    let feed = ferry_store::space_events::channel_key(owner, space);
    match app
        .db
        .space_put(owner, space, path, &blob, meta, condition)
        .await
    {
        Ok(outcome) => {
            app.events.poke(&feed);
            Ok(Written {
                created: outcome.created,
                file: outcome.file,
            })
        }
        Err(e) => {
            // Nothing points at the new blob; remove it now rather than at the next sweep.
            let _ = app.blobs.delete(&blob.key).await;
            Err(match e {
                ferry_store::Error::AlreadyExists => already_exists(path),
                ferry_store::Error::PreconditionFailed => Error::PreconditionFailed(format!(
                    "the current ETag of '{path}' does not match If-Match"
                )),
                other => other.into(),
            })
        }
    }
}

/// Removes one file, if `if_match` (the ETags it must still have; `*` for any) holds. Folders
/// left empty disappear from listings with it. Answers the removed file.
pub async fn delete(
    app: &App,
    principal: &Principal,
    space: &SpaceName,
    path: &ValidPath,
    if_match: Option<&[String]>,
    door: Door,
) -> Result<SpaceFile> {
    let owner = principal.space_owner()?;
    let removed = app
        .db
        .space_delete(owner, space, path, if_match, door)
        .await
        .map_err(|e| match e {
            ferry_store::Error::NotFound => Error::not_found(format!("no file at '{path}'")),
            ferry_store::Error::PreconditionFailed => Error::PreconditionFailed(format!(
                "the current ETag of '{path}' does not match If-Match"
            )),
            other => other.into(),
        })?;
    app.events
        .poke(&ferry_store::space_events::channel_key(owner, space));
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, SPACE_LIMIT, body, user};

    fn at(path: &str) -> (SpaceName, ValidPath) {
        (
            SpaceName::parse("notes").unwrap(),
            ValidPath::parse(path).unwrap(),
        )
    }

    async fn put(
        app: &App,
        who: &Principal,
        path: &str,
        content_type: &str,
        condition: &WriteCondition,
        bytes: &[u8],
    ) -> Result<Written> {
        let (space, path) = at(path);
        let meta = FileMeta::typed(content_type);
        write(app, who, &space, &path, meta, condition, body(bytes)).await
    }

    #[tokio::test]
    async fn a_write_is_created_then_overwritten_and_read_back() {
        let (app, _dir) = testing::app().await;
        let alice = user("alice");
        let first = put(
            &app,
            &alice,
            "a.md",
            "text/markdown",
            &WriteCondition::None,
            b"one",
        )
        .await
        .unwrap();
        assert!(first.created);
        let again = put(
            &app,
            &alice,
            "a.md",
            "text/markdown",
            &WriteCondition::None,
            b"two",
        )
        .await
        .unwrap();
        assert!(!again.created);
        let (space, path) = at("a.md");
        let read = file(&app, &alice, &space, &path).await.unwrap();
        assert_eq!((read.size, read.sha256), (3, again.file.sha256));
        // Another user's spaces are their own: nothing of Alice's is there.
        let bob = file(&app, &user("bob"), &space, &path).await;
        assert!(matches!(bob, Err(Error::NotFound(_))));
    }

    #[tokio::test]
    async fn conditions_decide_with_the_write() {
        let (app, _dir) = testing::app().await;
        let alice = user("alice");
        let made = put(
            &app,
            &alice,
            "c.md",
            "text/plain",
            &WriteCondition::CreateOnly,
            b"x",
        )
        .await
        .unwrap();
        let taken = put(
            &app,
            &alice,
            "c.md",
            "text/plain",
            &WriteCondition::CreateOnly,
            b"y",
        )
        .await;
        assert!(matches!(taken, Err(Error::AlreadyExists(_))), "{taken:?}");
        let stale = WriteCondition::IfMatch(vec!["0".repeat(64)]);
        let refused = put(&app, &alice, "c.md", "text/plain", &stale, b"y").await;
        assert!(
            matches!(refused, Err(Error::PreconditionFailed(_))),
            "{refused:?}"
        );
        let current = WriteCondition::IfMatch(vec![made.file.sha256.clone()]);
        put(&app, &alice, "c.md", "text/plain", &current, b"y")
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn a_bad_content_type_or_length_stores_nothing() {
        let (app, _dir) = testing::app().await;
        let alice = user("alice");
        for bad in ["foo", "text/html, text/plain", "<b>"] {
            let refused = put(&app, &alice, "t.txt", bad, &WriteCondition::None, b"x").await;
            assert!(
                matches!(refused, Err(Error::UnsupportedMediaType(_))),
                "{bad}"
            );
        }
        let big = vec![0u8; SPACE_LIMIT as usize + 1];
        let refused = put(
            &app,
            &alice,
            "t.txt",
            "text/plain",
            &WriteCondition::None,
            &big,
        )
        .await;
        assert!(matches!(refused, Err(Error::TooLarge(_))), "{refused:?}");
        // A body longer than it declared.
        let (space, path) = at("t.txt");
        let lying = crate::body::Incoming::new(
            futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from_static(b"0123456789"))]),
            Some(4),
        );
        let refused = write(
            &app,
            &alice,
            &space,
            &path,
            FileMeta::typed("text/plain"),
            &WriteCondition::None,
            lying,
        )
        .await;
        assert!(
            matches!(refused, Err(Error::InvalidRequest(_))),
            "{refused:?}"
        );
        let none = file(&app, &alice, &space, &path).await;
        assert!(matches!(none, Err(Error::NotFound(_))));
    }

    #[tokio::test]
    async fn a_service_token_without_a_user_has_no_spaces() {
        let (app, _dir) = testing::app().await;
        let service = Principal::Service { sub: None };
        let refused = put(
            &app,
            &service,
            "a.md",
            "text/plain",
            &WriteCondition::None,
            b"x",
        )
        .await;
        assert!(matches!(refused, Err(Error::Forbidden(_))), "{refused:?}");
    }
}
