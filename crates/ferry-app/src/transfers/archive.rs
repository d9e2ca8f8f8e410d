//! A folder as one zip (docs/reference/folder-zip.md): every file below a sandbox or space
//! folder, streamed as it is read, in constant memory and with no temporary file of the whole.
//!
//! Who may read the folder is decided once, by the listing use cases, before the first byte;
//! each file is then opened as it is reached. The zip is built by the `zip` crate's streaming
//! writer (entries carry data descriptors, so no byte is ever rewritten) with members stored
//! uncompressed: the files people keep are mostly compressed already (images, PDF, Office
//! files), and storing keeps the download as fast as the disk.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use ferry_core::{SandboxPath, SpaceName, Timestamp, ValidPath};
use ferry_store::spaces::{ListQuery, SpaceEntry};
use futures::{Stream, StreamExt};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use crate::access::principal::Principal;
use crate::app::App;
use crate::error::{Error, Result, in_sandbox};

/// Files one zip carries at most: the writer keeps one central-directory record per member
/// until the end, so this bounds its memory whatever the folder holds.
pub const MAX_MEMBERS: usize = 10_000;

/// How many zip bytes are gathered before they are handed to the response.
const CHUNK_BYTES: usize = 256 << 10;

/// A folder, listed and checked, ready to stream as a zip.
#[derive(Debug)]
pub struct FolderZip {
    /// The name to offer the download under: the folder's own, e.g. `outputs.zip`.
    pub file_name: String,
    members: Vec<Member>,
    /// Names below the folder that no door can address, left out of the zip (its comment
    /// says how many, and why).
    left_out: u64,
    place: Place,
    app: App,
    principal: Principal,
}

/// One file of the folder: its name inside the zip, and where it is read from.
#[derive(Debug)]
struct Member {
    name: String,
    path: ValidPath,
    size: u64,
    modified: Timestamp,
}

#[derive(Debug)]
enum Place {
    Sandbox(ferry_store::sandbox::Sandbox),
    Space(SpaceName),
}

/// The folder `dir` of a thread's sandbox (its root when `None`), for anyone who may read the
/// thread.
pub async fn sandbox_folder(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    dir: Option<&SandboxPath>,
) -> Result<FolderZip> {
    // One access check and one open: the listing comes from the handle the zip reads with.
    let sandbox = crate::files::sandbox::readable(app, principal, thread_id).await?;
    let listing = sandbox
        .list_untagged(dir.map(SandboxPath::relative), true)
        .await
        .map_err(in_sandbox)?;
    let top = match dir {
        Some(dir) => dir.relative().file_name().to_owned(),
        None => "sandbox".to_owned(),
    };
    let mut members = Vec::new();
    for entry in listing.entries.into_iter().filter(|e| !e.is_dir) {
        let path = ValidPath::parse(&entry.path).map_err(|e| Error::InvalidPath(e.to_string()))?;
        members.push(Member {
            name: member_name(&top, dir.map(SandboxPath::relative), &path),
            path,
            size: entry.size,
            modified: entry.modified,
        });
        too_many(members.len())?;
    }
    Ok(FolderZip {
        file_name: format!("{top}.zip"),
        members,
        left_out: listing.unaddressable.len() as u64,
        place: Place::Sandbox(sandbox),
        app: app.clone(),
        principal: principal.clone(),
    })
}

/// The folder `dir` of one of the caller's spaces (the space's root when `None`). A space or
/// folder that does not exist gives an empty zip, as its listing lists nothing.
pub async fn space_folder(
    app: &App,
    principal: &Principal,
    space: &SpaceName,
    dir: Option<&ValidPath>,
) -> Result<FolderZip> {
    let top = match dir {
        Some(dir) => dir.file_name().to_owned(),
        None => space.as_str().to_owned(),
    };
    let mut members = Vec::new();
    let mut after = None;
    loop {
        let query = ListQuery {
            dir,
            recursive: true,
            limit: 1000,
            after,
        };
        let page = crate::files::spaces::list(app, principal, space, &query).await?;
        for entry in page.entries {
            let SpaceEntry::File(file) = entry else {
                continue;
            };
            let path =
                ValidPath::parse(&file.path).map_err(|e| Error::InvalidPath(e.to_string()))?;
            members.push(Member {
                name: member_name(&top, dir, &path),
                path,
                size: file.size,
                modified: file.updated_at,
            });
            too_many(members.len())?;
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    Ok(FolderZip {
        file_name: format!("{top}.zip"),
        members,
        left_out: 0,
        place: Place::Space(space.clone()),
        app: app.clone(),
        principal: principal.clone(),
    })
}

/// A file's name inside the zip: below one folder named as the one downloaded, so that
/// unpacking it makes that folder and nothing beside it. Stored paths are valid paths (no
/// `..`, no leading `/`, no backslash), so no member can point outside it.
fn member_name(top: &str, dir: Option<&ValidPath>, path: &ValidPath) -> String {
    let within = dir
        .and_then(|dir| path.as_str().strip_prefix(dir.as_str()))
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(path.as_str());
    format!("{top}/{within}")
}

fn too_many(members: usize) -> Result<()> {
    if members > MAX_MEMBERS {
        return Err(Error::invalid_request(format!(
            "the folder holds more than {MAX_MEMBERS} files, the most one zip carries; \
             download its subfolders one by one"
        )));
    }
    Ok(())
}

/// The zip's comment when names were left out (`unzip -z` shows it).
fn left_out_comment(count: u64) -> String {
    format!(
        "ferry left out {count} file(s) or folder(s) whose names no door can address: a control \
         character or a backslash, not UTF-8, or a path over 1,024 bytes. Rename them from a \
         command to include them."
    )
}

impl FolderZip {
    /// The zip's bytes. A file removed after the listing is left out; a read that fails ends
    /// the stream with the error, so a client sees a cut transfer, never a zip that lies.
    pub fn into_stream(self) -> impl Stream<Item = io::Result<Bytes>> + Send + 'static {
        // Two chunks in flight at most: the response reads one while the next is built.
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        tokio::spawn(async move {
            if let Err(e) = self.write(&tx).await {
                // The receiver may be gone (the client left): nothing is left to tell.
                let _ = tx.send(Err(e)).await;
            }
        });
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) })
    }

    async fn write(self, tx: &tokio::sync::mpsc::Sender<io::Result<Bytes>>) -> io::Result<()> {
        let out = Gathered::default();
        let mut zip = ZipWriter::new_stream(out.clone());
        for member in &self.members {
            let Some(mut stream) = self.open(member).await? else {
                continue;
            };
            zip.start_file(member.name.as_str(), options(member))
                .map_err(io::Error::other)?;
            while let Some(chunk) = stream.next().await {
                zip.write_all(&chunk?)?;
                if out.len() >= CHUNK_BYTES {
                    send(tx, out.take()).await?;
                }
            }
        }
        if self.left_out > 0 {
            zip.set_comment(left_out_comment(self.left_out))
                .map_err(io::Error::other)?;
        }
        zip.finish().map_err(io::Error::other)?;
        send(tx, out.take()).await
    }

    /// The member's bytes, or `None` when it was removed since the listing.
    async fn open(
        &self,
        member: &Member,
    ) -> io::Result<Option<futures::stream::BoxStream<'static, io::Result<Bytes>>>> {
        let read = match &self.place {
            Place::Sandbox(sandbox) => match sandbox.open(&member.path).await {
                Ok(opened) => opened.stream(None).await,
                Err(ferry_store::Error::NotFound) => return Ok(None),
                Err(e) => return Err(io::Error::other(in_sandbox(e).to_string())),
            },
            Place::Space(space) => {
                match crate::files::spaces::file(&self.app, &self.principal, space, &member.path)
                    .await
                {
                    Ok(file) => self.app.blobs.read(&file.blob_key, None).await,
                    Err(Error::NotFound(_)) => return Ok(None),
                    Err(e) => return Err(io::Error::other(e.to_string())),
                }
            }
        };
        match read {
            Ok(read) => Ok(Some(read.stream)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
}

async fn send(tx: &tokio::sync::mpsc::Sender<io::Result<Bytes>>, bytes: Bytes) -> io::Result<()> {
    if bytes.is_empty() {
        return Ok(());
    }
    tx.send(Ok(bytes))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client stopped reading"))
}

fn options(member: &Member) -> SimpleFileOptions {
    let options = SimpleFileOptions::default()
        .compression_method(CompressionMethod::Stored)
        // ZIP64 only where it is needed: every unzip reads it, but older ones read no other.
        .large_file(member.size >= u64::from(u32::MAX));
    let civil = member.modified.civil();
    match zip::DateTime::from_date_and_time(
        u16::try_from(civil.year).unwrap_or(1980),
        civil.month as u8,
        civil.day as u8,
        civil.hour as u8,
        civil.minute as u8,
        civil.second as u8,
    ) {
        Ok(time) => options.last_modified_time(time),
        // Before 1980 or after 2107: a zip cannot say it, and the writer's default stands.
        Err(_) => options,
    }
}

/// The writer's output, gathered until a chunk is worth sending. Shared because the zip writer
/// owns its sink while the stream hands the bytes on.
#[derive(Clone, Default)]
struct Gathered(Arc<Mutex<Vec<u8>>>);

impl Gathered {
    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    fn take(&self) -> Bytes {
        let mut buffer = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        Bytes::from(std::mem::take(&mut *buffer))
    }
}

impl Write for Gathered {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
