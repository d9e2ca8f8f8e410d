"""`FerryBackend`: deepagents' file system on a ferry server, through its agent file operations,
and its shell: commands run in the thread's sandbox through ferry's `execute` operation.

Why one file: it is the one class deepagents calls, each protocol method with its async twin
beside it, and each method's mapping onto ferry's answers must be read next to the others to keep
them answering as deepagents' own FilesystemBackend does (tests/test_differential.py holds it to
that); the HTTP plumbing already lives in `_http.py`.

Paths are ferry's own: `/sandbox/...` is the thread's sandbox and `/spaces/{space}/...` the
user's spaces. The backend does not check them: ferry validates every path and its refusals come
back as the protocol's error results. `/` is the one path the backend answers itself, as a
folder holding `/sandbox/` and `/spaces/`.
"""

from __future__ import annotations

import asyncio
import base64
import mimetypes
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from deepagents.backends.protocol import (
    DeleteResult,
    EditResult,
    ExecuteResponse,
    FileData,
    FileDownloadResponse,
    FileInfo,
    FileUploadResponse,
    GlobResult,
    GrepMatch,
    GrepResult,
    LsResult,
    ReadResult,
    SandboxBackendProtocol,
    WriteResult,
)
from deepagents.backends.utils import (
    EMPTY_CONTENT_WARNING,
    InvalidGlobPatternError,
    _get_backend_read_file_type,
    compile_grep_include_glob,
    perform_string_replacement,
)
from wcmatch import fnmatch as wcfnmatch

from ferry_deepagents._http import Connection, FerryError, Pause, Plan, Request


R = TypeVar("R")

ROOTS = ("sandbox", "spaces")
GREP_MAX_RESULTS = 2000
"""The most matches ferry's grep answers; deepagents' tools cut long results themselves."""
UPLOAD_CONCURRENCY = 8
"""Requests the async methods keep in flight at once."""
BATCH_BYTES = 8 << 20
"""File bytes one `upload_files` request carries at most (base64 adds a third on the wire); a
larger file is sent on its own, as raw bytes."""
BATCH_FILES = 1000
"""Files one batch request names at most: ferry's own bound."""
EXECUTE_MAX_TIMEOUT = 900
"""ferry's default for the longest time limit a command may be given, in seconds. A command sent
without one runs for the server's default (120 s unless configured), which is at most this."""
EXECUTE_GRACE = 30.0
"""Seconds the answer to `execute` may take beyond the command's own time limit. Waiting less
would end the command early: ferry stops a command whose caller has gone away."""
BUSY_PAUSE_MIN = 0.1
"""The shortest wait before asking again after a 429, whatever its `Retry-After`."""
FAILED_EXIT_CODE = 1
"""The exit code of an `execute` that ran no command (a refusal), as deepagents' own shell
backend gives one."""
TIMED_OUT_EXIT_CODE = 124
"""The exit code of a command stopped at its time limit (`timeout(1)`'s, and deepagents')."""
SIGNAL_NOTE = "[the command was ended by a signal: it has no exit code]\n"
"""Added to the output of a command a signal ended, which ferry answers with no exit code."""
WORKSPACE = "/sandbox/workspace"
"""Where ferry puts a relative path."""
DEFAULT_FOLDER = "/sandbox"
"""What `glob` and `grep` search when given no folder (the protocol leaves it to the backend)."""


def _file_error(exc: FerryError) -> str:
    """A refusal as a `FileOperationError` literal where one fits, else ferry's sentence."""
    if exc.code == "NOT_FOUND":
        return "file_not_found"
    if exc.code == "FORBIDDEN":
        return "permission_denied"
    if exc.code == "INVALID_PATH":
        return "is_directory" if "folder" in exc.message else "invalid_path"
    return exc.describe()


def _batch_error(result: dict[str, Any]) -> str | None:
    """One file's refusal in a batch answer, as `_file_error` words it; `None` when it landed."""
    error = result.get("error")
    if error is None:
        return None
    return _file_error(FerryError(200, error.get("code", ""), error.get("message", "")))


def _upload_groups(files: list[tuple[str, bytes]]) -> list[list[tuple[str, bytes]]]:
    """The files in order, cut into batches of at most `BATCH_FILES` files and `BATCH_BYTES`
    bytes; a file larger than `BATCH_BYTES` is a group of its own."""
    groups: list[list[tuple[str, bytes]]] = []
    current: list[tuple[str, bytes]] = []
    size = 0
    for path, content in files:
        if len(content) > BATCH_BYTES:
            if current:
                groups.append(current)
            groups.append([(path, content)])
            current, size = [], 0
            continue
        if current and (len(current) == BATCH_FILES or size + len(content) > BATCH_BYTES):
            groups.append(current)
            current, size = [], 0
        current.append((path, content))
        size += len(content)
    if current:
        groups.append(current)
    return groups


async def _done(result: R) -> R:
    return result


def _unexpected(exc: Exception) -> FerryError:
    return FerryError(0, "CLIENT_ERROR", f"{type(exc).__name__}: {exc}")


def _info(entry: dict[str, Any]) -> FileInfo:
    """A ferry listing entry as deepagents' `FileInfo`; a folder's path ends with `/`."""
    if entry.get("type") == "dir":
        return {"path": entry["path"].rstrip("/") + "/", "is_dir": True}
    info: FileInfo = {"path": entry["path"], "is_dir": False}
    if "size" in entry:
        info["size"] = entry["size"]
    if "modifiedAt" in entry:
        info["modified_at"] = entry["modifiedAt"]
    return info


def _unnumber(content: str) -> list[str]:
    """ferry's `cat -n` lines (`%6d<TAB>line<LF>`) back to the lines themselves: deepagents'
    read_file tool numbers what a backend returns."""
    if not content:
        return []
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.partition("\t")[2] if "\t" in line else line for line in lines]


def _is_root(path: str | None) -> bool:
    return path is not None and path.strip("/") == ""


def _absolute(path: str) -> str:
    """`path` as ferry answers it: absolute (a relative path is below the workspace), with no
    trailing `/`."""
    path = path.rstrip("/")
    return path if path.startswith("/") else f"{WORKSPACE}/{path}"


def _included(glob: str, folder: str) -> Callable[[str], bool]:
    """Whether a path ferry found is one deepagents' own backends find for `glob` below `folder`:
    deepagents' matcher, on the path relative to the folder. ferry is asked for at least those
    (it also matches names starting with `.`, and reads a leading `/` otherwise), and this
    keeps the ones deepagents' backends answer. Raises `InvalidGlobPatternError` for a pattern
    deepagents refuses."""
    matches = compile_grep_include_glob(glob)
    prefix = "/" if _is_root(folder) else _absolute(folder) + "/"
    return lambda path: path.startswith(prefix) and matches(path[len(prefix) :])


def _nothing_at(exc: FerryError) -> bool:
    """Whether ferry refused a search because nothing is at its folder, which deepagents' own
    backends answer as a search that found nothing."""
    return exc.code == "NOT_FOUND" and exc.message.startswith("nothing at")


def _ran(answer: dict[str, Any]) -> ExecuteResponse:
    """ferry's answer to `execute` as deepagents' `ExecuteResponse`. ferry gives a command it
    stopped at its time limit no exit code, and says so at the end of the output: here its exit
    code is 124, as deepagents' own shell backend gives one. A command ended by a signal has no
    exit code either, and ferry no note: the output says so."""
    output = str(answer.get("output") or "")
    exit_code = answer.get("exitCode")
    if exit_code is None and answer.get("timedOut"):
        exit_code = TIMED_OUT_EXIT_CODE
    elif exit_code is None and not answer.get("stoppedBy"):
        if output and not output.endswith("\n"):
            output += "\n"
        output += SIGNAL_NOTE
    return ExecuteResponse(output=output, exit_code=exit_code, truncated=bool(answer.get("truncated")))


def _not_run(exc: FerryError) -> ExecuteResponse:
    """A refusal of `execute` as the result deepagents' shell backends give when no command ran:
    the reason in the output, after `Error: `, and a non-zero exit code."""
    if exc.code == "NOT_IMPLEMENTED" or exc.status == 501:
        text = (
            f"Error: commands cannot run on this ferry server: {exc.message} ({exc.code}). "
            "The file tools (ls, read_file, write_file, edit_file, glob, grep) still work."
        )
    elif exc.code == "TOO_MANY_REQUESTS" or exc.status == 429:
        later = f" in {exc.retry_after:g} seconds" if exc.retry_after is not None else " later"
        text = f"Error: {exc.describe()}. The command did not run; run it again{later}."
    else:
        text = f"Error: {exc.describe()}"
    return ExecuteResponse(output=text, exit_code=FAILED_EXIT_CODE, truncated=False)


class FerryBackend(SandboxBackendProtocol):
    """deepagents' `SandboxBackendProtocol` (a `BackendProtocol` with a shell) over ferry's HTTP
    API.

    Args:
        url: the ferry server's base URL, e.g. `http://127.0.0.1:8080`.
        token: a bearer token. An agent token (`ferry token --agent`, or
            `POST /api/threads/{id}/agent-token`) reads and changes its thread's sandbox and its
            owner's spaces.
        thread: the thread whose sandbox `/sandbox` is. Leave it out with an agent token (its
            thread is used); name it with a `service_role` token, or with the owner's token to
            read what the agent did (the owner may not change the sandbox).
        timeout: seconds one request may take.
        retries: how many times a read (`ls`, `read`, `glob`, `grep`, a download) is sent again
            after a network failure or a 502/503/504. Changes, and commands, are never sent twice.
        busy_timeout: seconds `execute` waits in all, following ferry's `Retry-After`, when
            ferry answers that the thread already runs a command or the server runs as many as
            it may (429). 0 answers the 429 at once.
        http_client, async_http_client: clients to send through (proxies, TLS settings, test
            transports). By default the backend makes its own.

    Every method answers the protocol's result type. A refusal from ferry (its
    `{"error": {"code", "message"}}` envelope) becomes the result's `error`, written as
    `"<message> (<CODE>)"` (for `execute`, the output, after `Error: `, with exit code 1);
    nothing is raised into the agent's loop.
    """

    def __init__(
        self,
        url: str,
        token: str,
        thread: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 2,
        busy_timeout: float = 60.0,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.busy_timeout = max(0.0, busy_timeout)
        self._conn = Connection(
            url,
            token,
            thread,
            timeout=timeout,
            retries=retries,
            http_client=http_client,
            async_http_client=async_http_client,
        )

    @property
    def url(self) -> str:
        return self._conn.url

    @property
    def thread(self) -> str | None:
        """The thread whose sandbox `/sandbox` is, when one is known."""
        return self._conn.thread

    @property
    def id(self) -> str:
        """The sandbox's id: its thread's id (the same for every backend on that thread), or,
        with no thread known, the server's URL."""
        return self._conn.thread or self._conn.url

    def close(self) -> None:
        """Close the backend's own HTTP client (a client passed in is left open)."""
        self._conn.close()

    def __enter__(self) -> FerryBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FerryBackend(url={self.url!r}, thread={self.thread!r})"

    # -- running plans, refusals as results ------------------------------------------------

    def _do(self, plan: Plan[R], fail: Callable[[FerryError], R]) -> R:
        try:
            return self._conn.run(plan)
        except FerryError as exc:
            return fail(exc)
        except Exception as exc:  # noqa: BLE001 - the agent's loop must get a result, not a traceback
            return fail(_unexpected(exc))

    async def _ado(self, plan: Plan[R], fail: Callable[[FerryError], R]) -> R:
        try:
            return await self._conn.arun(plan)
        except FerryError as exc:
            return fail(exc)
        except Exception as exc:  # noqa: BLE001
            return fail(_unexpected(exc))

    # -- execute ---------------------------------------------------------------------------

    def _execute(self, command: str, timeout: int | None) -> Plan[ExecuteResponse]:
        body: dict[str, Any] = {"command": command}
        if timeout is not None:
            body["timeout"] = timeout
        # The answer comes when the command ends: wait for its whole time limit, and then some;
        # without one, for the longest the server's default can be. (A timeout ferry refuses,
        # such as 0, is answered at once.)
        wait = (timeout or EXECUTE_MAX_TIMEOUT) + max(self._conn.timeout, EXECUTE_GRACE)
        request = Request("POST", self._conn.thread_route("execute"), json=body, read_timeout=wait)
        waited = 0.0
        while True:
            try:
                answer = yield request
            except FerryError as exc:
                if exc.status != 429:
                    raise
                # Busy: the thread runs a command already, or the server runs all it may. Nothing
                # ran, so asking again is safe, when ferry says to.
                pause = max(BUSY_PAUSE_MIN, exc.retry_after if exc.retry_after is not None else 1.0)
                if waited + pause > self.busy_timeout:
                    raise
            else:
                return _ran(answer)
            yield Pause(pause)
            waited += pause

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        """Run `command` with `sh -c` in the thread's sandbox, confined by ferry (bubblewrap),
        in `/sandbox/workspace`; the sandbox is at `/sandbox` (`workspace/` and `outputs/`
        writable). `timeout` is in seconds (ferry's default, 120, when `None`; at most the
        server's maximum). The output is stdout and stderr as written, at most 1 MiB (beyond
        it, the head and the tail, and `truncated`), then ferry's note on a limit it stopped
        the command at; a command stopped at its time limit has exit code 124. A refusal (commands turned off on the
        server, 501; the sandbox busy past `busy_timeout`, 429; ...) is the output, after
        `Error: `, with exit code 1."""
        return self._do(self._execute(command, timeout), _not_run)

    async def aexecute(
        self,
        command: str,
        *,
        timeout: int | None = None,  # noqa: ASYNC109 - the command's time limit, sent to ferry
    ) -> ExecuteResponse:
        return await self._ado(self._execute(command, timeout), _not_run)

    # -- ls ----------------------------------------------------------------------------------

    def _roots(self) -> list[str]:
        """The top folders: `/sandbox` when a thread is known, and `/spaces`."""
        return [f"/{root}" for root in ROOTS if root != "sandbox" or self.thread]

    def _exists(self, path: str) -> Plan[bool]:
        """Whether something is at `path`: ferry lists a missing folder as an empty one, and its
        glob tells them apart."""
        try:
            yield Request("POST", self._conn.fs("glob"), json={"pattern": "*", "path": path}, idempotent=True)
        except FerryError as exc:
            if _nothing_at(exc):
                return False
            raise
        return True

    def _ls(self, path: str) -> Plan[LsResult]:
        if _is_root(path):
            return LsResult(entries=[{"path": root + "/", "is_dir": True} for root in self._roots()])
        answer = yield Request("POST", self._conn.fs("ls"), json={"path": path}, idempotent=True)
        entries = answer.get("entries", [])
        # deepagents' own backends refuse a missing path and a file, in these words: its
        # middleware looks for `not_a_directory`. ferry lists a file as its one entry.
        if not entries and not (yield from self._exists(path)):
            return LsResult(error=f"Path '{path}': path_not_found")
        if len(entries) == 1 and entries[0].get("type") != "dir" and entries[0].get("path") == _absolute(path):
            return LsResult(error=f"Path '{path}': not_a_directory")
        # In the order deepagents' backends list: by the path shown, a folder's `/` included.
        return LsResult(entries=sorted((_info(entry) for entry in entries), key=lambda info: info["path"]))

    def ls(self, path: str) -> LsResult:
        """List one folder (`/sandbox`, `/spaces`, a space, or a folder below one). Folders end
        with `/`; `/` lists `/sandbox/` and `/spaces/`. A missing path is the error
        `Path '<path>': path_not_found`, a file `Path '<path>': not_a_directory`, as
        deepagents' own backends answer."""
        return self._do(self._ls(path), lambda e: LsResult(error=e.describe()))

    async def als(self, path: str) -> LsResult:
        return await self._ado(self._ls(path), lambda e: LsResult(error=e.describe()))

    # -- read --------------------------------------------------------------------------------

    def _read(self, file_path: str, offset: int, limit: int) -> Plan[ReadResult]:
        kind = _get_backend_read_file_type(file_path)
        if kind in ("file", "audio", "video"):
            # deepagents hands these to the model as the file itself (base64), never as text.
            data = yield from self._download(file_path)
            return ReadResult(file_data=FileData(content=base64.b64encode(data).decode("ascii"), encoding="base64"))
        # The protocol reads a negative offset from the first line (ferry would count it from the
        # end), and a window of no lines as empty (ferry refuses one: one line is asked for, so
        # that a missing file is still an error).
        offset, limit = max(int(offset), 0), int(limit)
        body = {"path": file_path, "offset": offset, "limit": max(limit, 1)}
        answer = yield Request("POST", self._conn.fs("read_file"), json=body, idempotent=True)
        shape = answer.get("kind")
        if shape == "text":
            return (yield from self._text_window(answer, offset, limit))
        if shape == "image":
            # ferry prepares images for a model (scaled, PNG or JPEG). deepagents labels the
            # block by the file's name, so a prepared image is used when the two agree, and the
            # stored bytes otherwise (a GIF or WebP, which ferry turns into PNG).
            if kind != "image" or answer.get("mimeType") == mimetypes.guess_type(file_path)[0]:
                return ReadResult(file_data=FileData(content=answer["base64"], encoding="base64"))
            data = yield from self._download(file_path)
            return ReadResult(file_data=FileData(content=base64.b64encode(data).decode("ascii"), encoding="base64"))
        # A binary file: ferry describes it and shows no bytes as text.
        return ReadResult(error=answer.get("note") or f"{file_path} is not a text file")

    def _text_window(self, answer: dict[str, Any], offset: int, limit: int) -> Plan[ReadResult]:
        """ferry's numbered window as deepagents' own backends answer one: the lines as they
        are in the file, and where they lie in it."""
        lines = _unnumber(answer.get("content", ""))
        total = int(answer.get("totalLines", 0))
        text = "".join(line + "\n" for line in lines)
        # A blank file is one sentence saying so, whatever the window; it is known blank when
        # the window holds all of it.
        if total == 0 or (offset == 0 and len(lines) == total and not text.strip()):
            return ReadResult(file_data=FileData(content=EMPTY_CONTENT_WARNING, encoding="utf-8"))
        if limit <= 0:
            return ReadResult(file_data=FileData(content="", encoding="utf-8"), no_lines_requested=True)
        if offset >= total:
            return ReadResult(error=f"Line offset {offset} exceeds file length ({total} lines)")
        end = offset + len(lines)
        # A document's text was extracted by ferry: it has no bytes of its own to look at.
        if end == total and answer.get("note") is None and not (yield from self._ends_with_line_break(answer)):
            text = text[:-1]
        return ReadResult(
            file_data=FileData(content=text, encoding="utf-8"),
            total_lines=total,
            start_line=offset + 1,
            end_line=end,
            next_offset=end if end < total else None,
        )

    def _ends_with_line_break(self, answer: dict[str, Any]) -> Plan[bool]:
        """Whether the file read ends with a line break, which numbered lines do not show: its
        last byte, asked of the version read (`If-Match`). deepagents' backends keep the last
        line as it is, so that what is read can be given back to `edit` as it is. When that
        byte cannot be had (the file changed since), the line break ferry shows stays."""
        try:
            route = self._conn.raw_route(str(answer.get("path", "")))
            if route is None:
                return True
            headers = {"Range": "bytes=-1", "If-Match": str(answer.get("etag", "*"))}
            tail = yield Request("GET", route, headers=headers, raw=True, idempotent=True)
        except FerryError:
            return True
        return tail[-1:] in (b"\n", b"\r")

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        """Lines `offset+1` to `offset+limit` of a text file (or the text ferry extracts from a
        DOCX, XLSX, XLS), as they are in the file, with `start_line`, `end_line`, `total_lines`
        and `next_offset`; deepagents' read_file tool numbers them. An image, PDF, PowerPoint,
        audio or video file comes back as base64, as deepagents expects."""
        return self._do(self._read(file_path, offset, limit), lambda e: ReadResult(error=e.describe()))

    async def aread(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        return await self._ado(self._read(file_path, offset, limit), lambda e: ReadResult(error=e.describe()))

    # -- write -------------------------------------------------------------------------------

    def _write(self, file_path: str, content: str) -> Plan[WriteResult]:
        answer = yield Request("POST", self._conn.fs("write_file"), json={"path": file_path, "content": content})
        return WriteResult(path=answer.get("path", file_path))

    def write(self, file_path: str, content: str) -> WriteResult:
        """Write a text file: created, or replaced whole if one is there, with the folders on the
        way made."""
        return self._do(self._write(file_path, content), lambda e: WriteResult(error=f"Error: {e.describe()}"))

    async def awrite(self, file_path: str, content: str) -> WriteResult:
        return await self._ado(self._write(file_path, content), lambda e: WriteResult(error=f"Error: {e.describe()}"))

    # -- edit --------------------------------------------------------------------------------

    def _edit(self, file_path: str, old_string: str, new_string: str, replace_all: bool) -> Plan[EditResult]:
        if old_string and old_string == new_string:
            return (yield from self._edit_unchanged(file_path, old_string, replace_all))
        body = {"path": file_path, "old_string": old_string, "new_string": new_string, "replace_all": replace_all}
        answer = yield Request("POST", self._conn.fs("edit_file"), json=body)
        return EditResult(path=answer.get("path", file_path), occurrences=int(answer.get("replacements", 0)))

    def _edit_unchanged(self, file_path: str, old_string: str, replace_all: bool) -> Plan[EditResult]:
        """An edit that changes nothing, which ferry refuses and deepagents' own backends count:
        the file's occurrences, checked by deepagents' own rules, and nothing written."""
        data = yield from self._download(file_path)
        try:
            # deepagents' backends read text with universal newlines.
            content = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        except UnicodeDecodeError:
            return EditResult(error=f"Error: {file_path} is not a UTF-8 text file; edit_file changes text only")
        counted = perform_string_replacement(content, old_string, old_string, replace_all)
        if isinstance(counted, str):
            return EditResult(error=counted)
        return EditResult(path=file_path, occurrences=counted[1])

    def edit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> EditResult:  # noqa: FBT001, FBT002
        """Replace `old_string`, which must occur exactly once unless `replace_all`."""
        plan = self._edit(file_path, old_string, new_string, replace_all)
        return self._do(plan, lambda e: EditResult(error=f"Error: {e.describe()}"))

    async def aedit(self, file_path: str, old_string: str, new_string: str, replace_all: bool = False) -> EditResult:  # noqa: FBT001, FBT002
        plan = self._edit(file_path, old_string, new_string, replace_all)
        return await self._ado(plan, lambda e: EditResult(error=f"Error: {e.describe()}"))

    # -- delete ------------------------------------------------------------------------------

    def _delete(self, file_path: str) -> Plan[DeleteResult]:
        # deepagents deletes a folder with everything in it; ferry does so when asked to.
        yield Request("POST", self._conn.fs("delete_file"), json={"path": file_path, "recursive": True})
        return DeleteResult(path=file_path)

    def delete(self, file_path: str) -> DeleteResult:
        """Delete a file, or a folder and everything in it. In the sandbox, ferry makes its
        standard folders (`outputs/`, `workspace/`, ...) again, empty, when one is deleted."""
        return self._do(self._delete(file_path), lambda e: DeleteResult(error=f"Error: {e.describe()}"))

    async def adelete(self, file_path: str) -> DeleteResult:
        return await self._ado(self._delete(file_path), lambda e: DeleteResult(error=f"Error: {e.describe()}"))

    # -- glob --------------------------------------------------------------------------------

    def _at_root(self, pattern: str) -> list[tuple[str, str]]:
        """A pattern relative to `/`, as (top folder, pattern relative to it) pairs."""
        head, slash, rest = pattern.partition("/")
        if head == "**":
            return [(root, pattern) for root in self._roots()]
        if not slash:
            return []  # only files directly in `/` would match, and there are none
        return [(root, rest) for root in self._roots() if wcfnmatch.fnmatch(root[1:], head, flags=wcfnmatch.BRACE)]

    def _targets(self, folder: str, pattern: str) -> list[tuple[str, str]]:
        """Where to ask ferry, and with what pattern relative to there, for files below `folder`
        that `pattern` may match as deepagents reads it: without `/` by name at any depth (sent
        as `**/NAME`), with `/` by the path relative to the folder, a leading `/` included."""
        pattern = "**/" + pattern if "/" not in pattern else pattern.lstrip("/")
        if _is_root(folder):
            return self._at_root(pattern)
        return [(folder, pattern)]

    def _glob(self, pattern: str, path: str | None) -> Plan[GlobResult]:
        # With no folder, an absolute pattern (`/sandbox/outputs/*.md`) is read from `/`.
        folder = path if path is not None else "/" if pattern.startswith("/") else DEFAULT_FOLDER
        try:
            included = _included(pattern, folder)
        except InvalidGlobPatternError as exc:
            return GlobResult(error=str(exc))
        found: list[str] = []
        truncated = False
        for base, relative in self._targets(folder, pattern):
            try:
                answer = yield Request("POST", self._conn.fs("glob"), json={"pattern": relative, "path": base}, idempotent=True)
            except FerryError as exc:
                if _nothing_at(exc):
                    continue  # a missing folder holds no matches
                raise
            found.extend(p for p in answer.get("paths", []) if included(p))
            truncated = truncated or bool(answer.get("truncated"))
        return GlobResult(
            matches=[{"path": p, "is_dir": False} for p in dict.fromkeys(found)],
            truncated=truncated,
            truncation_reason="budget" if truncated else None,
        )

    def glob(self, pattern: str, path: str | None = None) -> GlobResult:
        """Files below `path` (default `/sandbox`) matching `pattern` (`*`, `?`, `**`, `{a,b}`,
        `[abc]`): without `/` by name at any depth, with `/` by the path relative to `path`. At
        `/`, the pattern covers `/sandbox` and `/spaces`. At most 1,000 paths (then `truncated`)."""
        return self._do(self._glob(pattern, path), lambda e: GlobResult(error=e.describe()))

    async def aglob(self, pattern: str, path: str | None = None) -> GlobResult:
        return await self._ado(self._glob(pattern, path), lambda e: GlobResult(error=e.describe()))

    # -- grep --------------------------------------------------------------------------------

    def _grep_targets(self, folder: str, glob: str | None) -> list[tuple[str, str | None]]:
        """Where to ask ferry's grep, and with what glob. ferry reads a glob without `/` as
        deepagents does: the file's name at any depth. A leading `/` is left out: `/*.md` then
        finds more than deepagents would, and its matcher keeps the right ones."""
        bases = self._roots() if _is_root(folder) else [folder]
        if glob is None:
            return [(base, None) for base in bases]
        files = glob.lstrip("/")
        if _is_root(folder) and "/" in files:
            return self._at_root(files)  # the glob's first folder picks /sandbox or /spaces
        return [(base, files) for base in bases]

    def _grep(self, pattern: str, path: str | None, glob: str | None, max_count: int | None) -> Plan[GrepResult]:
        folder = path if path is not None else DEFAULT_FOLDER
        try:
            included = _included(glob, folder) if glob is not None else None
        except InvalidGlobPatternError as exc:
            return GrepResult(error=str(exc), matches=[])
        matches: list[GrepMatch] = []
        truncated = False
        for base, files in self._grep_targets(folder, glob):
            # With a cap, each folder is asked for what is left of it (with none left, for one
            # match, which says whether the cap dropped any); with a glob, for all ferry gives,
            # since some may not be kept.
            wanted = GREP_MAX_RESULTS if max_count is None else max(max_count - len(matches), 0)
            asked = GREP_MAX_RESULTS if included else min(max(wanted, 1), GREP_MAX_RESULTS)
            body: dict[str, Any] = {"pattern": pattern, "maxResults": asked, "path": base}
            if files is not None:
                body["glob"] = files
            try:
                answer = yield Request("POST", self._conn.fs("grep"), json=body, idempotent=True)
            except FerryError as exc:
                if _nothing_at(exc):
                    continue  # a missing folder holds no matches
                raise
            found = [
                {"path": m["path"], "line": int(m["line"]), "text": m["text"]}
                for m in answer.get("matches", [])
                # A file searched by its own path is searched whatever the glob, as ripgrep does.
                if included is None or included(m["path"]) or m["path"] == _absolute(folder)
            ]
            truncated = truncated or bool(answer.get("truncated")) or len(found) > wanted
            matches.extend(found[:wanted])
        return GrepResult(matches=matches, truncated=truncated)

    def grep(self, pattern: str, path: str | None = None, glob: str | None = None, *, max_count: int | None = None) -> GrepResult:
        """Lines holding `pattern` (literal text, case-sensitive) in the files below `path`
        (default `/sandbox`; `/` searches `/sandbox` and `/spaces`), optionally only in files
        matching `glob` (`*.md` matches by name at any depth). At most `max_count` matches (and
        2,000 in any case); `truncated` says whether more were there."""
        return self._do(self._grep(pattern, path, glob, max_count), lambda e: GrepResult(error=f"Error: {e.describe()}"))

    async def agrep(
        self, pattern: str, path: str | None = None, glob: str | None = None, *, max_count: int | None = None
    ) -> GrepResult:
        return await self._ado(self._grep(pattern, path, glob, max_count), lambda e: GrepResult(error=f"Error: {e.describe()}"))

    # -- bytes: upload and download ------------------------------------------------------------

    def _download(self, path: str) -> Plan[bytes]:
        route = self._conn.raw_route(path)
        if route is not None:
            return (yield Request("GET", route, raw=True, idempotent=True))
        # Any other form (a relative path, or one ferry will refuse): ferry resolves it, or says
        # why not, when it hands out a URL for it.
        grant = yield Request("POST", self._conn.fs("file_url"), json={"path": path, "method": "GET"}, idempotent=True)
        return (yield Request("GET", grant["url"], headers=grant.get("headers") or {}, raw=True, idempotent=True, absolute=True))

    def _download_one(self, path: str) -> Plan[FileDownloadResponse]:
        data = yield from self._download(path)
        return FileDownloadResponse(path=path, content=data)

    def _upload_one(self, path: str, content: bytes) -> Plan[FileUploadResponse]:
        headers = {"Content-Type": mimetypes.guess_type(path)[0] or "application/octet-stream"}
        route = self._conn.raw_route(path)
        if route is not None:
            yield Request("PUT", route, content=content, headers=headers)
        else:
            grant = yield Request("POST", self._conn.fs("file_url"), json={"path": path, "method": "PUT"})
            headers = {**(grant.get("headers") or {}), **headers}
            yield Request("PUT", grant["url"], content=content, headers=headers, absolute=True)
        return FileUploadResponse(path=path)

    @staticmethod
    def _failed_download(path: str) -> Callable[[FerryError], FileDownloadResponse]:
        return lambda e: FileDownloadResponse(path=path, content=None, error=_file_error(e))

    @staticmethod
    def _failed_upload(path: str) -> Callable[[FerryError], FileUploadResponse]:
        return lambda e: FileUploadResponse(path=path, error=_file_error(e))

    # Batches: ferry's upload_files and download_files write or read many files in one request
    # and answer each on its own. A file too large for a batch goes alone, as raw bytes.

    def _upload_batch(self, batch: list[tuple[str, bytes]]) -> Plan[list[FileUploadResponse]]:
        files = [{"path": path, "content": base64.b64encode(content).decode(), "encoding": "base64"} for path, content in batch]
        answer = yield Request("POST", self._conn.fs("upload_files"), json={"files": files})
        return [
            FileUploadResponse(path=path, error=_batch_error(result))
            for (path, _), result in zip(batch, answer["files"], strict=True)
        ]

    @staticmethod
    def _failed_batch(batch: list[tuple[str, bytes]]) -> Callable[[FerryError], list[FileUploadResponse]]:
        return lambda e: [FileUploadResponse(path=path, error=_file_error(e)) for path, _ in batch]

    def _download_batch(self, paths: list[str]) -> Plan[list[FileDownloadResponse | None]]:
        """Each file's bytes; `None` for one too large for a batch answer, to be read alone."""
        answer = yield Request("POST", self._conn.fs("download_files"), json={"paths": paths}, idempotent=True)
        results: list[FileDownloadResponse | None] = []
        for path, result in zip(paths, answer["files"], strict=True):
            error = result.get("error")
            if error is None:
                results.append(FileDownloadResponse(path=path, content=base64.b64decode(result["content"])))
            elif error.get("code") == "REQUEST_TOO_LARGE":
                results.append(None)
            else:
                results.append(FileDownloadResponse(path=path, content=None, error=_batch_error(result)))
        return results

    @staticmethod
    def _failed_downloads(paths: list[str]) -> Callable[[FerryError], list[FileDownloadResponse | None]]:
        return lambda e: [FileDownloadResponse(path=path, content=None, error=_file_error(e)) for path in paths]

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        """Write each file's bytes as they are (created, or replaced). One result per file, in
        order; a failure is that file's `error` and does not stop the others."""
        results: list[FileUploadResponse] = []
        for group in _upload_groups(files):
            if len(group) == 1 and len(group[0][1]) > BATCH_BYTES:
                path, content = group[0]
                results.append(self._do(self._upload_one(path, content), self._failed_upload(path)))
            else:
                results.extend(self._do(self._upload_batch(group), self._failed_batch(group)))
        return results

    async def aupload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        gate = asyncio.Semaphore(UPLOAD_CONCURRENCY)

        async def one(group: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
            async with gate:
                if len(group) == 1 and len(group[0][1]) > BATCH_BYTES:
                    path, content = group[0]
                    return [await self._ado(self._upload_one(path, content), self._failed_upload(path))]
                return await self._ado(self._upload_batch(group), self._failed_batch(group))

        groups = await asyncio.gather(*(one(group) for group in _upload_groups(files)))
        return [result for group in groups for result in group]

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        """Read each file's bytes. One result per path, in order; a missing file is
        `file_not_found`, a folder `is_directory`, a refused path `permission_denied` or
        `invalid_path`."""
        results: list[FileDownloadResponse] = []
        for start in range(0, len(paths), BATCH_FILES):
            chunk = paths[start : start + BATCH_FILES]
            batch = self._do(self._download_batch(chunk), self._failed_downloads(chunk))
            for path, result in zip(chunk, batch, strict=True):
                results.append(result if result is not None else self._do(self._download_one(path), self._failed_download(path)))
        return results

    async def adownload_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        gate = asyncio.Semaphore(UPLOAD_CONCURRENCY)

        async def alone(path: str) -> FileDownloadResponse:
            async with gate:
                return await self._ado(self._download_one(path), self._failed_download(path))

        async def batch(chunk: list[str]) -> list[FileDownloadResponse]:
            async with gate:
                got = await self._ado(self._download_batch(chunk), self._failed_downloads(chunk))
            return list(await asyncio.gather(*(alone(p) if r is None else _done(r) for p, r in zip(chunk, got, strict=True))))

        chunks = [paths[start : start + BATCH_FILES] for start in range(0, len(paths), BATCH_FILES)]
        answered = await asyncio.gather(*(batch(chunk) for chunk in chunks))
        return [result for chunk in answered for result in chunk]
