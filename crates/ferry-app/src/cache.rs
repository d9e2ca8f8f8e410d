//! Files derived from stored bytes (HTML renderings, images made ready for a model), kept on
//! this node's disk under names made from the content's hash.
//!
//! A derived file depends only on the bytes it was made from, so an entry never goes stale
//! and every node may keep its own. The cache is an optimisation: an entry that cannot be
//! read or written only costs making it again.

use std::path::{Path, PathBuf};

/// A directory of derived files.
#[derive(Debug, Clone)]
pub struct DerivedCache {
    dir: PathBuf,
}

impl DerivedCache {
    pub fn new(dir: impl Into<PathBuf>) -> DerivedCache {
        DerivedCache { dir: dir.into() }
    }

    /// The entry `name` (a relative path such as `html/<sha256>.html`), if it is there.
    pub async fn read(&self, name: &str) -> Option<Vec<u8>> {
        tokio::fs::read(self.dir.join(name)).await.ok()
    }

    /// The entry `name` read as JSON, if it is there and reads as a `T` (an entry written by
    /// another version that no longer reads is as good as missing: it is made again).
    pub async fn read_json<T: serde::de::DeserializeOwned>(&self, name: &str) -> Option<T> {
        serde_json::from_slice(&self.read(name).await?).ok()
    }

    /// Stores `value` as JSON under `name` (see [`DerivedCache::write`]).
    pub async fn write_json<T: serde::Serialize>(&self, name: &str, value: &T) {
        if let Ok(bytes) = serde_json::to_vec(value) {
            self.write(name, bytes).await;
        }
    }

    /// Writes `bytes` to a file of its own that is removed when the returned path is dropped:
    /// how bytes that live elsewhere (a blob, a sandbox file) reach the extractor, which reads
    /// files from disk.
    pub async fn scratch(&self, bytes: Vec<u8>) -> std::io::Result<tempfile::TempPath> {
        let dir = self.scratch_root();
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&dir)?;
            let mut file = tempfile::NamedTempFile::new_in(&dir)?;
            std::io::Write::write_all(&mut file, &bytes)?;
            Ok(file.into_temp_path())
        })
        .await
        .map_err(std::io::Error::other)?
    }

    /// Where the entry `name` is, if it is there: for a derived file that is read from disk (a
    /// deck's slides as a PDF, which the extraction worker opens by path).
    pub async fn path_of(&self, name: &str) -> Option<PathBuf> {
        let path = self.dir.join(name);
        let meta = tokio::fs::metadata(&path).await.ok()?;
        meta.is_file().then_some(path)
    }

    /// A folder of its own, removed with everything in it when the returned value is dropped:
    /// where something that makes several files (the office renderer) works, on the cache's
    /// file system so that what it makes can be kept by [`DerivedCache::keep_file`].
    pub async fn scratch_dir(&self) -> std::io::Result<tempfile::TempDir> {
        let dir = self.scratch_root();
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&dir)?;
            tempfile::TempDir::new_in(&dir)
        })
        .await
        .map_err(std::io::Error::other)?
    }

    /// Keeps the file at `from` (in a [`DerivedCache::scratch_dir`]) as the entry `name`, by
    /// renaming it; answers the entry's path, or `None` when it could not be kept.
    pub async fn keep_file(&self, name: &str, from: &Path) -> Option<PathBuf> {
        let target = self.dir.join(name);
        let result = async {
            if let Some(dir) = target.parent() {
                tokio::fs::create_dir_all(dir).await?;
            }
            tokio::fs::rename(from, &target).await
        }
        .await;
        match result {
            Ok(()) => Some(target),
            Err(e) => {
                tracing::warn!(error = %e, entry = name, "could not keep a derived file in the cache");
                None
            }
        }
    }

    /// Where scratch files and folders are made: inside the cache, so that what is made there
    /// can be renamed into it (and where a request's content is spooled as it arrives).
    pub fn scratch_root(&self) -> PathBuf {
        self.dir.join("scratch")
    }

    /// Stores the entry `name`. Written to a temporary file and renamed, so a reader sees the
    /// whole entry or none.
    pub async fn write(&self, name: &str, bytes: Vec<u8>) {
        let target = self.dir.join(name);
        let Some(dir) = target.parent().map(ToOwned::to_owned) else {
            return;
        };
        let tmp = dir.join(format!(".{}.tmp", uuid::Uuid::now_v7().simple()));
        let result = async {
            tokio::fs::create_dir_all(&dir).await?;
            tokio::fs::write(&tmp, bytes).await?;
            tokio::fs::rename(&tmp, &target).await
        }
        .await;
        if let Err(e) = result {
            tracing::warn!(error = %e, entry = name, "could not keep a derived file in the cache");
            let _ = tokio::fs::remove_file(&tmp).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_entry_is_read_back_and_a_missing_one_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DerivedCache::new(dir.path());
        assert_eq!(cache.read("html/a.html").await, None);
        cache.write("html/a.html", b"<p>a</p>".to_vec()).await;
        assert_eq!(
            cache.read("html/a.html").await.as_deref(),
            Some(&b"<p>a</p>"[..])
        );
        let left: Vec<_> = std::fs::read_dir(dir.path().join("html"))
            .unwrap()
            .collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
    }

    #[tokio::test]
    async fn a_file_made_in_a_scratch_folder_is_kept_by_path_and_the_folder_goes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DerivedCache::new(dir.path());
        assert_eq!(cache.path_of("slides-pdf/a.pdf").await, None);
        let scratch = cache.scratch_dir().await.unwrap();
        let made = scratch.path().join("deck.pdf");
        std::fs::write(&made, b"%PDF").unwrap();
        let kept = cache.keep_file("slides-pdf/a.pdf", &made).await.unwrap();
        assert_eq!(cache.path_of("slides-pdf/a.pdf").await, Some(kept.clone()));
        assert_eq!(std::fs::read(&kept).unwrap(), b"%PDF");
        let folder = scratch.path().to_owned();
        drop(scratch);
        assert!(
            !folder.exists(),
            "the scratch folder is removed when dropped"
        );
        // A folder is not an entry.
        assert_eq!(cache.path_of("slides-pdf").await, None);
    }
}
