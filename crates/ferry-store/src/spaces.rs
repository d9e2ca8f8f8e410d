//! Per-user spaces (docs/reference/spaces.md): files addressed by (owner, space, path).
//!
//! Paths behave like S3 keys with `/` as the folder separator: a folder exists while a file lies
//! beneath it. Conditional writes are decided by the database in one statement, so they stay
//! exact with any number of writers and nodes.

use ferry_core::change::ChangeKind;
use ferry_core::door::Door;
use ferry_core::write::{FileMeta, WriteCondition};
use ferry_core::{SpaceName, Timestamp, ValidPath};
// Dynamic SQL here is only ever assembled from the constant fragments of this module.
use sqlx::{AssertSqlSafe, Row};

use crate::Error;
use crate::blobs::StoredBlob;
use crate::db::{Db, now_millis};
use crate::record_cache::{self, Lookup};
use crate::space_events::{Change, recorded};
use crate::sqlite_reads::Columns;
use crate::write_plan::{Plan, Statement, Value};

pub use crate::space_file::SpaceFile;

/// A space as its owner's list of spaces shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceSummary {
    pub name: String,
    pub files: u64,
    pub bytes: u64,
    pub updated_at: Timestamp,
}

/// One entry of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpaceEntry {
    Dir { path: String },
    File(SpaceFile),
}

impl SpaceEntry {
    pub fn path(&self) -> &str {
        match self {
            SpaceEntry::Dir { path } => path,
            SpaceEntry::File(file) => &file.path,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            SpaceEntry::Dir { .. } => "dir",
            SpaceEntry::File(_) => "file",
        }
    }
}

/// Where a listing resumes: after this path, and (a folder and a file may share a path) after
/// this kind, `dir` sorting before `file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCursor {
    pub path: String,
    pub kind: String,
}

/// What to list.
#[derive(Debug, Clone)]
pub struct ListQuery<'a> {
    pub dir: Option<&'a ValidPath>,
    pub recursive: bool,
    pub limit: u32,
    pub after: Option<ListCursor>,
}

/// A page of a listing, and where the next one starts.
#[derive(Debug, Clone)]
pub struct ListPage {
    pub entries: Vec<SpaceEntry>,
    pub next: Option<ListCursor>,
}

/// What a successful write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOutcome {
    pub created: bool,
    pub file: SpaceFile,
}

const FILE_COLUMNS: &str = "path, blob_key, size, content_type, sha256, updated_at, attributes";
const SPACE_FILE: &str = "SELECT path, blob_key, size, content_type, sha256, updated_at, attributes \
     FROM space_files WHERE owner = $1 AND space = $2 AND path = $3";

fn file_from_row<R: Columns>(row: &R) -> Result<SpaceFile, R::Error> {
    Ok(SpaceFile {
        path: row.get("path")?,
        blob_key: row.get("blob_key")?,
        size: row.get::<i64>("size")? as u64,
        content_type: row.get("content_type")?,
        sha256: row.get("sha256")?,
        updated_at: Timestamp(row.get("updated_at")?),
        attributes: row.get("attributes")?,
    })
}

impl Db {
    /// One file's metadata, if the file exists.
    pub async fn space_file(
        &self,
        owner: &str,
        space: &SpaceName,
        path: &ValidPath,
    ) -> Result<Option<SpaceFile>, Error> {
        if let Some(sqlite) = self.sqlite() {
            let (readers, records) = (&sqlite.readers, &sqlite.records);
            let (space, path) = (space.as_str(), path.as_str());
            let key = record_cache::key(owner, space, path);
            let ticket = match records.lookup(&key) {
                Lookup::Known(record) => return Ok(record),
                Lookup::Unknown(ticket) => ticket,
            };
            let found = readers.with(|conn| {
                crate::sqlite_reads::one(conn, SPACE_FILE, &[&owner, &space, &path], |row| {
                    file_from_row(row)
                })
            })?;
            records.fill(key, ticket, &found);
            return Ok(found);
        }
        let sql = format!(
            "SELECT {FILE_COLUMNS} FROM space_files WHERE owner = $1 AND space = $2 AND path = $3"
        );
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(owner)
            .bind(space.as_str())
            .bind(path.as_str())
            .fetch_optional(self.pool())
            .await?;
        Ok(row.as_ref().map(file_from_row).transpose()?)
    }

    /// Points `path` at a blob that is already durable, if `condition` holds.
    pub async fn space_put(
        &self,
        owner: &str,
        space: &SpaceName,
        path: &ValidPath,
        blob: &StoredBlob,
        meta: FileMeta<'_>,
        condition: &WriteCondition,
    ) -> Result<WriteOutcome, Error> {
        let now = now_millis();
        let parent = path.parent().unwrap_or("");
        let mut plan = Plan::default();
        plan.setup
            .push(crate::space_names::record(owner, space, now));
        plan.setup
            .extend(dir_records(owner, space, path.ancestors()));
        // $1–$10: the row as written; $11: an ETag it must have.
        let row = |sql: String, tag: Option<&str>| {
            let mut params: Vec<Value> = vec![
                owner.into(),
                space.as_str().into(),
                path.as_str().into(),
                parent.into(),
                blob.key.as_str().into(),
                (blob.size as i64).into(),
                meta.content_type.into(),
                blob.sha256.as_str().into(),
                now.into(),
                meta.attributes.into(),
            ];
            params.extend(tag.map(Value::from));
            Statement::new(sql, params)
        };
        let insert = "INSERT INTO space_files \
             (owner, space, path, parent, blob_key, size, content_type, sha256, version, updated_at, \
             attributes) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $10)";
        let update_set = "blob_key = $5, size = $6, content_type = $7, sha256 = $8, \
             version = space_files.version + 1, updated_at = $9, attributes = $10";
        let matches = |tag: &str| if tag == "*" { "" } else { " AND sha256 = $11" };
        let tag_param = |tag: &str| (tag != "*").then(|| tag.to_owned());
        // What the decisive statements return: the version written, or (both headers at once)
        // a sign that the file exists and matches, which refuses the write.
        let (decide, found_means_written, none_means): (Vec<Statement>, bool, fn() -> Error) =
            match condition {
                WriteCondition::None => (
                    vec![row(
                        format!(
                            "{insert} ON CONFLICT (owner, space, path) DO UPDATE SET {update_set} \
                             RETURNING version"
                        ),
                        None,
                    )],
                    true,
                    || Error::PreconditionFailed,
                ),
                WriteCondition::CreateOnly => (
                    vec![row(
                        format!(
                            "{insert} ON CONFLICT (owner, space, path) DO NOTHING RETURNING version"
                        ),
                        None,
                    )],
                    true,
                    || Error::AlreadyExists,
                ),
                WriteCondition::IfMatch(tags) => (
                    tags.iter()
                        .map(|tag| {
                            let sql = format!(
                                "UPDATE space_files SET {} WHERE owner = $1 AND space = $2 \
                                 AND path = $3 AND parent = $4{} RETURNING version",
                                update_set.replace("space_files.version", "version"),
                                matches(tag)
                            );
                            row(sql, tag_param(tag).as_deref())
                        })
                        .collect(),
                    true,
                    || Error::PreconditionFailed,
                ),
                // The file must exist and match, and must not exist: when it exists and
                // matches, `If-None-Match: *` is the rule that fails; otherwise `If-Match`.
                WriteCondition::IfMatchAndCreateOnly(tags) => (
                    tags.iter()
                        .map(|tag| {
                            let sql = format!(
                                "SELECT version FROM space_files WHERE owner = $1 AND space = $2 \
                                 AND path = $3{}",
                                matches(tag).replace("$11", "$4")
                            );
                            let mut params: Vec<Value> =
                                vec![owner.into(), space.as_str().into(), path.as_str().into()];
                            params.extend(tag_param(tag).as_deref().map(Value::from));
                            Statement::new(sql, params)
                        })
                        .collect(),
                    false,
                    || Error::PreconditionFailed,
                ),
            };
        plan.decide = decide;
        if found_means_written {
            let change = Change {
                kind: ChangeKind::FileWritten,
                path: path.as_str(),
                destination: None,
                sha256: Some(&blob.sha256),
                size: Some(blob.size),
                door: meta.door,
            };
            plan.then = recorded(self.engine(), owner, space, &change, now);
        }
        let db = self.clone();
        let write = async move {
            db.write(plan, move |found| match found {
                Some(version) if found_means_written => Ok(version),
                Some(_) => Err(Error::AlreadyExists),
                None => Err(none_means()),
            })
            .await
        };
        let key = || record_cache::key(owner, space.as_str(), path.as_str());
        let version = self.changing(key, write).await?;
        Ok(WriteOutcome {
            created: version == 1,
            file: SpaceFile {
                path: path.as_str().to_owned(),
                blob_key: blob.key.clone(),
                size: blob.size,
                content_type: meta.content_type.to_owned(),
                sha256: blob.sha256.clone(),
                updated_at: Timestamp(now),
                attributes: meta.attributes.map(str::to_owned),
            },
        })
    }

    /// A page of a space's listing, sorted by path (byte order).
    pub async fn space_list(
        &self,
        owner: &str,
        space: &SpaceName,
        query: &ListQuery<'_>,
    ) -> Result<ListPage, Error> {
        let (after_path, after_kind) = match &query.after {
            Some(c) => (c.path.clone(), c.kind.clone()),
            None => (String::new(), String::new()),
        };
        // Fetch one more than asked to learn whether another page follows.
        let fetch = i64::from(query.limit) + 1;
        let after = "(path > $3 OR (path = $3 AND $4 < KIND))";
        let rows = if query.recursive {
            // Every file below `dir`: the paths in [dir + "/", dir + "0"), '0' being '/' + 1.
            let (low, high) = match query.dir {
                Some(dir) => (format!("{dir}/"), format!("{dir}0")),
                None => (String::new(), "\u{10FFFF}".to_owned()),
            };
            let sql = format!(
                "SELECT {FILE_COLUMNS} FROM space_files \
                 WHERE owner = $1 AND space = $2 AND {} AND path >= $5 AND path < $6 \
                 ORDER BY path LIMIT $7",
                after.replace("KIND", "'file'")
            );
            sqlx::query(AssertSqlSafe(sql))
                .bind(owner)
                .bind(space.as_str())
                .bind(&after_path)
                .bind(&after_kind)
                .bind(low)
                .bind(high)
                .bind(fetch)
                .fetch_all(self.pool())
                .await?
                .iter()
                .map(|row| file_from_row(row).map(SpaceEntry::File))
                .collect::<Result<Vec<_>, _>>()?
        } else {
            let parent = query.dir.map(ValidPath::as_str).unwrap_or("");
            let sql = format!(
                "SELECT kind, {FILE_COLUMNS} FROM ( \
                   SELECT 'file' AS kind, {FILE_COLUMNS} FROM space_files \
                   WHERE owner = $1 AND space = $2 AND parent = $5 AND {} \
                   UNION ALL \
                   SELECT 'dir' AS kind, path, '' AS blob_key, 0 AS size, '' AS content_type, \
                          '' AS sha256, 0 AS updated_at, NULL AS attributes FROM space_dirs \
                   WHERE owner = $1 AND space = $2 AND parent = $5 AND {} \
                 ) entries ORDER BY path, kind LIMIT $6",
                after.replace("KIND", "'file'"),
                after.replace("KIND", "'dir'")
            );
            sqlx::query(AssertSqlSafe(sql))
                .bind(owner)
                .bind(space.as_str())
                .bind(&after_path)
                .bind(&after_kind)
                .bind(parent)
                .bind(fetch)
                .fetch_all(self.pool())
                .await?
                .iter()
                .map(|row| {
                    let kind: String = row.try_get("kind")?;
                    if kind == "dir" {
                        Ok(SpaceEntry::Dir {
                            path: row.try_get("path")?,
                        })
                    } else {
                        file_from_row(row).map(SpaceEntry::File)
                    }
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()?
        };
        let mut entries = rows;
        let next = if entries.len() > query.limit as usize {
            entries.truncate(query.limit as usize);
            entries.last().map(|last| ListCursor {
                path: last.path().to_owned(),
                kind: last.kind().to_owned(),
            })
        } else {
            None
        };
        Ok(ListPage { entries, next })
    }

    /// The spaces of an owner (see [`crate::space_names`]: empty ones too), with their file
    /// count, total size and last change, sorted by name. Reserved spaces (a leading `.`) are not listed.
    pub async fn spaces_of(&self, owner: &str) -> Result<Vec<SpaceSummary>, Error> {
        // Every space, the empty ones too; an empty one was last changed when it was made.
        let rows = sqlx::query(
            "SELECT s.name AS space, COUNT(f.path) AS files, \
             CAST(COALESCE(SUM(f.size), 0) AS BIGINT) AS bytes, \
             COALESCE(MAX(f.updated_at), s.created_at) AS updated_at \
             FROM spaces s LEFT JOIN space_files f ON f.owner = s.owner AND f.space = s.name \
             WHERE s.owner = $1 AND s.name NOT LIKE '.%' \
             GROUP BY s.name, s.created_at ORDER BY s.name",
        )
        .bind(owner)
        .fetch_all(self.pool())
        .await?;
        rows.iter()
            .map(|row| {
                Ok(SpaceSummary {
                    name: row.try_get("space")?,
                    files: row.try_get::<i64, _>("files")? as u64,
                    bytes: row.try_get::<Option<i64>, _>("bytes")?.unwrap_or(0) as u64,
                    updated_at: Timestamp(row.try_get("updated_at")?),
                })
            })
            .collect::<Result<_, sqlx::Error>>()
            .map_err(Error::from)
    }

    /// Removes one file, if its SHA-256 is one of `if_match` (`*` matches any) when given, and
    /// with it every folder above that no longer holds anything. Answers the removed file;
    /// its blob is left to the sweep.
    pub async fn space_delete(
        &self,
        owner: &str,
        space: &SpaceName,
        path: &ValidPath,
        if_match: Option<&[String]>,
        door: Door,
    ) -> Result<SpaceFile, Error> {
        let key = || record_cache::key(owner, space.as_str(), path.as_str());
        let (db, owner, space, path) =
            (self.clone(), owner.to_owned(), space.clone(), path.clone());
        let if_match = if_match.map(<[String]>::to_vec);
        let remove = async move {
            db.remove_file(&owner, &space, &path, if_match.as_deref(), door)
                .await
        };
        self.changing(key, remove).await
    }

    /// [`Db::space_delete`]'s transaction.
    async fn remove_file(
        &self,
        owner: &str,
        space: &SpaceName,
        path: &ValidPath,
        if_match: Option<&[String]>,
        door: Door,
    ) -> Result<SpaceFile, Error> {
        let mut tx = self.begin_write().await?;
        let sql = format!(
            "SELECT {FILE_COLUMNS} FROM space_files WHERE owner = $1 AND space = $2 AND path = $3"
        );
        let current = sqlx::query(AssertSqlSafe(sql))
            .bind(owner)
            .bind(space.as_str())
            .bind(path.as_str())
            .fetch_optional(&mut *tx)
            .await?
            .as_ref()
            .map(file_from_row)
            .transpose()?
            .ok_or(Error::NotFound)?;
        if let Some(tags) = if_match
            && !tags.iter().any(|t| t == "*" || *t == current.sha256)
        {
            return Err(Error::PreconditionFailed);
        }
        sqlx::query("DELETE FROM space_files WHERE owner = $1 AND space = $2 AND path = $3")
            .bind(owner)
            .bind(space.as_str())
            .bind(path.as_str())
            .execute(&mut *tx)
            .await?;
        prune_empty_folders(&mut tx, owner, space, path).await?;
        let change = Change {
            kind: ChangeKind::FileDeleted,
            path: path.as_str(),
            destination: None,
            sha256: Some(&current.sha256),
            size: Some(current.size),
            door,
        };
        for statement in recorded(self.engine(), owner, space, &change, now_millis()) {
            statement.execute(&mut tx).await?;
        }
        tx.commit().await?;
        Ok(current)
    }

    /// Records folders (and their ancestors) so that they are listed while still empty.
    pub async fn space_mkdirs(
        &self,
        owner: &str,
        space: &SpaceName,
        dirs: &[&str],
    ) -> Result<(), Error> {
        let mut plan = Plan::default();
        plan.setup
            .push(crate::space_names::record(owner, space, now_millis()));
        for dir in dirs {
            let dir =
                ValidPath::parse(dir).map_err(|e| Error::Config(format!("folder '{dir}': {e}")))?;
            let with_ancestors = dir.ancestors().chain(std::iter::once(dir.as_str()));
            plan.setup.extend(dir_records(owner, space, with_ancestors));
        }
        self.write(plan, |_| Ok(())).await
    }
}

/// Records folders so that they are listed (and listed while empty); each folder's parent is
/// what its listing query finds it by.
fn dir_records<'a>(
    owner: &'a str,
    space: &'a SpaceName,
    dirs: impl Iterator<Item = &'a str> + 'a,
) -> impl Iterator<Item = Statement> + 'a {
    dirs.map(move |dir| {
        Statement::new(
            "INSERT INTO space_dirs (owner, space, path, parent) VALUES ($1, $2, $3, $4) \
             ON CONFLICT DO NOTHING",
            vec![
                owner.into(),
                space.as_str().into(),
                dir.into(),
                dir.rsplit_once('/')
                    .map(|(parent, _)| parent)
                    .unwrap_or("")
                    .into(),
            ],
        )
    })
}

/// Removes the folders above `path` that no longer hold anything, deepest first: a folder is
/// empty once nothing sorts between `dir/` and `dir0` ('0' follows '/' in byte order), neither
/// a file nor a folder.
pub(crate) async fn prune_empty_folders(
    tx: &mut crate::db::WriteTx,
    owner: &str,
    space: &SpaceName,
    path: &ValidPath,
) -> Result<(), Error> {
    let ancestors: Vec<&str> = path.ancestors().collect();
    'prune: for dir in ancestors.into_iter().rev() {
        let (low, high) = (format!("{dir}/"), format!("{dir}0"));
        for table in ["space_files", "space_dirs"] {
            let sql = format!(
                "SELECT path FROM {table} WHERE owner = $1 AND space = $2 \
                 AND path > $3 AND path < $4 LIMIT 1"
            );
            let inside: Option<String> = sqlx::query_scalar(AssertSqlSafe(sql))
                .bind(owner)
                .bind(space.as_str())
                .bind(&low)
                .bind(&high)
                .fetch_optional(&mut **tx)
                .await?;
            if inside.is_some() {
                break 'prune;
            }
        }
        sqlx::query("DELETE FROM space_dirs WHERE owner = $1 AND space = $2 AND path = $3")
            .bind(owner)
            .bind(space.as_str())
            .bind(dir)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}
