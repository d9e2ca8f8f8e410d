//! The agent's file system over HTTP (docs/agent-files.md): one `POST` route per operation,
//! taking the same JSON object the MCP tool of that name takes and answering what it answers.
//!
//! Each operation has two routes: `/api/fs/{operation}`, where `/sandbox` is the sandbox of the
//! agent token's own thread and `/spaces/…` the spaces of the token's user, and
//! `/api/threads/{id}/fs/{operation}`, which names the thread (for the thread's owner, who may
//! read its sandbox, or service_role). Every rule is `ferry_app::files`'s.

use axum::Json;
use axum::extract::State;
use ferry_app::files::{
    self, Caller, Deleted, Downloaded, Edited, Globbed, Grepped, Listing, Moved, ReadOutput,
    SpooledUpload, SpooledWrite, Uploaded, Written,
};
use ferry_core::agent_files::{
    DeleteFileInput, DownloadFilesInput, EditFileInput, GlobInput, GrepInput, LsInput,
    MoveFileInput, ReadFileInput, UploadFilesInput, WriteFileInput,
};

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::error_code::{ErrorCode, refusal};
use crate::extract::{ApiJson, ApiPath, DoorOf};
use crate::state::AppState;
use crate::write_body::StreamedWrite;

/// Two handlers of one operation: one for the token's own thread, one naming the thread.
macro_rules! operation {
    (
        $own:ident, $in_thread:ident, $body:ident, $input:ty, $output:ty, $call:path,
        $own_path:literal, $thread_path:literal, $operation_id:literal,
        $thread_operation_id:literal, $doc:literal
    ) => {
        operation!(
            $own, $in_thread, $body<$input> as $input, $output, $call, $own_path, $thread_path,
            $operation_id, $thread_operation_id, $doc
        );
    };
    // A body extracted as another type than the one the document shows (write_file's, read as
    // it arrives).
    (
        $own:ident, $in_thread:ident, $body:ident<$extracted:ty> as $input:ty, $output:ty,
        $call:path, $own_path:literal, $thread_path:literal, $operation_id:literal,
        $thread_operation_id:literal, $doc:literal
    ) => {
        #[doc = $doc]
        #[utoipa::path(
            post, path = $own_path, tag = "agent files",
            operation_id = $operation_id,
            request_body = $input,
            responses(
                (status = 200, body = $output, description = "Done"),
                (status = 400, description = refusal(&[ErrorCode::InvalidPath, ErrorCode::InvalidRequest], "a folder given for a file, an edit that matched 0 or several times, a bad pattern")),
                (status = 403, description = refusal(&[ErrorCode::Forbidden], "a change to /sandbox/skills/, or by a caller who only reads the sandbox")),
                (status = 404, description = refusal(&[ErrorCode::NotFound], "")),
                (status = 409, description = refusal(&[ErrorCode::AlreadyExists], "")),
                (status = 412, description = refusal(&[ErrorCode::PreconditionFailed], "the file changed (ifMatch)")),
                (status = 413, description = refusal(&[ErrorCode::RequestTooLarge], "")),
                (status = 415, description = refusal(&[ErrorCode::UnsupportedMediaType], "")),
                (status = 503, description = refusal(&[ErrorCode::Unavailable], "the server's memory for answers that hold a file's bytes is taken by other requests; ask again after Retry-After")),
            ),
            security(("bearer" = []))
        )]
        pub async fn $own(
            State(state): State<AppState>,
            principal: Principal,
            DoorOf(door): DoorOf,
            $body(input): $body<$extracted>,
        ) -> ApiResult<Json<$output>> {
            let caller = Caller {
                app: &state.app,
                principal: &principal,
                thread: None,
                door,
            };
            Ok(Json($call(caller, &input).await?))
        }

        #[doc = $doc]
        #[utoipa::path(
            post, path = $thread_path, tag = "agent files",
            operation_id = $thread_operation_id,
            params(("id" = String, Path)),
            request_body = $input,
            responses(
                (status = 200, body = $output, description = "Done"),
                (status = 400, description = refusal(&[ErrorCode::InvalidPath, ErrorCode::InvalidRequest], "")),
                (status = 403, description = refusal(&[ErrorCode::Forbidden], "")),
                (status = 404, description = refusal(&[ErrorCode::NotFound], "no such thread, or nothing at the path")),
                (status = 409, description = refusal(&[ErrorCode::AlreadyExists], "")),
                (status = 412, description = refusal(&[ErrorCode::PreconditionFailed], "")),
                (status = 413, description = refusal(&[ErrorCode::RequestTooLarge], "")),
                (status = 415, description = refusal(&[ErrorCode::UnsupportedMediaType], "")),
                (status = 503, description = refusal(&[ErrorCode::Unavailable], "the server's memory for answers that hold a file's bytes is taken by other requests; ask again after Retry-After")),
            ),
            security(("bearer" = []))
        )]
        pub async fn $in_thread(
            State(state): State<AppState>,
            principal: Principal,
            DoorOf(door): DoorOf,
            ApiPath(id): ApiPath<String>,
            $body(input): $body<$extracted>,
        ) -> ApiResult<Json<$output>> {
            let caller = Caller {
                app: &state.app,
                principal: &principal,
                thread: Some(&id),
                door,
            };
            caller.named_thread_is_visible().await?;
            Ok(Json($call(caller, &input).await?))
        }
    };
}

operation!(
    ls,
    ls_in_thread,
    ApiJson,
    LsInput,
    Listing,
    files::ls,
    "/api/fs/ls",
    "/api/threads/{id}/fs/ls",
    "fs_ls",
    "fs_ls_in_thread",
    "Lists one folder: /sandbox, a folder below it, /spaces, or a space's folder."
);
operation!(
    read_file,
    read_file_in_thread,
    ApiJson,
    ReadFileInput,
    ReadOutput,
    files::read,
    "/api/fs/read_file",
    "/api/threads/{id}/fs/read_file",
    "fs_read_file",
    "fs_read_file_in_thread",
    "Reads a file: numbered lines of text or of a document's extracted text, an image made ready for a model, or a description of any other binary file."
);
operation!(
    write_file,
    write_file_in_thread,
    StreamedWrite<SpooledWrite> as WriteFileInput,
    Written,
    files::write_spooled,
    "/api/fs/write_file",
    "/api/threads/{id}/fs/write_file",
    "fs_write_file",
    "fs_write_file_in_thread",
    "Creates or replaces a file from text or base64, making the folders on the way."
);
operation!(
    upload_files,
    upload_files_in_thread,
    StreamedWrite<SpooledUpload> as UploadFilesInput,
    Uploaded,
    files::upload_files,
    "/api/fs/upload_files",
    "/api/threads/{id}/fs/upload_files",
    "fs_upload_files",
    "fs_upload_files_in_thread",
    "Writes several files in one request (each a write_file), answering each on its own: a refused file does not fail the others."
);
operation!(
    download_files,
    download_files_in_thread,
    ApiJson,
    DownloadFilesInput,
    Downloaded,
    files::download_files,
    "/api/fs/download_files",
    "/api/threads/{id}/fs/download_files",
    "fs_download_files",
    "fs_download_files_in_thread",
    "Reads several files' bytes (base64) in one request, answering each on its own: a refused file does not fail the others."
);
operation!(
    edit_file,
    edit_file_in_thread,
    ApiJson,
    EditFileInput,
    Edited,
    files::edit,
    "/api/fs/edit_file",
    "/api/threads/{id}/fs/edit_file",
    "fs_edit_file",
    "fs_edit_file_in_thread",
    "Replaces an exact string in a text file (once, or every occurrence), against the version it read."
);
operation!(
    glob,
    glob_in_thread,
    ApiJson,
    GlobInput,
    Globbed,
    files::glob,
    "/api/fs/glob",
    "/api/threads/{id}/fs/glob",
    "fs_glob",
    "fs_glob_in_thread",
    "Finds the files below a folder whose paths match a glob."
);
operation!(
    grep,
    grep_in_thread,
    ApiJson,
    GrepInput,
    Grepped,
    files::grep,
    "/api/fs/grep",
    "/api/threads/{id}/fs/grep",
    "fs_grep",
    "fs_grep_in_thread",
    "Finds the lines that hold a text (or match a linear-time regular expression) in the files below a folder."
);
operation!(
    move_file,
    move_file_in_thread,
    ApiJson,
    MoveFileInput,
    Moved,
    files::move_file,
    "/api/fs/move_file",
    "/api/threads/{id}/fs/move_file",
    "fs_move_file",
    "fs_move_file_in_thread",
    "Moves a file or folder within the sandbox or within one space."
);
operation!(
    delete_file,
    delete_file_in_thread,
    ApiJson,
    DeleteFileInput,
    Deleted,
    files::delete,
    "/api/fs/delete_file",
    "/api/threads/{id}/fs/delete_file",
    "fs_delete_file",
    "fs_delete_file_in_thread",
    "Deletes a file, or a folder and everything in it with recursive: true."
);
