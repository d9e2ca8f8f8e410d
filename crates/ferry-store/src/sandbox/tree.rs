//! Moving and removing whole paths of a sandbox: a file or a folder renamed in one step, a
//! folder removed with everything below it.
//!
//! On a local sandbox both happen under the commit lock (so they are ordered with the API's
//! writes) on folders reached through the jail without following symlinks: a rename is one
//! `renameat2` between two such folders, atomic for a folder as for a file, and a name that is
//! taken is never replaced unless asked (`RENAME_NOREPLACE` decides it in the kernel). In the
//! blob store they are the spaces' moves and removals ([`crate::space_moves`]).

use cap_std::fs::Dir;
use ferry_core::path::SANDBOX_LAYOUT;
use ferry_core::{SpaceName, ValidPath};

use super::{
    LocalSandbox, Sandbox, SandboxEntry, StoredSandbox, TMP_DIR, Tags, folder, jailed, listed_tag,
    lock_commits, walk,
};
use crate::Error;
use crate::space_moves::Found;

/// What a path of a sandbox names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    /// A file (or, locally, any entry that is not a folder: a symlink, a FIFO).
    File,
    Folder,
}

/// What a move did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    /// The files that moved, by their paths below the moved path (`""` for a moved file).
    pub files: Vec<String>,
    /// The moved file's ETag (unchanged by the move); `None` for a folder.
    pub etag: Option<String>,
}

/// Refuses paths no client may change: `skills/` (read-only) and the server's own folder.
pub fn changeable(path: &ValidPath) -> Result<(), Error> {
    match path.segments().next() {
        Some("skills") => Err(Error::ReadOnly),
        Some(TMP_DIR) => Err(Error::Escapes),
        _ => Ok(()),
    }
}

impl Sandbox {
    /// Whether `path` names a file, a folder, or nothing (`None`).
    pub async fn find(&self, path: &ValidPath) -> Result<Option<PathKind>, Error> {
        match self {
            Sandbox::Local(local) => local.find(path).await,
            Sandbox::Stored(stored) => stored.find(path).await,
        }
    }

    /// Moves the file or folder at `from` to `to`, making the folders on the way. A taken
    /// destination is refused ([`Error::AlreadyExists`]) unless `overwrite`, which replaces a
    /// file with a file only: a folder never replaces or merges into anything.
    pub async fn rename(
        &self,
        from: &ValidPath,
        to: &ValidPath,
        overwrite: bool,
    ) -> Result<Moved, Error> {
        changeable(from)?;
        changeable(to)?;
        match self {
            Sandbox::Local(local) => local.rename(from, to, overwrite).await,
            Sandbox::Stored(stored) => stored.rename(from, to, overwrite).await,
        }
    }

    /// Removes the folder `dir` and everything in it; answers the files that went, by their
    /// paths below `dir`. The standard folders (`outputs/`, `workspace/`, …) are made again,
    /// empty.
    pub async fn remove_tree(&self, dir: &ValidPath) -> Result<Vec<String>, Error> {
        changeable(dir)?;
        match self {
            Sandbox::Local(local) => local.remove_tree(dir).await,
            Sandbox::Stored(stored) => stored.remove_tree(dir).await,
        }
    }
}

/// The folder at `path` beneath `dir`, which must exist; no segment may be a symlink.
fn existing_folder(dir: &Dir, path: &str) -> Result<Dir, Error> {
    let mut current = dir.try_clone().map_err(jailed)?;
    for segment in path.split('/') {
        current = match cap_fs_ext::DirExt::open_dir_nofollow(&current, segment) {
            Ok(next) => next,
            Err(e) => {
                return Err(match current.symlink_metadata(segment) {
                    Ok(meta) if meta.file_type().is_symlink() => Error::Escapes,
                    Ok(_) => Error::NotFound,
                    Err(_) => jailed(e),
                });
            }
        };
    }
    Ok(current)
}

/// The folder holding `path` (which must exist) and the last segment's name.
fn parent_of(dir: &Dir, path: &str) -> Result<(Dir, String), Error> {
    match path.rsplit_once('/') {
        Some((parent, name)) => Ok((existing_folder(dir, parent)?, name.to_owned())),
        None => Ok((dir.try_clone().map_err(jailed)?, path.to_owned())),
    }
}

/// The files below a folder, by their paths below it, found without following symlinks.
fn files_in(dir: &Dir) -> Result<Vec<String>, Error> {
    let mut listing = super::Listing::default();
    walk(dir, Some(""), true, Tags::Skip, &mut listing)?;
    Ok(listing
        .entries
        .into_iter()
        .filter(|e: &SandboxEntry| !e.is_dir)
        .map(|e| e.path.trim_start_matches('/').to_owned())
        .collect())
}

impl LocalSandbox {
    async fn find(&self, path: &ValidPath) -> Result<Option<PathKind>, Error> {
        let path = path.as_str().to_owned();
        self.blocking(move |dir| {
            let (parent, name) = match parent_of(dir, &path) {
                Ok(found) => found,
                Err(Error::NotFound) => return Ok(None),
                Err(e) => return Err(e),
            };
            match parent.symlink_metadata(&name) {
                Ok(meta) if meta.is_dir() => Ok(Some(PathKind::Folder)),
                Ok(_) => Ok(Some(PathKind::File)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(jailed(e)),
            }
        })
        .await
    }

    async fn rename(
        &self,
        from: &ValidPath,
        to: &ValidPath,
        overwrite: bool,
    ) -> Result<Moved, Error> {
        let (from, to) = (from.as_str().to_owned(), to.as_str().to_owned());
        let wait = self.op_timeout;
        self.blocking(move |dir| {
            let _lock = lock_commits(dir, wait)?;
            let (source_dir, source_name) = parent_of(dir, &from)?;
            let meta = source_dir.symlink_metadata(&source_name).map_err(jailed)?;
            let is_folder = meta.is_dir();
            let files = if is_folder {
                let inside = cap_fs_ext::DirExt::open_dir_nofollow(&source_dir, &source_name)
                    .map_err(jailed)?;
                files_in(&inside)?
            } else {
                vec![String::new()]
            };
            let (target_dir, target_name) = match to.rsplit_once('/') {
                Some((parent, name)) => (folder(dir, parent)?, name.to_owned()),
                None => (dir.try_clone().map_err(jailed)?, to.clone()),
            };
            let flags = if overwrite && !is_folder {
                rustix::fs::RenameFlags::empty()
            } else {
                rustix::fs::RenameFlags::NOREPLACE
            };
            rustix::fs::renameat_with(&source_dir, &source_name, &target_dir, &target_name, flags)
                .map_err(|e| match e {
                    // A name that is taken, a folder in the way of a file, a folder not empty.
                    rustix::io::Errno::EXIST
                    | rustix::io::Errno::ISDIR
                    | rustix::io::Errno::NOTEMPTY
                    | rustix::io::Errno::NOTDIR => Error::AlreadyExists,
                    other => jailed(other.into()),
                })?;
            // A standard folder moved away is made again, empty, as after a removal.
            for standard in SANDBOX_LAYOUT {
                dir.create_dir_all(standard).map_err(jailed)?;
            }
            let etag = if is_folder {
                None
            } else {
                // A rename keeps the bytes, so the ETag with them.
                let moved = target_dir.symlink_metadata(&target_name).map_err(jailed)?;
                Some(listed_tag(&target_dir, &target_name, &moved)?.ok_or(Error::NotFound)?)
            };
            Ok(Moved { files, etag })
        })
        .await
    }

    async fn remove_tree(&self, dir_path: &ValidPath) -> Result<Vec<String>, Error> {
        let path = dir_path.as_str().to_owned();
        let wait = self.op_timeout;
        self.blocking(move |dir| {
            let _lock = lock_commits(dir, wait)?;
            let (parent, name) = parent_of(dir, &path)?;
            let meta = parent.symlink_metadata(&name).map_err(jailed)?;
            if !meta.is_dir() {
                return Err(Error::NotAFolder);
            }
            let inside = cap_fs_ext::DirExt::open_dir_nofollow(&parent, &name).map_err(jailed)?;
            let files = files_in(&inside)?;
            drop(inside);
            parent.remove_dir_all(&name).map_err(jailed)?;
            for standard in SANDBOX_LAYOUT {
                dir.create_dir_all(standard).map_err(jailed)?;
            }
            Ok(files)
        })
        .await
    }
}

impl StoredSandbox {
    async fn find(&self, path: &ValidPath) -> Result<Option<PathKind>, Error> {
        Ok(
            match self
                .db
                .space_find(&self.thread_id, &SpaceName::sandbox(), path)
                .await?
            {
                Found::File(_) => Some(PathKind::File),
                Found::Folder => Some(PathKind::Folder),
                Found::Nothing => None,
            },
        )
    }

    async fn rename(
        &self,
        from: &ValidPath,
        to: &ValidPath,
        overwrite: bool,
    ) -> Result<Moved, Error> {
        let space = SpaceName::sandbox();
        let moved = self
            .db
            .space_move(
                &self.thread_id,
                &space,
                from,
                to,
                overwrite,
                Default::default(),
            )
            .await?;
        self.db
            .space_mkdirs(&self.thread_id, &space, &SANDBOX_LAYOUT)
            .await?;
        let below = |file: &crate::spaces::SpaceFile| {
            file.path[to.as_str().len()..]
                .trim_start_matches('/')
                .to_owned()
        };
        Ok(Moved {
            files: moved.iter().map(below).collect(),
            etag: crate::space_moves::moved_file_etag(&moved, to),
        })
    }

    async fn remove_tree(&self, dir: &ValidPath) -> Result<Vec<String>, Error> {
        let space = SpaceName::sandbox();
        match self.db.space_find(&self.thread_id, &space, dir).await? {
            Found::Folder => {}
            Found::File(_) => return Err(Error::NotAFolder),
            Found::Nothing => return Err(Error::NotFound),
        }
        let removed = self
            .db
            .space_remove_tree(&self.thread_id, &space, Some(dir), Default::default())
            .await?;
        self.db
            .space_mkdirs(&self.thread_id, &space, &SANDBOX_LAYOUT)
            .await?;
        Ok(removed
            .iter()
            .map(|file| {
                file.path[dir.as_str().len()..]
                    .trim_start_matches('/')
                    .to_owned()
            })
            .collect())
    }
}
