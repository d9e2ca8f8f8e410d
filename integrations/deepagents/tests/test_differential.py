"""FerryBackend beside deepagents' own FilesystemBackend: the same calls, in the same order, on
both, and the answers compared.

deepagents' FilesystemBackend is the reference for what each protocol call means (a write
replaces, a read answers its window and where it lies, a missing folder is an error to `ls` and
an empty result to `grep`, ...). It works here on a temporary folder laid out as a ferry sandbox
(`/sandbox/outputs/`, `/sandbox/workspace/`, ..., and `/spaces/`), so that both backends see the
same paths and no path needs rewriting. When a deepagents release changes what a call answers,
this test fails and lists every call whose answers now differ.

Only what must differ is normalised, in `normalise` below:

- timestamps (`modified_at`): the local file system's clock and format against ferry's;
- the size and time of a folder, which ferry does not give (deepagents' backend says 0);
- the size and time of a glob match, which ferry's glob does not answer;
- the order of grep matches across files, which is the search engine's (ripgrep searches files
  in parallel): matches are compared sorted by path and line;
- an image's bytes: ferry prepares images for a model (scaled, re-encoded), so only the kind of
  image is compared;
- the wording of most errors. ferry's messages say what to do in ferry's terms, and the model
  reads them as they are; whether a call failed is compared everywhere, and the kind of failure
  where deepagents' own code or the model's next step depends on it: `ls`'s `path_not_found`
  and `not_a_directory` (deepagents' middleware looks for the latter), a read past the end, and
  an edit whose text is missing, or found several times (with how many).

One thing differs by the protocol's own leave: the folder searched when none is given. ferry's
is `/sandbox`, so the steps that give none to FerryBackend give `/sandbox` to the reference.
What differs by design (the package's README lists it: documents read as their text, lines cut
past 10,000 characters, ferry's own paths and its read-only `skills/`, ...) is left out of the
calls.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from deepagents.backends.filesystem import FilesystemBackend

NOTE = "# Tea shop\n\nOpen at 7\nClosed Sunday and Monday\nSunday: tea.c\nSunday: a.c\n"
LONG = "".join(f"line {n}\n" for n in range(1, 31))
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
)
PDF = b"%PDF-1.4\n% a stand-in: its bytes are what is compared\n"

SANDBOX_FOLDERS = ("outputs", "shared/drafts", "shared/research", "skills", "user_uploads", "workspace")
"""A new thread's sandbox, which the reference's folder is laid out as (the first step, `ls` of
`/sandbox`, checks that they agree)."""


@dataclass
class Step:
    """One protocol call. `expect` is what it must do on both sides: "ok", "error", or (for a
    batch answering each file on its own) None. It keeps two backends that fail alike from
    passing for two that agree. `local` replaces keyword arguments for the reference only (see
    the module's note on the default folder)."""

    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    expect: str | None = "ok"
    local: dict[str, Any] | None = None
    asynchronous: bool = False

    def __str__(self) -> str:
        shown = [repr(a)[:60] for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{'a' if self.asynchronous else ''}{self.method}({', '.join(shown)})"


def step(method: str, *args: Any, expect: str | None = "ok", local: dict[str, Any] | None = None, **kwargs: Any) -> Step:
    return Step(method, args, kwargs, expect, local)


def asynchronous(method: str, *args: Any, expect: str = "ok", **kwargs: Any) -> Step:
    return Step(method, args, kwargs, expect, asynchronous=True)


SANDBOX = {"path": "/sandbox"}

STEPS = [
    # The layout both start from.
    step("ls", "/"),
    step("ls", "/sandbox"),
    step("ls", "/spaces"),
    # write: creates, with the folders on the way, and replaces what is there.
    step("write", "/sandbox/outputs/tea.md", "draft\n"),
    step("write", "/sandbox/outputs/tea.md", NOTE),
    step("read", "/sandbox/outputs/tea.md"),
    step("write", "/sandbox/outputs/deep/er/long.txt", LONG),
    step("write", "/sandbox/outputs/deep/er/sunday.md", "Sunday, deeper down\n"),
    step("write", "/sandbox/outputs/deep.md", "Sunday in a file beside a folder of its name\n"),
    step("write", "/sandbox/outputs/no-newline.txt", "first\nlast, with no line break"),
    step("write", "/sandbox/outputs/crlf.txt", "one\r\ntwo\r\n"),
    step("write", "/sandbox/outputs/empty.txt", ""),
    step("write", "/sandbox/outputs/blank.txt", "  \n\n"),
    step("write", "/sandbox/workspace/notes.txt", "Sunday: a.c\nsunday\n"),
    step("write", "/spaces/notes/tea.md", "green tea\nSunday tea\n"),
    step("write", "/sandbox/workspace/dots/.hidden.md", "dot\n"),
    step("write", "/sandbox/workspace/dots/.cache/kept.md", "dot\n"),
    step("write", "/sandbox/outputs", "a folder is not a file", expect="error"),
    step("upload_files", [("/sandbox/outputs/paper.pdf", PDF), ("/sandbox/outputs/dot.png", PNG)]),
    # ls: one level, folders with `/`, in path order; a file or a missing path is an error.
    step("ls", "/sandbox/outputs"),
    step("ls", "/sandbox/outputs/"),
    step("ls", "/sandbox/outputs/deep"),
    step("ls", "/spaces"),
    step("ls", "/spaces/notes"),
    step("ls", "/sandbox/outputs/tea.md", expect="error"),
    step("ls", "/sandbox/nothing", expect="error"),
    # read: the window asked for, and where it lies.
    step("read", "/sandbox/outputs/deep/er/long.txt"),
    step("read", "/sandbox/outputs/deep/er/long.txt", offset=10, limit=5),
    step("read", "/sandbox/outputs/deep/er/long.txt", offset=25, limit=10),
    step("read", "/sandbox/outputs/deep/er/long.txt", offset=29, limit=1),
    step("read", "/sandbox/outputs/deep/er/long.txt", offset=30, expect="error"),
    step("read", "/sandbox/outputs/deep/er/long.txt", offset=-5, limit=2),
    step("read", "/sandbox/outputs/deep/er/long.txt", limit=0),
    step("read", "/sandbox/outputs/no-newline.txt"),
    step("read", "/sandbox/outputs/no-newline.txt", offset=1),
    step("read", "/sandbox/outputs/no-newline.txt", limit=1),
    step("read", "/sandbox/outputs/crlf.txt"),
    step("read", "/sandbox/outputs/empty.txt"),
    step("read", "/sandbox/outputs/empty.txt", limit=0),
    step("read", "/sandbox/outputs/blank.txt"),
    step("read", "/spaces/notes/tea.md", offset=1),
    step("read", "/sandbox/outputs/paper.pdf"),
    step("read", "/sandbox/outputs/dot.png"),
    step("read", "/sandbox/outputs/missing.md", expect="error"),
    step("read", "/sandbox/outputs", expect="error"),
    step("read", "/etc/passwd", expect="error"),
    # edit: exactly once unless replace_all; otherwise nothing changes.
    step("edit", "/sandbox/outputs/tea.md", "Open at 7", "Open at 8"),
    step("edit", "/sandbox/outputs/tea.md", "day", "DAY", expect="error"),
    step("edit", "/sandbox/outputs/tea.md", "Sunday", "Sun.", replace_all=True),
    step("edit", "/sandbox/outputs/tea.md", "Tuesday", "x", expect="error"),
    step("edit", "/sandbox/outputs/tea.md", "Sun.", "Sun.", replace_all=True),
    step("edit", "/sandbox/outputs/tea.md", "Sun.", "Sun.", expect="error"),
    step("edit", "/sandbox/outputs/tea.md", "", "x", expect="error"),
    step("edit", "/sandbox/outputs/missing.md", "a", "b", expect="error"),
    step("read", "/sandbox/outputs/tea.md"),
    step("edit", "/sandbox/outputs/no-newline.txt", "break", "break, still"),
    step("read", "/sandbox/outputs/no-newline.txt"),
    # glob: without `/` by name at any depth; with `/` from the folder searched.
    step("glob", "*.md", "/sandbox"),
    step("glob", "*.txt", "/sandbox/outputs"),
    step("glob", "outputs/*.md", "/sandbox"),
    step("glob", "/*.md", "/sandbox/outputs"),
    step("glob", "**/*.txt", "/sandbox/outputs"),
    step("glob", "deep/**/*.txt", "/sandbox/outputs"),
    step("glob", "*.{md,pdf}", "/sandbox/outputs"),
    step("glob", "t?a.md", "/"),
    step("glob", "*.md", "/"),
    step("glob", "/sandbox/outputs/*.md"),
    step("glob", "outputs/*.md", local=SANDBOX),
    step("glob", "*.txt", local=SANDBOX),
    step("glob", "*.md", "/sandbox/nothing"),
    # Names starting with `.`: matched only by a pattern that starts with `.` where they are.
    step("glob", "*.md", "/sandbox/workspace/dots"),
    step("glob", "**/*.md", "/sandbox/workspace/dots"),
    step("glob", ".*", "/sandbox/workspace/dots"),
    step("glob", ".cache/*.md", "/sandbox/workspace/dots"),
    # grep: literal text, case-sensitive, by line; a missing folder finds nothing.
    step("grep", "Sunday", "/sandbox"),
    step("grep", "Sunday", local=SANDBOX),
    step("grep", "a.c", "/sandbox"),
    step("grep", "sunday", "/sandbox/outputs"),
    step("grep", "Sunday", "/", glob="*.md"),
    step("grep", "Sunday", "/sandbox", glob="outputs/*.md"),
    step("grep", "Sunday", "/sandbox", glob="*.txt"),
    step("grep", "Sunday", "/sandbox/outputs", glob="/*.md"),
    step("grep", "Sunday", "/sandbox", glob="/outputs/*.md"),
    step("grep", "Sunday", "/", glob="sandbox/**/*.txt"),
    step("grep", "tea", "/spaces/notes"),
    step("grep", "line 2", "/sandbox/outputs/deep/er/long.txt"),
    step("grep", "line", "/sandbox/outputs/deep", max_count=3),
    step("grep", "line 3", "/sandbox/outputs/deep", max_count=2),
    step("grep", "line 3", "/sandbox/outputs/deep", max_count=1),
    step("grep", "Sunday", "/sandbox/nothing"),
    # delete: a file, or a folder and everything in it; nothing there is an error.
    step("delete", "/sandbox/outputs/deep.md"),
    step("delete", "/sandbox/outputs/deep"),
    step("delete", "/sandbox/outputs/deep", expect="error"),
    step("ls", "/sandbox/outputs"),
    step("read", "/sandbox/outputs/deep/er/long.txt", expect="error"),
    # Bytes in and out, one answer per file.
    step("download_files", ["/sandbox/outputs/paper.pdf", "/sandbox/outputs/missing.bin", "/sandbox/outputs"], expect=None),
    step("upload_files", [("/sandbox/outputs/paper.pdf", b"replaced"), ("/spaces/notes/b.bin", b"\x00\xff")]),
    step("download_files", ["/sandbox/outputs/paper.pdf", "/spaces/notes/b.bin"]),
    # The async methods answer as the blocking ones.
    asynchronous("ls", "/sandbox/workspace"),
    asynchronous("ls", "/sandbox/nothing", expect="error"),
    asynchronous("write", "/sandbox/workspace/notes.txt", "Sunday, async\n"),
    asynchronous("read", "/sandbox/workspace/notes.txt", offset=0, limit=1),
    asynchronous("edit", "/sandbox/workspace/notes.txt", "async", "awaited"),
    asynchronous("glob", "*.txt", "/sandbox/workspace"),
    asynchronous("grep", "Sunday", "/sandbox/workspace", max_count=1),
    asynchronous("grep", "Sunday", "/sandbox/nothing"),
    asynchronous("delete", "/sandbox/workspace/notes.txt"),
    asynchronous("delete", "/sandbox/workspace/notes.txt", expect="error"),
]

# Failures whose kind is compared (see the module's note): the first pattern that matches
# names it, from either backend's wording. A count found in the message is part of the kind.
EXACT_ERRORS = (
    re.compile(r"^Path '[^']*': (path_not_found|not_a_directory)$"),
    re.compile(r"^Line offset \d+ exceeds file length \(\d+ lines\)$"),
)
ERROR_KINDS = (
    ("old_string missing", re.compile(r"String not found in file|old_string was not found")),
    ("old_string found {} times", re.compile(r"appears (\d+) times|occurs (\d+) times")),
)


def error_kind(message: str) -> str:
    if any(pattern.match(message) for pattern in EXACT_ERRORS):
        return message
    for kind, pattern in ERROR_KINDS:
        found = pattern.search(message)
        if found:
            return kind.format(*[group for group in found.groups() if group])
    return "an error"


def _entry(info: dict[str, Any]) -> dict[str, Any]:
    """A listing entry without its time, and a folder without its size: ferry gives neither."""
    if info.get("is_dir"):
        return {"path": info["path"], "is_dir": True}
    return {key: value for key, value in info.items() if key != "modified_at"}


def _file_data(path: str, data: dict[str, Any]) -> dict[str, Any]:
    """Read content, with an image reduced to its kind: ferry prepares images for a model."""
    if data.get("encoding") == "base64" and path.endswith(".png"):
        return {"encoding": "base64", "image": base64.b64decode(data["content"]).startswith(b"\x89PNG")}
    return dict(data)


@dataclass
class Raised:
    """A call that raised instead of answering: the protocol answers errors as results."""

    error: str


def normalise(item: Step, result: Any) -> Any:
    """What is compared of one answer: every field of the result, so that a field a deepagents
    release adds is compared too, with the ones named in the module's note normalised."""
    if isinstance(result, Raised):
        return {"raised": result.error}
    if isinstance(result, list):  # upload_files, download_files: one answer per file
        return [normalise(item, one) for one in result]
    answer = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    if answer.get("error") is not None:
        answer["error"] = error_kind(answer["error"])
    if answer.get("entries") is not None:
        answer["entries"] = [_entry(info) for info in answer["entries"]]
    if answer.get("file_data") is not None:
        answer["file_data"] = _file_data(item.args[0], answer["file_data"])
    if answer.get("matches") is not None and item.method == "grep":
        answer["matches"] = sorted(answer["matches"], key=lambda m: (m["path"], m["line"]))
    elif answer.get("matches") is not None:
        answer["matches"] = [{"path": m["path"], "is_dir": m.get("is_dir")} for m in answer["matches"]]
    return answer


def call(backend: Any, item: Step, local: bool) -> Any:
    kwargs = {**item.kwargs, **(item.local or {})} if local else item.kwargs
    try:
        if item.asynchronous:
            return asyncio.run(getattr(backend, "a" + item.method)(*item.args, **kwargs))
        return getattr(backend, item.method)(*item.args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - reported with every other difference
        return Raised(f"{type(exc).__name__}: {exc}")


def as_expected(item: Step, result: Any) -> bool:
    if isinstance(result, Raised):
        return False
    if item.expect is None:
        return True
    results = result if isinstance(result, list) else [result]
    return all((one.error is not None) == (item.expect == "error") for one in results)


@pytest.fixture
def reference(tmp_path):
    root = tmp_path / "reference"
    for folder in SANDBOX_FOLDERS:
        (root / "sandbox" / folder).mkdir(parents=True)
    (root / "spaces").mkdir()
    return FilesystemBackend(root_dir=root, virtual_mode=True)


def test_every_call_answers_as_deepagents_own_backend(thread, reference):
    ferry = thread.backend()
    differences = []
    for item in STEPS:
        ours, theirs = call(ferry, item, local=False), call(reference, item, local=True)
        for name, result in (("ferry", ours), ("deepagents", theirs)):
            if not as_expected(item, result):
                differences.append(f"{item}: {name} was expected to {'fail' if item.expect == 'error' else 'succeed'}: {result}")
        if normalise(item, ours) != normalise(item, theirs):
            differences.append(f"{item}:\n    ferry:      {normalise(item, ours)}\n    deepagents: {normalise(item, theirs)}")
    assert not differences, "\n".join(differences)
