//! `ListObjectsV2` and `ListObjects` (docs/s3.md, listing): keys in byte order under a
//! prefix, rolled up into common prefixes at a delimiter, a page at a time.
//!
//! A space lists its files in key order straight from the database, a page at a time; a
//! sandbox's files are read whole (a sandbox listing is capped) and sorted. Either way the
//! walk below sees keys in S3's order, so a common prefix is emitted where its first key
//! would be, and the next query starts after every key beneath it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ferry_app::files::spaces::{ListCursor, ListQuery, SpaceEntry};
use ferry_app::{App, Principal};
use ferry_core::{SpaceName, Timestamp, ValidPath};
use s3s::{S3Result, s3_error};

use crate::errors::to_s3;

/// How many keys one page holds at most, as in S3.
pub(crate) const MAX_KEYS: usize = 1000;
/// How many rows one database query reads.
const BATCH: u32 = 1000;

/// One object of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    pub key: String,
    pub size: u64,
    /// The ETag's value, without quotes.
    pub etag: String,
    pub modified: Timestamp,
}

/// Where a listing resumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum After {
    /// From the first key.
    Start,
    /// After this key.
    Key(String),
    /// After every key beginning with this common prefix.
    Below(String),
}

impl After {
    /// The continuation token for resuming here.
    pub(crate) fn token(&self) -> Option<String> {
        let text = match self {
            After::Start => return None,
            After::Key(key) => format!("k{key}"),
            After::Below(prefix) => format!("p{prefix}"),
        };
        Some(URL_SAFE_NO_PAD.encode(text))
    }

    pub(crate) fn from_token(token: &str) -> S3Result<After> {
        let bad = || {
            s3_error!(
                InvalidArgument,
                "the continuation token is not one ferry gave"
            )
        };
        let text = URL_SAFE_NO_PAD
            .decode(token)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(bad)?;
        match text.split_at_checked(1) {
            Some(("k", key)) => Ok(After::Key(key.to_owned())),
            Some(("p", prefix)) => Ok(After::Below(prefix.to_owned())),
            _ => Err(bad()),
        }
    }

    /// Whether `key` comes after this point.
    fn admits(&self, key: &str) -> bool {
        match self {
            After::Start => true,
            After::Key(after) => key > after.as_str(),
            After::Below(prefix) => !key.starts_with(prefix.as_str()) && key > prefix.as_str(),
        }
    }
}

/// What to list.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub prefix: String,
    pub delimiter: Option<String>,
    pub after: After,
    pub max_keys: usize,
}

/// One page.
#[derive(Debug, Clone, Default)]
pub(crate) struct Page {
    pub objects: Vec<Listed>,
    pub prefixes: Vec<String>,
    /// Where the next page starts, when there is one.
    pub next: Option<After>,
}

/// The keys of one bucket, in order, from a point on.
pub(crate) enum Source<'a> {
    Space {
        app: &'a App,
        principal: &'a Principal,
        space: &'a SpaceName,
    },
    /// Every file of a sandbox, sorted by key.
    Sorted(Vec<Listed>),
}

impl Source<'_> {
    /// Up to a batch of keys after `after`, within `dir` (every key when `None`).
    async fn batch(&self, dir: Option<&ValidPath>, after: &After) -> S3Result<Vec<Listed>> {
        match self {
            Source::Space {
                app,
                principal,
                space,
            } => {
                let cursor = match after {
                    After::Start => None,
                    After::Key(key) => Some(ListCursor {
                        path: key.clone(),
                        kind: "file".into(),
                    }),
                    // After it "as a folder" means from the file of that very path on.
                    After::Below(prefix) => Some(ListCursor {
                        path: beyond(prefix),
                        kind: "dir".into(),
                    }),
                };
                let query = ListQuery {
                    dir,
                    recursive: true,
                    limit: BATCH,
                    after: cursor,
                };
                let page = ferry_app::files::spaces::list(app, principal, space, &query)
                    .await
                    .map_err(to_s3)?;
                Ok(page
                    .entries
                    .into_iter()
                    .filter_map(|entry| match entry {
                        SpaceEntry::File(file) => Some(Listed {
                            key: file.path,
                            size: file.size,
                            etag: file.sha256,
                            modified: file.updated_at,
                        }),
                        SpaceEntry::Dir { .. } => None,
                    })
                    .collect())
            }
            Source::Sorted(all) => {
                let start = all.partition_point(|l| !after.admits(&l.key));
                Ok(all[start..].iter().take(BATCH as usize).cloned().collect())
            }
        }
    }
}

/// The least string greater than every string that starts with `prefix` (`x/` → `x0`,
/// `ba` → `bb`): its last character raised by one, or dropped when it is the last there is.
fn beyond(prefix: &str) -> String {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return chars.into_iter().collect();
        }
    }
    // A prefix of nothing but the last character: past every key a path may hold.
    char::MAX.to_string().repeat(prefix.chars().count() + 1)
}

/// The deepest folder every key under `prefix` lies in, or `None` for the whole bucket;
/// `Err` when no valid key can start with `prefix`.
fn folder_of(prefix: &str) -> Result<Option<ValidPath>, ()> {
    match prefix.rsplit_once('/') {
        None => Ok(None),
        Some((dir, _)) => ValidPath::parse(dir).map(Some).map_err(|_| ()),
    }
}

/// One page of `request` over `source`.
pub(crate) async fn page(source: &Source<'_>, request: &Request) -> S3Result<Page> {
    let mut page = Page::default();
    if request.max_keys == 0 {
        return Ok(page);
    }
    let Ok(dir) = folder_of(&request.prefix) else {
        return Ok(page);
    };
    let mut after = request.after.clone();
    let mut count = 0usize;
    'batches: loop {
        let batch = source.batch(dir.as_ref(), &after).await?;
        if batch.is_empty() {
            break;
        }
        for listed in batch {
            if !listed.key.starts_with(&request.prefix) {
                if listed.key.as_str() > request.prefix.as_str() {
                    // Keys are in order: past the prefix, nothing more can match.
                    break 'batches;
                }
                after = After::Key(listed.key);
                continue;
            }
            let rest = &listed.key[request.prefix.len()..];
            let rolled_up = request
                .delimiter
                .as_deref()
                .filter(|d| !d.is_empty())
                .and_then(|d| rest.find(d).map(|i| i + d.len()));
            if count == request.max_keys {
                page.next = Some(after);
                return Ok(page);
            }
            count += 1;
            match rolled_up {
                Some(end) => {
                    let prefix = listed.key[..request.prefix.len() + end].to_owned();
                    page.prefixes.push(prefix.clone());
                    after = After::Below(prefix);
                    // Skip everything beneath the prefix with a fresh query.
                    continue 'batches;
                }
                None => {
                    after = After::Key(listed.key.clone());
                    page.objects.push(listed);
                }
            }
        }
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(key: &str) -> Listed {
        Listed {
            key: key.into(),
            size: 1,
            etag: "e".into(),
            modified: Timestamp(0),
        }
    }

    fn source(keys: &[&str]) -> Source<'static> {
        let mut all: Vec<_> = keys.iter().map(|k| listed(k)).collect();
        all.sort_by(|a, b| a.key.cmp(&b.key));
        Source::Sorted(all)
    }

    async fn walk(
        source: &Source<'_>,
        prefix: &str,
        delimiter: Option<&str>,
        max: usize,
    ) -> Vec<String> {
        let mut seen = Vec::new();
        let mut after = After::Start;
        loop {
            let request = Request {
                prefix: prefix.into(),
                delimiter: delimiter.map(str::to_owned),
                after: after.clone(),
                max_keys: max,
            };
            let page = page(source, &request).await.unwrap();
            assert!(page.objects.len() + page.prefixes.len() <= max);
            let mut items: Vec<String> = page.objects.iter().map(|o| o.key.clone()).collect();
            items.extend(page.prefixes.iter().cloned());
            items.sort();
            seen.extend(items);
            match page.next {
                Some(next) => after = After::from_token(&next.token().unwrap()).unwrap(),
                None => return seen,
            }
        }
    }

    #[tokio::test]
    async fn a_delimiter_rolls_keys_up_and_pages_never_repeat_a_prefix() {
        let s = source(&["a.txt", "a/1", "a/2", "a/b/3", "b", "c/4", "c0"]);
        assert_eq!(
            walk(&s, "", Some("/"), 1000).await,
            ["a.txt", "a/", "b", "c/", "c0"]
        );
        assert_eq!(
            walk(&s, "", Some("/"), 1).await,
            ["a.txt", "a/", "b", "c/", "c0"]
        );
        assert_eq!(walk(&s, "a/", Some("/"), 1).await, ["a/1", "a/2", "a/b/"]);
        assert_eq!(
            walk(&s, "", None, 2).await,
            ["a.txt", "a/1", "a/2", "a/b/3", "b", "c/4", "c0"]
        );
        assert_eq!(walk(&s, "a/b", None, 10).await, ["a/b/3"]);
        assert!(walk(&s, "../", None, 10).await.is_empty());
    }

    #[tokio::test]
    async fn any_delimiter_rolls_up() {
        let s = source(&["bar", "baz", "cab", "foo"]);
        assert_eq!(walk(&s, "", Some("a"), 1000).await, ["ba", "ca", "foo"]);
        assert_eq!(walk(&s, "", Some("a"), 1).await, ["ba", "ca", "foo"]);
        assert_eq!(beyond("x/"), "x0");
        assert_eq!(beyond("ba"), "bb");
    }

    #[test]
    fn tokens_round_trip_and_strangers_are_refused() {
        for after in [After::Key("a/b c".into()), After::Below("x/".into())] {
            assert_eq!(After::from_token(&after.token().unwrap()).unwrap(), after);
        }
        assert!(After::from_token("!!").is_err());
    }
}
