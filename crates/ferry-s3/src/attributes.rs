//! What the door keeps of an object beyond its bytes and content type (docs/s3.md, metadata):
//! user metadata (`x-amz-meta-*`), the content headers S3 stores and answers with
//! (`Cache-Control`, `Content-Disposition`, `Content-Encoding`, `Content-Language`, `Expires`),
//! and the checksum the object was written with. Kept with a space file as JSON that only this
//! door reads; a write through another door replaces the file and leaves none. A sandbox keeps
//! plain files, so there these are not kept.

use std::collections::BTreeMap;

use s3s::dto::{Checksum, Metadata, Timestamp};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::body_checksum::StoredChecksum;
use crate::multipart_checksum::{UploadChecksum, type_of};

/// The multipart upload an object was completed from: its id (a repeated
/// `CompleteMultipartUpload` of it answers as the first did), its parts' sizes, in order
/// (`partNumber` reads one of them), and their checksums when the upload named an algorithm
/// (the object's [`Attributes::checksum`] is of that algorithm).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Assembled {
    pub(crate) upload_id: String,
    pub(crate) part_sizes: Vec<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) part_checksums: Vec<String>,
}

impl Assembled {
    /// The byte range of part `number` (from 1), if there is such a part.
    pub(crate) fn part(&self, number: usize) -> Option<std::ops::Range<u64>> {
        let index = number.checked_sub(1)?;
        let size = *self.part_sizes.get(index)?;
        let start: u64 = self.part_sizes[..index].iter().sum();
        Some(start..start + size)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Attributes {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) metadata: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cache_control: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) content_disposition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) content_encoding: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) content_language: Option<String>,
    /// `Expires`, in seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) checksum: Option<StoredChecksum>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) assembled: Option<Assembled>,
    /// Of a multipart upload in progress: how its object will be checksummed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) upload_checksum: Option<UploadChecksum>,
}

/// The headers a write sends about its object, borrowed from whichever input carries them
/// (`PutObject`, `CopyObject` with `REPLACE`, `CreateMultipartUpload`).
pub(crate) struct Sent<'a> {
    pub(crate) metadata: Option<&'a Metadata>,
    pub(crate) cache_control: Option<&'a String>,
    pub(crate) content_disposition: Option<&'a String>,
    pub(crate) content_encoding: Option<&'a String>,
    pub(crate) content_language: Option<&'a String>,
    pub(crate) expires: Option<&'a Timestamp>,
}

/// [`Sent`] from any input with S3's object header fields.
macro_rules! sent {
    ($input:expr) => {
        $crate::attributes::Sent {
            metadata: $input.metadata.as_ref(),
            cache_control: $input.cache_control.as_ref(),
            content_disposition: $input.content_disposition.as_ref(),
            content_encoding: $input.content_encoding.as_ref(),
            content_language: $input.content_language.as_ref(),
            expires: $input.expires.as_ref(),
        }
    };
}
pub(crate) use sent;

impl Attributes {
    /// What a write keeps of the headers it sent. `aws-chunked` names how the request's body
    /// was framed, not how the object is encoded, so it is not kept (as S3 does).
    pub(crate) fn of(sent: Sent<'_>) -> Attributes {
        let content_encoding = sent.content_encoding.and_then(|value| {
            let kept: Vec<&str> = value
                .split(',')
                .map(str::trim)
                .filter(|coding| !coding.is_empty() && !coding.eq_ignore_ascii_case("aws-chunked"))
                .collect();
            (!kept.is_empty()).then(|| kept.join(", "))
        });
        Attributes {
            metadata: sent
                .metadata
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
                        .collect()
                })
                .unwrap_or_default(),
            cache_control: sent.cache_control.cloned(),
            content_disposition: sent.content_disposition.cloned(),
            content_encoding,
            content_language: sent.content_language.cloned(),
            expires: sent
                .expires
                .map(|at| OffsetDateTime::from(at.clone()).unix_timestamp()),
            checksum: None,
            assembled: None,
            upload_checksum: None,
        }
    }

    /// With the checksum the body was verified against, if one was sent.
    pub(crate) fn with_checksum(mut self, checksum: Option<StoredChecksum>) -> Attributes {
        self.checksum = checksum;
        self
    }

    /// The stored form: `None` when there is nothing to keep.
    pub(crate) fn to_json(&self) -> Option<String> {
        (*self != Attributes::default())
            .then(|| serde_json::to_string(self).expect("attributes serialize"))
    }

    /// Reads the stored form; anything unreadable is as if nothing was kept.
    pub(crate) fn from_json(stored: Option<&str>) -> Attributes {
        stored
            .and_then(|json| serde_json::from_str(json).ok())
            .unwrap_or_default()
    }

    /// User metadata as S3 answers it (absent when there is none).
    pub(crate) fn metadata(&self) -> Option<Metadata> {
        (!self.metadata.is_empty()).then(|| {
            self.metadata
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
    }

    pub(crate) fn expires(&self) -> Option<Timestamp> {
        self.expires
            .and_then(|seconds| OffsetDateTime::from_unix_timestamp(seconds).ok())
            .map(Timestamp::from)
    }

    /// The stored checksum, in the field of its algorithm, with its type.
    pub(crate) fn checksum(&self) -> Checksum {
        let mut answer = Checksum::default();
        if let Some(stored) = &self.checksum {
            crate::body_checksum::set(&mut answer, &stored.algorithm, stored.value.clone());
            answer.checksum_type = Some(type_of(&stored.value));
        }
        answer
    }

    /// The checksum of part `number` (from 1) of a multipart object, if its upload kept one.
    pub(crate) fn part_checksum(&self, number: usize) -> Checksum {
        let mut answer = Checksum::default();
        let value = self
            .assembled
            .as_ref()
            .and_then(|a| a.part_checksums.get(number.checked_sub(1)?));
        if let (Some(stored), Some(value)) = (&self.checksum, value) {
            crate::body_checksum::set(&mut answer, &stored.algorithm, value.clone());
            // A part's checksum is answered with the type of the object's.
            answer.checksum_type = Some(type_of(&stored.value));
        }
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_sent_is_kept_and_read_back() {
        let metadata: Metadata = [("Mtime".to_owned(), "1700000000".to_owned())].into();
        let encoding = "gzip, aws-chunked".to_owned();
        let disposition = "attachment; filename=\"a.txt\"".to_owned();
        let kept = Attributes::of(Sent {
            metadata: Some(&metadata),
            cache_control: None,
            content_disposition: Some(&disposition),
            content_encoding: Some(&encoding),
            content_language: None,
            expires: None,
        })
        .with_checksum(Some(StoredChecksum {
            algorithm: "sha256".into(),
            value: "abc=".into(),
        }));
        assert_eq!(kept.content_encoding.as_deref(), Some("gzip"));
        assert_eq!(kept.metadata["mtime"], "1700000000");
        let stored = kept.to_json();
        let read = Attributes::from_json(stored.as_deref());
        assert_eq!(read, kept);
        assert_eq!(read.checksum().checksum_sha256.as_deref(), Some("abc="));
        assert_eq!(read.metadata().unwrap()["mtime"], "1700000000");
    }

    #[test]
    fn a_part_is_found_by_its_number() {
        let assembled = Assembled {
            upload_id: "u".into(),
            part_sizes: vec![5, 3, 1],
            part_checksums: Vec::new(),
        };
        assert_eq!(assembled.part(1), Some(0..5));
        assert_eq!(assembled.part(3), Some(8..9));
        assert_eq!(assembled.part(0), None);
        assert_eq!(assembled.part(4), None);
    }

    #[test]
    fn nothing_sent_stores_nothing() {
        let none = Attributes::of(Sent {
            metadata: None,
            cache_control: None,
            content_disposition: None,
            content_encoding: Some(&"aws-chunked".to_owned()),
            content_language: None,
            expires: None,
        });
        assert_eq!(none.to_json(), None);
        assert_eq!(
            Attributes::from_json(Some("not json")),
            Attributes::default()
        );
    }
}
