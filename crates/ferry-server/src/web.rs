//! The web UI (docs/reference/web-ui.md): plain HTML, CSS and ES modules from `web/`, embedded in the
//! binary (a debug build reads them from the source tree instead).
//!
//! - `/`, `/t/{thread}`, `/spaces`, `/spaces/{…}` and `/settings` answer the app's page, so
//!   each of those addresses survives a reload or a shared link; the page's script reads it.
//! - Assets live under `/assets/{version}/…`, where the version is a digest of every embedded
//!   file. The page names its script and stylesheet with the current version and the modules
//!   import each other by relative paths, so a release's assets can be cached for good: a new
//!   build has a new version, hence new addresses. An asset asked for under another version is
//!   still served, but not cached, so a page from before an upgrade keeps working.
//! - The page carries a strict Content-Security-Policy: scripts, styles and connections only
//!   from this origin, `blob:` only where previews and downloads need it, no plugins, no
//!   framing of the app itself.

use axum::Router;
use axum::body::Body;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use rust_embed::Embed;
use std::borrow::Cow;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::OnceLock;

use crate::error::ApiError;
use crate::state::AppState;

#[derive(Embed)]
#[folder = "../../web/"]
struct Files;

/// The page's placeholder for the asset version.
const VERSION_MARK: &str = "__FERRY_ASSETS__";

/// The CSP source that allows the previews' one stylesheet (`ferry_extract::PREVIEW_STYLE`) by
/// its hash. A preview is shown in a frame built from a `blob:` URL, and such a frame inherits
/// this page's policy: allowing exactly that stylesheet keeps `style-src` free of
/// `'unsafe-inline'`. It is computed from the stylesheet itself, so the two cannot drift apart.
fn preview_style_hash() -> String {
    use base64::Engine as _;
    use sha2::Digest;
    let digest = sha2::Sha256::digest(ferry_extract::PREVIEW_STYLE.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// The policy of the app's page.
fn content_security_policy() -> &'static str {
    static CSP: OnceLock<String> = OnceLock::new();
    CSP.get_or_init(|| {
        [
            "default-src 'self'".to_owned(),
            "script-src 'self'".to_owned(),
            format!("style-src 'self' {}", preview_style_hash()),
            // Images of previews and photo attachments are fetched with the bearer token and
            // shown from blob: URLs; the previews' own markup may embed data: images.
            "img-src 'self' blob: data:".to_owned(),
            "media-src 'self' blob:".to_owned(),
            // Previews of HTML in a sandboxed frame; PDFs are shown as page images drawn by
            // the server, so no plugin or viewer is ever needed.
            "frame-src blob:".to_owned(),
            "object-src 'none'".to_owned(),
            "connect-src 'self'".to_owned(),
            "font-src 'self'".to_owned(),
            "worker-src 'none'".to_owned(),
            "manifest-src 'self'".to_owned(),
            "base-uri 'none'".to_owned(),
            "form-action 'none'".to_owned(),
            "frame-ancestors 'none'".to_owned(),
        ]
        .join("; ")
    })
}

/// The routes of the UI, merged into the API's router.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(page))
        .route("/t/{thread}", get(page))
        .route("/spaces", get(page))
        .route("/spaces/{*rest}", get(page))
        .route("/settings", get(page))
        .route("/assets/{version}/{*path}", get(asset))
        .route("/favicon.ico", get(favicon))
}

/// A digest of every embedded file: changes whenever any of them does.
fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let mut names: Vec<Cow<'static, str>> = Files::iter().collect();
        names.sort();
        let mut hasher = DefaultHasher::new();
        for name in names {
            name.hash(&mut hasher);
            if let Some(file) = Files::get(&name) {
                file.metadata.sha256_hash().hash(&mut hasher);
            }
        }
        format!("{:016x}", hasher.finish())
    })
}

/// The app's page, for every address the app knows (and, with a 404, for the addresses it
/// does not: the page then says so).
pub(crate) async fn page() -> Response {
    let Some(file) = Files::get("index.html") else {
        return ApiError::internal("the web UI's index.html is not embedded").into_response();
    };
    let html = String::from_utf8_lossy(&file.data).replace(VERSION_MARK, version());
    let mut response = html.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    // The page is small and names the current assets: always revalidate it.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(csp) = HeaderValue::from_str(content_security_policy()) {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    safety_headers(headers);
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

fn safety_headers(headers: &mut HeaderMap) {
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}

/// One asset under `/assets/{version}/…`.
async fn asset(
    Path((asked_version, path)): Path<(String, String)>,
    request_headers: HeaderMap,
) -> Response {
    // Only files under assets/ are served this way; the page has its own routes.
    let name = format!("assets/{path}");
    if path
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return ApiError::not_found("no such asset").into_response();
    }
    let Some(file) = Files::get(&name) else {
        return ApiError::not_found("no such asset").into_response();
    };
    let etag = format!("\"{}\"", hex_prefix(&file.metadata.sha256_hash()));
    // A debug build reads the files from disk as they change: never cache there.
    let cache = if cfg!(debug_assertions) || asked_version != version() {
        "no-cache"
    } else {
        "public, max-age=31536000, immutable"
    };
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(&name)),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    safety_headers(&mut headers);
    let not_modified = request_headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    if not_modified {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    (headers, Body::from(file.data.into_owned())).into_response()
}

/// Browsers ask for `/favicon.ico` whatever the page says; answer with the app's icon.
async fn favicon() -> Response {
    match Files::get("assets/favicon.svg") {
        Some(file) => (
            [
                (header::CONTENT_TYPE, "image/svg+xml"),
                (header::CACHE_CONTROL, "public, max-age=86400"),
            ],
            Body::from(file.data.into_owned()),
        )
            .into_response(),
        None => ApiError::not_found("no icon").into_response(),
    }
}

fn hex_prefix(bytes: &[u8]) -> String {
    bytes.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// The content types of the files the UI is made of.
fn content_type(name: &str) -> &'static str {
    let extension = name.rsplit_once('.').map_or("", |(_, e)| e);
    match extension {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "json" => "application/json",
        "webmanifest" => "application/manifest+json",
        "woff2" => "font/woff2",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_file_has_a_known_content_type() {
        for name in Files::iter() {
            assert_ne!(
                content_type(&name),
                "application/octet-stream",
                "{name} would be served without a useful Content-Type"
            );
        }
    }

    #[test]
    fn the_page_names_its_assets_by_version() {
        let page = Files::get("index.html").expect("index.html is embedded");
        let page = String::from_utf8_lossy(&page.data);
        assert!(page.contains(&format!("/assets/{VERSION_MARK}/app.js")));
        assert!(
            !page.contains("<script>") && !page.contains(" style="),
            "the page may have no inline script or style: the CSP forbids them"
        );
    }

    #[tokio::test]
    async fn the_page_carries_its_policy_and_the_current_asset_version() {
        let response = page().await;
        assert_eq!(response.status(), StatusCode::OK);
        let headers = response.headers();
        assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
        assert_eq!(
            headers[header::CONTENT_SECURITY_POLICY],
            content_security_policy()
        );
        assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(headers[header::CACHE_CONTROL], "no-cache");
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        let body = String::from_utf8(body.to_vec()).unwrap();
        assert!(!body.contains(VERSION_MARK));
        assert!(body.contains(&format!("/assets/{}/app.js", version())));
    }

    #[tokio::test]
    async fn assets_have_types_validators_and_stay_inside_assets() {
        let get = |path: &str, headers: HeaderMap| {
            asset(Path((version().to_owned(), path.to_owned())), headers)
        };
        let response = get("app.js", HeaderMap::new()).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "text/javascript; charset=utf-8"
        );
        let etag = response.headers()[header::ETAG].clone();
        let mut conditional = HeaderMap::new();
        conditional.insert(header::IF_NONE_MATCH, etag);
        assert_eq!(
            get("app.js", conditional).await.status(),
            StatusCode::NOT_MODIFIED
        );
        for bad in ["../index.html", "nope.js", "", "a//b.js"] {
            assert_eq!(
                get(bad, HeaderMap::new()).await.status(),
                StatusCode::NOT_FOUND,
                "{bad}"
            );
        }
        // An old page's version is still served, but never cached for good.
        let old = asset(
            Path(("0000000000000000".to_owned(), "app.css".to_owned())),
            HeaderMap::new(),
        )
        .await;
        assert_eq!(old.status(), StatusCode::OK);
        assert_eq!(old.headers()[header::CACHE_CONTROL], "no-cache");
    }

    #[test]
    fn the_policy_forbids_inline_script_and_framing() {
        let csp = content_security_policy();
        assert!(csp.contains("script-src 'self'"));
        assert!(!csp.contains("unsafe-inline"));
        assert!(!csp.contains("unsafe-eval"));
        assert!(csp.contains("frame-ancestors 'none'"));
    }
}
