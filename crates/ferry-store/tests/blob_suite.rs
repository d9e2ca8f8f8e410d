//! The blob store's suite, run unchanged on a local folder and on a real S3 server (moto,
//! started on loopback by the test).

use bytes::Bytes;

use ferry_store::{Blobs, Db, LocalBlobs, ObjectBlobs};
use futures::{Stream, StreamExt, stream};
use std::io;
use std::sync::Arc;
use std::time::Duration;

struct Store {
    blobs: Blobs,
    _dir: tempfile::TempDir,
    _s3: Option<ferry_test_support::peers::S3Server>,
}

fn local() -> Store {
    let dir = tempfile::tempdir().unwrap();
    Store {
        blobs: Blobs::Local(LocalBlobs::open(dir.path().join("blobs")).unwrap()),
        _dir: dir,
        _s3: None,
    }
}

fn s3() -> Option<Store> {
    let server = ferry_test_support::peers::s3()?;
    let store = object_store::aws::AmazonS3Builder::new()
        .with_endpoint(&server.endpoint)
        .with_allow_http(true)
        .with_bucket_name(&server.bucket)
        .with_region("us-east-1")
        .with_access_key_id("ferry-test")
        .with_secret_access_key("ferry-test-secret")
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    Some(Store {
        blobs: Blobs::Object(
            ObjectBlobs::new(Arc::new(store), "blobs", dir.path().join("spool")).unwrap(),
        ),
        _dir: dir,
        _s3: Some(server),
    })
}

macro_rules! on_every_store {
    ($($name:ident => $body:expr;)*) => {
        mod local_folder {
            use super::*;
            $( #[tokio::test] async fn $name() {
                // The store (its folder, its server) lives until the body is done.
                let store = local();
                ($body)(store.blobs.clone()).await;
                drop(store);
            } )*
        }
        mod s3 {
            use super::*;
            $( #[tokio::test] async fn $name() {
                if let Some(store) = s3() {
                    ($body)(store.blobs.clone()).await;
                    drop(store);
                }
            } )*
        }
    };
}

fn chunks(data: Vec<u8>, size: usize) -> impl Stream<Item = Result<Bytes, io::Error>> + use<> {
    let parts: Vec<_> = data
        .chunks(size)
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    stream::iter(parts)
}

fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

async fn read_all(blobs: &Blobs, key: &str, range: Option<std::ops::Range<u64>>) -> Vec<u8> {
    let read = blobs.read(key, range).await.unwrap();
    let len = read.len;
    let mut out = Vec::new();
    let mut stream = read.stream;
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(
        out.len() as u64,
        len,
        "the announced length is the streamed length"
    );
    out
}

async fn keys(blobs: &Blobs) -> Vec<String> {
    let mut all: Vec<String> = blobs.keys().map(|k| k.unwrap()).collect().await;
    all.sort();
    all
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

on_every_store! {
    small_blobs_round_trip_with_ranges => |blobs: Blobs| async move {
        let bytes = data(10_000);
        let blob = blobs.write(chunks(bytes.clone(), 1000), 1 << 20).await.unwrap();
        assert_eq!(blob.size, 10_000);
        assert_eq!(blob.sha256, sha256_hex(&bytes));
        assert_eq!(read_all(&blobs, &blob.key, None).await, bytes);
        assert_eq!(read_all(&blobs, &blob.key, Some(100..200)).await, &bytes[100..200]);
        assert_eq!(read_all(&blobs, &blob.key, Some(9_990..20_000)).await, &bytes[9_990..]);
        assert_eq!(keys(&blobs).await, vec![blob.key.clone()]);
        let copy = blobs.local_copy(&blob.key).await.unwrap();
        assert_eq!(std::fs::read(copy.path()).unwrap(), bytes);
        drop(copy);
        blobs.delete(&blob.key).await.unwrap();
        blobs.delete(&blob.key).await.unwrap();
        assert!(blobs.read(&blob.key, None).await.is_err());
        assert!(keys(&blobs).await.is_empty());
    };

    large_blobs_stream_in_parts => |blobs: Blobs| async move {
        // Over two 8 MiB parts: a multipart upload on S3.
        let bytes = data(20 * 1024 * 1024 + 123);
        let blob = blobs.write(chunks(bytes.clone(), 64 * 1024), u64::MAX).await.unwrap();
        assert_eq!(blob.size, bytes.len() as u64);
        assert_eq!(blob.sha256, sha256_hex(&bytes));
        assert!(read_all(&blobs, &blob.key, None).await == bytes);
        let tail = read_all(&blobs, &blob.key, Some(20 * 1024 * 1024..u64::MAX)).await;
        assert_eq!(tail, &bytes[20 * 1024 * 1024..]);
    };

    spooled_bytes_commit_into_blobs => |blobs: Blobs| async move {
        let bytes = data(9 * 1024 * 1024);
        let spooled = blobs.spool(chunks(bytes.clone(), 1 << 16), u64::MAX).await.unwrap();
        assert_eq!(std::fs::read(spooled.path()).unwrap().len(), bytes.len());
        let blob = blobs.commit(spooled).await.unwrap();
        assert_eq!(blob.sha256, sha256_hex(&bytes));
        assert!(read_all(&blobs, &blob.key, None).await == bytes);
    };

    over_the_limit_leaves_nothing => |blobs: Blobs| async move {
        for len in [5_000usize, 9 * 1024 * 1024] {
            let err = blobs.write(chunks(data(len), 1 << 16), (len - 1) as u64).await.unwrap_err();
            assert!(matches!(err, ferry_store::Error::TooLarge { .. }), "{err:?}");
        }
        assert!(keys(&blobs).await.is_empty(), "no blob remains");
        let err = blobs.spool(chunks(data(5_000), 100), 4_999).await.unwrap_err();
        assert!(matches!(err, ferry_store::Error::TooLarge { .. }));
        assert_eq!(blobs.sweep_spools(Duration::ZERO).await.unwrap(), 0, "no spool remains");
    };

    a_broken_body_leaves_nothing => |blobs: Blobs| async move {
        for first in [1_000usize, 9 * 1024 * 1024] {
            let body = stream::iter(vec![
                Ok(Bytes::from(data(first))),
                Err(io::Error::other("connection reset")),
            ]);
            let err = blobs.write(body, u64::MAX).await.unwrap_err();
            assert!(matches!(err, ferry_store::Error::Body(_)), "{err:?}");
        }
        assert!(keys(&blobs).await.is_empty());
    };

    the_sweep_removes_only_old_unreferenced_blobs => |blobs: Blobs| async move {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display())).await.unwrap();
        let kept = blobs.write(chunks(data(10), 10), 100).await.unwrap();
        let orphan = blobs.write(chunks(data(10), 10), 100).await.unwrap();
        let space = ferry_core::SpaceName::parse("s").unwrap();
        db.space_put("u", &space, &ferry_core::ValidPath::parse("f").unwrap(), &kept, ferry_core::write::FileMeta::typed("text/plain"),
            &ferry_core::write::WriteCondition::None).await.unwrap();
        // Within the grace period nothing goes, referenced or not.
        let report = ferry_store::sweep::sweep(&db, &blobs, Duration::from_secs(3600)).await.unwrap();
        assert_eq!(report.removed_blobs, 0);
        // Past it, the orphan goes and the referenced blob stays.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let report = ferry_store::sweep::sweep(&db, &blobs, Duration::from_millis(10)).await.unwrap();
        assert_eq!(report.removed_blobs, 1);
        assert_eq!(keys(&blobs).await, vec![kept.key.clone()]);
        assert!(blobs.read(&orphan.key, None).await.is_err());
    };
}
