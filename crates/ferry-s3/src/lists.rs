//! Listing objects: `ListObjectsV2`, `ListObjects` and `ListObjectVersions`, over a space's
//! listing or a sandbox's files ([`crate::paging`] pages them the S3 way).

use ferry_app::Principal;
use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result};

use crate::address::Bucket;
use crate::context::{Door, caller, etag_of, time_of};
use crate::errors::to_s3;
use crate::paging::{self, After, Listed, MAX_KEYS, Source};

impl Door {
    async fn listing_source<'a>(
        &'a self,
        principal: &'a Principal,
        bucket: &'a Bucket,
    ) -> S3Result<Source<'a>> {
        Ok(match bucket {
            Bucket::Space(space) => Source::Space {
                app: &self.app,
                principal,
                space,
            },
            Bucket::Sandbox { thread_id } => {
                // A name no door can address is no key either: S3 lists only what it can get.
                let listing =
                    ferry_app::files::sandbox::list(&self.app, principal, thread_id, None, true)
                        .await
                        .map_err(to_s3)?;
                let mut all: Vec<Listed> = listing
                    .entries
                    .into_iter()
                    .filter(|e| !e.is_dir)
                    .map(|e| Listed {
                        key: e.path,
                        size: e.size,
                        etag: e.etag,
                        modified: e.modified,
                    })
                    .collect();
                all.sort_by(|a, b| a.key.cmp(&b.key));
                Source::Sorted(all)
            }
        })
    }

    async fn list(
        &self,
        principal: &Principal,
        bucket_name: &str,
        request: paging::Request,
    ) -> S3Result<paging::Page> {
        let bucket = self.bucket(principal, bucket_name).await?;
        let source = self.listing_source(principal, &bucket).await?;
        paging::page(&source, &request).await
    }

    /// The user a bucket the caller may list belongs to, as S3's `Owner` (its id and display
    /// name are both the user's `sub`): a space's user, a sandbox's thread owner.
    async fn owner(&self, principal: &Principal, bucket_name: &str) -> S3Result<Owner> {
        let sub = match Bucket::parse(bucket_name)? {
            Bucket::Space(_) => principal.space_owner().map_err(to_s3)?.to_owned(),
            Bucket::Sandbox { thread_id } => {
                ferry_app::access::thread(&self.app, principal, &thread_id, ferry_app::Action::Read)
                    .await
                    .map_err(to_s3)?
                    .owner
            }
        };
        Ok(Owner {
            display_name: Some(sub.clone()),
            id: Some(sub),
        })
    }
}

fn max_keys(requested: Option<i32>) -> usize {
    requested.map_or(MAX_KEYS, |n| usize::try_from(n).unwrap_or(0).min(MAX_KEYS))
}

/// How a listing writes keys: as they are, or (`encoding-type=url`, which SDKs ask for by
/// default) percent-encoded, `/` kept, so that any key survives XML and the SDK's decoding.
#[derive(Debug, Clone, Copy)]
struct Keys {
    url: bool,
}

impl Keys {
    fn of(encoding: Option<&EncodingType>) -> Keys {
        Keys {
            url: encoding.is_some_and(|e| e.as_str().eq_ignore_ascii_case("url")),
        }
    }

    fn write(self, key: &str) -> String {
        const KEPT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
            .remove(b'-')
            .remove(b'_')
            .remove(b'.')
            .remove(b'~')
            .remove(b'/');
        if self.url {
            percent_encoding::utf8_percent_encode(key, KEPT).to_string()
        } else {
            key.to_owned()
        }
    }

    fn write_opt(self, key: Option<String>) -> Option<String> {
        key.map(|k| self.write(&k))
    }
}

fn objects(page: &paging::Page, keys: Keys) -> Vec<Object> {
    page.objects
        .iter()
        .map(|o| Object {
            key: Some(keys.write(&o.key)),
            size: Some(o.size as i64),
            e_tag: Some(etag_of(&o.etag)),
            last_modified: Some(time_of(o.modified)),
            storage_class: Some(ObjectStorageClass::from_static(
                ObjectStorageClass::STANDARD,
            )),
            ..Default::default()
        })
        .collect()
}

fn common_prefixes(page: &paging::Page, keys: Keys) -> Vec<CommonPrefix> {
    page.prefixes
        .iter()
        .map(|p| CommonPrefix {
            prefix: Some(keys.write(p)),
        })
        .collect()
}

pub(crate) async fn list_objects_v2(
    door: &Door,
    req: S3Request<ListObjectsV2Input>,
) -> S3Result<S3Response<ListObjectsV2Output>> {
    let principal = caller(&req)?;
    let input = req.input;
    let delimiter = input.delimiter.clone().filter(|d| !d.is_empty());
    // An empty continuation token starts at the beginning, as S3 does (and is echoed).
    let after = match (&input.continuation_token, &input.start_after) {
        (Some(token), _) if !token.is_empty() => After::from_token(token)?,
        (None, Some(key)) if !key.is_empty() => After::Key(key.clone()),
        _ => After::Start,
    };
    let max = max_keys(input.max_keys);
    let request = paging::Request {
        prefix: input.prefix.clone().unwrap_or_default(),
        delimiter: delimiter.clone(),
        after,
        max_keys: max,
    };
    let page = door.list(&principal, &input.bucket, request).await?;
    let keys = Keys::of(input.encoding_type.as_ref());
    let mut contents = objects(&page, keys);
    // Version 2 names each object's owner only when asked (`fetch-owner=true`).
    if input.fetch_owner == Some(true) {
        let owner = door.owner(&principal, &input.bucket).await?;
        for object in &mut contents {
            object.owner = Some(owner.clone());
        }
    }
    let prefixes = common_prefixes(&page, keys);
    Ok(S3Response::new(ListObjectsV2Output {
        key_count: Some((contents.len() + prefixes.len()) as i32),
        contents: Some(contents),
        common_prefixes: Some(prefixes),
        is_truncated: Some(page.next.is_some()),
        next_continuation_token: page.next.as_ref().and_then(After::token),
        continuation_token: input.continuation_token,
        start_after: keys.write_opt(input.start_after),
        name: Some(input.bucket),
        prefix: keys.write_opt(input.prefix),
        delimiter: keys.write_opt(delimiter),
        max_keys: Some(max as i32),
        encoding_type: input.encoding_type,
        ..Default::default()
    }))
}

/// The listing a marker-paged request asks for (`ListObjects`, `ListObjectVersions`). A
/// marker that is a common prefix (it ends with the delimiter) resumes after everything
/// beneath it, as the marker that page answered promised.
fn by_marker(
    prefix: Option<&str>,
    delimiter: Option<String>,
    marker: Option<&str>,
    requested: Option<i32>,
) -> paging::Request {
    let after = match marker {
        None | Some("") => After::Start,
        Some(marker) if delimiter.as_deref().is_some_and(|d| marker.ends_with(d)) => {
            After::Below(marker.to_owned())
        }
        Some(marker) => After::Key(marker.to_owned()),
    };
    paging::Request {
        prefix: prefix.unwrap_or_default().to_owned(),
        delimiter,
        after,
        max_keys: max_keys(requested),
    }
}

/// Where the next marker-paged request resumes, when the page was cut.
fn next_marker(page: &paging::Page) -> Option<String> {
    match &page.next {
        Some(After::Key(key)) => Some(key.clone()),
        Some(After::Below(prefix)) => Some(prefix.clone()),
        _ => None,
    }
}

pub(crate) async fn list_objects(
    door: &Door,
    req: S3Request<ListObjectsInput>,
) -> S3Result<S3Response<ListObjectsOutput>> {
    let principal = caller(&req)?;
    let input = req.input;
    let delimiter = input.delimiter.clone().filter(|d| !d.is_empty());
    let request = by_marker(
        input.prefix.as_deref(),
        delimiter.clone(),
        input.marker.as_deref(),
        input.max_keys,
    );
    let max = request.max_keys;
    let page = door.list(&principal, &input.bucket, request).await?;
    let keys = Keys::of(input.encoding_type.as_ref());
    // Version 1 names a next marker only when a delimiter was given, and always each
    // object's owner.
    let next_marker = delimiter.as_ref().and(next_marker(&page));
    let owner = door.owner(&principal, &input.bucket).await?;
    let mut contents = objects(&page, keys);
    for object in &mut contents {
        object.owner = Some(owner.clone());
    }
    Ok(S3Response::new(ListObjectsOutput {
        contents: Some(contents),
        common_prefixes: Some(common_prefixes(&page, keys)),
        is_truncated: Some(page.next.is_some()),
        next_marker: keys.write_opt(next_marker),
        // Version 1 always says its marker, and (unlike version 2) never encodes its
        // prefix: SDKs decode only the marker, the delimiter and the keys.
        marker: Some(keys.write(input.marker.as_deref().unwrap_or_default())),
        name: Some(input.bucket),
        prefix: input.prefix,
        delimiter: keys.write_opt(delimiter),
        max_keys: Some(max as i32),
        encoding_type: input.encoding_type,
        ..Default::default()
    }))
}

/// Buckets are never versioned: each object is its one version, `null`, as S3 lists the
/// objects of a bucket that never had versioning on (tools list versions to empty one).
pub(crate) async fn list_object_versions(
    door: &Door,
    req: S3Request<ListObjectVersionsInput>,
) -> S3Result<S3Response<ListObjectVersionsOutput>> {
    let principal = caller(&req)?;
    let input = req.input;
    let delimiter = input.delimiter.clone().filter(|d| !d.is_empty());
    let request = by_marker(
        input.prefix.as_deref(),
        delimiter,
        input.key_marker.as_deref(),
        input.max_keys,
    );
    let max = request.max_keys;
    let page = door.list(&principal, &input.bucket, request).await?;
    let keys = Keys::of(input.encoding_type.as_ref());
    let next_key_marker = next_marker(&page);
    let versions = page
        .objects
        .iter()
        .map(|o| ObjectVersion {
            key: Some(keys.write(&o.key)),
            version_id: Some("null".into()),
            is_latest: Some(true),
            size: Some(o.size as i64),
            e_tag: Some(etag_of(&o.etag)),
            last_modified: Some(time_of(o.modified)),
            ..Default::default()
        })
        .collect();
    Ok(S3Response::new(ListObjectVersionsOutput {
        versions: Some(versions),
        common_prefixes: Some(common_prefixes(&page, keys)),
        is_truncated: Some(page.next.is_some()),
        next_version_id_marker: next_key_marker.as_ref().map(|_| "null".to_owned()),
        next_key_marker: keys.write_opt(next_key_marker),
        key_marker: keys.write_opt(input.key_marker),
        version_id_marker: input.version_id_marker,
        name: Some(input.bucket),
        prefix: keys.write_opt(input.prefix),
        delimiter: keys.write_opt(input.delimiter),
        max_keys: Some(max as i32),
        encoding_type: input.encoding_type,
        ..Default::default()
    }))
}
