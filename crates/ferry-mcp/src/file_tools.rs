//! The agent's file tools (docs/agent-files.md): `ls`, `read_file`, `write_file`, `edit_file`,
//! `glob`, `grep`, `move_file` and `delete_file`, the names agents already know for these
//! operations, and `file_url`, which hands the agent's own code a URL for one file.
//!
//! Each is one `POST` to the server's route of the same name, with the tool's arguments as
//! the JSON body. Their input schemas are derived from the very structs the server reads those
//! bodies into (`ferry_core::agent_files`), so what a model is told it may send and what the
//! server takes are one definition.

use ferry_core::agent_files::{
    DeleteFileInput, EditFileInput, FileUrlInput, GlobInput, GrepInput, LsInput, MoveFileInput,
    ReadFileInput, WriteFileInput,
};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;
use utoipa::PartialSchema;

pub const LS: &str = "ls";
pub const READ_FILE: &str = "read_file";
pub const WRITE_FILE: &str = "write_file";
pub const EDIT_FILE: &str = "edit_file";
pub const GLOB: &str = "glob";
pub const GREP: &str = "grep";
pub const MOVE_FILE: &str = "move_file";
pub const DELETE_FILE: &str = "delete_file";
pub const FILE_URL: &str = "file_url";

/// Whether `name` is one of these tools.
pub fn is_file_tool(name: &str) -> bool {
    [
        LS,
        READ_FILE,
        WRITE_FILE,
        EDIT_FILE,
        GLOB,
        GREP,
        MOVE_FILE,
        DELETE_FILE,
        FILE_URL,
    ]
    .contains(&name)
}

/// The schema of `T` as a JSON object, from its derive.
pub(crate) fn schema_of<T: PartialSchema>() -> JsonObject {
    match serde_json::to_value(T::schema()) {
        // The tool's own description says what it does; the struct's would repeat it.
        Ok(Value::Object(mut schema)) => {
            schema.remove("description");
            // A tool without arguments still lists none: some clients read `properties` always.
            let properties = schema
                .entry("properties")
                .or_insert_with(|| Value::Object(JsonObject::new()));
            for property in properties
                .as_object_mut()
                .into_iter()
                .flat_map(|p| p.values_mut())
            {
                leave_out_null(property);
            }
            schema
        }
        // A derived schema is always an object; an empty one would take anything.
        _ => JsonObject::new(),
    }
}

/// An optional argument is one to leave out: its schema does not also offer `null` (which the
/// derive writes for an `Option`, as `type: [T, "null"]` or a `oneOf` with a null variant), a
/// form some clients' function-calling formats refuse. The server still takes `null` as absent.
fn leave_out_null(property: &mut Value) {
    let Some(property) = property.as_object_mut() else {
        return;
    };
    let is_null = |v: &Value| v == "null" || v.get("type").is_some_and(|t| t == "null");
    if let Some(Value::Array(types)) = property.get("type")
        && let [only] = types
            .iter()
            .filter(|t| !is_null(t))
            .collect::<Vec<_>>()
            .as_slice()
    {
        property.insert("type".to_owned(), (*only).clone());
    }
    if let Some(Value::Array(variants)) = property.get("oneOf")
        && let [Value::Object(only)] = variants
            .iter()
            .filter(|v| !is_null(v))
            .cloned()
            .collect::<Vec<_>>()
            .as_slice()
    {
        property.remove("oneOf");
        for (key, value) in only {
            // The field's own description wins over its type's.
            property.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
}

/// (read only, destructive, idempotent)
type Hints = (bool, bool, bool);

fn tool<T: PartialSchema>(
    name: &'static str,
    title: &str,
    description: &str,
    hints: Hints,
) -> Tool {
    let mut tool = Tool::new(name, description.to_owned(), schema_of::<T>());
    tool.title = Some(title.to_owned());
    let (read_only, destructive, idempotent) = hints;
    tool.annotations = Some(
        ToolAnnotations::with_title(title)
            .read_only(read_only)
            .destructive(destructive)
            .idempotent(idempotent)
            .open_world(false),
    );
    tool
}

/// The file tools, in the order they are listed.
pub fn all() -> Vec<Tool> {
    vec![
        tool::<LsInput>(
            LS,
            "List a folder",
            "List one folder of your files, one level, sorted. /sandbox is your thread's \
             sandbox (user_uploads/ holds what the user sent, outputs/ is for deliverables, \
             workspace/ for scratch; a relative path is taken under /sandbox/workspace/); \
             /spaces lists the user's spaces, /spaces/{space}/... a space's folders. Entries \
             carry path, type (file or dir), size, modifiedAt and etag.",
            (true, false, true),
        ),
        tool::<ReadFileInput>(
            READ_FILE,
            "Read a file",
            "Read a file. Text comes as numbered lines (as cat -n prints them), limit lines \
             (default 2000) from offset, with totalLines and, when more remain, nextOffset to \
             read on; a negative offset reads from the end (-20: the last 20 lines). An image comes as the image itself; a PDF, DOCX, XLSX or PPTX as its \
             extracted text, paged the same way; any other binary file as its type and size. \
             The etag it answers is what edit_file and write_file take as ifMatch.",
            (true, false, true),
        ),
        tool::<WriteFileInput>(
            WRITE_FILE,
            "Write a file",
            "Create a file, or replace it whole, making the folders on the way. content is \
             text, or base64 with encoding \"base64\". Pass ifNoneMatch \"*\" to create only \
             (ALREADY_EXISTS if something is there), or ifMatch with the etag you read to \
             replace only that version (PRECONDITION_FAILED if it changed). Write \
             deliverables under /sandbox/outputs/; /sandbox/skills/ is read-only. To change a \
             few lines of a file, use edit_file.",
            (false, true, true),
        ),
        tool::<EditFileInput>(
            EDIT_FILE,
            "Edit a file",
            "Replace old_string with new_string in a text file. old_string must match the \
             file exactly, whitespace and line breaks included, and occur exactly once (add \
             surrounding lines to make it unique) unless replace_all is true; otherwise \
             nothing changes and the error says whether it was found 0 or several times. The \
             edit applies to the version it read: if the file changed in between it fails \
             with PRECONDITION_FAILED (read it again and redo the edit). Answers the number \
             of replacements and the new etag.",
            (false, false, false),
        ),
        tool::<GlobInput>(
            GLOB,
            "Find files by name",
            "Find the files below path (default /sandbox) whose path relative to it matches \
             pattern: * and ? within a folder name, ** across folders, {a,b} alternatives, \
             e.g. **/*.md or outputs/*.{csv,xlsx}. Answers the matching paths, sorted, at most \
             1000 (truncated: true beyond).",
            (true, false, true),
        ),
        tool::<GrepInput>(
            GREP,
            "Search file contents",
            "Find the lines that contain pattern in the files below path (default /sandbox), \
             optionally only files matching glob. pattern is literal text unless regex is \
             true (a regular expression without backreferences or lookaround). Answers path, \
             line number and text of each match, at most maxResults (default 200; truncated: \
             true when more remain); binary files and files over 16 MiB are skipped and \
             counted.",
            (true, false, true),
        ),
        tool::<MoveFileInput>(
            MOVE_FILE,
            "Move or rename",
            "Move or rename a file or folder within your sandbox or within one space (not \
             between them). A taken destination is refused with ALREADY_EXISTS unless \
             overwrite is true, which replaces a file (never a folder). A moved file keeps its \
             bytes and etag.",
            (false, true, false),
        ),
        tool::<DeleteFileInput>(
            DELETE_FILE,
            "Delete a file or folder",
            "Delete a file, or a folder and everything in it (recursive: true is required for \
             a folder). Pass ifMatch with the etag you read to delete only that version. \
             Answers how many files were deleted. Ask the user before deleting their files.",
            (false, true, true),
        ),
        tool::<FileUrlInput>(
            FILE_URL,
            "Get a URL for a file",
            "Get a short-lived URL that reads (GET) or writes (PUT) one file, for your own \
             code to use without any ferry credential, so the bytes never pass through this \
             conversation: e.g. in your code sandbox, curl -T chart.png \"$URL\" uploads a \
             chart you made to /sandbox/outputs/chart.png, and curl -o data.csv \"$URL\" \
             downloads a file. The URL works for that path and method only, for expiresIn \
             seconds (default 900, at most 3600); every rule of a write still holds.",
            (false, false, false),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_come_from_the_server_inputs_and_are_strict() {
        for tool in all() {
            assert!(is_file_tool(&tool.name), "{}", tool.name);
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            assert_eq!(
                tool.input_schema["additionalProperties"], false,
                "{}",
                tool.name
            );
        }
        let read = all().into_iter().find(|t| t.name == READ_FILE).unwrap();
        assert_eq!(read.input_schema["required"], serde_json::json!(["path"]));
        assert_eq!(read.input_schema["properties"]["limit"]["default"], 2000);
        let edit = all().into_iter().find(|t| t.name == EDIT_FILE).unwrap();
        let properties = edit.input_schema["properties"].as_object().unwrap();
        for name in ["old_string", "new_string", "replace_all", "ifMatch"] {
            assert!(properties.contains_key(name), "{name}");
        }
        let write = all().into_iter().find(|t| t.name == WRITE_FILE).unwrap();
        assert_eq!(
            write.input_schema["properties"]["encoding"]["enum"],
            serde_json::json!(["utf-8", "base64"])
        );
    }
}
