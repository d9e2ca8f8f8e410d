//! Multipart uploads over S3 (docs/s3.md, multipart): the protocol's side of
//! `ferry_app::transfers::multipart` — which parts make the object (ascending numbers, known
//! parts with matching ETags, every part but the last at least 5 MiB), and S3's answers.
//!
//! Why one file: the multipart operations are one upload's life (start, send or copy parts,
//! complete, abort, list); they share the lookup that makes another's upload absent, the part
//! numbers and the checksum algorithm fixed at the start, and completion's choice of parts is
//! tested here against S3's own rules.

use ferry_app::Principal;
use ferry_app::body::Incoming;
use ferry_app::transfers::multipart;
use ferry_app::transfers::multipart::{Part, Upload};
use ferry_core::write::FileMeta;
use futures::TryStreamExt;
use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Result, s3_error};

use crate::attributes::{Assembled, Attributes, sent};
use crate::body_checksum::{Expected, StoredChecksum, Verified, sent_checksum, with_checksum};
use crate::context::{Door, copy_source_conditions, sent_or_guessed_type, time_of};
use crate::errors::to_s3;
use crate::multipart_checksum::UploadChecksum;
use crate::writes::checked;
use ferry_app::transfers::objects::Destination;

/// The least size of every part but the last, as in S3.
pub(crate) const MIN_PART_SIZE: u64 = 5 << 20;
/// How many parts or uploads one listing answers at most.
const MAX_LISTED: usize = 1000;

/// An upload that is not the caller's, or not of this key, is not there.
fn no_such_upload(e: ferry_app::Error) -> S3Error {
    match e {
        ferry_app::Error::NotFound(m) => S3Error::with_message(S3ErrorCode::NoSuchUpload, m),
        other => to_s3(other),
    }
}

impl Door {
    pub(crate) async fn upload_of(
        &self,
        principal: &Principal,
        upload_id: &str,
        bucket: &str,
        key: &str,
    ) -> S3Result<Upload> {
        multipart::find(self.app(), principal, upload_id, bucket, key)
            .await
            .map_err(no_such_upload)
    }

    /// The destination, the upload and the part number a part request names.
    async fn staged(
        &self,
        principal: &Principal,
        bucket_name: &str,
        key: &str,
        upload_id: &str,
        number: i32,
    ) -> S3Result<(Destination, Upload, u32)> {
        let bucket = self.bucket(principal, bucket_name).await?;
        let destination = Door::destination(&bucket, key)?;
        let upload = self
            .upload_of(principal, upload_id, bucket_name, key)
            .await?;
        Ok((destination, upload, part_number(number)?))
    }

    pub(crate) async fn start_upload(
        &self,
        principal: &Principal,
        input: CreateMultipartUploadInput,
    ) -> S3Result<CreateMultipartUploadOutput> {
        let bucket = self.bucket(principal, &input.bucket).await?;
        let destination = Door::destination(&bucket, &input.key)?;
        let checksum = UploadChecksum::of_request(
            input.checksum_algorithm.as_ref(),
            input.checksum_type.as_ref(),
        )?;
        let mut attributes = Attributes::of(sent!(input));
        attributes.upload_checksum = checksum.clone();
        let attributes = attributes.to_json();
        let content_type = sent_or_guessed_type(input.content_type.as_deref(), &input.key);
        let upload = multipart::create(
            self.app(),
            principal,
            &input.bucket,
            &input.key,
            &destination,
            FileMeta {
                content_type: &content_type,
                attributes: attributes.as_deref(),
                door: ferry_core::door::Door::S3,
            },
        )
        .await
        .map_err(to_s3)?;
        Ok(CreateMultipartUploadOutput {
            bucket: Some(input.bucket),
            key: Some(input.key),
            upload_id: Some(upload.upload_id),
            checksum_algorithm: checksum.as_ref().map(UploadChecksum::algorithm_name),
            checksum_type: checksum.as_ref().map(UploadChecksum::checksum_type),
            ..Default::default()
        })
    }

    pub(crate) async fn put_part(
        &self,
        principal: &Principal,
        input: UploadPartInput,
        expected: Expected,
    ) -> S3Result<UploadPartOutput> {
        let (destination, upload, number) = self
            .staged(
                principal,
                &input.bucket,
                &input.key,
                &input.upload_id,
                input.part_number,
            )
            .await?;
        let expected = expected.for_upload(upload_algorithm(&upload).as_deref())?;
        let declared = input.content_length.and_then(|n| u64::try_from(n).ok());
        let part = checked(input.body, expected, |body, outcome| {
            let body = Incoming::new(body, declared);
            multipart::upload_part(self.app(), &upload, &destination, number, body, move || {
                outcome.checksum().map(|c| c.to_text())
            })
        })
        .await?;
        Ok(with_checksum!(
            UploadPartOutput {
                e_tag: Some(ETag::Strong(part.sha256.clone())),
            },
            part_checksum(&part)
        ))
    }

    pub(crate) async fn copy_part(
        &self,
        principal: &Principal,
        input: UploadPartCopyInput,
    ) -> S3Result<UploadPartCopyOutput> {
        let (destination, upload, number) = self
            .staged(
                principal,
                &input.bucket,
                &input.key,
                &input.upload_id,
                input.part_number,
            )
            .await?;
        let found = self
            .copy_source(
                principal,
                &input.copy_source,
                copy_source_conditions!(input),
            )
            .await?;
        let span = match input.copy_source_range.as_deref() {
            None => None,
            Some(text) => Some(copy_range(text, found.size)?),
        };
        let body = self.read(found.reader, span).await?;
        // The copied bytes are hashed with the upload's algorithm, as a sent part's are.
        let expected = Expected::default().for_upload(upload_algorithm(&upload).as_deref())?;
        let (body, outcome) = Verified::new(body.map_err(s3s::StdError::from), expected);
        let body = Incoming::undeclared(body);
        let part = multipart::upload_part(self.app(), &upload, &destination, number, body, || {
            outcome.checksum().map(|c| c.to_text())
        })
        .await
        .map_err(to_s3)?;
        Ok(UploadPartCopyOutput {
            copy_part_result: Some(with_checksum!(
                CopyPartResult {
                    e_tag: Some(ETag::Strong(part.sha256.clone())),
                    last_modified: Some(time_of(part.created_at)),
                },
                part_checksum(&part)
            )),
            ..Default::default()
        })
    }

    pub(crate) async fn finish_upload(
        &self,
        principal: &Principal,
        input: CompleteMultipartUploadInput,
    ) -> S3Result<CompleteMultipartUploadOutput> {
        let bucket = self.bucket(principal, &input.bucket).await?;
        let destination = Door::destination(&bucket, &input.key)?;
        let upload = match self
            .upload_of(principal, &input.upload_id, &input.bucket, &input.key)
            .await
        {
            Ok(upload) => upload,
            // Completing an upload again answers as the first completion did, while the
            // object it made is still there.
            Err(e) => {
                return self
                    .completed_before(principal, &bucket, input)
                    .await
                    .ok_or(e);
            }
        };
        let stored = multipart::parts(self.app(), &upload).await.map_err(to_s3)?;
        let requested = last_listings(
            input
                .multipart_upload
                .as_ref()
                .and_then(|m| m.parts.clone())
                .unwrap_or_default(),
        );
        let chosen = choose_parts(&stored, &requested)?;
        let mut attributes = Attributes::from_json(upload.attributes.as_deref());
        let checksum = match attributes.upload_checksum.take() {
            Some(upload_checksum) => Some(upload_checksum.of_object(
                &chosen,
                &requested,
                &sent_checksum!(input),
                input.checksum_type.as_ref(),
            )?),
            None => None,
        };
        self.check_write_preconditions(
            principal,
            &bucket,
            &input.key,
            input.if_none_match.as_ref(),
            input.if_match.as_ref(),
        )
        .await?;
        let condition =
            crate::writes::write_condition(input.if_none_match.as_ref(), input.if_match.as_ref())?;
        attributes.assembled = Some(Assembled {
            upload_id: upload.upload_id.clone(),
            part_sizes: chosen.iter().map(|p| p.size).collect(),
            part_checksums: checksum
                .as_ref()
                .map(|c| c.parts.clone())
                .unwrap_or_default(),
        });
        attributes.checksum = checksum.map(|c| c.object);
        let answer = attributes.checksum();
        let attributes = attributes.to_json();
        let meta = FileMeta {
            content_type: &upload.content_type,
            attributes: attributes.as_deref(),
            door: ferry_core::door::Door::S3,
        };
        let etag = multipart::complete(
            self.app(),
            principal,
            &upload,
            &destination,
            meta,
            chosen,
            &condition,
        )
        .await
        .map_err(to_s3)?;
        Ok(completed(input, etag, answer))
    }

    /// The answer to a completion of an upload that is gone, if the object at its key was
    /// made by it.
    async fn completed_before(
        &self,
        principal: &Principal,
        bucket: &crate::address::Bucket,
        input: CompleteMultipartUploadInput,
    ) -> Option<CompleteMultipartUploadOutput> {
        let found = self.find(principal, bucket, &input.key).await.ok()?;
        let made_by_it = found
            .assembled()
            .is_some_and(|a| a.upload_id == input.upload_id);
        made_by_it.then(|| {
            let etag = found.etag().to_owned();
            completed(input, etag, found.checksum())
        })
    }

    pub(crate) async fn abort_upload(
        &self,
        principal: &Principal,
        input: AbortMultipartUploadInput,
    ) -> S3Result<AbortMultipartUploadOutput> {
        self.bucket(principal, &input.bucket).await?;
        let upload = self
            .upload_of(principal, &input.upload_id, &input.bucket, &input.key)
            .await?;
        multipart::abort(self.app(), &upload).await.map_err(to_s3)?;
        Ok(AbortMultipartUploadOutput::default())
    }

    pub(crate) async fn list_upload_parts(
        &self,
        principal: &Principal,
        input: ListPartsInput,
    ) -> S3Result<ListPartsOutput> {
        self.bucket(principal, &input.bucket).await?;
        let upload = self
            .upload_of(principal, &input.upload_id, &input.bucket, &input.key)
            .await?;
        let marker = input.part_number_marker.unwrap_or(0).max(0) as u32;
        let max = input.max_parts.map_or(MAX_LISTED, |n| {
            usize::try_from(n).unwrap_or(0).min(MAX_LISTED)
        });
        let stored = multipart::parts(self.app(), &upload).await.map_err(to_s3)?;
        let after: Vec<&Part> = stored.iter().filter(|p| p.part_number > marker).collect();
        let page = &after[..after.len().min(max)];
        let truncated = after.len() > page.len();
        let checksum = Attributes::from_json(upload.attributes.as_deref()).upload_checksum;
        Ok(ListPartsOutput {
            checksum_algorithm: checksum.as_ref().map(UploadChecksum::algorithm_name),
            checksum_type: checksum.as_ref().map(UploadChecksum::checksum_type),
            bucket: Some(input.bucket),
            key: Some(input.key),
            upload_id: Some(input.upload_id),
            part_number_marker: input.part_number_marker,
            next_part_number_marker: page.last().map(|p| p.part_number as i32),
            max_parts: Some(max as i32),
            is_truncated: Some(truncated),
            parts: Some(
                page.iter()
                    .map(|p| {
                        with_checksum!(
                            s3s::dto::Part {
                                part_number: Some(p.part_number as i32),
                                size: Some(p.size as i64),
                                e_tag: Some(ETag::Strong(p.sha256.clone())),
                                last_modified: Some(time_of(p.created_at)),
                            },
                            part_checksum(p)
                        )
                    })
                    .collect(),
            ),
            ..Default::default()
        })
    }

    pub(crate) async fn list_uploads(
        &self,
        principal: &Principal,
        input: ListMultipartUploadsInput,
    ) -> S3Result<ListMultipartUploadsOutput> {
        self.bucket(principal, &input.bucket).await?;
        let max = input.max_uploads.map_or(MAX_LISTED, |n| {
            usize::try_from(n).unwrap_or(0).min(MAX_LISTED)
        });
        let after = input
            .key_marker
            .as_deref()
            .filter(|k| !k.is_empty())
            .map(|key| {
                (
                    key,
                    input.upload_id_marker.as_deref().unwrap_or("\u{10FFFF}"),
                )
            });
        let prefix = input.prefix.clone().unwrap_or_default();
        let mut uploads = Vec::new();
        let mut cursor = after.map(|(k, u)| (k.to_owned(), u.to_owned()));
        let mut truncated = false;
        'pages: loop {
            let batch = multipart::list(
                self.app(),
                principal,
                &input.bucket,
                cursor.as_ref().map(|(k, u)| (k.as_str(), u.as_str())),
                MAX_LISTED as u32,
            )
            .await
            .map_err(to_s3)?;
            if batch.is_empty() {
                break;
            }
            for upload in batch {
                cursor = Some((upload.object_path.clone(), upload.upload_id.clone()));
                if !upload.object_path.starts_with(&prefix) {
                    continue;
                }
                if uploads.len() == max {
                    truncated = true;
                    break 'pages;
                }
                uploads.push(upload);
            }
        }
        let last = uploads.last().cloned();
        Ok(ListMultipartUploadsOutput {
            bucket: Some(input.bucket),
            prefix: input.prefix,
            key_marker: input.key_marker,
            upload_id_marker: input.upload_id_marker,
            max_uploads: Some(max as i32),
            is_truncated: Some(truncated),
            next_key_marker: last.as_ref().map(|u| u.object_path.clone()),
            next_upload_id_marker: last.as_ref().map(|u| u.upload_id.clone()),
            uploads: Some(
                uploads
                    .into_iter()
                    .map(|u| MultipartUpload {
                        key: Some(u.object_path),
                        upload_id: Some(u.upload_id),
                        initiated: Some(time_of(u.created_at)),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        })
    }
}

/// The answer to a completion: where the object is, its ETag and its checksum, if it has one.
fn completed(
    input: CompleteMultipartUploadInput,
    etag: String,
    checksum: Checksum,
) -> CompleteMultipartUploadOutput {
    with_checksum!(
        typed CompleteMultipartUploadOutput {
            location: Some(format!("{}/{}/{}", crate::request::PREFIX, input.bucket, input.key)),
            bucket: Some(input.bucket),
            key: Some(input.key),
            e_tag: Some(ETag::Strong(etag)),
        },
        checksum
    )
}

/// The checksum algorithm the upload was started with, if any.
fn upload_algorithm(upload: &Upload) -> Option<String> {
    Attributes::from_json(upload.attributes.as_deref())
        .upload_checksum
        .map(|c| c.algorithm)
}

/// A stored part's checksum, in the field of its algorithm.
fn part_checksum(part: &Part) -> Checksum {
    let mut answer = Checksum::default();
    if let Some(stored) = StoredChecksum::from_text(part.checksum.as_deref()) {
        crate::body_checksum::set(&mut answer, &stored.algorithm, stored.value);
    }
    answer
}

fn part_number(number: i32) -> S3Result<u32> {
    u32::try_from(number)
        .ok()
        .filter(|n| (1..=multipart::MAX_PART_NUMBER).contains(n))
        .ok_or_else(|| {
            s3_error!(
                InvalidArgument,
                "part numbers run from 1 to {}",
                multipart::MAX_PART_NUMBER
            )
        })
}

/// `bytes=first-last` of a copy source, within an object of `size` bytes.
fn copy_range(text: &str, size: u64) -> S3Result<std::ops::Range<u64>> {
    let bad = || {
        s3_error!(
            InvalidArgument,
            "x-amz-copy-source-range must be bytes=first-last"
        )
    };
    let (first, last) = text
        .strip_prefix("bytes=")
        .and_then(|r| r.split_once('-'))
        .ok_or_else(bad)?;
    let first: u64 = first.trim().parse().map_err(|_| bad())?;
    let last: u64 = last.trim().parse().map_err(|_| bad())?;
    if first > last || last >= size {
        return Err(s3_error!(
            InvalidRange,
            "the copy range lies outside the source object"
        ));
    }
    Ok(first..last + 1)
}

/// The parts a completion lists, a part listed again right after itself counting once, as
/// its last listing: a client that sent a part again (a retry, or a race between two sends)
/// may list each ETag it was answered, and the part stored is the send that finished last.
fn last_listings(listed: Vec<CompletedPart>) -> Vec<CompletedPart> {
    let mut kept: Vec<CompletedPart> = Vec::with_capacity(listed.len());
    for part in listed {
        match kept.last_mut() {
            Some(last) if last.part_number.is_some() && last.part_number == part.part_number => {
                *last = part;
            }
            _ => kept.push(part),
        }
    }
    kept
}

/// The stored parts `requested` names, in order: numbers must ascend, each must have been
/// uploaded (with the ETag given, when one is), and all but the last must be 5 MiB or more.
fn choose_parts(stored: &[Part], requested: &[CompletedPart]) -> S3Result<Vec<Part>> {
    if requested.is_empty() {
        return Err(s3_error!(
            MalformedXML,
            "CompleteMultipartUpload names no parts"
        ));
    }
    let mut chosen: Vec<Part> = Vec::with_capacity(requested.len());
    for wanted in requested {
        let number = wanted
            .part_number
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| s3_error!(InvalidPart, "a part without a part number"))?;
        if chosen.last().is_some_and(|p| p.part_number >= number) {
            return Err(s3_error!(
                InvalidPartOrder,
                "the parts must be listed in ascending order of part number"
            ));
        }
        let part = stored
            .iter()
            .find(|p| p.part_number == number)
            .ok_or_else(|| s3_error!(InvalidPart, "part {number} was not uploaded"))?;
        if let Some(tag) = &wanted.e_tag
            && tag.value().trim_matches('"') != part.sha256
        {
            return Err(s3_error!(
                InvalidPart,
                "part {number}'s ETag is not the one it was uploaded with"
            ));
        }
        chosen.push(part.clone());
    }
    if let Some(small) = chosen[..chosen.len() - 1]
        .iter()
        .find(|p| p.size < MIN_PART_SIZE)
    {
        return Err(s3_error!(
            EntityTooSmall,
            "part {} is {} bytes; every part but the last must be at least 5 MiB",
            small.part_number,
            small.size
        ));
    }
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(number: u32, size: u64) -> Part {
        Part {
            part_number: number,
            blob_key: format!("b{number}"),
            size,
            sha256: format!("s{number}"),
            checksum: None,
            created_at: ferry_core::Timestamp(0),
        }
    }

    fn wanted(number: i32, etag: Option<&str>) -> CompletedPart {
        CompletedPart {
            part_number: Some(number),
            e_tag: etag.map(|t| ETag::Strong(t.to_owned())),
            ..Default::default()
        }
    }

    fn code(result: S3Result<Vec<Part>>) -> S3ErrorCode {
        result.unwrap_err().code().clone()
    }

    #[test]
    fn parts_are_chosen_as_s3_chooses_them() {
        let stored = [part(1, MIN_PART_SIZE), part(2, MIN_PART_SIZE), part(3, 10)];
        let all = [
            wanted(1, Some("s1")),
            wanted(2, None),
            wanted(3, Some("\"s3\"")),
        ];
        let chosen = choose_parts(&stored, &all).unwrap();
        assert_eq!(
            chosen.iter().map(|p| p.part_number).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(
            choose_parts(&stored, &[wanted(1, None), wanted(3, None)])
                .unwrap()
                .len(),
            2
        );
        assert_eq!(
            code(choose_parts(&stored, &[wanted(2, None), wanted(1, None)])),
            S3ErrorCode::InvalidPartOrder
        );
        assert_eq!(
            code(choose_parts(&stored, &[wanted(4, None)])),
            S3ErrorCode::InvalidPart
        );
        assert_eq!(
            code(choose_parts(&stored, &[wanted(1, Some("x"))])),
            S3ErrorCode::InvalidPart
        );
        assert_eq!(
            code(choose_parts(&stored, &[wanted(3, None), wanted(4, None)])),
            S3ErrorCode::InvalidPart
        );
        let small = [part(1, 10), part(2, 10)];
        assert_eq!(
            code(choose_parts(&small, &[wanted(1, None), wanted(2, None)])),
            S3ErrorCode::EntityTooSmall
        );
        assert_eq!(code(choose_parts(&stored, &[])), S3ErrorCode::MalformedXML);
    }

    #[test]
    fn a_part_listed_again_counts_as_its_last_listing() {
        let stored = [part(1, MIN_PART_SIZE), part(2, 10)];
        let listed = last_listings(vec![
            wanted(1, Some("an earlier send")),
            wanted(1, Some("s1")),
            wanted(2, None),
        ]);
        assert_eq!(listed.len(), 2);
        assert_eq!(choose_parts(&stored, &listed).unwrap().len(), 2);
        // Listed again after another part, it is out of order.
        let apart = last_listings(vec![wanted(1, None), wanted(2, None), wanted(1, None)]);
        assert_eq!(
            code(choose_parts(&stored, &apart)),
            S3ErrorCode::InvalidPartOrder
        );
    }

    #[test]
    fn copy_ranges_are_inclusive_and_inside_the_source() {
        assert_eq!(copy_range("bytes=0-9", 10).unwrap(), 0..10);
        assert!(copy_range("bytes=5-10", 10).is_err());
        assert!(copy_range("0-1", 10).is_err());
    }
}
