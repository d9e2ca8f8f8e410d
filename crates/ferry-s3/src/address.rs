//! Buckets and keys (docs/s3.md, buckets): a bucket is one of the caller's spaces, by name,
//! or `sandbox-{thread id}`, the sandbox of a thread the caller may read. Keys are paths: in a
//! space as the space's paths, in a sandbox below `/sandbox/`.

use ferry_core::space_name::SANDBOX_BUCKET_PREFIX;
use ferry_core::{SandboxPath, SpaceName, ValidPath};
use s3s::{S3Result, s3_error};

/// What a bucket name names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Bucket {
    Space(SpaceName),
    Sandbox { thread_id: String },
}

impl Bucket {
    pub(crate) fn parse(name: &str) -> S3Result<Bucket> {
        if let Some(thread_id) = name.strip_prefix(SANDBOX_BUCKET_PREFIX) {
            return Ok(Bucket::Sandbox {
                thread_id: thread_id.to_owned(),
            });
        }
        SpaceName::parse(name)
            .map(Bucket::Space)
            .map_err(|e| s3_error!(InvalidBucketName, "'{name}' is not a space name: {e}"))
    }
}

/// A key of a space bucket as a path.
pub(crate) fn space_key(key: &str) -> S3Result<ValidPath> {
    ValidPath::parse(key).map_err(|e| s3_error!(InvalidArgument, "the key '{key}' is refused: {e}"))
}

/// A key of a sandbox bucket as a sandbox path.
pub(crate) fn sandbox_key(key: &str) -> S3Result<SandboxPath> {
    ValidPath::parse(key)
        .map(SandboxPath::from_relative)
        .map_err(|e| s3_error!(InvalidArgument, "the key '{key}' is refused: {e}"))
}

/// A folder marker (`dir/`, empty) as some tools write before the files of a folder: folders
/// exist through their files here, so it is accepted and nothing is stored.
pub(crate) fn is_folder_marker(key: &str, length: Option<i64>) -> bool {
    key.ends_with('/') && length.unwrap_or(0) == 0
}

/// Bucket names are checked by [`Bucket::parse`], against ferry's rules rather than AWS's
/// (space names may hold upper-case letters and underscores).
pub(crate) struct AnyName;

impl s3s::validation::NameValidation for AnyName {
    fn validate_bucket_name(&self, name: &str) -> bool {
        !name.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_spaces_or_sandboxes() {
        assert_eq!(
            Bucket::parse("notes").unwrap(),
            Bucket::Space(SpaceName::parse("notes").unwrap())
        );
        assert_eq!(
            Bucket::parse("sandbox-0190abcd").unwrap(),
            Bucket::Sandbox {
                thread_id: "0190abcd".into()
            }
        );
        assert!(Bucket::parse(".hidden").is_err());
        assert!(space_key("a/../b").is_err());
        assert!(sandbox_key("outputs/report.md").is_ok());
        assert!(is_folder_marker("dir/", Some(0)));
        assert!(!is_folder_marker("dir/a", Some(0)));
    }
}
