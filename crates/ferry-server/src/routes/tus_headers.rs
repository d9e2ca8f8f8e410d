//! The grammar of tus 1.0's headers that carry values (`Upload-Checksum`, `Upload-Metadata`),
//! read here in the HTTP door so that the resumable-upload use cases take typed values and
//! know no header (docs/reference/resumable-uploads.md).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use ferry_app::transfers::resumable::{Checksum, ChecksumAlgorithm, MAX_METADATA_BYTES, Metadata};
use std::collections::HashMap;

use crate::error::{ApiError, ApiResult};

/// The checksum algorithms a `PATCH` may name, as `Tus-Checksum-Algorithm` lists them: every
/// one the use case takes (a test holds the two together).
pub(crate) const CHECKSUM_ALGORITHMS: &str = "sha1,sha256";

/// Reads `Upload-Checksum: <algorithm> <base64 digest>`, the algorithm in any case.
pub(crate) fn checksum(header: &str) -> ApiResult<Checksum> {
    let bad = || {
        ApiError::invalid_request(format!(
            "Upload-Checksum must be '<algorithm> <base64 digest>' with an algorithm of \
             {CHECKSUM_ALGORITHMS}"
        ))
    };
    let (name, digest) = header.trim().split_once(' ').ok_or_else(bad)?;
    let algorithm = ChecksumAlgorithm::ALL
        .iter()
        .find(|(known, _)| name.eq_ignore_ascii_case(known))
        .map(|(_, algorithm)| *algorithm)
        .ok_or_else(bad)?;
    let digest = STANDARD.decode(digest.trim()).map_err(|_| bad())?;
    Ok(Checksum { algorithm, digest })
}

/// Reads `Upload-Metadata`: comma-separated pairs of a key and its base64 value (the value may
/// be left out). A key given twice, a value that is not base64 of UTF-8, or a header longer
/// than the use case keeps is refused.
pub(crate) fn metadata(header: &str) -> ApiResult<Metadata> {
    if header.len() > MAX_METADATA_BYTES {
        return Err(ApiError::invalid_request(format!(
            "Upload-Metadata is {} bytes: at most {MAX_METADATA_BYTES} are kept",
            header.len()
        )));
    }
    let mut pairs = HashMap::new();
    for pair in header.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = match pair.split_once(' ') {
            Some((key, value)) => (key, value.trim()),
            None => (pair, ""),
        };
        let value = STANDARD
            .decode(value)
            .ok()
            .and_then(|v| String::from_utf8(v).ok())
            .ok_or_else(|| {
                ApiError::invalid_request(format!(
                    "Upload-Metadata: the value of '{key}' is not base64 of UTF-8 text"
                ))
            })?;
        if pairs.insert(key.to_owned(), value).is_some() {
            return Err(ApiError::invalid_request(format!(
                "Upload-Metadata names '{key}' twice"
            )));
        }
    }
    Ok(Metadata {
        pairs,
        as_sent: header.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checksum_names_a_known_algorithm_and_a_base64_digest() {
        let read = checksum("SHA256 3q2+7w==").unwrap();
        assert_eq!(read.algorithm, ChecksumAlgorithm::Sha256);
        assert_eq!(read.digest, [0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(
            checksum("sha1 AA==").unwrap().algorithm,
            ChecksumAlgorithm::Sha1
        );
        for bad in ["md5 AA==", "sha256", "sha256 !!!", ""] {
            assert!(checksum(bad).is_err(), "{bad}");
        }
        let names: Vec<_> = ChecksumAlgorithm::ALL
            .iter()
            .map(|(name, _)| *name)
            .collect();
        assert_eq!(CHECKSUM_ALGORITHMS, names.join(","));
    }

    #[test]
    fn metadata_is_pairs_of_a_key_and_base64_text() {
        let read = metadata("filename bm90ZXMudHh0, threadId dA==,empty").unwrap();
        assert_eq!(read.pairs["filename"], "notes.txt");
        assert_eq!(read.pairs["threadId"], "t");
        assert_eq!(read.pairs["empty"], "");
        assert_eq!(read.as_sent, "filename bm90ZXMudHh0, threadId dA==,empty");
        for bad in ["a AA==,a AA==", "a !!!", "a /w=="] {
            assert!(metadata(bad).is_err(), "{bad}");
        }
        assert!(metadata(&"a".repeat(MAX_METADATA_BYTES + 1)).is_err());
        assert!(metadata("").unwrap().pairs.is_empty());
    }
}
