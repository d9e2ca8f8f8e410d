//! Content types: which a stored file may carry, and how stored bytes of each may be answered
//! on ferry's own origin (docs/security.md, stored content).
//!
//! Both rules hold for every door: a type the HTTP API refuses is refused through S3 and MCP
//! alike, and a file written through one door is served as safely through every other.

/// Why a content type is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentTypeError {
    #[error("the content type is empty: name the file's type, e.g. 'text/markdown; charset=utf-8'")]
    Empty,
    #[error(
        "the content type '{0}' is not of the form type/subtype with optional parameters, e.g. 'text/markdown; charset=utf-8'"
    )]
    Malformed(String),
}

/// The longest content type kept: a header value longer than this is no real media type.
pub const MAX_LEN: usize = 256;

/// Checks a content type as RFC 9110 §8.3.1 shapes one — `type/subtype`, each a token, then
/// `; name=value` parameters whose value is a token or a quoted string — and answers it
/// trimmed. A list (`text/html, text/plain`), markup, or control characters are refused, so
/// what is kept can be sent back in a header as it is.
pub fn check(value: &str) -> Result<&str, ContentTypeError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(ContentTypeError::Empty);
    }
    let malformed = || ContentTypeError::Malformed(shown(value));
    if value.len() > MAX_LEN {
        return Err(malformed());
    }
    let mut parts = value.split(';');
    let essence = parts.next().unwrap_or("").trim();
    match essence.split_once('/') {
        Some((kind, sub)) if is_token(kind) && is_token(sub) => {}
        _ => return Err(malformed()),
    }
    for parameter in parts {
        let parameter = parameter.trim();
        if parameter.is_empty() {
            // `text/plain;` and `a/b; ; c=d` are tolerated, as browsers send them.
            continue;
        }
        let Some((name, raw)) = parameter.split_once('=') else {
            return Err(malformed());
        };
        if !is_token(name.trim()) || !(is_token(raw.trim()) || is_quoted(raw.trim())) {
            return Err(malformed());
        }
    }
    Ok(value)
}

/// The type without parameters, lower-cased: `text/html; charset=utf-8` → `text/html`.
pub fn essence(value: &str) -> String {
    value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// How stored bytes may be answered on ferry's origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Serving {
    /// Whether a browser may show it in place; otherwise it is sent as an attachment.
    pub inline: bool,
    /// The `Content-Security-Policy` sent with it: [`SANDBOXED_CSP`], except for PDF.
    pub content_security_policy: Option<&'static str>,
}

/// The policy of stored bytes and previews: nothing loads, nothing runs, and the document is
/// an opaque origin of its own even when opened directly.
pub const SANDBOXED_CSP: &str =
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox";

/// How bytes stored as `content_type` are answered on ferry's own origin. Only passive types
/// — raster images, PDF, plain text, CSV, JSON, audio and video — are shown in place; every
/// other type (HTML, SVG, XML, scripts, anything unknown, anything that is not one valid
/// media type) is an attachment, so no stored byte
/// runs script on the origin of the web UI, whatever type it was stored or asked for with.
/// Every answer also carries `X-Content-Type-Options: nosniff`, so the type is never guessed.
pub fn serving(content_type: &str) -> Serving {
    // A value that is not one media type (a list, say `application/pdf;,text/html`, which
    // browsers read as its last type) is never trusted to be passive.
    if check(content_type).is_err() {
        return Serving {
            inline: false,
            content_security_policy: Some(SANDBOXED_CSP),
        };
    }
    let essence = essence(content_type);
    if essence == "application/pdf" {
        // Browsers show PDF in their own viewer, which a `sandbox` directive stops; the viewer
        // runs no script of the document on the page's origin.
        return Serving {
            inline: true,
            content_security_policy: None,
        };
    }
    let inline = matches!(
        essence.as_str(),
        "image/png"
            | "image/jpeg"
            | "image/gif"
            | "image/webp"
            | "image/avif"
            | "image/bmp"
            | "text/plain"
            | "text/csv"
            | "application/json"
    ) || essence.starts_with("audio/")
        || essence.starts_with("video/");
    Serving {
        inline,
        content_security_policy: Some(SANDBOXED_CSP),
    }
}

/// `Content-Disposition: attachment` for a file name (RFC 6266 with RFC 8187's `filename*`).
///
/// The quoted `filename` fallback keeps printable ASCII only (quotes, backslashes, `%` and
/// everything else become `_`), and `filename*` percent-encodes every byte outside RFC 8187's
/// attr-char set, so no name — with quotes, CR/LF or any script — can split or forge the header.
pub fn attachment_disposition(name: &str) -> String {
    let fallback: String = name
        .chars()
        .map(|c| match c {
            ' ' | '!' | '#'..='$' | '&'..='[' | ']'..='~' => c,
            _ => '_',
        })
        .collect();
    let mut encoded = String::with_capacity(name.len() * 3);
    for byte in name.bytes() {
        if byte.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    format!("attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
}

fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn is_quoted(text: &str) -> bool {
    let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return false;
    };
    let mut escaped = false;
    for c in inner.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '"' || c.is_control() {
            return false;
        }
    }
    !escaped && !inner.chars().any(char::is_control)
}

/// The refused value as it may be quoted back: at most 64 characters, controls replaced.
fn shown(value: &str) -> String {
    value
        .chars()
        .take(64)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_types_pass_as_they_are_sent() {
        for ok in [
            "text/markdown; charset=utf-8",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "image/svg+xml",
            "multipart/form-data; boundary=\"a b\"",
            "text/plain;",
            "  application/octet-stream  ",
        ] {
            assert_eq!(check(ok), Ok(ok.trim()), "{ok}");
        }
    }

    #[test]
    fn lists_markup_and_bare_words_are_refused() {
        for bad in [
            "foo",
            "text/html, text/plain",
            "<img src=x onerror=alert(1)>",
            "text/",
            "/plain",
            "text/plain; charset",
            "text/plain; a=\"unterminated",
            "text/plain\r\nX-Injected: 1",
            "text/pl ain",
        ] {
            assert!(
                matches!(check(bad), Err(ContentTypeError::Malformed(_))),
                "{bad}"
            );
        }
        assert_eq!(check("  "), Err(ContentTypeError::Empty));
        assert!(check(&format!("a/{}", "b".repeat(MAX_LEN))).is_err());
    }

    #[test]
    fn dispositions_cannot_be_forged() {
        assert_eq!(
            attachment_disposition("report.docx"),
            "attachment; filename=\"report.docx\"; filename*=UTF-8''report.docx"
        );
        let tricky = attachment_disposition("a\"b\r\nSet-Cookie: x=1; é.txt");
        assert!(!tricky.contains('\r') && !tricky.contains('\n'));
        assert_eq!(
            tricky,
            "attachment; filename=\"a_b__Set-Cookie: x=1; _.txt\"; \
             filename*=UTF-8''a%22b%0D%0ASet-Cookie%3A%20x%3D1%3B%20%C3%A9.txt"
        );
    }

    #[test]
    fn only_passive_types_are_shown_in_place() {
        for active in [
            "text/html",
            "TEXT/HTML; charset=utf-8",
            "image/svg+xml",
            "application/xhtml+xml",
            "text/xml",
            "application/javascript",
            "application/octet-stream",
            "text/markdown",
        ] {
            let serving = serving(active);
            assert!(!serving.inline, "{active}");
            assert_eq!(serving.content_security_policy, Some(SANDBOXED_CSP));
        }
        for passive in ["image/png", "text/plain; charset=utf-8", "video/mp4"] {
            assert!(serving(passive).inline, "{passive}");
        }
        let pdf = serving("application/pdf");
        assert!(pdf.inline && pdf.content_security_policy.is_none());
        // Browsers take the last type of a list: a list is never passive, whatever it starts
        // with.
        for smuggled in [
            "application/pdf;,text/html",
            "image/png, text/html",
            "text/plain;,",
        ] {
            let serving = serving(smuggled);
            assert!(!serving.inline, "{smuggled}");
            assert_eq!(serving.content_security_policy, Some(SANDBOXED_CSP));
        }
    }
}
