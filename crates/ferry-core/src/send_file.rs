//! The rules of `send_file` (docs/reference/send-file.md): which files may be sent inline to the user,
//! with which MIME type, how their bytes are encoded, and what every answer says.
//!
//! `send_file` puts a small text file straight into a `file_send` event, so it accepts only the
//! the 38 text extensions of docs/reference/send-file.md and at most 20 KiB (an event must stay within 32 KiB even after
//! base64). Anything else goes through `publish_file_to_user`, and the messages say so.

/// The largest file `send_file` delivers, in bytes (20 KiB).
pub const MAX_SEND_FILE_BYTES: u64 = 20_480;

/// Every extension `send_file` accepts with its MIME type, in the documented order.
///
/// One table keeps the list and the map from drifting apart: an extension cannot be accepted
/// without a MIME type, nor mapped without being accepted.
const TEXT_TYPES: [(&str, &str); 38] = [
    (".txt", "text/plain"),
    (".md", "text/markdown"),
    (".json", "application/json"),
    (".xml", "application/xml"),
    (".html", "text/html"),
    (".htm", "text/html"),
    (".css", "text/css"),
    (".js", "text/javascript"),
    (".ts", "text/x-typescript"),
    (".jsx", "text/javascript"),
    (".tsx", "text/x-typescript"),
    (".csv", "text/csv"),
    (".tsv", "text/tab-separated-values"),
    (".yaml", "text/yaml"),
    (".yml", "text/yaml"),
    (".toml", "text/x-toml"),
    (".ini", "text/plain"),
    (".cfg", "text/plain"),
    (".conf", "text/plain"),
    (".log", "text/plain"),
    (".sh", "text/x-shellscript"),
    (".bash", "text/x-shellscript"),
    (".zsh", "text/x-shellscript"),
    (".py", "text/x-python"),
    (".rb", "text/x-ruby"),
    (".go", "text/x-go"),
    (".rs", "text/x-rust"),
    (".java", "text/x-java"),
    (".c", "text/x-c"),
    (".cpp", "text/x-c++"),
    (".h", "text/x-c"),
    (".hpp", "text/x-c++"),
    (".sql", "text/x-sql"),
    (".graphql", "text/x-graphql"),
    (".env", "text/plain"),
    (".gitignore", "text/plain"),
    (".dockerfile", "text/x-dockerfile"),
    (".svg", "image/svg+xml"),
];

/// The 38 extensions `send_file` accepts, lower-case with their leading dot, in the documented order.
pub const TEXT_EXTENSIONS: [&str; 38] = {
    let mut extensions = [""; 38];
    let mut i = 0;
    while i < TEXT_TYPES.len() {
        extensions[i] = TEXT_TYPES[i].0;
        i += 1;
    }
    extensions
};

/// The MIME type of anything the table does not name.
const FALLBACK_MIME: &str = "text/plain";

/// The closing sentence of every refusal that another tool could have handled.
const PUBLISH_HINT: &str =
    "To deliver other files, use publish_file_to_user, which accepts any file type.";

/// The extension of a file name, the way Node's `path.extname` sees it (agents built on Node expect it): the text from
/// the last `.` on, lower-cased, when that dot is not the name's first character.
///
/// `notes.MD` → `.md`, `archive.tar.gz` → `.gz`, `x.gitignore` → `.gitignore`, while
/// `.gitignore` and `Dockerfile` have none. A path is accepted too; only its last segment counts.
pub fn extension_of(file_name: &str) -> Option<String> {
    let name = base_name(file_name);
    match name.rfind('.') {
        Some(dot) if dot > 0 => Some(name[dot..].to_lowercase()),
        _ => None,
    }
}

/// True when `ext` (with its dot, any case) is one of the 38 accepted extensions.
pub fn is_text_extension(ext: &str) -> bool {
    TEXT_TYPES
        .iter()
        .any(|(known, _)| known.eq_ignore_ascii_case(ext))
}

/// The MIME type of an extension (docs/reference/send-file.md) (with its dot, any case); `text/plain` when unknown.
pub fn mime_for_extension(ext: &str) -> &'static str {
    TEXT_TYPES
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(ext))
        .map_or(FALLBACK_MIME, |(_, mime)| mime)
}

/// The accepted extensions sorted as strings and joined by `, `, as the refusal lists them.
pub fn supported_extensions_list() -> String {
    let mut sorted = TEXT_EXTENSIONS;
    sorted.sort_unstable();
    sorted.join(", ")
}

/// Accepts a file by its name's extension and gives its MIME type.
///
/// A path is accepted too; the name in the refusal is its last segment, as docs/reference/send-file.md shows.
pub fn check_type(file_name: &str) -> Result<&'static str, SendFileError> {
    match extension_of(file_name) {
        Some(ext) if is_text_extension(&ext) => Ok(mime_for_extension(&ext)),
        _ => Err(SendFileError::UnsupportedType {
            name: base_name(file_name).to_owned(),
        }),
    }
}

/// Accepts a file of at most [`MAX_SEND_FILE_BYTES`].
pub fn check_size(size: u64) -> Result<(), SendFileError> {
    if size > MAX_SEND_FILE_BYTES {
        return Err(SendFileError::TooLarge { size });
    }
    Ok(())
}

/// Both checks in the documented order (type first, then size); gives the MIME type.
///
/// The file must be found before either check (docs/reference/send-file.md); that needs I/O
/// and is the caller's part.
pub fn check_file(file_name: &str, size: u64) -> Result<&'static str, SendFileError> {
    let mime = check_type(file_name)?;
    check_size(size)?;
    Ok(mime)
}

/// A byte count in kibibytes with one decimal, exactly as JavaScript's
/// `(size / 1024).toFixed(1)` writes it: `21000` → `20.5`, `256` → `0.3`.
///
/// `size / 1024` is exact in binary floating point, so `toFixed` rounds the true quotient, and
/// an exact half rounds up. Integer arithmetic reproduces that without any floating point.
pub fn format_kb(size: u64) -> String {
    let tenths = (u128::from(size) * 10 + 512) / 1024;
    format!("{}.{}", tenths / 10, tenths % 10)
}

/// The tool's answer after a successful send:
/// `Sent "notes.md" to the user (0.1KB, text/markdown).`
pub fn sent_message(file_name: &str, size: u64, mime: &str) -> String {
    format!(
        "Sent \"{file_name}\" to the user ({}KB, {mime}).",
        format_kb(size)
    )
}

/// How a file's content travels in a `file_send` event (`encoding`): the same two encodings
/// the agent file tools read and write.
pub use crate::agent_files::Encoding;

/// The content of a `file_send` event: the text when the bytes are valid UTF-8, otherwise
/// standard base64 with padding.
pub fn encode_content(bytes: &[u8]) -> (String, Encoding) {
    match std::str::from_utf8(bytes) {
        Ok(text) => (text.to_owned(), Encoding::Utf8),
        Err(_) => (base64_encode(bytes), Encoding::Base64),
    }
}

/// Standard base64 (RFC 4648 §4): the `A–Z a–z 0–9 + /` alphabet, padded with `=`.
pub fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        // Pack up to three bytes into the top 24 bits of a group; missing bytes are zero.
        let group = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &b)| acc | u32::from(b) << (16 - 8 * i));
        // n input bytes produce n + 1 significant characters; the rest of the four are padding.
        for i in 0..4 {
            if i <= chunk.len() {
                let index = (group >> (18 - 6 * i)) & 0x3f;
                out.push(char::from(ALPHABET[index as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Why `send_file` refused. The `Display` text is the exact message the agent reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendFileError {
    /// The path names no file in the sandbox.
    #[error("File not found: {path}")]
    NotFound {
        /// The path as the agent gave it.
        path: String,
    },
    /// The file's extension is not one of the 38 text extensions.
    #[error(
        "\"{name}\" is not a supported text file type.\n\nSupported extensions: {}\n\n{PUBLISH_HINT}",
        supported_extensions_list()
    )]
    UnsupportedType {
        /// The file's name (last path segment).
        name: String,
    },
    /// The file is larger than [`MAX_SEND_FILE_BYTES`].
    #[error(
        "File exceeds the {}KB size limit ({}KB). Consider sending a smaller file or a relevant excerpt.\n\n{PUBLISH_HINT}",
        MAX_SEND_FILE_BYTES / 1024,
        format_kb(*.size)
    )]
    TooLarge {
        /// The file's size in bytes.
        size: u64,
    },
}

/// The last `/`-separated segment of a path, ignoring trailing slashes as Node's `basename` does.
fn base_name(path: &str) -> &str {
    let path = path.trim_end_matches('/');
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SORTED_LIST: &str = ".bash, .c, .cfg, .conf, .cpp, .css, .csv, .dockerfile, .env, \
        .gitignore, .go, .graphql, .h, .hpp, .htm, .html, .ini, .java, .js, .json, .jsx, .log, \
        .md, .py, .rb, .rs, .sh, .sql, .svg, .toml, .ts, .tsv, .tsx, .txt, .xml, .yaml, .yml, .zsh";

    const HINT: &str =
        "\n\nTo deliver other files, use publish_file_to_user, which accepts any file type.";

    #[test]
    fn there_are_38_distinct_lower_case_extensions() {
        assert_eq!(TEXT_EXTENSIONS.len(), 38);
        let mut unique = TEXT_EXTENSIONS.to_vec();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), 38);
        for ext in TEXT_EXTENSIONS {
            assert!(ext.starts_with('.') && ext.len() > 1, "{ext}");
            assert_eq!(ext, ext.to_ascii_lowercase());
        }
        assert_eq!(TEXT_EXTENSIONS[0], ".txt");
        assert_eq!(TEXT_EXTENSIONS[37], ".svg");
    }

    #[test]
    fn extension_set_contains_common_text_types() {
        for ext in [".txt", ".json", ".html", ".csv", ".ts", ".py"] {
            assert!(TEXT_EXTENSIONS.contains(&ext), "{ext}");
            assert!(is_text_extension(ext), "{ext}");
        }
        assert!(is_text_extension(".JSON"));
    }

    #[test]
    fn extension_set_excludes_binary_types() {
        for ext in [".png", ".jpg", ".exe", ".zip", ".pdf", ".docx", ""] {
            assert!(!TEXT_EXTENSIONS.contains(&ext), "{ext}");
            assert!(!is_text_extension(ext), "{ext}");
        }
    }

    #[test]
    fn mime_types_of_known_extensions() {
        assert_eq!(mime_for_extension(".json"), "application/json");
        assert_eq!(mime_for_extension(".html"), "text/html");
        assert_eq!(mime_for_extension(".txt"), "text/plain");
        assert_eq!(mime_for_extension(".csv"), "text/csv");
        assert_eq!(mime_for_extension(".ts"), "text/x-typescript");
        assert_eq!(mime_for_extension(".xml"), "application/xml");
        assert_eq!(mime_for_extension(".svg"), "image/svg+xml");
        assert_eq!(mime_for_extension(".md"), "text/markdown");
        assert_eq!(mime_for_extension(".dockerfile"), "text/x-dockerfile");
        assert_eq!(mime_for_extension(".cpp"), "text/x-c++");
        assert_eq!(mime_for_extension(".TSV"), "text/tab-separated-values");
    }

    #[test]
    fn unknown_extensions_are_text_plain() {
        assert_eq!(mime_for_extension(".unknown"), "text/plain");
        assert_eq!(mime_for_extension(""), "text/plain");
        assert_eq!(mime_for_extension("json"), "text/plain");
    }

    #[test]
    fn extension_follows_node_extname() {
        assert_eq!(extension_of("notes.md").as_deref(), Some(".md"));
        assert_eq!(extension_of("notes.MD").as_deref(), Some(".md"));
        assert_eq!(extension_of("archive.tar.gz").as_deref(), Some(".gz"));
        assert_eq!(extension_of("x.gitignore").as_deref(), Some(".gitignore"));
        assert_eq!(extension_of(".gitignore"), None);
        assert_eq!(extension_of(".env"), None);
        assert_eq!(extension_of("Dockerfile"), None);
        assert_eq!(extension_of(""), None);
        assert_eq!(extension_of("file.").as_deref(), Some("."));
        assert_eq!(extension_of("..md").as_deref(), Some(".md"));
        assert_eq!(
            extension_of("/sandbox/outputs/data.JSON").as_deref(),
            Some(".json")
        );
        // Only the last segment counts: a dotted folder gives no extension to its files.
        assert_eq!(extension_of("/sandbox/v1.2/README"), None);
        assert_eq!(extension_of("/sandbox/outputs/.env"), None);
    }

    #[test]
    fn check_type_accepts_text_files_and_gives_their_mime() {
        assert_eq!(check_type("test.txt"), Ok("text/plain"));
        assert_eq!(check_type("data.json"), Ok("application/json"));
        assert_eq!(check_type("/sandbox/outputs/notes.md"), Ok("text/markdown"));
        assert_eq!(check_type("x.gitignore"), Ok("text/plain"));
        assert_eq!(check_type("APP.TS"), Ok("text/x-typescript"));
    }

    #[test]
    fn check_type_rejects_binary_and_extensionless_files() {
        for name in [
            "test.png",
            "noext",
            ".gitignore",
            "Dockerfile",
            "a.tar.gz",
            "file.",
        ] {
            let err = check_type(name).unwrap_err();
            assert!(matches!(err, SendFileError::UnsupportedType { .. }));
            assert!(
                err.to_string().contains("not a supported text file"),
                "{name}"
            );
        }
    }

    #[test]
    fn sorted_list_matches_the_seed() {
        assert_eq!(supported_extensions_list(), SORTED_LIST);
    }

    #[test]
    fn unsupported_type_message_exactly() {
        let err = check_type("/sandbox/outputs/test.png").unwrap_err();
        assert_eq!(
            err,
            SendFileError::UnsupportedType {
                name: "test.png".to_owned()
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "\"test.png\" is not a supported text file type.\n\nSupported extensions: {SORTED_LIST}{HINT}"
            )
        );
    }

    #[test]
    fn size_limit_is_inclusive() {
        assert_eq!(check_size(0), Ok(()));
        assert_eq!(check_size(MAX_SEND_FILE_BYTES), Ok(()));
        assert_eq!(
            check_size(MAX_SEND_FILE_BYTES + 1),
            Err(SendFileError::TooLarge { size: 20_481 })
        );
    }

    #[test]
    fn too_large_message_exactly() {
        let err = check_size(21_000).unwrap_err();
        assert!(matches!(err, SendFileError::TooLarge { .. }));
        assert_eq!(
            err.to_string(),
            format!(
                "File exceeds the 20KB size limit (20.5KB). \
                 Consider sending a smaller file or a relevant excerpt.{HINT}"
            )
        );
        assert!(err.to_string().contains("exceeds"));
        // The one byte past the limit still reads as 20.0KB, exactly as docs/reference/send-file.md writes it.
        assert!(
            check_size(20_481)
                .unwrap_err()
                .to_string()
                .contains("(20.0KB)")
        );
    }

    #[test]
    fn not_found_message_exactly() {
        let err = SendFileError::NotFound {
            path: "/tmp/nonexistent-file.txt".to_owned(),
        };
        assert_eq!(err.to_string(), "File not found: /tmp/nonexistent-file.txt");
        assert!(matches!(err, SendFileError::NotFound { .. }));
        assert!(err.to_string().contains("not found"));
    }

    #[test]
    fn check_file_checks_type_before_size() {
        assert_eq!(check_file("a.csv", 100), Ok("text/csv"));
        assert!(matches!(
            check_file("big.png", 1_000_000),
            Err(SendFileError::UnsupportedType { .. })
        ));
        assert!(matches!(
            check_file("big.txt", 21_000),
            Err(SendFileError::TooLarge { .. })
        ));
    }

    #[test]
    fn format_kb_matches_javascript_to_fixed() {
        // Each expected value was produced by Node's `(size / 1024).toFixed(1)`.
        for (size, expected) in [
            (0, "0.0"),
            (13, "0.0"),
            (51, "0.0"),
            (52, "0.1"),
            (100, "0.1"),
            (256, "0.3"),
            (768, "0.8"),
            (1024, "1.0"),
            (1280, "1.3"),
            (20_480, "20.0"),
            (20_531, "20.0"),
            (20_532, "20.1"),
            (21_000, "20.5"),
            (1_048_628, "1024.1"),
        ] {
            assert_eq!(format_kb(size), expected, "size {size}");
        }
        // The largest size does not overflow.
        assert_eq!(format_kb(u64::MAX), "18014398509481984.0");
    }

    #[test]
    fn format_kb_rounds_exact_halves_up() {
        // Sizes ≡ 256 (mod 512) are the only ones whose tenths land exactly on a half.
        for size in (256..200_000).step_by(512) {
            let exact_tenths = size * 10 / 1024;
            let shown = format_kb(size);
            let (whole, tenth) = shown.split_once('.').unwrap();
            let shown_tenths: u64 = format!("{whole}{tenth}").parse().unwrap();
            assert_eq!(shown_tenths, exact_tenths + 1, "size {size}");
        }
    }

    #[test]
    fn sent_message_exactly() {
        assert_eq!(
            sent_message("notes.md", 100, "text/markdown"),
            "Sent \"notes.md\" to the user (0.1KB, text/markdown)."
        );
        assert_eq!(
            sent_message("test.txt", 13, "text/plain"),
            "Sent \"test.txt\" to the user (0.0KB, text/plain)."
        );
    }

    #[test]
    fn utf8_content_is_sent_as_text() {
        assert_eq!(
            encode_content(b"Hello, world!"),
            ("Hello, world!".to_owned(), Encoding::Utf8)
        );
        assert_eq!(encode_content(b""), (String::new(), Encoding::Utf8));
        let text = "naïve 文件 ✓\u{FFFD}";
        assert_eq!(
            encode_content(text.as_bytes()),
            (text.to_owned(), Encoding::Utf8)
        );
    }

    #[test]
    fn other_content_is_sent_as_base64() {
        assert_eq!(
            encode_content(&[0xff, 0xfe, 0x00]),
            ("//4A".to_owned(), Encoding::Base64)
        );
        // A UTF-8 sequence cut short is not valid UTF-8 either.
        assert_eq!(encode_content(&[b'a', 0xe6, 0x96]).1, Encoding::Base64);
    }

    #[test]
    fn encoding_serializes_as_the_seed_names_it() {
        assert_eq!(serde_json::to_string(&Encoding::Utf8).unwrap(), "\"utf-8\"");
        assert_eq!(
            serde_json::to_string(&Encoding::Base64).unwrap(),
            "\"base64\""
        );
        for encoding in [Encoding::Utf8, Encoding::Base64] {
            let json = format!("\"{}\"", encoding.as_str());
            assert_eq!(serde_json::from_str::<Encoding>(&json).unwrap(), encoding);
        }
    }

    #[test]
    fn base64_rfc4648_test_vectors() {
        for (input, expected) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_encode(input.as_bytes()), expected, "{input:?}");
        }
    }

    #[test]
    fn base64_uses_the_whole_standard_alphabet() {
        // 0x00, 0x10, 0x83, … walks every 6-bit value 0..64 exactly once, in order.
        let bytes: Vec<u8> = (0u32..16)
            .flat_map(|i| {
                let group = (4 * i) << 18 | (4 * i + 1) << 12 | (4 * i + 2) << 6 | (4 * i + 3);
                [(group >> 16) as u8, (group >> 8) as u8, group as u8]
            })
            .collect();
        assert_eq!(
            base64_encode(&bytes),
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        );
        assert_eq!(base64_encode(&[0xfb, 0xff]), "+/8=");
    }
}
