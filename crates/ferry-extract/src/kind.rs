//! From a file name to the reader that handles it and the preview the panel shows.
//!
//! The decision is made from the name alone: the server already stores the
//! name the user or agent gave, and a file that lies about its type simply
//! fails its reader with a clear error.

use serde::{Deserialize, Serialize};

/// How the preview panel shows a published file (`preview_kind`, docs/reference/publish.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PreviewKind {
    /// Served as the image itself (SVG only ever as an image).
    Image,
    /// Served as `application/pdf`, for the browser's own viewer.
    Pdf,
    /// A sanitized HTML rendering made by [`crate::Extractor::render_html`].
    Html,
    /// Nothing to preview.
    None,
}

impl PreviewKind {
    /// The wire name: `image`, `pdf`, `html` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            PreviewKind::Image => "image",
            PreviewKind::Pdf => "pdf",
            PreviewKind::Html => "html",
            PreviewKind::None => "none",
        }
    }
}

/// The reader a file goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Pdf,
    Docx,
    Xlsx,
    Xls,
    Pptx,
    /// Comma- (or sniffed semicolon-) separated values.
    Csv,
    /// Tab-separated values.
    Tsv,
    Markdown,
    Json,
    /// Plain text and source code, HTML source included.
    Text,
    /// PNG, JPEG, GIF, WebP.
    Image,
    Svg,
    Other,
}

/// Extensions shown as escaped text in the preview panel and given a
/// "first characters" text preview.
const TEXT_EXTENSIONS: &[&str] = &[
    "txt",
    "text",
    "log",
    "py",
    "rs",
    "js",
    "mjs",
    "cjs",
    "jsx",
    "ts",
    "tsx",
    "go",
    "java",
    "kt",
    "kts",
    "scala",
    "swift",
    "c",
    "h",
    "cc",
    "cpp",
    "cxx",
    "hpp",
    "hh",
    "cs",
    "rb",
    "php",
    "pl",
    "lua",
    "r",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "bat",
    "yaml",
    "yml",
    "toml",
    "xml",
    "html",
    "htm",
    "xhtml",
    "css",
    "scss",
    "sass",
    "less",
    "sql",
    "ini",
    "cfg",
    "conf",
    "env",
    "properties",
    "gradle",
    "jsonl",
    "ndjson",
    "rst",
    "tex",
    "diff",
    "patch",
    "vue",
    "svelte",
    "dart",
    "ex",
    "exs",
    "erl",
    "hs",
    "ml",
    "clj",
    "graphql",
    "proto",
    "tf",
    "dockerfile",
    "makefile",
    "cmake",
    "gitignore",
];

/// File names without an extension that are text by convention.
const TEXT_NAMES: &[&str] = &[
    "makefile",
    "dockerfile",
    "readme",
    "license",
    "licence",
    "changelog",
    "authors",
    "notice",
    "todo",
    "containerfile",
];

/// The lower-cased extension of the last path component, if it has one.
pub(crate) fn extension(file_name: &str) -> Option<String> {
    let base = file_name.rsplit(['/', '\\']).next().unwrap_or(file_name);
    let (stem, ext) = base.rsplit_once('.')?;
    if stem.is_empty() && !TEXT_EXTENSIONS.contains(&ext.to_ascii_lowercase().as_str()) {
        // A dot-file such as ".profile" has no extension, but ".gitignore" is text.
        return None;
    }
    Some(ext.to_ascii_lowercase())
}

pub(crate) fn format_of(file_name: &str) -> Format {
    let Some(ext) = extension(file_name) else {
        let base = file_name.rsplit(['/', '\\']).next().unwrap_or(file_name);
        let lower = base.trim_start_matches('.').to_ascii_lowercase();
        return if TEXT_NAMES.contains(&lower.as_str()) {
            Format::Text
        } else {
            Format::Other
        };
    };
    match ext.as_str() {
        "pdf" => Format::Pdf,
        "docx" => Format::Docx,
        "xlsx" | "xlsm" => Format::Xlsx,
        "xls" => Format::Xls,
        "pptx" => Format::Pptx,
        "csv" => Format::Csv,
        "tsv" | "tab" => Format::Tsv,
        "md" | "markdown" | "mdown" | "mkd" => Format::Markdown,
        "json" | "geojson" => Format::Json,
        "png" | "jpg" | "jpeg" | "gif" | "webp" => Format::Image,
        "svg" => Format::Svg,
        e if TEXT_EXTENSIONS.contains(&e) => Format::Text,
        _ => Format::Other,
    }
}

/// Whether a file of this name is a document whose text is extracted (PDF, DOCX, XLSX/XLS,
/// PPTX) rather than read as it is.
pub fn is_document(file_name: &str) -> bool {
    matches!(
        format_of(file_name),
        Format::Pdf | Format::Docx | Format::Xlsx | Format::Xls | Format::Pptx
    )
}

/// Whether a file of this name is a PDF, whose pages a model can be shown as images.
pub fn is_pdf(file_name: &str) -> bool {
    format_of(file_name) == Format::Pdf
}

/// Whether a file of this name is a presentation (PPTX), whose slides the preview panel can show
/// as images.
pub fn is_slides(file_name: &str) -> bool {
    format_of(file_name) == Format::Pptx
}

/// Whether a file of this name is a raster image a model can be shown (PNG, JPEG, GIF, WebP).
pub fn is_raster_image(file_name: &str) -> bool {
    format_of(file_name) == Format::Image
}

/// The preview kind for a file name (docs/reference/publish.md): `image` for PNG, JPEG, GIF,
/// WebP and SVG; `pdf`; `html` for text, Markdown, CSV, JSON, code, DOCX,
/// XLSX/XLS and PPTX; `none` for everything else.
///
/// An `.html` file is `html` in the sense that ferry renders it, but as
/// escaped source text, never as a page.
pub fn preview_kind(file_name: &str) -> PreviewKind {
    match format_of(file_name) {
        Format::Image | Format::Svg => PreviewKind::Image,
        Format::Pdf => PreviewKind::Pdf,
        Format::Docx
        | Format::Xlsx
        | Format::Xls
        | Format::Pptx
        | Format::Csv
        | Format::Tsv
        | Format::Markdown
        | Format::Json
        | Format::Text => PreviewKind::Html,
        Format::Other => PreviewKind::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_follow_the_reference() {
        for (name, kind) in [
            ("shot.PNG", PreviewKind::Image),
            ("a.jpeg", PreviewKind::Image),
            ("logo.svg", PreviewKind::Image),
            ("paper.pdf", PreviewKind::Pdf),
            ("report.docx", PreviewKind::Html),
            ("data.xlsx", PreviewKind::Html),
            ("old.xls", PreviewKind::Html),
            ("deck.pptx", PreviewKind::Html),
            ("t.csv", PreviewKind::Html),
            ("notes.md", PreviewKind::Html),
            ("conf.yaml", PreviewKind::Html),
            ("page.html", PreviewKind::Html),
            ("main.rs", PreviewKind::Html),
            ("Makefile", PreviewKind::Html),
            (".gitignore", PreviewKind::Html),
            ("archive.zip", PreviewKind::None),
            ("binary", PreviewKind::None),
            (".profile", PreviewKind::None),
            ("movie.mp4", PreviewKind::None),
        ] {
            assert_eq!(preview_kind(name), kind, "{name}");
        }
    }

    #[test]
    fn extension_uses_the_last_component() {
        assert_eq!(extension("dir.v2/file"), None);
        assert_eq!(extension("a/b.tar.GZ").as_deref(), Some("gz"));
        assert_eq!(format_of("x/report.final.DOCX"), Format::Docx);
    }

    #[test]
    fn wire_names() {
        assert_eq!(
            serde_json::to_string(&PreviewKind::Html).unwrap(),
            "\"html\""
        );
        assert_eq!(PreviewKind::None.as_str(), "none");
    }
}
