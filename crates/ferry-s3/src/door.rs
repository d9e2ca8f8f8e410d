//! The S3 operations (docs/s3.md, operations), each a thin adapter: read the input, call the
//! use case a route of the HTTP API calls, and write S3's answer. This file only dispatches,
//! the way an S3 server's API module does: each family of operations has a file of its own —
//! [`crate::buckets`], [`crate::lists`], [`crate::reads`], [`crate::writes`],
//! [`crate::multipart`] — over what they share, [`crate::context`].

use s3s::dto::*;
use s3s::{S3, S3Request, S3Response, S3Result};

use crate::body_checksum::{Expected, sent_checksum};
use crate::context::{Door, caller};
use crate::request::Trailers;
use crate::{buckets, lists, reads, writes};

/// The outer service routes every request to [`crate::forward`]; it has no operations.
pub(crate) struct Unreachable;

#[async_trait::async_trait]
impl S3 for Unreachable {}

#[async_trait::async_trait]
impl S3 for Door {
    async fn list_buckets(
        &self,
        req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        buckets::list_buckets(self, req).await
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        buckets::head_bucket(self, req).await
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        buckets::get_bucket_location(self, req).await
    }

    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        buckets::create_bucket(self, req).await
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        buckets::delete_bucket(self, req).await
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        lists::list_objects_v2(self, req).await
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        lists::list_objects(self, req).await
    }

    async fn list_object_versions(
        &self,
        req: S3Request<ListObjectVersionsInput>,
    ) -> S3Result<S3Response<ListObjectVersionsOutput>> {
        lists::list_object_versions(self, req).await
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        reads::head_object(self, req).await
    }

    async fn get_object_attributes(
        &self,
        req: S3Request<GetObjectAttributesInput>,
    ) -> S3Result<S3Response<GetObjectAttributesOutput>> {
        reads::get_object_attributes(self, req).await
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        reads::get_object(self, req).await
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        writes::put_object(self, req).await
    }

    async fn copy_object(
        &self,
        req: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        writes::copy_object(self, req).await
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        writes::delete_object(self, req).await
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        writes::delete_objects(self, req).await
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        let principal = caller(&req)?;
        Ok(S3Response::new(
            self.start_upload(&principal, req.input).await?,
        ))
    }

    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        let principal = caller(&req)?;
        let trailers = req.extensions.get::<Trailers>().cloned();
        let input = req.input;
        let sent = sent_checksum!(input);
        let expected = Expected::of_request(
            input.content_md5.as_deref(),
            &sent,
            &req.headers,
            trailers.as_ref(),
        )?;
        Ok(S3Response::new(
            self.put_part(&principal, input, expected).await?,
        ))
    }

    async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        let principal = caller(&req)?;
        Ok(S3Response::new(
            self.copy_part(&principal, req.input).await?,
        ))
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let principal = caller(&req)?;
        Ok(S3Response::new(
            self.finish_upload(&principal, req.input).await?,
        ))
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        let principal = caller(&req)?;
        Ok(S3Response::new(
            self.abort_upload(&principal, req.input).await?,
        ))
    }

    async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        let principal = caller(&req)?;
        Ok(S3Response::new(
            self.list_upload_parts(&principal, req.input).await?,
        ))
    }

    async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        let principal = caller(&req)?;
        Ok(S3Response::new(
            self.list_uploads(&principal, req.input).await?,
        ))
    }
}
