//! Who a tool call acts as: the token (one for a `ferry mcp` session, or each HTTP request's
//! own at `/mcp`), the thread its `thread` claim names, and the address links point at; and
//! how a name becomes a path segment of the API, encoded so the server decodes exactly what the
//! agent wrote.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::HeaderMap;
use http::header::AUTHORIZATION;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;

/// Everything but RFC 3986's unreserved characters is encoded in a path segment or a query
/// value, so the server decodes exactly what the agent wrote.
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

pub(crate) fn encode(component: &str) -> String {
    utf8_percent_encode(component, COMPONENT).to_string()
}

/// A path inside a space as URL segments: each segment encoded on its own, so `/` stays the
/// separator and everything else reaches the server's validator as written.
pub(crate) fn encode_path(path: &str) -> String {
    path.split('/').map(encode).collect::<Vec<_>>().join("/")
}

/// Who a tool call acts as, and where links point.
#[derive(Clone)]
pub(crate) struct Caller {
    pub(crate) token: String,
    /// Scheme, host and any prefix of the server, for links: `https://files.example.com`.
    pub(crate) base_url: String,
    /// The thread the thread tools act in.
    pub(crate) thread: Option<String>,
    /// What the MCP request carried for the server it runs in, handed to each of its calls
    /// ([`ApiRequest::extensions`]); empty for `ferry mcp`.
    pub(crate) extensions: http::Extensions,
}

impl Caller {
    /// The thread the thread tools act in.
    pub(crate) fn thread(&self) -> Option<&str> {
        self.thread.as_deref()
    }
}

impl std::fmt::Debug for Caller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Caller")
            .field("token", &"<redacted>")
            .field("base_url", &self.base_url)
            .field("thread", &self.thread)
            .finish()
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Callers {
    /// `ferry mcp`: one agent, one token, for the whole session.
    Fixed(Caller),
    /// `/mcp`: each HTTP request's own bearer token.
    PerRequest,
}

pub(crate) fn bearer(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty())
        .then(|| token.trim().to_owned())
}

/// The `thread` claim of a JWT, read without verifying it: the server verifies the token on
/// every request, so a forged claim only names a thread the server then refuses.
pub(crate) fn thread_claim(token: &str) -> Option<String> {
    let payload = token.trim().split('.').nth(1)?;
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let claims: Value = serde_json::from_slice(&bytes).ok()?;
    claims
        .get("thread")?
        .as_str()
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// Where the HTTP request was sent, as a base for links: the proxy's forwarded host and scheme
/// when there is one.
pub(crate) fn base_url_of(parts: &http::request::Parts) -> String {
    let first = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let host = first("x-forwarded-host")
        .or_else(|| first("host"))
        .or_else(|| parts.uri.authority().map(|a| a.to_string()));
    let scheme = first("x-forwarded-proto")
        .or_else(|| parts.uri.scheme_str().map(str::to_owned))
        .unwrap_or_else(|| "http".to_owned());
    match host {
        Some(host) => format!("{scheme}://{host}"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_encoded_one_by_one() {
        assert_eq!(
            encode_path("ideas/20261121 tea shop.md"),
            "ideas/20261121%20tea%20shop.md"
        );
        assert_eq!(encode_path("a/../b"), "a/../b");
        assert_eq!(encode_path("a%2e%2e/b?c#d"), "a%252e%252e/b%3Fc%23d");
        assert_eq!(encode_path("ünï/çödé"), "%C3%BCn%C3%AF/%C3%A7%C3%B6d%C3%A9");
        assert_eq!(encode("ideas/x"), "ideas%2Fx");
    }

    #[test]
    fn thread_claim_is_read_from_the_payload() {
        let payload = URL_SAFE_NO_PAD.encode(br#"{"sub":"u","role":"agent","thread":"t-1"}"#);
        assert_eq!(
            thread_claim(&format!("h.{payload}.s")).as_deref(),
            Some("t-1")
        );
        let none = URL_SAFE_NO_PAD.encode(br#"{"sub":"u","role":"authenticated"}"#);
        assert_eq!(thread_claim(&format!("h.{none}.s")), None);
        assert_eq!(thread_claim("not-a-jwt"), None);
    }

    #[test]
    fn base_url_prefers_the_proxy_headers() {
        let request = http::Request::builder()
            .uri("/mcp")
            .header("host", "127.0.0.1:8080")
            .body(())
            .unwrap();
        let (parts, ()) = request.into_parts();
        assert_eq!(base_url_of(&parts), "http://127.0.0.1:8080");
        let request = http::Request::builder()
            .uri("/mcp")
            .header("host", "10.0.0.2:8080")
            .header("x-forwarded-host", "files.example.com")
            .header("x-forwarded-proto", "https")
            .body(())
            .unwrap();
        let (parts, ()) = request.into_parts();
        assert_eq!(base_url_of(&parts), "https://files.example.com");
    }
}
