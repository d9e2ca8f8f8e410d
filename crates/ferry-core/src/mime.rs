//! File types by name: the MIME type ferry records for an upload or a published file.

use crate::send_file::{extension_of, is_text_extension, mime_for_extension};

/// The MIME type of a file, from its name.
///
/// The 38 text types of `send_file` use their own table (docs/reference/send-file.md) (so `.ts` is TypeScript, not an MPEG
/// stream); the publish tool's types use their own table (docs/reference/publish.md); anything else is looked up in the
/// common registry of extensions, and an unknown type is `application/octet-stream`.
pub fn mime_for_name(name: &str) -> String {
    let Some(ext) = extension_of(name) else {
        return OCTET_STREAM.to_owned();
    };
    if is_text_extension(&ext) {
        return mime_for_extension(&ext).to_owned();
    }
    let known = match ext.as_str() {
        ".pdf" => Some("application/pdf"),
        ".docx" => Some("application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
        ".xlsx" => Some("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
        ".pptx" => {
            Some("application/vnd.openxmlformats-officedocument.presentationml.presentation")
        }
        ".xls" => Some("application/vnd.ms-excel"),
        ".png" => Some("image/png"),
        ".jpg" | ".jpeg" => Some("image/jpeg"),
        ".gif" => Some("image/gif"),
        ".webp" => Some("image/webp"),
        _ => None,
    };
    match known {
        Some(mime) => mime.to_owned(),
        None => mime_guess::from_ext(&ext[1..])
            .first_raw()
            .unwrap_or(OCTET_STREAM)
            .to_owned(),
    }
}

const OCTET_STREAM: &str = "application/octet-stream";

/// Whether an upload is an image the model can see (png, jpg, jpeg, gif, webp; docs/reference/uploads.md).
pub fn is_vision_image(name: &str) -> bool {
    matches!(
        extension_of(name).as_deref(),
        Some(".png" | ".jpg" | ".jpeg" | ".gif" | ".webp")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types() {
        assert_eq!(
            mime_for_name("quarterly_report.xlsx"),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
        );
        assert_eq!(mime_for_name("a.md"), "text/markdown");
        assert_eq!(mime_for_name("a.ts"), "text/x-typescript");
        assert_eq!(mime_for_name("a.PNG"), "image/png");
        assert_eq!(mime_for_name("a.mp4"), "video/mp4");
        assert_eq!(mime_for_name("noext"), "application/octet-stream");
        assert_eq!(mime_for_name("a.unknownext"), "application/octet-stream");
        assert!(is_vision_image("shot.JPG"));
        assert!(!is_vision_image("shot.svg"));
    }
}
