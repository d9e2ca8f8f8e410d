//! The S3 door (docs/s3.md): the S3 protocol at `/s3` on ferry's port, path-style, over the
//! same use cases as the HTTP API and MCP. Nothing here decides a rule of its own: a bucket is
//! a space (or a thread's sandbox), an object write is `spaces::write`, a delete is
//! `spaces::delete`, and access is decided by `ferry_app` exactly as for the other doors.
//!
//! The protocol itself — request parsing, SigV4 in headers and presigned URLs, aws-chunked
//! bodies with their chunk and trailer signatures, S3's XML — is the `s3s` crate's. It has no
//! notion of a path prefix, and SigV4 signs the path the client sent (`/s3/bucket/key`), so
//! the door runs two `s3s` services: the outer one checks the signature over the path as sent
//! and hands every verified request to [`forward`], which strips `/s3` and passes it, with the
//! verified principal attached, to the inner one, which routes the operation to [`door`].

mod address;
mod attributes;
mod auth;
mod body_checksum;
mod buckets;
mod context;
mod door;
mod errors;
mod forward;
mod lists;
mod multipart;
mod multipart_checksum;
mod paging;
mod reads;
mod request;
mod service;
mod serving;
mod writes;

use std::sync::Arc;

pub use auth::{Identities, SESSION_ACCESS_KEY, SESSION_SECRET, TokenRefusal};
use ferry_app::App;
pub use request::{PREFIX, RequestId};

pub use service::Service;

/// What the door needs from the server it runs in.
#[derive(Clone)]
pub struct Setup {
    pub app: App,
    /// Secrets of access keys, and the principal of a bearer token used as session token.
    pub identities: Arc<dyn Identities>,
    /// The region answered by `GetBucketLocation` (signatures are accepted for any region).
    pub region: String,
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Setup")
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

/// Builds the door.
pub fn service(setup: Setup) -> Service {
    let inner = {
        let mut builder = s3s::service::S3ServiceBuilder::new(context::Door::new(
            setup.app.clone(),
            setup.region.clone(),
        ));
        // Bucket names are checked against ferry's own rules (space names, sandbox ids).
        builder.set_validation(address::AnyName);
        builder.build()
    };
    let mut outer = s3s::service::S3ServiceBuilder::new(door::Unreachable);
    outer.set_auth(auth::Keys::new(setup.app.clone(), setup.identities.clone()));
    outer.set_route(forward::Forward::new(
        inner,
        setup.app.clone(),
        setup.identities.clone(),
    ));
    // The outer service sees `s3` as the bucket of every request; the inner one checks names.
    outer.set_validation(address::AnyName);
    Service(outer.build())
}
