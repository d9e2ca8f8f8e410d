//! The checksum of an object made by a multipart upload (docs/s3.md, checksums).
//!
//! An upload names its algorithm when it starts (`x-amz-checksum-algorithm`) and how the
//! object's value is made (`x-amz-checksum-type`):
//! - `COMPOSITE`: the digest of the parts' digests, followed by `-N` for N parts (the default
//!   for SHA-1, SHA-256, CRC32 and CRC32C);
//! - `FULL_OBJECT`: the CRC of all the object's bytes, combined here from the parts' CRCs and
//!   sizes, so no byte is read again (the only kind for CRC64NVME; the SHA digests cannot be
//!   combined and refuse it).
//!
//! Each part of such an upload is hashed with its algorithm as it streams in, whether or not
//! the client sent a value (checksum.rs). A part value `CompleteMultipartUpload` lists must be
//! the one stored (a part listed without one stands for the part as stored), and a value sent
//! for the whole object must be the one made here.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use crc_fast::CrcAlgorithm;
use ferry_app::transfers::multipart::Part;
use s3s::dto::{Checksum, ChecksumAlgorithm, ChecksumType, CompletedPart};
use s3s::{S3Result, s3_error};
use serde::{Deserialize, Serialize};

use crate::body_checksum::{ALGORITHMS, StoredChecksum, hasher_for, value_of};

/// How an upload's object is checksummed, as chosen when it started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct UploadChecksum {
    /// One of [`ALGORITHMS`].
    pub(crate) algorithm: String,
    pub(crate) full_object: bool,
}

/// The object's checksum and its parts', in order, as the completion settled them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectChecksum {
    pub(crate) object: StoredChecksum,
    pub(crate) parts: Vec<String>,
}

/// The type of a kept checksum: a composite value ends in `-N` (base64 has no `-`).
pub(crate) fn type_of(value: &str) -> ChecksumType {
    ChecksumType::from_static(if value.contains('-') {
        ChecksumType::COMPOSITE
    } else {
        ChecksumType::FULL_OBJECT
    })
}

/// `algorithm`'s name as S3 answers it (`CRC32`, `SHA256`, …).
pub(crate) fn algorithm_name(algorithm: &str) -> ChecksumAlgorithm {
    ChecksumAlgorithm::from(algorithm.to_ascii_uppercase())
}

fn is_crc(algorithm: &str) -> bool {
    algorithm.starts_with("crc")
}

impl UploadChecksum {
    /// The choice a `CreateMultipartUpload` makes, if it names an algorithm.
    pub(crate) fn of_request(
        algorithm: Option<&ChecksumAlgorithm>,
        kind: Option<&ChecksumType>,
    ) -> S3Result<Option<UploadChecksum>> {
        let Some(algorithm) = algorithm else {
            return match kind {
                None => Ok(None),
                Some(_) => Err(s3_error!(
                    InvalidRequest,
                    "x-amz-checksum-type needs an x-amz-checksum-algorithm"
                )),
            };
        };
        let name = algorithm.as_str().to_ascii_lowercase();
        let algorithm = ALGORITHMS.into_iter().find(|a| *a == name).ok_or_else(|| {
            s3_error!(
                InvalidRequest,
                "x-amz-checksum-algorithm must be one of CRC32, CRC32C, CRC64NVME, SHA1, SHA256"
            )
        })?;
        let full_object = match kind.map(ChecksumType::as_str) {
            None => algorithm == "crc64nvme",
            Some(ChecksumType::FULL_OBJECT) if is_crc(algorithm) => true,
            Some(ChecksumType::COMPOSITE) if algorithm != "crc64nvme" => false,
            Some(other) => {
                return Err(s3_error!(
                    InvalidRequest,
                    "the {} checksum cannot be of type {other}: CRCs can be FULL_OBJECT, \
                     every algorithm but CRC64NVME can be COMPOSITE",
                    algorithm.to_ascii_uppercase()
                ));
            }
        };
        Ok(Some(UploadChecksum {
            algorithm: algorithm.to_owned(),
            full_object,
        }))
    }

    pub(crate) fn algorithm_name(&self) -> ChecksumAlgorithm {
        algorithm_name(&self.algorithm)
    }

    pub(crate) fn checksum_type(&self) -> ChecksumType {
        ChecksumType::from_static(if self.full_object {
            ChecksumType::FULL_OBJECT
        } else {
            ChecksumType::COMPOSITE
        })
    }

    /// The object's checksum from the `chosen` parts (each with its stored checksum), which
    /// the completion `listed` in the same order; `sent` is what the completion says the
    /// object's checksum is, if it says.
    pub(crate) fn of_object(
        &self,
        chosen: &[Part],
        listed: &[CompletedPart],
        sent: &Checksum,
        sent_type: Option<&ChecksumType>,
    ) -> S3Result<ObjectChecksum> {
        let algorithm = self.algorithm.as_str();
        if let Some(kind) = sent_type
            && *kind != self.checksum_type()
        {
            return Err(s3_error!(
                InvalidRequest,
                "the upload's checksum type is {}, not {}",
                self.checksum_type().as_str(),
                kind.as_str()
            ));
        }
        let mut parts = Vec::with_capacity(chosen.len());
        for (part, wanted) in chosen.iter().zip(listed) {
            let number = part.part_number;
            let stored = StoredChecksum::from_text(part.checksum.as_deref())
                .filter(|c| c.algorithm == algorithm)
                .ok_or_else(|| {
                    s3_error!(
                        InvalidPart,
                        "part {number} was stored without the upload's {} checksum",
                        algorithm.to_ascii_uppercase()
                    )
                })?;
            // A part listed without its value stands for the part as stored.
            if let Some(value) = listed_value(wanted, algorithm)
                && value.trim() != stored.value
            {
                return Err(s3_error!(
                    BadDigest,
                    "part {number}'s checksum is not the one it was uploaded with"
                ));
            }
            parts.push(stored.value);
        }
        let value = if self.full_object {
            let sizes: Vec<u64> = chosen.iter().map(|p| p.size).collect();
            combined_crc(algorithm, &parts, &sizes)?
        } else {
            composite(algorithm, &parts)?
        };
        if let Some(claimed) = value_of(sent, algorithm)
            && claimed.trim() != value
        {
            return Err(s3_error!(
                BadDigest,
                "the x-amz-checksum-{algorithm} you specified did not match the parts' ({value})"
            ));
        }
        Ok(ObjectChecksum {
            object: StoredChecksum {
                algorithm: algorithm.to_owned(),
                value,
            },
            parts,
        })
    }
}

/// The value a completion lists for a part under `algorithm`.
fn listed_value<'a>(part: &'a CompletedPart, algorithm: &str) -> Option<&'a String> {
    match algorithm {
        "crc32" => part.checksum_crc32.as_ref(),
        "crc32c" => part.checksum_crc32c.as_ref(),
        "crc64nvme" => part.checksum_crc64nvme.as_ref(),
        "sha1" => part.checksum_sha1.as_ref(),
        _ => part.checksum_sha256.as_ref(),
    }
}

fn decode(value: &str) -> S3Result<Vec<u8>> {
    STANDARD
        .decode(value)
        .map_err(|_| s3_error!(InvalidRequest, "a stored part checksum is not base64"))
}

/// COMPOSITE: the digest of the parts' digests (their bytes, one after another), `-N`.
fn composite(algorithm: &str, parts: &[String]) -> S3Result<String> {
    let mut hasher = hasher_for(algorithm);
    for value in parts {
        hasher.update(&decode(value)?);
    }
    let digest = value_of(&hasher.finalize(), algorithm).unwrap_or_default();
    Ok(format!("{digest}-{}", parts.len()))
}

/// FULL_OBJECT: the CRC of the parts' bytes one after another, from each part's CRC and size.
fn combined_crc(algorithm: &str, parts: &[String], sizes: &[u64]) -> S3Result<String> {
    let (crc, width) = match algorithm {
        "crc32" => (CrcAlgorithm::Crc32IsoHdlc, 4),
        "crc32c" => (CrcAlgorithm::Crc32Iscsi, 4),
        "crc64nvme" => (CrcAlgorithm::Crc64Nvme, 8),
        other => {
            return Err(s3_error!(
                InvalidRequest,
                "a {other} checksum cannot cover the full object"
            ));
        }
    };
    let mut combined: Option<u64> = None;
    for (value, size) in parts.iter().zip(sizes) {
        let bytes = decode(value)?;
        if bytes.len() != width {
            return Err(s3_error!(
                InvalidRequest,
                "a stored part checksum has the wrong length"
            ));
        }
        let part = bytes.iter().fold(0u64, |n, b| n << 8 | u64::from(*b));
        combined = Some(match combined {
            None => part,
            Some(before) => crc_fast::checksum_combine(crc, before, part, *size),
        });
    }
    let combined = combined.unwrap_or(0).to_be_bytes();
    Ok(STANDARD.encode(&combined[8 - width..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checksum_of(algorithm: &str, bytes: &[u8]) -> String {
        let mut hasher = hasher_for(algorithm);
        hasher.update(bytes);
        value_of(&hasher.finalize(), algorithm).unwrap()
    }

    fn part(number: u32, bytes: &[u8], algorithm: &str) -> Part {
        Part {
            part_number: number,
            blob_key: format!("b{number}"),
            size: bytes.len() as u64,
            sha256: format!("s{number}"),
            checksum: Some(
                StoredChecksum {
                    algorithm: algorithm.into(),
                    value: checksum_of(algorithm, bytes),
                }
                .to_text(),
            ),
            created_at: ferry_core::Timestamp(0),
        }
    }

    fn listed(part: &Part, algorithm: &str) -> CompletedPart {
        let value = StoredChecksum::from_text(part.checksum.as_deref())
            .unwrap()
            .value;
        let mut listed = CompletedPart {
            part_number: Some(part.part_number as i32),
            ..Default::default()
        };
        match algorithm {
            "crc32" => listed.checksum_crc32 = Some(value),
            "crc32c" => listed.checksum_crc32c = Some(value),
            "crc64nvme" => listed.checksum_crc64nvme = Some(value),
            "sha1" => listed.checksum_sha1 = Some(value),
            _ => listed.checksum_sha256 = Some(value),
        }
        listed
    }

    fn choice(algorithm: &str, kind: Option<&'static str>) -> S3Result<Option<UploadChecksum>> {
        UploadChecksum::of_request(
            Some(&algorithm_name(algorithm)),
            kind.map(ChecksumType::from_static).as_ref(),
        )
    }

    #[test]
    fn a_full_object_crc_is_the_crc_of_all_the_bytes() {
        let bytes: Vec<u8> = (0..70_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let pieces = [&bytes[..30_000], &bytes[30_000..69_999], &bytes[69_999..]];
        for algorithm in ["crc32", "crc32c", "crc64nvme"] {
            let upload = choice(algorithm, Some(ChecksumType::FULL_OBJECT))
                .unwrap()
                .unwrap();
            let chosen: Vec<Part> = pieces
                .iter()
                .enumerate()
                .map(|(i, b)| part(i as u32 + 1, b, algorithm))
                .collect();
            let list: Vec<CompletedPart> = chosen.iter().map(|p| listed(p, algorithm)).collect();
            let made = upload
                .of_object(&chosen, &list, &Checksum::default(), None)
                .unwrap();
            assert_eq!(
                made.object.value,
                checksum_of(algorithm, &bytes),
                "{algorithm}"
            );
            assert_eq!(made.parts.len(), 3);
        }
    }

    #[test]
    fn a_composite_checksum_is_the_digest_of_the_digests() {
        // S3's own example: one part of 1,024 'A's under SHA-256.
        let upload = choice("sha256", None).unwrap().unwrap();
        assert!(!upload.full_object);
        let chosen = [part(1, &[b'A'; 1024], "sha256")];
        let list = [listed(&chosen[0], "sha256")];
        let made = upload
            .of_object(&chosen, &list, &Checksum::default(), None)
            .unwrap();
        assert_eq!(
            made.parts[0],
            "arcu6553sHVAiX4MjW0j7I7vD4w6R+Gz9Ok0Q9lTa+0="
        );
        assert_eq!(
            made.object.value,
            "Ok6Cs5b96ux6+MWQkJO7UBT5sKPBeXBLwvj/hK89smg=-1"
        );
        assert_eq!(
            type_of(&made.object.value).as_str(),
            ChecksumType::COMPOSITE
        );
        assert_eq!(type_of(&made.parts[0]).as_str(), ChecksumType::FULL_OBJECT);
    }

    #[test]
    fn a_completion_lists_the_parts_values_as_stored_and_may_claim_the_objects() {
        let upload = choice("crc32c", None).unwrap().unwrap();
        let chosen = [part(1, b"abc", "crc32c")];
        let code = |list: &[CompletedPart], sent: &Checksum| {
            upload
                .of_object(&chosen, list, sent, None)
                .unwrap_err()
                .code()
                .clone()
        };
        let unlisted = CompletedPart {
            part_number: Some(1),
            ..Default::default()
        };
        let made = upload
            .of_object(&chosen, &[unlisted], &Checksum::default(), None)
            .unwrap();
        assert_eq!(made.parts, [checksum_of("crc32c", b"abc")]);
        let mut wrong = listed(&chosen[0], "crc32c");
        wrong.checksum_crc32c = Some("AAAAAA==".into());
        assert_eq!(
            code(&[wrong], &Checksum::default()),
            s3s::S3ErrorCode::BadDigest
        );
        let good = [listed(&chosen[0], "crc32c")];
        let claim = |value: &str| Checksum {
            checksum_crc32c: Some(value.into()),
            ..Default::default()
        };
        assert_eq!(code(&good, &claim("bad")), s3s::S3ErrorCode::BadDigest);
        let made = upload
            .of_object(&chosen, &good, &Checksum::default(), None)
            .unwrap();
        assert!(
            upload
                .of_object(&chosen, &good, &claim(&made.object.value), None)
                .is_ok()
        );
        let full = ChecksumType::from_static(ChecksumType::FULL_OBJECT);
        assert!(
            upload
                .of_object(&chosen, &good, &Checksum::default(), Some(&full))
                .is_err()
        );
    }

    #[test]
    fn only_crcs_cover_the_full_object_and_crc64nvme_only_that_way() {
        assert!(choice("crc64nvme", None).unwrap().unwrap().full_object);
        assert!(choice("sha1", Some(ChecksumType::FULL_OBJECT)).is_err());
        assert!(choice("crc64nvme", Some(ChecksumType::COMPOSITE)).is_err());
        assert!(choice("md5", None).is_err());
        assert!(
            UploadChecksum::of_request(
                None,
                Some(&ChecksumType::from_static(ChecksumType::COMPOSITE))
            )
            .is_err()
        );
        assert_eq!(UploadChecksum::of_request(None, None).unwrap(), None);
    }
}
