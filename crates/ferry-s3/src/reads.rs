//! Reading objects: `HeadObject`, `GetObject` and `GetObjectAttributes`. Each settles the
//! object and its conditions ([`crate::context`]), then writes S3's answer with the safety
//! headers of stored content ([`crate::serving`]).

use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result, s3_error};
use sync_wrapper::SyncStream;

use crate::body_checksum::with_checksum;
use crate::context::{Door, Found, ReadConditions, caller, etag_of, time_of};
use ferry_app::Principal;

/// What a read (`HeadObject`, `GetObject`) found and will answer with.
pub(crate) struct Reading {
    found: Found,
    /// The bytes asked for (a range or a part), if not all.
    span: Option<std::ops::Range<u64>>,
    parts_count: Option<i32>,
    /// The kept checksum of what is answered, when asked for (see [`Found::checksum_if`]).
    checksum: Checksum,
}

impl Reading {
    /// The safety headers of answering this object as `response-content-type` and
    /// `response-content-disposition` ask, or as it was stored ([`crate::serving`]).
    fn safety_headers(
        &self,
        asked_type: Option<&str>,
        asked_disposition: Option<&str>,
        key: &str,
    ) -> http::HeaderMap {
        let content_type = asked_type.unwrap_or(&self.found.content_type);
        let disposition =
            asked_disposition.or(self.found.attributes.content_disposition.as_deref());
        crate::serving::safety_headers(content_type, disposition, key)
    }
}

/// The [`ReadConditions`] of any input with S3's read condition fields.
macro_rules! read_conditions {
    ($input:expr) => {
        ReadConditions {
            if_match: $input.if_match.as_ref(),
            if_none_match: $input.if_none_match.as_ref(),
            if_modified_since: $input.if_modified_since.as_ref(),
            if_unmodified_since: $input.if_unmodified_since.as_ref(),
        }
    };
}

/// The answer of a read, `HeadObjectOutput` or `GetObjectOutput` (the same fields on two
/// types), from a [`Reading`], with `extra` fields of its own.
macro_rules! read_output {
    ($output:ident, $reading:ident, { $($field:ident: $value:expr),* $(,)? }) => {{
        // Field by field, so that a reader already taken out of `found` is no obstacle.
        let (span, checksum, kept) = ($reading.span, $reading.checksum, $reading.found.attributes);
        with_checksum!(typed $output {
            content_length: Some(span.as_ref().map_or($reading.found.size, |s| s.end - s.start) as i64),
            content_range: span
                .as_ref()
                .map(|s| format!("bytes {}-{}/{}", s.start, s.end - 1, $reading.found.size)),
            content_type: Some($reading.found.content_type),
            e_tag: Some(etag_of(&$reading.found.etag)),
            last_modified: Some(time_of($reading.found.modified)),
            accept_ranges: Some("bytes".into()),
            parts_count: $reading.parts_count,
            metadata: kept.metadata(),
            expires: kept.expires(),
            cache_control: kept.cache_control,
            content_disposition: kept.content_disposition,
            content_encoding: kept.content_encoding,
            content_language: kept.content_language,
            $($field: $value,)*
        }, checksum)
    }};
}

impl Door {
    /// Finds the object a read names and settles what it answers: its conditions, the bytes
    /// asked for (`Range` or `partNumber`), and the checksum if asked for.
    async fn reading(
        &self,
        principal: &Principal,
        bucket: &str,
        key: &str,
        conditions: ReadConditions<'_>,
        (range, part_number): (Option<&s3s::dto::Range>, Option<i32>),
        checksum_mode: Option<&ChecksumMode>,
    ) -> S3Result<Reading> {
        let bucket = self.bucket(principal, bucket).await?;
        let found = self.find(principal, &bucket, key).await?;
        conditions.check(&found)?;
        let (span, parts_count) = found.span(range, part_number)?;
        let checksum = found.checksum_if(checksum_mode, span.as_ref(), part_number);
        Ok(Reading {
            found,
            span,
            parts_count,
            checksum,
        })
    }
}

pub(crate) async fn head_object(
    door: &Door,
    req: S3Request<HeadObjectInput>,
) -> S3Result<S3Response<HeadObjectOutput>> {
    let principal = caller(&req)?;
    let input = &req.input;
    let reading = door
        .reading(
            &principal,
            &input.bucket,
            &input.key,
            read_conditions!(input),
            (input.range.as_ref(), input.part_number),
            input.checksum_mode.as_ref(),
        )
        .await?;
    // s3s applies `response-*` overrides to GetObject only: HEAD answers the stored headers.
    let safety = reading.safety_headers(None, None, &input.key);
    let mut answer = S3Response::new(read_output!(HeadObjectOutput, reading, {}));
    answer.headers.extend(safety);
    Ok(answer)
}

/// The attributes asked for, each only when asked: the ETag (without quotes, as S3 gives
/// it here), size, storage class, kept checksum, and a multipart object's parts.
pub(crate) async fn get_object_attributes(
    door: &Door,
    req: S3Request<GetObjectAttributesInput>,
) -> S3Result<S3Response<GetObjectAttributesOutput>> {
    let principal = caller(&req)?;
    let input = &req.input;
    let bucket = door.bucket(&principal, &input.bucket).await?;
    let found = door.find(&principal, &bucket, &input.key).await?;
    // One header, `x-amz-object-attributes: ETag,ObjectSize,…`, may arrive as one item.
    let wants = |name: &str| {
        input
            .object_attributes
            .iter()
            .flat_map(|a| a.as_str().split(','))
            .any(|a| a.trim() == name)
    };
    let checksum = found.attributes.checksum();
    let object_parts = found
        .assembled()
        .filter(|_| wants(ObjectAttributes::OBJECT_PARTS))
        .map(|assembled| {
            let marker = input.part_number_marker.unwrap_or(0).max(0) as usize;
            let max = input.max_parts.map_or(1000, |n| n.clamp(0, 1000) as usize);
            let listed: Vec<ObjectPart> = assembled
                .part_sizes
                .iter()
                .enumerate()
                .map(|(i, size)| (i + 1, *size))
                .filter(|(number, _)| *number > marker)
                .take(max)
                .map(|(number, size)| {
                    with_checksum!(
                        ObjectPart {
                            part_number: Some(number as i32),
                            size: Some(size as i64),
                        },
                        found.attributes.part_checksum(number)
                    )
                })
                .collect();
            let last = listed.last().and_then(|p| p.part_number).unwrap_or(0);
            GetObjectAttributesParts {
                is_truncated: Some((last as usize) < assembled.part_sizes.len()),
                max_parts: Some(max as i32),
                next_part_number_marker: Some(last),
                part_number_marker: Some(marker as i32),
                parts: Some(listed),
                total_parts_count: Some(assembled.part_sizes.len() as i32),
            }
        });
    let mut answer = S3Response::new(GetObjectAttributesOutput {
        e_tag: wants(ObjectAttributes::ETAG).then(|| ETag::Strong(found.etag.clone())),
        object_size: wants(ObjectAttributes::OBJECT_SIZE).then_some(found.size as i64),
        storage_class: wants(ObjectAttributes::STORAGE_CLASS)
            .then(|| StorageClass::from_static(StorageClass::STANDARD)),
        checksum: (wants(ObjectAttributes::CHECKSUM) && checksum != Checksum::default())
            .then_some(checksum),
        object_parts,
        last_modified: Some(time_of(found.modified)),
        ..Default::default()
    });
    // S3 gives this ETag without quotes; s3s writes every ETag with them.
    answer.headers.insert(
        crate::request::UNQUOTED_ETAG_HEADER,
        http::HeaderValue::from_static("1"),
    );
    Ok(answer)
}

pub(crate) async fn get_object(
    door: &Door,
    req: S3Request<GetObjectInput>,
) -> S3Result<S3Response<GetObjectOutput>> {
    let principal = caller(&req)?;
    let input = &req.input;
    // The type a link asks the answer to carry passes the same check as a stored one: a list
    // such as `application/pdf;,text/html` (which browsers read as its last type) is refused.
    if let Some(asked) = input.response_content_type.as_deref() {
        ferry_core::content_type::check(asked)
            .map_err(|e| s3_error!(InvalidArgument, "response-content-type: {e}"))?;
    }
    let reading = door
        .reading(
            &principal,
            &input.bucket,
            &input.key,
            read_conditions!(input),
            (input.range.as_ref(), input.part_number),
            input.checksum_mode.as_ref(),
        )
        .await?;
    let safety = reading.safety_headers(
        input.response_content_type.as_deref(),
        input.response_content_disposition.as_deref(),
        &input.key,
    );
    let body = door
        .read(reading.found.reader, reading.span.clone())
        .await?;
    let mut answer = S3Response::new(read_output!(GetObjectOutput, reading, {
        body: Some(StreamingBlob::wrap(SyncStream::new(body))),
    }));
    answer.headers.extend(safety);
    Ok(answer)
}
