//! What travels between the door's outer service and its operations: where the door is
//! mounted, the server's request id, the verified caller and an aws-chunked body's trailers
//! on the way in, and a marker header on the way out. A leaf that every other module of the
//! door may use.

use ferry_app::Principal;

/// Where the door is mounted on ferry's port.
pub const PREFIX: &str = "/s3";

/// The id the server gave a request (`X-Request-Id`, kept or made): the server sets it on
/// every request it hands the door, and the door names it in S3's answers (`x-amz-request-id`,
/// an error's `<RequestId>`). It is not read from the request's header, which keeps what the
/// client sent, so that a signature covering that header still verifies.
#[derive(Debug, Clone)]
pub struct RequestId(pub http::HeaderValue);

/// The principal the request was verified as, for the inner service.
#[derive(Debug, Clone)]
pub(crate) struct Caller(pub Principal);

/// The trailing headers of an aws-chunked body (its checksum, when sent last), for the inner
/// service: the outer one decoded the body and holds them.
#[derive(Debug, Clone)]
pub(crate) struct Trailers(pub s3s::TrailingHeaders);

/// Set by an operation whose answer names its ETag without quotes (`GetObjectAttributes`);
/// taken off, with the quotes, before the answer leaves.
pub(crate) const UNQUOTED_ETAG_HEADER: &str = "x-ferry-s3-unquoted-etag";
