//! How the tools reach ferry: one exchange with its HTTP API at a time.
//!
//! The tools never decide a rule themselves (paths, limits, who may do what, the send_file
//! list): they shape one request, hand it to an [`Api`], and report the answer. `ferry mcp`
//! talks to a server over the network with [`HttpApi`]; `ferry serve` plugs in an
//! implementation that calls its own router in process, so both transports run the very same
//! handlers.

use anyhow::Context as _;
use async_trait::async_trait;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full};

use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// One request to ferry's HTTP API, exactly as it will be sent.
#[derive(Debug, Clone)]
pub struct ApiRequest {
    pub method: Method,
    /// The path and query, already percent-encoded: `/api/spaces/notes/files/ideas/a%20b.md`.
    pub path_and_query: String,
    /// Every header of the request, `Authorization` included.
    pub headers: HeaderMap,
    pub body: Bytes,
    /// What the MCP request this call serves carried for the server it runs in (`/mcp` on
    /// `ferry serve` puts the request's memory lease here, so that what a tool's reply holds
    /// counts against the server's memory budget until it has been sent). Never sent over the
    /// network.
    pub extensions: http::Extensions,
}

/// The server's answer, whole.
#[derive(Debug, Clone)]
pub struct ApiResponse {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// The server's answer as it arrives: its head, and its body as a stream of chunks (an event
/// stream read while it is written).
pub struct ApiStream {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: futures::stream::BoxStream<'static, anyhow::Result<Bytes>>,
}

impl ApiStream {
    /// The answer with its whole body read.
    pub async fn whole(self) -> anyhow::Result<ApiResponse> {
        let mut body = Vec::new();
        let mut chunks = self.body;
        while let Some(chunk) = futures::StreamExt::next(&mut chunks).await {
            body.extend_from_slice(&chunk?);
        }
        Ok(ApiResponse {
            status: self.status,
            headers: self.headers,
            body: body.into(),
        })
    }
}

impl std::fmt::Debug for ApiStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiStream")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

/// Sends one request to ferry's HTTP API.
///
/// An `Err` means no answer came at all (the server is unreachable, the connection broke);
/// every answer, an error status included, is an `Ok`.
#[async_trait]
pub trait Api: Send + Sync + std::fmt::Debug + 'static {
    /// The exchange, answered as soon as its head arrives; dropping the body's stream abandons
    /// the request (the server sees its client go).
    async fn call_streaming(&self, request: ApiRequest) -> anyhow::Result<ApiStream>;

    /// The exchange, answered whole.
    async fn call(&self, request: ApiRequest) -> anyhow::Result<ApiResponse> {
        self.call_streaming(request).await?.whole().await
    }
}

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// ferry's HTTP API over the network, at a base URL (`http://127.0.0.1:8080`, or
/// `https://files.example.com/ferry` behind a proxy that serves it under a prefix).
///
/// Built on hyper rather than a higher-level client because the request line must reach the
/// server as written: clients that parse URLs by the WHATWG rules drop `..` and `%2e%2e`
/// segments, and the server's validator would never see the traversal it has to refuse.
#[derive(Clone)]
pub struct HttpApi {
    base: String,
    client: HttpsClient,
}

impl std::fmt::Debug for HttpApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpApi").field("base", &self.base).finish()
    }
}

impl HttpApi {
    /// A client of the server at `base_url` (`http` or `https`; TLS trusts the system's
    /// certificate store).
    pub fn new(base_url: &str) -> anyhow::Result<HttpApi> {
        let base = base_url.trim().trim_end_matches('/').to_owned();
        let uri: Uri = base.parse().with_context(|| {
            format!("'{base_url}' is not a URL: give one like http://127.0.0.1:8080")
        })?;
        match uri.scheme_str() {
            Some("http") | Some("https") => {}
            _ => anyhow::bail!("'{base_url}' must start with http:// or https://"),
        }
        if uri.authority().is_none() {
            anyhow::bail!("'{base_url}' names no host: give one like http://127.0.0.1:8080");
        }
        if uri.query().is_some() {
            anyhow::bail!("'{base_url}' must not carry a query");
        }
        // A system without certificates can still reach a plain-http server; an https one
        // then fails its handshake with a message that says why.
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .context("TLS setup")?
        .with_root_certificates(roots)
        .with_no_client_auth();
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(connector);
        Ok(HttpApi { base, client })
    }

    /// The base URL requests are sent under, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        &self.base
    }
}

#[async_trait]
impl Api for HttpApi {
    async fn call_streaming(&self, request: ApiRequest) -> anyhow::Result<ApiStream> {
        let url = format!("{}{}", self.base, request.path_and_query);
        let mut outgoing = http::Request::builder()
            .method(request.method)
            .uri(&url)
            .body(Full::new(request.body))
            .with_context(|| format!("cannot build a request for {url}"))?;
        *outgoing.headers_mut() = request.headers;
        let response = self
            .client
            .request(outgoing)
            .await
            .with_context(|| format!("ferry did not answer at {}", self.base))?;
        let (parts, body) = response.into_parts();
        let base = self.base.clone();
        let body = futures::StreamExt::filter_map(body.into_data_stream(), move |chunk| {
            let chunk = chunk.with_context(|| format!("the answer from {base} broke off"));
            std::future::ready(Some(chunk))
        });
        Ok(ApiStream {
            status: parts.status,
            headers: parts.headers,
            body: Box::pin(body),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        assert_eq!(
            HttpApi::new("http://127.0.0.1:8080/").unwrap().base_url(),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            HttpApi::new("https://files.example.com/ferry")
                .unwrap()
                .base_url(),
            "https://files.example.com/ferry"
        );
        assert!(HttpApi::new("ftp://x").is_err());
        assert!(HttpApi::new("127.0.0.1:8080").is_err());
        assert!(HttpApi::new("http://x/?a=b").is_err());
    }
}
