//! The tools an agent sees (docs/mcp.md): names, input schemas, descriptions, annotations, and
//! the instructions the server hands every client.
//!
//! Each tool's input schema is derived from the struct its arguments are read into (below):
//! what a model is told it may send and what the tool takes are one definition, and the field
//! descriptions are those structs' doc comments.

use rmcp::model::{Tool, ToolAnnotations};
use serde::Deserialize;
use utoipa::{PartialSchema, ToSchema};

/// What the server tells every client when it connects: the delivery rule (docs/agents.md) and the
/// guidance for spaces (docs/mcp.md).
pub const INSTRUCTIONS: &str = "\
ferry is a file exchange between you and the person you work for. They upload files into your \
thread's sandbox; you deliver files back to them.

Delivering files
- Files are never attached automatically: a file reaches the user only when you deliver it.
- send_file shows a small text file (source code, Markdown, JSON, CSV, configuration; at most \
20 KB) inline in the chat.
- publish_file_to_user delivers any file (DOCX, PDF, spreadsheets, images, large text) as a card \
with a preview and a download button. Publishing again with the same display_name makes a new \
revision of the same file.
- Write deliverables under /sandbox/outputs/ first (write_file); the user's uploads are in \
/sandbox/user_uploads/ (list_uploads shows them with a preview of their text, read_file reads \
them).
- In say mode, call say: each <say>...</say> block becomes one chat message, and \
<file>/sandbox/outputs/report.pdf</file> tags attach files to the last message \
(mode=\"doc\", \"photo\" or \"video\" forces how a file is sent).

Your files: ls, read_file, write_file, edit_file, glob, grep, move_file and delete_file work \
on /sandbox/... (your thread's sandbox; a relative path is under /sandbox/workspace/) and on \
/spaces/{space}/... (the user's spaces).
- read_file numbers lines and reads 2000 at a time; pass offset to read on. It answers an \
etag: pass it as ifMatch to edit_file, write_file or delete_file to change only what you read.
- Prefer edit_file for changing part of a file: old_string must match exactly and occur once.
- grep with documents: true searches inside PDF, Word, Excel and PowerPoint files, naming the \
page, sheet and row, or slide of each match; read_file with pages shows a PDF's pages or a \
deck's slides as images.
- /sandbox/skills/ is read-only.

Running code: when the execute tool is listed, it runs a shell command in your sandbox \
(python3, and the document libraries the server has, such as pandas, openpyxl, python-docx and \
pypdf). Read uploads from /sandbox/user_uploads/ (read-only), write results under \
/sandbox/outputs/, then deliver them. Commands have no network.

Spaces: the user's own storage (list_space_files, read_space_file, write_space_file, \
delete_space_file, or the file tools on /spaces/{space}/...)
- Ask the user to confirm before overwriting or deleting an existing file.
- Save under ideas/ unless the user names another folder.
- Name notes YYYYMMDD-HHmm-<short-title>.md, with a short kebab-case title; when the user has \
not named the file, propose such a name and confirm it.
- Prefer the content type text/markdown; charset=utf-8 for notes. For other files use their own \
content type; content is plain text for text types (text/*, JSON, XML, JavaScript, SVG) and \
base64 for any other type.
- When a path is ambiguous, call list_space_files first, then confirm the path with the user.
- If the server answers INVALID_PATH, explain briefly why the path was refused and ask the user \
for a safe path.
- When the user asks to create a file only if it is new, pass ifNoneMatch: \"*\"; the answer \
ALREADY_EXISTS then means the file is already there.

Errors come back as the server's envelope, unchanged: {\"error\": {\"code\": \"...\", \"message\": \
\"...\"}}. Read the code and the message, and tell the user plainly what went wrong.";

/// The tool names, in the order they are listed.
pub const SEND_FILE: &str = "send_file";
pub const PUBLISH_FILE_TO_USER: &str = "publish_file_to_user";
pub const LIST_SPACE_FILES: &str = "list_space_files";
pub const READ_SPACE_FILE: &str = "read_space_file";
pub const WRITE_SPACE_FILE: &str = "write_space_file";
pub const DELETE_SPACE_FILE: &str = "delete_space_file";
pub const SAY: &str = "say";
pub const LIST_UPLOADS: &str = "list_uploads";
pub const READ_UPLOAD: &str = "read_upload";

/// A tool whose input schema is derived from `Args`, the struct its arguments are read into.
fn tool<Args: PartialSchema>(name: &'static str, title: &str, description: &str) -> Tool {
    let mut tool = Tool::new(
        name,
        description.to_owned(),
        crate::file_tools::schema_of::<Args>(),
    );
    tool.title = Some(title.to_owned());
    tool
}

fn hints(title: &str, read_only: bool, destructive: bool, idempotent: bool) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(read_only)
        .destructive(destructive)
        .idempotent(idempotent)
        // Every tool acts on this ferry server only.
        .open_world(false)
}

/// Every tool, in a stable order.
pub fn all() -> Vec<Tool> {
    let mut tools = vec![
        tool::<SendFileArgs>(
            SEND_FILE,
            "Send a text file",
            "Send the contents of a small text file from your sandbox to the user's chat, shown \
             inline. filePath is a sandbox path such as /sandbox/outputs/notes.md. Only text \
             files are accepted (.txt .md .json .xml .html .htm .css .js .ts .jsx .tsx .csv \
             .tsv .yaml .yml .toml .ini .cfg .conf .log .sh .bash .zsh .py .rb .go .rs .java .c \
             .cpp .h .hpp .sql .graphql .env .gitignore .dockerfile .svg), at most 20 KB. For \
             any other file, or a larger one, use publish_file_to_user.",
        ),
        tool::<PublishArgs>(
            PUBLISH_FILE_TO_USER,
            "Publish a file to the user",
            "Make a file from the sandbox available to the user for preview and download: it is \
             copied to permanent storage and shown as a card in the chat. Use this when you have \
             created a file the user should get (any type and size within the server's limit). \
             Publishing with the same display_name as an earlier file makes a new revision of \
             it; older revisions stay downloadable. The result carries the published file's \
             metadata and a link to its content.",
        ),
        tool::<ListSpaceArgs>(
            LIST_SPACE_FILES,
            "List files in a space",
            "List the files in one of the user's spaces (their own storage, kept across \
             threads). Without dir, lists the space's top level; with recursive true, every \
             file below dir (files only). Entries carry path, type (file or dir), size, \
             contentType, etag and updatedAt. A space that does not exist yet lists nothing. \
             Call this first when the path the user means is ambiguous.",
        ),
        tool::<ReadSpaceArgs>(
            READ_SPACE_FILE,
            "Read a file from a space",
            "Read one file from one of the user's spaces. Returns contentBase64 (the bytes, \
             base64-encoded), contentType and size in bytes.",
        ),
        tool::<WriteSpaceArgs>(
            WRITE_SPACE_FILE,
            "Write a file to a space",
            "Create a file in one of the user's spaces, or overwrite it. content is plain text \
             for text types (text/*, JSON, XML, JavaScript, SVG) and base64 for any other type. \
             Prefer text/markdown; charset=utf-8 for notes, saved under ideas/ as \
             YYYYMMDD-HHmm-<short-title>.md unless the user says otherwise. Overwriting replaces \
             the file: confirm with the user first. Pass ifNoneMatch \"*\" to create the file \
             only if it does not exist (the server then answers ALREADY_EXISTS instead of \
             overwriting). Returns path, size, contentType and etag.",
        ),
        tool::<DeleteSpaceArgs>(
            DELETE_SPACE_FILE,
            "Delete a file from a space",
            "Delete one file from one of the user's spaces; a folder left empty disappears \
             with it. This cannot be undone: confirm with the user first. Pass ifMatch (the \
             etag from list_space_files or write_space_file) to delete the file only if it has \
             not changed since (the server then answers PRECONDITION_FAILED instead). Returns \
             path and deleted: true.",
        ),
        tool::<SayArgs>(
            SAY,
            "Say (send chat messages)",
            "Send chat messages to the user in say mode. Each <say>...</say> block in text \
             becomes one message, in order; text outside <say> blocks is not sent. \
             <file>/sandbox/outputs/report.pdf</file> tags anywhere in text attach files to the \
             last message (mode=\"doc\", \"photo\" or \"video\" forces how a file is sent; by \
             default it follows the file's type). A path resolves against files already \
             published, then the sandbox; one that cannot be found is skipped with a warning. \
             Returns the message event ids, the attached files and any warnings.",
        ),
        tool::<NoArgs>(
            LIST_UPLOADS,
            "List the user's uploads",
            "List the files the user uploaded to this thread, oldest first: name, type, size, \
             sandboxPath (where the original bytes are, under /sandbox/user_uploads/) and a \
             preview of the text of documents.",
        ),
        tool::<ReadUploadArgs>(
            READ_UPLOAD,
            "Look at an upload",
            "Look at one file the user uploaded (its id from list_uploads): an image comes back \
             as the image itself (scaled so its long edge is at most 1,568 pixels) with its \
             hidden note; a PDF as its note and then its pages (the first 5, or those asked \
             with pages) each as an image followed by that page's text, so scans and charts \
             can be read; a presentation the same way, slide by slide, when asked with pages; \
             another document as its note, which carries the preview of its text.",
        ),
    ];
    for tool in &mut tools {
        let title = tool.title.clone().unwrap_or_default();
        tool.annotations = Some(match tool.name.as_ref() {
            LIST_SPACE_FILES | READ_SPACE_FILE | LIST_UPLOADS | READ_UPLOAD => {
                hints(&title, true, false, true)
            }
            // The one tool that removes something. Deleting twice leaves the same state (the
            // second answers NOT_FOUND), hence idempotent.
            DELETE_SPACE_FILE => hints(&title, false, true, true),
            // An overwrite is guarded by the instructions (confirm first) and by ifNoneMatch,
            // and replaces rather than removes: not destructive. The same arguments twice
            // leave the same file, hence idempotent.
            WRITE_SPACE_FILE => hints(&title, false, false, true),
            // Each call delivers again (a new message, a new revision): additive, not
            // idempotent.
            _ => hints(&title, false, false, false),
        });
        // A host that shows MCP Apps shows the file as ferry's file card.
        if tool.name == PUBLISH_FILE_TO_USER || tool.name == READ_UPLOAD {
            tool.meta = Some(crate::file_card::tool_meta());
        }
    }
    tools.extend(crate::file_tools::all());
    tools
}

/// The tool named `name`.
pub fn find(name: &str) -> Option<Tool> {
    all().into_iter().find(|t| t.name == name)
}

// The arguments, read strictly: an unknown field is refused as the schemas say
// (`additionalProperties: false`).

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendFileArgs {
    /// Path of the text file in the sandbox, e.g. /sandbox/outputs/notes.md
    #[serde(rename = "filePath")]
    pub file_path: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PublishArgs {
    /// Path of the file in the sandbox, e.g. /sandbox/outputs/report.docx
    pub file_path: String,
    /// User-friendly name shown in the UI, e.g. Quarterly Report; the same name again makes a new revision
    pub display_name: String,
    /// Brief description of what the file contains
    #[serde(default)]
    pub description: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ListSpaceArgs {
    /// The space: 1-64 of A-Z a-z 0-9 . _ -, not starting with a dot
    pub space_name: String,
    /// Folder to list, relative to the space, e.g. ideas
    #[serde(default)]
    pub dir: Option<String>,
    /// List every file below dir instead of its direct children
    #[serde(default)]
    #[schema(default = false)]
    pub recursive: bool,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReadSpaceArgs {
    /// The space the file is in
    pub space_name: String,
    /// Path of the file in the space, e.g. ideas/20261121-0930-tea-shop.md
    pub path: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WriteSpaceArgs {
    /// The space to write in; it is created by the first write
    pub space_name: String,
    /// Path of the file in the space, e.g. ideas/20261121-0930-tea-shop.md
    pub path: String,
    /// The file's content: text for text types, base64 for any other type (unless encoding says)
    pub content: String,
    /// The file's media type, e.g. text/markdown; charset=utf-8
    pub content_type: String,
    /// "utf-8" (content is the text) or "base64" (content is the bytes in base64), as write_file
    /// takes it; without it, the content type decides
    #[serde(default)]
    #[schema(inline)]
    pub encoding: Option<ferry_core::agent_files::Encoding>,
    /// "*" to create the file only if it does not exist yet
    #[serde(default)]
    #[schema(inline)]
    pub if_none_match: Option<AnyEtag>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteSpaceArgs {
    /// The space the file is in
    pub space_name: String,
    /// Path of the file in the space, e.g. ideas/20261121-0930-tea-shop.md
    pub path: String,
    /// The etag the file must still have, e.g. "3a7bd3e2…"
    #[serde(default)]
    pub if_match: Option<String>,
}

/// The one value `ifNoneMatch` may take.
#[derive(Debug, Deserialize, PartialEq, Eq, ToSchema)]
pub enum AnyEtag {
    #[serde(rename = "*")]
    Any,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SayArgs {
    /// The reply, e.g. <say>Here is the report</say><file mode="doc">/sandbox/outputs/report.pdf</file>
    pub text: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReadUploadArgs {
    /// The upload's id, as list_uploads gives it
    pub upload_id: String,
    /// PDF or PPTX only: the pages (a deck's slides) to show, e.g. "1-3,7" (a PDF's default is
    /// the first 5; at most 100)
    // Passed on as the route's `pages`, which reads it.
    #[serde(default)]
    pub pages: Option<String>,
}

/// `list_uploads` takes nothing.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// Whether `content_type` names text, so `write_space_file` takes its content as text rather
/// than base64 (`text/*`, JSON, XML, JavaScript, SVG; docs/mcp.md).
pub fn is_text_type(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let Some((kind, subtype)) = essence.split_once('/') else {
        return false;
    };
    kind == "text"
        || subtype == "json"
        || subtype.ends_with("+json")
        || subtype == "xml"
        || subtype.ends_with("+xml")
        || subtype == "javascript"
        || subtype == "ecmascript"
        || subtype == "x-javascript"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_docs_quote_the_instructions_verbatim() {
        let docs = include_str!("../../../docs/mcp.md");
        assert!(
            docs.contains(INSTRUCTIONS),
            "docs/mcp.md must carry INSTRUCTIONS word for word"
        );
    }

    /// Every step the instructions tell the model to take can be taken: each snake_case word
    /// in them is a tool `tools/list` offers, or one of the few other names they mention.
    #[test]
    fn the_instructions_name_only_tools_that_exist() {
        const NOT_TOOLS: [&str; 3] = ["user_uploads", "display_name", "old_string"];
        let names: Vec<String> = all().iter().map(|t| t.name.to_string()).collect();
        let mut named = 0;
        for word in INSTRUCTIONS.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            let lower = word.chars().all(|c| c.is_ascii_lowercase() || c == '_');
            if !lower || !word.contains('_') || NOT_TOOLS.contains(&word) {
                continue;
            }
            named += 1;
            assert!(
                names.iter().any(|n| n == word),
                "the instructions name '{word}', which is not a tool"
            );
        }
        assert!(named > 10, "the instructions name the tools: {named}");
        for short in ["ls", "glob", "grep"] {
            assert!(names.iter().any(|n| n == short));
            assert!(INSTRUCTIONS.contains(&format!("{short},")));
        }
    }

    #[test]
    fn text_types() {
        for t in [
            "text/markdown; charset=utf-8",
            "text/plain",
            "TEXT/CSV",
            "application/json",
            "application/ld+json",
            "application/xml",
            "image/svg+xml",
            "application/javascript",
            "text/javascript",
        ] {
            assert!(is_text_type(t), "{t}");
        }
        for t in [
            "application/octet-stream",
            "image/png",
            "application/pdf",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "",
            "markdown",
        ] {
            assert!(!is_text_type(t), "{t}");
        }
    }

    #[test]
    fn schemas_are_strict_objects() {
        let tools = all();
        let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
        assert_eq!(
            names,
            [
                "send_file",
                "publish_file_to_user",
                "list_space_files",
                "read_space_file",
                "write_space_file",
                "delete_space_file",
                "say",
                "list_uploads",
                "read_upload",
                "ls",
                "read_file",
                "write_file",
                "edit_file",
                "glob",
                "grep",
                "move_file",
                "delete_file",
                "file_url"
            ]
        );
        for tool in &tools {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            assert_eq!(
                tool.input_schema["additionalProperties"], false,
                "{}",
                tool.name
            );
            let annotations = tool.annotations.as_ref().unwrap();
            let destructive = [DELETE_SPACE_FILE, "write_file", "move_file", "delete_file"]
                .contains(&tool.name.as_ref());
            assert_eq!(
                annotations.destructive_hint,
                Some(destructive),
                "{}",
                tool.name
            );
            assert!(tool.description.as_ref().is_some_and(|d| d.len() > 40));
        }
        // Every argument says what it is (from its field's doc comment).
        for tool in &tools {
            let properties = tool
                .input_schema
                .get("properties")
                .and_then(|p| p.as_object());
            for (name, property) in properties.into_iter().flatten() {
                assert!(
                    property["description"]
                        .as_str()
                        .is_some_and(|d| d.len() > 10),
                    "{}.{name} has no description",
                    tool.name
                );
            }
        }
        let write = find(WRITE_SPACE_FILE).unwrap();
        assert_eq!(
            write.input_schema["required"],
            json!(["spaceName", "path", "content", "contentType"])
        );
        // Optional arguments are left out, not sent as null.
        assert_eq!(
            write.input_schema["properties"]["ifNoneMatch"],
            json!({"type": "string", "enum": ["*"], "description": "\"*\" to create the file only if it does not exist yet"})
        );
        assert_eq!(
            find(PUBLISH_FILE_TO_USER).unwrap().input_schema["properties"]["description"]["type"],
            "string"
        );
        assert_eq!(
            find(LIST_UPLOADS).unwrap().input_schema["properties"],
            json!({})
        );
        let list = find(LIST_SPACE_FILES).unwrap();
        assert_eq!(
            list.input_schema["properties"]["recursive"]["default"],
            false
        );
        assert_eq!(
            find(READ_SPACE_FILE)
                .unwrap()
                .annotations
                .unwrap()
                .read_only_hint,
            Some(true)
        );
    }

    #[test]
    fn arguments_are_strict() {
        let unknown: Result<SendFileArgs, _> =
            serde_json::from_value(json!({"filePath": "/sandbox/a.md", "extra": 1}));
        assert!(unknown.is_err());
        let wrong_enum: Result<WriteSpaceArgs, _> = serde_json::from_value(json!({
            "spaceName": "s", "path": "a.md", "content": "", "contentType": "text/plain",
            "ifNoneMatch": "\"abc\""
        }));
        assert!(wrong_enum.is_err());
        let listed: ListSpaceArgs = serde_json::from_value(json!({"spaceName": "s"})).unwrap();
        assert!(!listed.recursive);
        let _: NoArgs = serde_json::from_value(json!({})).unwrap();
    }
}
