//! The hidden attachment note (docs/reference/uploads.md) that tells the agent where an upload is.

/// What the note says about one upload.
#[derive(Debug, Clone, Copy)]
pub struct AttachmentNote<'a> {
    pub file_name: &'a str,
    pub file_type: &'a str,
    pub storage_path: &'a str,
    pub sandbox_path: &'a str,
    /// `true` for images the model sees itself (no preview element).
    pub is_image: bool,
    pub preview: Option<&'a str>,
    /// Why there is no preview, when extraction failed.
    pub preview_error: Option<&'a str>,
}

impl AttachmentNote<'_> {
    /// The note in its exact layout (docs/reference/uploads.md), every value XML-escaped.
    ///
    /// A document whose preview could not be made still gets a `<Preview>` element, holding
    /// the reason, so the agent knows to open the file in the sandbox itself.
    pub fn to_xml(&self) -> String {
        let element = if self.is_image {
            "UserUploadedImage"
        } else {
            "UserUploadedDocument"
        };
        let mut xml = format!(
            "<{element} hidden=\"true\">\n  <FileName>{}</FileName>\n  <FileType>{}</FileType>\n  \
             <StoragePath>{}</StoragePath>\n  <SandboxPath>{}</SandboxPath>\n",
            escape(self.file_name),
            escape(self.file_type),
            escape(self.storage_path),
            escape(self.sandbox_path),
        );
        if !self.is_image {
            let body = match (self.preview, self.preview_error) {
                (Some(preview), _) => escape(preview),
                (None, Some(error)) => escape(&format!("(no preview: {error})")),
                (None, None) => "(no preview for this file type)".to_owned(),
            };
            xml.push_str(&format!("  <Preview>\n{body}\n  </Preview>\n"));
        }
        xml.push_str(&format!("</{element}>"));
        xml
    }
}

/// Escapes the five XML special characters.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_note_matches_the_seed() {
        let xml = AttachmentNote {
            file_name: "screenshot.png",
            file_type: "image/png",
            storage_path: "chat-uploads/user123/thread456/abc_screenshot.png",
            sandbox_path: "/sandbox/user_uploads/screenshot.png",
            is_image: true,
            preview: None,
            preview_error: None,
        }
        .to_xml();
        assert_eq!(
            xml,
            "<UserUploadedImage hidden=\"true\">\n  <FileName>screenshot.png</FileName>\n  \
             <FileType>image/png</FileType>\n  \
             <StoragePath>chat-uploads/user123/thread456/abc_screenshot.png</StoragePath>\n  \
             <SandboxPath>/sandbox/user_uploads/screenshot.png</SandboxPath>\n</UserUploadedImage>"
        );
    }

    #[test]
    fn document_note_matches_the_seed_and_escapes() {
        let xml = AttachmentNote {
            file_name: "q<&>\"'.xlsx",
            file_type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            storage_path: "chat-uploads/u/t/def_q.xlsx",
            sandbox_path: "/sandbox/user_uploads/q.xlsx",
            is_image: false,
            preview: Some("Sheet1: Revenue | Q1\nRow 1: North | 125000\n</Preview>"),
            preview_error: None,
        }
        .to_xml();
        assert!(xml.starts_with("<UserUploadedDocument hidden=\"true\">\n  <FileName>q&lt;&amp;&gt;&quot;&apos;.xlsx</FileName>\n"));
        assert!(xml.contains(
            "  <Preview>\nSheet1: Revenue | Q1\nRow 1: North | 125000\n&lt;/Preview&gt;\n  </Preview>\n</UserUploadedDocument>"
        ));
        let failed = AttachmentNote {
            preview: None,
            preview_error: Some("the document is encrypted"),
            ..AttachmentNote {
                file_name: "a.pdf",
                file_type: "application/pdf",
                storage_path: "s",
                sandbox_path: "p",
                is_image: false,
                preview: None,
                preview_error: None,
            }
        }
        .to_xml();
        assert!(
            failed.contains("<Preview>\n(no preview: the document is encrypted)\n  </Preview>")
        );
    }
}
