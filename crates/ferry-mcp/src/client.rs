//! The MCP server's one way to the HTTP API: every request a tool, a resource read or a
//! followed feed sends goes through [`Client`], as its caller, labelled as MCP's.

use bytes::Bytes;
use ferry_core::error_code::ErrorCode;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method};
use serde_json::Value;
use std::sync::Arc;

use crate::api::{Api, ApiRequest, ApiResponse};
use crate::caller::Caller;
use crate::outcome::{Stop, envelope, unreachable};

/// The HTTP API, as the MCP server calls it.
#[derive(Clone, Debug)]
pub(crate) struct Client {
    pub(crate) api: Arc<dyn Api>,
}

impl Client {
    /// Sends one request as `caller`; no answer at all becomes an error result.
    pub(crate) async fn exchange(
        &self,
        caller: &Caller,
        method: Method,
        path_and_query: String,
        headers: HeaderMap,
        body: Bytes,
    ) -> Result<ApiResponse, Stop> {
        let request = self.request(caller, method, path_and_query, headers, body)?;
        self.api.call(request).await.map_err(unreachable)
    }

    /// One request as `caller`: its token, and the header that labels the door.
    pub(crate) fn request(
        &self,
        caller: &Caller,
        method: Method,
        path_and_query: String,
        mut headers: HeaderMap,
        body: Bytes,
    ) -> Result<ApiRequest, Stop> {
        let authorization =
            HeaderValue::try_from(format!("Bearer {}", caller.token)).map_err(|_| {
                envelope(
                    ErrorCode::Unauthenticated,
                    "the token is not valid header text",
                )
            })?;
        headers.insert(AUTHORIZATION, authorization);
        // Changes made through the tools are labelled as MCP's in change feeds.
        headers.insert(
            ferry_core::door::DOOR_HEADER,
            HeaderValue::from_static("mcp"),
        );
        Ok(ApiRequest {
            method,
            path_and_query,
            headers,
            body,
            extensions: caller.extensions.clone(),
        })
    }

    pub(crate) async fn get(&self, caller: &Caller, path: String) -> Result<ApiResponse, Stop> {
        self.exchange(caller, Method::GET, path, HeaderMap::new(), Bytes::new())
            .await
    }

    pub(crate) async fn post_json(
        &self,
        caller: &Caller,
        path: String,
        body: Value,
    ) -> Result<ApiResponse, Stop> {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        self.exchange(caller, Method::POST, path, headers, body.to_string().into())
            .await
    }

    /// The stored events of the feed at `route` after `after`, at most `limit` of them;
    /// `None` when the feed cannot be read now.
    pub(crate) async fn events_page(
        &self,
        caller: &Caller,
        route: &str,
        after: i64,
        limit: i64,
    ) -> Option<Vec<Value>> {
        let route = format!("{route}?after={after}&format=json&limit={limit}");
        let response = self.get(caller, route).await.ok()?;
        if !response.status.is_success() {
            return None;
        }
        serde_json::from_slice::<Vec<Value>>(&response.body).ok()
    }
}
