//! `glob` and `grep` over the agent's files, with ripgrep's own crates: `globset` matches
//! paths, `grep-regex` compiles the pattern (a literal unless `regex: true`) for a regex
//! engine that runs in time linear in the text, whatever the pattern, and `grep-searcher`
//! finds the matching lines.
//!
//! Both are bounded so that no folder and no file can hold a request: a file over
//! [`GREP_MAX_FILE_BYTES`] or holding a NUL byte is skipped and counted, the bytes searched in
//! one request stop at [`GREP_MAX_TOTAL_BYTES`], and answers stop at their limits with
//! `truncated: true`. With `documents: true`, a PDF, Word, Excel or PowerPoint file is searched
//! in its extracted text instead ([`super::document_text`]), section by section.

use ferry_core::AgentPath;
use ferry_core::agent_files::{GlobInput, GrepInput, MAX_GLOB_PATHS, MAX_GREP_RESULTS};
use futures::StreamExt;
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks};
use serde::Serialize;
use utoipa::ToSchema;

use super::document_text::{Searchable, searchable};
use super::{Caller, files_below, open, parse};
use crate::error::{Error, Result};
use crate::memory::Held;
use ferry_store::sandbox::PathKind;

/// Files larger than this are skipped by `grep` (and counted).
pub const GREP_MAX_FILE_BYTES: u64 = 16 << 20;
/// Bytes one `grep` reads at most; past them the answer is `truncated`.
pub const GREP_MAX_TOTAL_BYTES: u64 = 1 << 30;
/// Characters of a matching line shown at most.
const MATCH_MAX_CHARS: usize = 500;
/// Files of another place than a sandbox read at once.
const READ_AHEAD: usize = 8;
/// Documents whose text is asked for at once (the extraction workers share themselves fairly
/// between users, and bound how many run).
const DOCUMENTS_AT_ONCE: usize = 4;
/// Unreadable documents named in one answer at most (all are counted).
const UNREADABLE_NAMED: usize = 20;
/// Bytes and files read in one batch at most.
const BATCH_BYTES: u64 = 32 << 20;
const BATCH_FILES: usize = 512;

/// The candidates in batches of at most [`BATCH_FILES`] files and (but for a single larger
/// file) [`BATCH_BYTES`] bytes, in order, each with its bytes.
fn batches(candidates: Vec<(AgentPath, u64)>) -> Vec<(Vec<AgentPath>, u64)> {
    let mut out: Vec<(Vec<AgentPath>, u64)> = Vec::new();
    for (path, size) in candidates {
        match out.last_mut() {
            Some((batch, bytes)) if batch.len() < BATCH_FILES && *bytes + size <= BATCH_BYTES => {
                *bytes += size;
                batch.push(path);
            }
            _ => out.push((vec![path], size)),
        }
    }
    out
}

/// A batch's files as read, with the share of the server's memory budget they hold.
type ReadBatch = (Held, Vec<(AgentPath, Result<Vec<u8>>)>);

/// The bytes of each file of a batch (`bytes` in all when listed), taken from the server's
/// memory budget first; a file that went away or changed into something that is not a
/// readable file since it was listed is left out, one grown past the bound is reported as too
/// large.
async fn read_batch(
    caller: Caller<'_>,
    sandbox: Option<&ferry_store::sandbox::Sandbox>,
    (batch, bytes): (Vec<AgentPath>, u64),
) -> Result<ReadBatch> {
    let held = caller.app.memory.hold(bytes).await?;
    Ok((held, read_files(caller, sandbox, batch).await?))
}

async fn read_files(
    caller: Caller<'_>,
    sandbox: Option<&ferry_store::sandbox::Sandbox>,
    batch: Vec<AgentPath>,
) -> Result<Vec<(AgentPath, Result<Vec<u8>>)>> {
    if let Some(sandbox) = sandbox {
        let within: Vec<_> = batch
            .iter()
            .filter_map(AgentPath::within)
            .cloned()
            .collect();
        let read = sandbox
            .read_files(within, GREP_MAX_FILE_BYTES)
            .await
            .map_err(crate::error::in_sandbox)?;
        return Ok(read
            .into_iter()
            .map(|(path, bytes)| {
                let bytes = bytes.map_err(|e| match e {
                    ferry_store::Error::TooLarge { limit } => Error::too_large(limit),
                    ferry_store::Error::Io(e) => Error::io(e),
                    // Gone, or no longer a plain file of the sandbox: nothing to search.
                    other => Error::not_found(other.to_string()),
                });
                (AgentPath::Sandbox(Some(path)), bytes)
            })
            .collect());
    }
    Ok(futures::stream::iter(batch)
        .map(|path| async move {
            let bytes = match open(caller, &path).await {
                Ok(current) => current.bytes(caller.app, GREP_MAX_FILE_BYTES).await,
                Err(e) => Err(e),
            };
            (path, bytes)
        })
        .buffered(READ_AHEAD)
        .collect()
        .await)
}

/// `glob`'s answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Globbed {
    /// Matching files, sorted.
    pub paths: Vec<String>,
    /// More files matched than were answered.
    pub truncated: bool,
}

fn matcher_of(pattern: &str) -> Result<globset::GlobMatcher> {
    globset::GlobBuilder::new(pattern)
        // `*` stays within a segment; `**` crosses folders.
        .literal_separator(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|e| Error::invalid_request(format!("'{pattern}' is not a valid glob: {e}")))
}

/// `grep`'s `glob`, as ripgrep's `--glob` reads one: without a `/` it is matched against the
/// file's name, at any depth (`*.csv` finds `data/q3.csv`); with one, against the file's path
/// relative to the folder searched, a leading `/` anchoring it there (`/*.md` finds `a.md`, not
/// `notes/a.md`).
struct FileFilter {
    matcher: globset::GlobMatcher,
    by_name: bool,
}

impl FileFilter {
    fn new(pattern: &str) -> Result<FileFilter> {
        Ok(FileFilter {
            matcher: matcher_of(pattern.strip_prefix('/').unwrap_or(pattern))?,
            by_name: !pattern.contains('/'),
        })
    }

    fn admits(&self, relative: &str) -> bool {
        let subject = if self.by_name {
            relative.rsplit('/').next().unwrap_or(relative)
        } else {
            relative
        };
        self.matcher.is_match(subject)
    }
}

/// A glob is matched against paths relative to `base`: one written from the root
/// (`/sandbox/**/*.md` with `base` `/sandbox`) is read relative to it, and one that starts
/// with `/` elsewhere is refused rather than matching nothing.
fn relative_pattern<'p>(base: &AgentPath, pattern: &'p str) -> Result<&'p str> {
    let pattern = pattern.trim_start_matches("./");
    if !pattern.starts_with('/') {
        return Ok(pattern);
    }
    let root = format!("{base}/");
    pattern.strip_prefix(root.as_str()).ok_or_else(|| {
        Error::invalid_request(format!(
            "the pattern '{pattern}' starts with '/' but not with '{root}': write it relative \
             to path (e.g. **/*.md), or from path itself"
        ))
    })
}

/// `glob`: the files below `path` whose path relative to it matches `pattern`.
pub async fn glob(caller: Caller<'_>, input: &GlobInput) -> Result<Globbed> {
    let base = parse(&input.path)?;
    let matcher = matcher_of(relative_pattern(&base, &input.pattern)?)?;
    let mut paths: Vec<String> = match &base {
        // A folder of a sandbox: its files' names alone, without their sizes and times.
        AgentPath::Sandbox(dir) if super::find(caller, &base).await? == Some(PathKind::Folder) => {
            let sandbox =
                crate::files::sandbox::readable(caller.app, caller.principal, caller.thread()?)
                    .await?;
            let skip = dir.as_ref().map_or(0, |d| d.as_str().len() + 1);
            sandbox
                .file_paths(dir.as_ref())
                .await
                .map_err(crate::error::in_sandbox)?
                .into_iter()
                .filter(|path| matcher.is_match(&path[skip..]))
                .map(|path| format!("/sandbox/{path}"))
                .collect()
        }
        _ => files_below(caller, &base)
            .await?
            .files
            .into_iter()
            .filter(|(_, relative, _)| matcher.is_match(relative))
            .map(|(path, _, _)| path.to_string())
            .collect(),
    };
    paths.sort_unstable();
    let truncated = paths.len() > MAX_GLOB_PATHS;
    paths.truncate(MAX_GLOB_PATHS);
    Ok(Globbed { paths, truncated })
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct GrepMatch {
    pub path: String,
    /// A document's page the line is on (`documents: true`, a PDF), from 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
    /// A document's sheet the line is in (`documents: true`, a workbook).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sheet: Option<String>,
    /// The spreadsheet row (from 1, as the spreadsheet numbers it) the line shows, for a line
    /// of a sheet's table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row: Option<u32>,
    /// A document's slide the line is on (`documents: true`, a presentation), from 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slide: Option<u32>,
    /// 1-based: in the file, or in the page, sheet or slide of a document.
    pub line: u64,
    /// The line, without its line break; cut at 500 characters.
    pub text: String,
}

/// Files `grep` did not search, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    /// Files holding a NUL byte.
    pub binary: u64,
    /// Files larger than 16 MiB.
    pub too_large: u64,
    /// Files and folders whose names no door can address (a control character or a
    /// backslash, not UTF-8, or a path over 1,024 bytes), made on disk by a command or an
    /// agent working in the folder: left out, with everything below such a folder.
    pub unaddressable: u64,
    /// Documents (`documents: true`) whose text could not be read: damaged, encrypted, or past
    /// the extraction's limits; the first are named in `unreadable`.
    pub unreadable: u64,
}

/// A document `grep` could not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct Unreadable {
    pub path: String,
    pub reason: String,
}

/// `grep`'s answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Grepped {
    pub matches: Vec<GrepMatch>,
    /// More matches (or more bytes to search) remained than were answered.
    pub truncated: bool,
    pub files_searched: u64,
    pub skipped: Skipped,
    /// The first 20 documents counted in `skipped.unreadable`, with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<Unreadable>,
}

/// What is searched of a file: its bytes, or a document's text.
enum Content {
    Bytes(Vec<u8>),
    Document(Searchable),
}

/// A batch's files in order, its documents turned into their text when `documents: true` asks
/// for it (a few at once), the other files keeping their bytes. A stream, so that only the
/// texts being read and searched are held, not a whole batch's.
fn contents(
    caller: Caller<'_>,
    documents: bool,
    batch: Vec<(AgentPath, Result<Vec<u8>>)>,
) -> impl futures::Stream<Item = (AgentPath, Result<Content>)> + '_ {
    futures::stream::iter(batch)
        .map(move |(path, bytes)| async move {
            let content = match bytes {
                Ok(bytes) if documents && ferry_extract::is_document(path.file_name()) => {
                    searchable(caller, path.file_name(), bytes)
                        .await
                        .map(Content::Document)
                }
                bytes => bytes.map(Content::Bytes),
            };
            (path, content)
        })
        .buffered(DOCUMENTS_AT_ONCE)
}

/// The matches found so far, up to `max`.
struct Found {
    matches: Vec<GrepMatch>,
    max: usize,
    truncated: bool,
}

impl Found {
    /// Searches `text` of the file `path`: the whole file, or of a document the `section`
    /// whose first line is line `start` of the document's text.
    fn search(
        &mut self,
        searcher: &mut grep_searcher::Searcher,
        matcher: &grep_regex::RegexMatcher,
        path: &str,
        (section, start): (Option<&ferry_extract::Section>, u64),
        text: &[u8],
    ) -> Result<()> {
        searcher
            .search_slice(
                matcher,
                text,
                sinks::Lossy(|line, text| {
                    if self.matches.len() == self.max {
                        self.truncated = true;
                        return Ok(false);
                    }
                    let text = text.trim_end_matches(['\n', '\r']);
                    let text = match text.char_indices().nth(MATCH_MAX_CHARS) {
                        Some((cut, _)) => &text[..cut],
                        None => text,
                    };
                    self.matches.push(GrepMatch {
                        path: path.to_owned(),
                        page: section.and_then(|s| s.page),
                        sheet: section.and_then(|s| s.sheet.clone()),
                        row: section.and_then(|s| s.row_of(line)),
                        slide: section.and_then(|s| s.slide),
                        line: start + line - 1,
                        text: text.to_owned(),
                    });
                    Ok(true)
                }),
            )
            .map_err(Error::internal)
    }
}

/// `grep`.
pub async fn grep(caller: Caller<'_>, input: &GrepInput) -> Result<Grepped> {
    let base = parse(&input.path)?;
    if input.pattern.is_empty() {
        return Err(Error::invalid_request("pattern is empty"));
    }
    let max = input.max_results.clamp(1, MAX_GREP_RESULTS);
    let matcher = grep_regex::RegexMatcherBuilder::new()
        .case_insensitive(input.ignore_case)
        .fixed_strings(!input.regex)
        // Bounds what compiling a pattern may take; the search itself is linear.
        .size_limit(10 << 20)
        .dfa_size_limit(10 << 20)
        .line_terminator(Some(b'\n'))
        .build(&input.pattern)
        .map_err(|e| {
            Error::invalid_request(format!("'{}' is not a valid pattern: {e}", input.pattern))
        })?;
    let only = input.glob.as_deref().map(FileFilter::new).transpose()?;
    let mut skipped = Skipped::default();
    let mut candidates: Vec<(AgentPath, u64)> = Vec::new();
    let below = files_below(caller, &base).await?;
    skipped.unaddressable = below.unaddressable;
    for (path, relative, size) in below.files {
        if only.as_ref().is_some_and(|only| !only.admits(&relative)) {
            continue;
        }
        if size > GREP_MAX_FILE_BYTES {
            skipped.too_large += 1;
            continue;
        }
        candidates.push((path, size));
    }
    candidates.sort_unstable_by_key(|(path, _)| path.to_string());
    // A sandbox's files are read a batch per turn of its permits; other files one by one.
    let sandbox = match &base {
        AgentPath::Sandbox(_) => Some(
            crate::files::sandbox::readable(caller.app, caller.principal, caller.thread()?).await?,
        ),
        _ => None,
    };
    let sandbox = sandbox.as_ref();
    let mut reads = futures::stream::iter(batches(candidates))
        .map(|batch| read_batch(caller, sandbox, batch))
        // The next batch is read while this one is searched.
        .buffered(2);
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::none())
        .build();
    let mut found = Found {
        matches: Vec::new(),
        max,
        truncated: false,
    };
    let (mut searched, mut total, mut unreadable) = (0, 0u64, Vec::new());
    'batches: while let Some(batch) = reads.next().await {
        // The batch's share of the memory budget is given back when it has been searched.
        let (_held, batch) = batch?;
        let mut contents = std::pin::pin!(contents(caller, input.documents, batch));
        while let Some((path, content)) = contents.next().await {
            let content = match content {
                Ok(content) => content,
                // Removed, or grown past the bound, since it was listed.
                Err(Error::NotFound(_)) => continue,
                Err(Error::TooLarge(_)) => {
                    skipped.too_large += 1;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let shown = path.to_string();
            type Part<'t> = ((Option<&'t ferry_extract::Section>, u64), &'t [u8]);
            let sections: Vec<Part<'_>> = match &content {
                Content::Bytes(bytes) if memchr::memchr(0, bytes).is_some() => {
                    skipped.binary += 1;
                    continue;
                }
                Content::Bytes(bytes) => vec![((None, 1), bytes)],
                Content::Document(Searchable::Unreadable { reason }) => {
                    skipped.unreadable += 1;
                    if unreadable.len() < UNREADABLE_NAMED {
                        unreadable.push(Unreadable {
                            path: shown,
                            reason: reason.clone(),
                        });
                    }
                    continue;
                }
                Content::Document(Searchable::Text(text)) => text
                    .sections
                    .iter()
                    .zip(text.starts())
                    .map(|(section, start)| ((Some(section), start), section.text.as_bytes()))
                    .collect(),
            };
            total += sections
                .iter()
                .map(|(_, text)| text.len() as u64)
                .sum::<u64>();
            if total > GREP_MAX_TOTAL_BYTES {
                found.truncated = true;
                break 'batches;
            }
            searched += 1;
            for (place, text) in sections {
                found.search(&mut searcher, &matcher, &shown, place, text)?;
                if found.truncated {
                    break 'batches;
                }
            }
        }
    }
    Ok(Grepped {
        matches: found.matches,
        truncated: found.truncated,
        files_searched: searched,
        skipped,
        unreadable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grep_globs_read_as_ripgrep_reads_them() {
        let by_name = FileFilter::new("*.csv").unwrap();
        assert!(by_name.admits("q3.csv"));
        assert!(by_name.admits("data/2026/q3.csv"));
        assert!(!by_name.admits("data/q3.csv.bak"));
        let by_path = FileFilter::new("data/*.csv").unwrap();
        assert!(by_path.admits("data/q3.csv"));
        assert!(!by_path.admits("old/data/q3.csv"));
        let anywhere = FileFilter::new("**/data/*.csv").unwrap();
        assert!(anywhere.admits("old/data/q3.csv"));
        let anchored = FileFilter::new("/*.md").unwrap();
        assert!(anchored.admits("a.md"));
        assert!(!anchored.admits("notes/a.md"));
        let anchored_folder = FileFilter::new("/outputs/*.md").unwrap();
        assert!(anchored_folder.admits("outputs/a.md"));
        assert!(!anchored_folder.admits("old/outputs/a.md"));
    }
}
