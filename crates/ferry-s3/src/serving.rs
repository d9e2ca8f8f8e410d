//! How an object's bytes are answered on ferry's origin: the rule of every door
//! (`ferry_core::content_type::serving`), applied to the type S3 answers with — the stored one,
//! or the one a `response-content-type` override asks for.

use ferry_core::content_type::{attachment_disposition, serving};
use http::{HeaderMap, HeaderValue, header};

/// The safety headers of a `GetObject` or `HeadObject`. They are the response's own headers,
/// which s3s writes after the output's fields and after the `response-*` overrides, so no
/// stored attribute and no query parameter can take them away: an active type (HTML, SVG, …)
/// is always an attachment, and everything but PDF is sandboxed.
pub(crate) fn safety_headers(
    content_type: &str,
    disposition: Option<&str>,
    key: &str,
) -> HeaderMap {
    let serving = serving(content_type);
    let mut headers = HeaderMap::new();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if let Some(policy) = serving.content_security_policy {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(policy),
        );
    }
    let attachment = disposition.is_some_and(|d| {
        d.trim_start()
            .get(..10)
            .is_some_and(|head| head.eq_ignore_ascii_case("attachment"))
    });
    if !serving.inline && !attachment {
        let name = key.rsplit('/').next().unwrap_or(key);
        if let Ok(value) = HeaderValue::from_str(&attachment_disposition(name)) {
            headers.insert(header::CONTENT_DISPOSITION, value);
        }
    }
    headers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_types_become_attachments_whatever_was_asked() {
        let h = safety_headers("text/html", Some("inline"), "site/index.html");
        assert_eq!(
            h[header::CONTENT_DISPOSITION],
            "attachment; filename=\"index.html\"; filename*=UTF-8''index.html"
        );
        assert!(
            h[header::CONTENT_SECURITY_POLICY]
                .to_str()
                .unwrap()
                .ends_with("sandbox")
        );
        assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        // An attachment asked for is kept with its own file name.
        let h = safety_headers("image/svg+xml", Some("attachment; filename=a.svg"), "x.svg");
        assert!(h.get(header::CONTENT_DISPOSITION).is_none());
    }

    #[test]
    fn passive_types_stay_inline_and_sandboxed() {
        let h = safety_headers("image/png", None, "chart.png");
        assert!(h.get(header::CONTENT_DISPOSITION).is_none());
        assert!(h.contains_key(header::CONTENT_SECURITY_POLICY));
        let h = safety_headers("application/pdf", None, "report.pdf");
        assert!(!h.contains_key(header::CONTENT_SECURITY_POLICY));
    }
}
