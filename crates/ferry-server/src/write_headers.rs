//! The request headers every file write reads the same way, whichever route it arrives on
//! (docs/reference/spaces.md, writing): `Content-Type`, the conditions of `If-None-Match`
//! and `If-Match`, and the declared `Content-Length`.

use axum::http::{HeaderMap, header};
use ferry_core::write::WriteCondition;

use crate::error::{ApiError, ApiResult, ErrorCode};
use ferry_core::conditions::TagList;

/// Reads `Content-Type`: it must be sent, and be a valid type (`ferry_core::content_type`,
/// the rule of every door).
pub fn usable_content_type(headers: &HeaderMap) -> ApiResult<String> {
    let missing = || {
        ApiError::new(
            ErrorCode::UnsupportedMediaType,
            "send a Content-Type header naming the file's type, e.g. 'text/markdown; charset=utf-8'",
        )
    };
    let value = headers
        .get(header::CONTENT_TYPE)
        .ok_or_else(missing)?
        .to_str()
        .map_err(|_| missing())?;
    match ferry_core::content_type::check(value) {
        Ok(checked) => Ok(checked.to_owned()),
        Err(e) => Err(ApiError::new(
            ErrorCode::UnsupportedMediaType,
            e.to_string(),
        )),
    }
}

/// Reads the write preconditions of `If-None-Match` and `If-Match`.
pub fn write_condition(headers: &HeaderMap) -> ApiResult<WriteCondition> {
    let text = |name: header::HeaderName| -> ApiResult<Option<String>> {
        headers
            .get(&name)
            .map(|v| {
                v.to_str().map(str::to_owned).map_err(|_| {
                    ApiError::invalid_request(format!("the {name} header is not valid text"))
                })
            })
            .transpose()
    };
    let create_only = match text(header::IF_NONE_MATCH)? {
        None => false,
        Some(v) if v.trim() == "*" => true,
        Some(_) => {
            return Err(ApiError::invalid_request(
                "If-None-Match on PUT only accepts '*' (create only if the path is free)",
            ));
        }
    };
    let if_match = match text(header::IF_MATCH)? {
        None => None,
        Some(v) => match TagList::parse(&v) {
            Some(TagList::Any) => Some(vec!["*".to_owned()]),
            // Weak tags never match in If-Match (strong comparison, RFC 9110 §13.1.1).
            Some(TagList::Tags(tags)) => Some(
                tags.into_iter()
                    .map(|(t, weak)| if weak { String::new() } else { t })
                    .collect(),
            ),
            None => {
                return Err(ApiError::invalid_request(
                    "If-Match must be '*' or a list of quoted ETags",
                ));
            }
        },
    };
    Ok(WriteCondition::of(create_only, if_match))
}

/// Reads the precondition of a removal: `If-Match` only.
pub fn delete_condition(headers: &HeaderMap) -> ApiResult<Option<Vec<String>>> {
    match write_condition(headers)? {
        WriteCondition::None => Ok(None),
        WriteCondition::IfMatch(tags) => Ok(Some(tags)),
        WriteCondition::CreateOnly | WriteCondition::IfMatchAndCreateOnly(_) => Err(
            ApiError::invalid_request("If-None-Match has no meaning on DELETE; use If-Match"),
        ),
    }
}

/// The length a body declares in `Content-Length`, for the use case to hold it to
/// (`ferry_app::body::Incoming`): refused at once over the limit, and refused when the bytes
/// that arrive differ from it.
pub fn declared_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
}
