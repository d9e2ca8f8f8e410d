//! Resumable uploads over HTTP, the tus 1.0 protocol (docs/reference/resumable-uploads.md):
//! creation, creation-with-upload, termination, expiration and checksum, at
//! `/api/uploads/resumable`. The headers are read and written here; every rule is
//! `ferry_app::transfers::resumable`'s.

use axum::Json;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ferry_app::transfers::resumable::{self, Checksum, Finished, Status};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::error_code::{ErrorCode, refusal};
use crate::extract::ApiPath;
use crate::routes::tus_headers;
use crate::routes::uploads::UploadList;
use crate::serve::header_value;
use crate::state::AppState;

/// The one protocol version spoken.
pub const TUS_VERSION: &str = "1.0.0";
const EXTENSIONS: &str = "creation,creation-with-upload,termination,expiration,checksum";
const OFFSET_OCTET_STREAM: &str = "application/offset+octet-stream";
/// Where uploads are created; each lives below it.
const ENDPOINT: &str = "/api/uploads/resumable";

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A request names the protocol version it speaks; only 1.0.0 is spoken (412 otherwise, with
/// `Tus-Version` saying which).
fn check_version(headers: &HeaderMap) -> ApiResult<()> {
    match header(headers, "tus-resumable") {
        Some(TUS_VERSION) => Ok(()),
        Some(other) => Err(ApiError::new(
            crate::error_code::ErrorCode::PreconditionFailed,
            format!("Tus-Resumable {other} is not spoken here; Tus-Version lists what is (1.0.0)"),
        )),
        None => Err(ApiError::new(
            crate::error_code::ErrorCode::PreconditionFailed,
            "a tus request needs the header Tus-Resumable: 1.0.0",
        )),
    }
}

/// A length or offset header: digits only (Rust's parser would also take a leading `+`, which
/// the protocol's grammar does not).
fn number(headers: &HeaderMap, name: &str) -> ApiResult<Option<u64>> {
    header(headers, name)
        .map(|v| {
            let v = v.trim();
            v.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| v.parse::<u64>().ok())
                .flatten()
                .ok_or_else(|| {
                    ApiError::invalid_request(format!("{name} must be a whole number of bytes"))
                })
        })
        .transpose()
}

/// What every tus answer carries.
fn tus_headers(response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert("tus-resumable", HeaderValue::from_static(TUS_VERSION));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// Adds the protocol headers to every answer of these routes, errors included.
pub async fn with_tus_headers(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let mut response = next.run(request).await;
    tus_headers(&mut response);
    if response.status() == StatusCode::PRECONDITION_FAILED {
        response
            .headers_mut()
            .insert("tus-version", HeaderValue::from_static(TUS_VERSION));
    }
    response
}

fn state_headers(response: &mut Response, status: &Status) -> ApiResult<()> {
    let headers = response.headers_mut();
    headers.insert("upload-offset", HeaderValue::from(status.offset));
    headers.insert(
        "upload-expires",
        header_value(&status.expires_at.http_date())?,
    );
    Ok(())
}

/// Says what the server speaks.
#[utoipa::path(
    options, path = "/api/uploads/resumable", tag = "uploads",
    operation_id = "resumable_options",
    responses((status = 204, description = "Tus-Version, Tus-Extension, Tus-Max-Size and Tus-Checksum-Algorithm")),
    security(())
)]
pub async fn options(State(state): State<AppState>) -> Response {
    let limits = &state.app.limits;
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert("tus-version", HeaderValue::from_static(TUS_VERSION));
    headers.insert("tus-extension", HeaderValue::from_static(EXTENSIONS));
    headers.insert(
        "tus-max-size",
        HeaderValue::from(limits.upload_max_bytes.max(limits.space_max_bytes)),
    );
    headers.insert(
        "tus-checksum-algorithm",
        HeaderValue::from_static(tus_headers::CHECKSUM_ALGORITHMS),
    );
    response
}

/// Creates an upload (and takes its first bytes, when the request carries them).
#[utoipa::path(
    post, path = "/api/uploads/resumable", tag = "uploads",
    operation_id = "resumable_create",
    params(
        ("Tus-Resumable" = String, Header, description = "1.0.0"),
        ("Upload-Length" = u64, Header, description = "The whole upload's size in bytes"),
        ("Upload-Metadata" = String, Header, description = "Comma-separated `key base64value` pairs naming the target: threadId and filename, or spaceName, path, contentType (and ifNoneMatch *)"),
    ),
    request_body(description = "Optionally the first bytes (creation-with-upload), as application/offset+octet-stream", content((crate::openapi::FileBytes = "application/offset+octet-stream"))),
    responses(
        (status = 201, description = "Created: Location names the upload; Upload-Offset when bytes came with it; Upload-Expires"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest, ErrorCode::InvalidPath], "the metadata names no usable target")),
        (status = 403, description = refusal(&[ErrorCode::Forbidden], "")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "no such thread")),
        (status = 409, description = refusal(&[ErrorCode::AlreadyExists], "ifNoneMatch * and the path is taken")),
        (status = 412, description = refusal(&[ErrorCode::PreconditionFailed], "no Tus-Resumable 1.0.0")),
        (status = 413, description = refusal(&[ErrorCode::RequestTooLarge], "Upload-Length over the target's limit")),
        (status = 415, description = refusal(&[ErrorCode::UnsupportedMediaType], "a space file's contentType")),
        (status = 429, description = refusal(&[ErrorCode::TooManyRequests], "too many unfinished uploads")),
    ),
    security(("bearer" = []))
)]
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    check_version(&headers)?;
    if headers.contains_key("upload-defer-length") {
        return Err(ApiError::invalid_request(
            "Upload-Defer-Length is not supported: send Upload-Length",
        ));
    }
    let length = number(&headers, "upload-length")?
        .ok_or_else(|| ApiError::invalid_request("a new upload needs Upload-Length"))?;
    let metadata = tus_headers::metadata(header(&headers, "upload-metadata").unwrap_or_default())?;
    let mut status = resumable::create(&state.app, &principal, length, metadata).await?;
    let carries_bytes = header(&headers, header::CONTENT_TYPE.as_str())
        .is_some_and(|t| t.eq_ignore_ascii_case(OFFSET_OCTET_STREAM));
    let mut finished = None;
    if carries_bytes {
        let checksum = checksum(&headers)?;
        status = resumable::append(
            &state.app,
            &principal,
            &status.id,
            0,
            checksum,
            body.into_data_stream(),
        )
        .await?;
        if status.needs_finishing() {
            finished = finish(&state, &principal, &status.id).await?;
        }
    }
    let mut response = StatusCode::CREATED.into_response();
    response.headers_mut().insert(
        header::LOCATION,
        header_value(&format!("{ENDPOINT}/{}", status.id))?,
    );
    state_headers(&mut response, &status)?;
    if !carries_bytes {
        response.headers_mut().remove("upload-offset");
    }
    if let Some(failure) = finished {
        return Ok(failure);
    }
    Ok(response)
}

fn checksum(headers: &HeaderMap) -> ApiResult<Option<Checksum>> {
    header(headers, "upload-checksum")
        .map(tus_headers::checksum)
        .transpose()
}

/// Tells how many bytes of an upload are in.
#[utoipa::path(
    head, path = "/api/uploads/resumable/{id}", tag = "uploads",
    operation_id = "resumable_head",
    params(("id" = String, Path), ("Tus-Resumable" = String, Header, description = "1.0.0")),
    responses(
        (status = 200, description = "Upload-Offset, Upload-Length, Upload-Metadata, Upload-Expires"),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "no such upload of the caller's, or it expired")),
        (status = 412, description = refusal(&[ErrorCode::PreconditionFailed], "no Tus-Resumable 1.0.0")),
    ),
    security(("bearer" = []))
)]
pub async fn head(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    check_version(&headers)?;
    let status = resumable::status(&state.app, &principal, &id).await?;
    // Every byte is in but the upload was never made a plain one (the request that sent the
    // last byte died): it is made now, before the client is told it is complete.
    if status.needs_finishing() {
        finish(&state, &principal, &id).await?;
    }
    let mut response = StatusCode::OK.into_response();
    state_headers(&mut response, &status)?;
    let out = response.headers_mut();
    out.insert("upload-length", HeaderValue::from(status.length));
    if !status.metadata.is_empty() {
        out.insert("upload-metadata", header_value(&status.metadata)?);
    }
    Ok(response)
}

/// Adds bytes at the upload's offset.
#[utoipa::path(
    patch, path = "/api/uploads/resumable/{id}", tag = "uploads",
    operation_id = "resumable_patch",
    params(
        ("id" = String, Path),
        ("Tus-Resumable" = String, Header, description = "1.0.0"),
        ("Upload-Offset" = u64, Header, description = "Where these bytes start: the upload's offset"),
        ("Upload-Checksum" = Option<String>, Header, description = "`sha1 <base64>` or `sha256 <base64>` of this request's bytes"),
    ),
    request_body(description = "The next bytes", content((crate::openapi::FileBytes = "application/offset+octet-stream"))),
    responses(
        (status = 204, description = "Kept: Upload-Offset is the new offset; the last byte makes the upload a plain one"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "no or a malformed Upload-Offset or Upload-Checksum")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "no such upload of the caller's, or it expired")),
        (status = 409, description = refusal(&[ErrorCode::OffsetMismatch, ErrorCode::AlreadyExists], "not the upload's offset, or the target's own refusal when the upload is finished")),
        (status = 412, description = refusal(&[ErrorCode::PreconditionFailed], "no Tus-Resumable 1.0.0")),
        (status = 413, description = refusal(&[ErrorCode::RequestTooLarge], "more bytes than Upload-Length leaves")),
        (status = 415, description = refusal(&[ErrorCode::UnsupportedMediaType], "not application/offset+octet-stream")),
        (status = 460, description = refusal(&[ErrorCode::ChecksumMismatch], "nothing of the body was kept")),
    ),
    security(("bearer" = []))
)]
pub async fn patch(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    check_version(&headers)?;
    if !header(&headers, header::CONTENT_TYPE.as_str())
        .is_some_and(|t| t.eq_ignore_ascii_case(OFFSET_OCTET_STREAM))
    {
        return Err(ApiError::new(
            crate::error_code::ErrorCode::UnsupportedMediaType,
            format!("a PATCH carries Content-Type: {OFFSET_OCTET_STREAM}"),
        ));
    }
    let offset = number(&headers, "upload-offset")?
        .ok_or_else(|| ApiError::invalid_request("a PATCH needs Upload-Offset"))?;
    let checksum = checksum(&headers)?;
    let status = resumable::append(
        &state.app,
        &principal,
        &id,
        offset,
        checksum,
        body.into_data_stream(),
    )
    .await?;
    if status.needs_finishing()
        && let Some(failure) = finish(&state, &principal, &id).await?
    {
        return Ok(failure);
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    state_headers(&mut response, &status)?;
    Ok(response)
}

/// Ends an upload and removes what it kept (termination).
#[utoipa::path(
    delete, path = "/api/uploads/resumable/{id}", tag = "uploads",
    operation_id = "resumable_delete",
    params(("id" = String, Path), ("Tus-Resumable" = String, Header, description = "1.0.0")),
    responses(
        (status = 204, description = "Ended"),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
        (status = 412, description = refusal(&[ErrorCode::PreconditionFailed], "no Tus-Resumable 1.0.0")),
    ),
    security(("bearer" = []))
)]
pub async fn delete(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
) -> ApiResult<StatusCode> {
    check_version(&headers)?;
    resumable::terminate(&state.app, &principal, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The answer of a finished upload: what the plain upload or space write answered.
#[utoipa::path(
    get, path = "/api/uploads/resumable/{id}", tag = "uploads",
    operation_id = "resumable_answer",
    params(("id" = String, Path)),
    responses(
        (status = 201, description = "The plain route's answer: a thread upload's { uploads: [...] }, or a space write's result (201 or 200, with its ETag)"),
        (status = 200, description = "A space write that replaced a file"),
        (status = 400, description = refusal(&[ErrorCode::InvalidRequest], "the upload is not finished")),
        (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
    ),
    security(("bearer" = []))
)]
pub async fn answer(
    State(state): State<AppState>,
    principal: Principal,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Response> {
    let Some(kept) = resumable::answer(&state.app, &principal, &id).await? else {
        let status = resumable::status(&state.app, &principal, &id).await?;
        return Err(ApiError::invalid_request(format!(
            "the upload is not finished: {} of {} bytes are in",
            status.offset, status.length
        )));
    };
    answer_of(kept)
}

/// A finished upload's answer, as the plain route would have given it: a thread upload's
/// `{ uploads }` (201), a space write's result with its `ETag` (201, or 200 when it replaced
/// a file), or the envelope of the target's refusal.
fn answer_of(finished: Finished) -> ApiResult<Response> {
    Ok(match finished {
        Finished::ThreadUpload { uploads } => {
            (StatusCode::CREATED, Json(UploadList { uploads })).into_response()
        }
        Finished::SpaceFile { written } => {
            let status = if written.created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            let etag = header_value(&written.etag)?;
            let mut response = (status, Json(written)).into_response();
            response.headers_mut().insert(header::ETAG, etag);
            response
        }
        Finished::Refused { code, message } => ApiError::new(code, message).into_response(),
    })
}

/// Makes a complete upload what its target says (`resumable::finish` keeps how it ended).
/// Answers the target's refusal as the response to send, when it refused; `None` when it was
/// made (or another request has it in hand).
async fn finish(state: &AppState, principal: &Principal, id: &str) -> ApiResult<Option<Response>> {
    match resumable::finish(&state.app, principal, id).await? {
        Some(refused @ Finished::Refused { .. }) => answer_of(refused).map(Some),
        _ => Ok(None),
    }
}
