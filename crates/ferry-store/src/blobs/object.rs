//! Blobs in an object store (S3 or any S3-compatible store): where a deployment of several
//! nodes keeps them, each blob one object under the store's key prefix, written by a single
//! PUT or, for a larger body, a multipart upload fed as the body arrives.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use sha2::{Digest, Sha256};
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use crate::Error;

/// Blobs in an object store (S3 or any S3-compatible store) under a key prefix. Bodies being
/// received are spooled to a local folder only where a local file is needed anyway (uploads
/// and publishes, which the extraction worker and the sandbox copy read); space and sandbox
/// writes stream straight into the store.
#[derive(Debug, Clone)]
pub struct ObjectBlobs {
    pub(super) store: Arc<dyn ObjectStore>,
    pub(super) prefix: ObjectPath,
    pub(super) tmp: PathBuf,
}

impl ObjectBlobs {
    /// Blobs under `prefix` of `store`, with local spools in `tmp`.
    pub fn new(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        tmp: impl Into<PathBuf>,
    ) -> io::Result<ObjectBlobs> {
        let tmp = tmp.into();
        std::fs::create_dir_all(&tmp)?;
        Ok(ObjectBlobs {
            store,
            prefix: ObjectPath::from(prefix),
            tmp,
        })
    }

    /// An S3 bucket from a URL like `s3://bucket/prefix`, configured by the usual `AWS_*`
    /// variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT`,
    /// `AWS_ALLOW_HTTP`).
    pub fn s3_from_env(url: &str, tmp: impl Into<PathBuf>) -> io::Result<ObjectBlobs> {
        let parsed = url
            .strip_prefix("s3://")
            .ok_or_else(|| io::Error::other(format!("'{url}' is not an s3:// URL")))?;
        let (bucket, prefix) = parsed.split_once('/').unwrap_or((parsed, ""));
        let store = object_store::aws::AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .build()
            .map_err(|e| io::Error::other(format!("cannot use {url}: {e}")))?;
        let prefix = prefix.trim_matches('/');
        let prefix = if prefix.is_empty() {
            "blobs".to_owned()
        } else {
            format!("{prefix}/blobs")
        };
        ObjectBlobs::new(Arc::new(store), &prefix, tmp)
    }

    pub(super) fn path_of(&self, key: &str) -> ObjectPath {
        self.prefix.clone().join(key)
    }
}

/// How many bytes go up in one part of an object-store multipart upload; a body that fits in
/// one part goes up as a single PUT.
const PART_SIZE: usize = 8 << 20;
/// Parts in flight at once per upload (memory: at most this many parts, plus one filling).
const PARTS_IN_FLIGHT: usize = 2;

pub(super) fn store_error(e: object_store::Error) -> io::Error {
    match e {
        object_store::Error::NotFound { .. } => io::Error::new(io::ErrorKind::NotFound, e),
        other => io::Error::other(other),
    }
}

/// Uploads a stream to the object store under `key`: a single PUT when the body fits in one
/// part, else a multipart upload fed as the body arrives, never holding more than a few parts.
/// Returns the size; refuses bodies over `limit` (aborting the multipart upload).
pub(super) async fn upload_stream<S, E>(
    object: &ObjectBlobs,
    key: &str,
    body: S,
    limit: u64,
    mut hasher: Option<&mut Sha256>,
) -> Result<u64, Error>
where
    S: Stream<Item = Result<Bytes, E>>,
    E: std::fmt::Display,
{
    let path = object.path_of(key);
    let mut body = std::pin::pin!(body);
    let mut first: Vec<Bytes> = Vec::new();
    let mut buffered = 0usize;
    let mut size = 0u64;
    let mut accept = |chunk: &Bytes, size: &mut u64| -> Result<(), Error> {
        *size += chunk.len() as u64;
        if *size > limit {
            return Err(Error::TooLarge { limit });
        }
        if let Some(h) = hasher.as_deref_mut() {
            h.update(chunk);
        }
        Ok(())
    };
    // Gather the first part; a small body never starts a multipart upload.
    while buffered < PART_SIZE {
        match body.next().await {
            Some(chunk) => {
                let chunk = chunk.map_err(|e| Error::Body(e.to_string()))?;
                accept(&chunk, &mut size)?;
                buffered += chunk.len();
                first.push(chunk);
            }
            None => {
                let payload = PutPayload::from_iter(first);
                object
                    .store
                    .put(&path, payload)
                    .await
                    .map_err(|e| Error::Io(store_error(e)))?;
                return Ok(size);
            }
        }
    }
    let upload = object
        .store
        .put_multipart(&path)
        .await
        .map_err(|e| Error::Io(store_error(e)))?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
    for chunk in first {
        writer.put(chunk);
    }
    let streamed: Result<(), Error> = async {
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(|e| Error::Body(e.to_string()))?;
            accept(&chunk, &mut size)?;
            writer
                .wait_for_capacity(PARTS_IN_FLIGHT)
                .await
                .map_err(|e| Error::Io(store_error(e)))?;
            writer.put(chunk);
        }
        Ok(())
    }
    .await;
    match streamed {
        Ok(()) => {
            writer
                .finish()
                .await
                .map_err(|e| Error::Io(store_error(e)))?;
            Ok(size)
        }
        Err(e) => {
            let _ = writer.abort().await;
            Err(e)
        }
    }
}
