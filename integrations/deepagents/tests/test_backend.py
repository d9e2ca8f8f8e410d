"""FerryBackend's methods against a real ferry server (the blocking ones, and the async batches)."""

from __future__ import annotations

import asyncio
import base64
import io
import struct
import zipfile
import zlib

from deepagents.backends.protocol import BackendProtocol
from deepagents.backends.utils import EMPTY_CONTENT_WARNING

from ferry_deepagents import FerryBackend
from ferry_deepagents.backend import BATCH_BYTES, _upload_groups

NOTE = "# Tea shop\n\nOpen at 7 — ünïcödé\nClosed Sunday and Monday\n"


def png(width: int, height: int) -> bytes:
    """A small red PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def docx(*paragraphs: str) -> bytes:
    """A minimal Word document holding `paragraphs`."""
    w = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
    body = "".join(f"<w:p><w:r><w:t>{p}</w:t></w:r></w:p>" for p in paragraphs)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
        )
        archive.writestr(
            "_rels/.rels",
            '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" '
            'Target="word/document.xml"/></Relationships>',
        )
        archive.writestr("word/document.xml", f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{w}"><w:body>{body}</w:body></w:document>')
    return buffer.getvalue()


def test_it_is_a_deepagents_backend(thread):
    store = thread.backend()
    assert isinstance(store, BackendProtocol)
    assert store.thread == thread.id  # read from the agent token


def test_ls(thread):
    store = thread.backend()
    assert store.ls("/").entries == [{"path": "/sandbox/", "is_dir": True}, {"path": "/spaces/", "is_dir": True}]
    top = store.ls("/sandbox")
    assert top.error is None
    assert [e["path"] for e in top.entries] == [
        "/sandbox/outputs/",
        "/sandbox/shared/",
        "/sandbox/skills/",
        "/sandbox/user_uploads/",
        "/sandbox/workspace/",
    ]
    assert all(e["is_dir"] for e in top.entries)
    assert store.write("/sandbox/outputs/tea.md", NOTE).error is None
    listed = store.ls("/sandbox/outputs/").entries
    assert len(listed) == 1
    entry = listed[0]
    assert entry["path"] == "/sandbox/outputs/tea.md" and entry["is_dir"] is False
    assert entry["size"] == len(NOTE.encode())
    assert isinstance(entry["modified_at"], str) and entry["modified_at"].endswith("Z")
    # deepagents' own words for a missing path and a file, which its middleware reads.
    assert store.ls("/sandbox/outputs/nothing").error == "Path '/sandbox/outputs/nothing': path_not_found"
    assert store.ls("/sandbox/outputs/tea.md").error == "Path '/sandbox/outputs/tea.md': not_a_directory"
    assert store.ls("/spaces/nothing").error == "Path '/spaces/nothing': path_not_found"
    assert store.ls("/sandbox/skills").entries == []  # an empty folder is not a missing one


def test_write_and_read(thread):
    store = thread.backend()
    done = store.write("/sandbox/outputs/tea.md", NOTE)
    assert done.error is None and done.path == "/sandbox/outputs/tea.md"
    assert thread.sandbox_bytes("outputs/tea.md") == NOTE.encode()

    whole = store.read("/sandbox/outputs/tea.md")
    assert whole.error is None
    # Plain lines: deepagents' read_file tool numbers them itself.
    assert whole.file_data == {"content": NOTE, "encoding": "utf-8"}
    assert (whole.start_line, whole.end_line, whole.total_lines, whole.next_offset) == (1, 4, 4, None)
    window = store.read("/sandbox/outputs/tea.md", offset=2, limit=1)
    assert window.file_data["content"] == "Open at 7 — ünïcödé\n"
    assert (window.start_line, window.end_line, window.total_lines, window.next_offset) == (3, 3, 4, 3)
    past = store.read("/sandbox/outputs/tea.md", offset=10)
    assert past.error == "Line offset 10 exceeds file length (4 lines)"
    # A negative offset reads from the first line (ferry's own read counts it from the end).
    assert store.read("/sandbox/outputs/tea.md", offset=-1, limit=1).file_data["content"] == "# Tea shop\n"
    nothing = store.read("/sandbox/outputs/tea.md", limit=0)
    assert (nothing.file_data["content"], nothing.no_lines_requested, nothing.start_line) == ("", True, None)
    assert store.read("/sandbox/outputs/missing.md", limit=0).error is not None

    # A relative path is under /sandbox/workspace/; CRLF and a tab inside a line survive, and
    # a last line with no line break is read without one.
    assert store.write("notes/crlf.txt", "a\tb\r\nc").path == "/sandbox/workspace/notes/crlf.txt"
    assert store.read("/sandbox/workspace/notes/crlf.txt").file_data["content"] == "a\tb\nc"
    assert store.read("/sandbox/workspace/notes/crlf.txt", limit=1).file_data["content"] == "a\tb\n"
    assert store.write("/sandbox/outputs/empty.txt", "").error is None
    assert store.read("/sandbox/outputs/empty.txt").file_data["content"] == EMPTY_CONTENT_WARNING


def test_read_keeps_the_line_break_of_the_version_it_read(thread, monkeypatch):
    # The last byte is asked of the version read: when the file has changed in between, the line
    # break ferry shows is kept rather than one from another version.
    store = thread.backend()
    store.write("/sandbox/outputs/tail.txt", "a\nb")
    original = FerryBackend._ends_with_line_break

    def changed_in_between(self, answer):
        store.write("/sandbox/outputs/tail.txt", "a\nc")
        return (yield from original(self, answer))

    monkeypatch.setattr(FerryBackend, "_ends_with_line_break", changed_in_between)
    assert store.read("/sandbox/outputs/tail.txt").file_data["content"] == "a\nb\n"


def test_write_replaces_and_refusals(thread):
    store = thread.backend()
    store.write("/sandbox/outputs/tea.md", NOTE)
    again = store.write("/sandbox/outputs/tea.md", "other")
    assert (again.path, again.error) == ("/sandbox/outputs/tea.md", None)
    assert thread.sandbox_bytes("outputs/tea.md") == b"other"

    skills = store.write("/sandbox/skills/mine.md", "x")
    assert skills.error.startswith("Error: /sandbox/skills/ is read-only")
    assert skills.error.endswith("(FORBIDDEN)")
    outside = store.write("/etc/passwd", "x")
    assert outside.error.startswith("Error: '/etc/passwd' is outside the agent's files")
    assert outside.error.endswith("(INVALID_PATH)")
    folder = store.write("/sandbox/outputs", "x")
    assert folder.error is not None and "(INVALID_PATH)" in folder.error


def test_read_refusals(thread):
    store = thread.backend()
    missing = store.read("/sandbox/outputs/missing.md")
    assert missing.file_data is None
    assert missing.error == "no file at '/sandbox/outputs/missing.md' (NOT_FOUND)"
    folder = store.read("/sandbox/outputs")
    assert folder.error == "'/sandbox/outputs' is a folder, not a file (INVALID_PATH)"
    outside = store.read("/etc/passwd")
    assert outside.error.startswith("'/etc/passwd' is outside the agent's files: paths start with /sandbox/ or /spaces/")
    traversal = store.read("/sandbox/outputs/../../etc/passwd")
    assert traversal.error is not None and traversal.error.endswith("(INVALID_PATH)")


def test_read_of_other_kinds(thread):
    store = thread.backend()
    picture = png(4, 3)
    blob = bytes(range(256)) * 4
    pdf = b"%PDF-1.4\n% not really a document\n"
    uploaded = store.upload_files(
        [
            ("/sandbox/outputs/red.png", picture),
            ("/sandbox/outputs/data.bin", blob),
            ("/sandbox/outputs/paper.pdf", pdf),
            ("/sandbox/outputs/red.webp", picture),  # PNG bytes under a WebP name
            ("/sandbox/outputs/memo.docx", docx("First paragraph", "Second paragraph", "Third")),
        ]
    )
    assert [u.error for u in uploaded] == [None] * 5

    image = store.read("/sandbox/outputs/red.png")
    assert image.file_data["encoding"] == "base64"
    assert base64.b64decode(image.file_data["content"]).startswith(b"\x89PNG")
    # deepagents hands a PDF to the model as the file itself.
    document = store.read("/sandbox/outputs/paper.pdf")
    assert document.file_data == {"content": base64.b64encode(pdf).decode(), "encoding": "base64"}
    # ferry prepares images as PNG or JPEG. Where that is not the type the name says (a GIF or
    # WebP file), the stored bytes are given instead, since deepagents labels the image block by
    # the name. (PNG bytes stand in for a WebP file here.)
    relabelled = store.read("/sandbox/outputs/red.webp")
    assert relabelled.file_data == {"content": base64.b64encode(picture).decode(), "encoding": "base64"}
    # A Word document is read as the text ferry extracts from it, paged like any text.
    assert store.read("/sandbox/outputs/memo.docx").file_data == {"content": "First paragraph\nSecond paragraph\nThird\n", "encoding": "utf-8"}
    assert store.read("/sandbox/outputs/memo.docx", offset=1, limit=1).file_data["content"] == "Second paragraph\n"
    # Other binary files have no text to show: ferry says so.
    binary = store.read("/sandbox/outputs/data.bin")
    assert binary.file_data is None
    assert binary.error.startswith("/sandbox/outputs/data.bin is a binary file (application/octet-stream, 1024 bytes)")


def test_edit(thread):
    store = thread.backend()
    store.write("/sandbox/outputs/tea.md", NOTE)
    edited = store.edit("/sandbox/outputs/tea.md", "Open at 7", "Open at 8")
    assert edited.error is None and edited.path == "/sandbox/outputs/tea.md" and edited.occurrences == 1
    assert thread.sandbox_bytes("outputs/tea.md") == NOTE.replace("7", "8").encode()

    ambiguous = store.edit("/sandbox/outputs/tea.md", "day", "DAY")
    assert ambiguous.occurrences is None
    assert ambiguous.error == (
        "Error: old_string occurs 2 times in '/sandbox/outputs/tea.md'; include more of the surrounding text to make it "
        "unique, or pass replace_all: true to replace every one (INVALID_REQUEST)"
    )
    every = store.edit("/sandbox/outputs/tea.md", "day", "DAY", replace_all=True)
    assert every.error is None and every.occurrences == 2
    absent = store.edit("/sandbox/outputs/tea.md", "Tuesday", "x")
    assert absent.error.startswith("Error: old_string was not found in '/sandbox/outputs/tea.md'")
    missing = store.edit("/sandbox/outputs/missing.md", "a", "b")
    assert missing.error == "Error: no file at '/sandbox/outputs/missing.md' (NOT_FOUND)"
    assert store.read("/sandbox/outputs/tea.md").file_data["content"].endswith("Closed SunDAY and MonDAY\n")
    # An edit that changes nothing is counted, not refused, and writes nothing.
    etag = thread.http("GET", f"/api/threads/{thread.id}/sandbox/outputs/tea.md").headers["etag"]
    assert store.edit("/sandbox/outputs/tea.md", "DAY", "DAY", replace_all=True).occurrences == 2
    assert "appears 2 times" in store.edit("/sandbox/outputs/tea.md", "DAY", "DAY").error
    assert thread.http("GET", f"/api/threads/{thread.id}/sandbox/outputs/tea.md").headers["etag"] == etag


def test_glob(thread):
    store = thread.backend()
    for path in ("/sandbox/outputs/a.md", "/sandbox/outputs/deep/b.md", "/sandbox/workspace/c.txt", "/spaces/notes/d.md"):
        assert store.write(path, "x\n").error is None
    paths = lambda result: [m["path"] for m in result.matches]  # noqa: E731
    # No path: the sandbox, as ferry's default.
    assert paths(store.glob("**/*.md")) == ["/sandbox/outputs/a.md", "/sandbox/outputs/deep/b.md"]
    assert all(m["is_dir"] is False for m in store.glob("**/*.md").matches)
    # Without `/`, by name at any depth; with `/`, from the folder searched (a leading `/` too).
    assert paths(store.glob("*.md", "/sandbox/outputs")) == ["/sandbox/outputs/a.md", "/sandbox/outputs/deep/b.md"]
    assert paths(store.glob("/*.md", "/sandbox/outputs")) == ["/sandbox/outputs/a.md"]
    assert paths(store.glob("deep/*.md", "/sandbox/outputs")) == ["/sandbox/outputs/deep/b.md"]
    assert paths(store.glob("/sandbox/outputs/*.md", "/sandbox/outputs")) == []
    # An absolute pattern with no folder is read from `/`.
    assert paths(store.glob("/sandbox/outputs/**/*.md")) == ["/sandbox/outputs/a.md", "/sandbox/outputs/deep/b.md"]
    # At `/`, the sandbox and the spaces together.
    assert paths(store.glob("**/*.md", "/")) == ["/sandbox/outputs/a.md", "/sandbox/outputs/deep/b.md", "/spaces/notes/d.md"]
    assert paths(store.glob("*.md", "/")) == ["/sandbox/outputs/a.md", "/sandbox/outputs/deep/b.md", "/spaces/notes/d.md"]
    assert paths(store.glob("spaces/*/*.md", "/")) == ["/spaces/notes/d.md"]
    assert paths(store.glob("*/workspace/*.txt", "/")) == ["/sandbox/workspace/c.txt"]
    assert paths(store.glob("/*.md", "/")) == []
    assert paths(store.glob("**/*.{md,txt}", "/spaces")) == ["/spaces/notes/d.md"]
    missing = store.glob("*.md", "/sandbox/nothing")
    assert (missing.error, missing.matches) == (None, [])
    assert store.glob("[", "/sandbox").error.endswith("(INVALID_REQUEST)")


def test_grep(thread):
    store = thread.backend()
    store.write("/sandbox/outputs/tea.md", NOTE)
    store.write("/sandbox/outputs/sums.txt", "a.c\nabc\n")
    store.write("/spaces/notes/tea.md", "green tea\nSunday tea\n")
    found = store.grep("Sunday")
    assert found.error is None
    assert found.matches == [{"path": "/sandbox/outputs/tea.md", "line": 4, "text": "Closed Sunday and Monday"}]
    # Literal text, not a regular expression, and case-sensitive.
    assert store.grep("a.c").matches == [{"path": "/sandbox/outputs/sums.txt", "line": 1, "text": "a.c"}]
    assert store.grep("sunday").matches == []
    # A glob without a slash matches file names at any depth; `/` covers the spaces too.
    assert [(m["path"], m["line"]) for m in store.grep("Sunday", "/", glob="*.md").matches] == [
        ("/sandbox/outputs/tea.md", 4),
        ("/spaces/notes/tea.md", 2),
    ]
    assert [m["path"] for m in store.grep("tea", "/spaces/notes").matches] == ["/spaces/notes/tea.md"] * 2
    assert store.grep("Sunday", "/sandbox", glob="*.txt").matches == []
    assert store.grep("tea", "/", glob="spaces/**").matches[0]["path"] == "/spaces/notes/tea.md"
    missing = store.grep("x", "/sandbox/nothing")
    assert (missing.error, missing.matches) == (None, [])
    empty = store.grep("")
    assert empty.error is not None and empty.error.endswith("(INVALID_REQUEST)")


def test_grep_max_count(thread):
    store = thread.backend()
    store.write("/sandbox/outputs/tea.md", "tea\n" * 3)
    store.write("/spaces/notes/tea.md", "tea\n" * 2)
    lines = lambda result: [(m["path"], m["line"]) for m in result.matches]  # noqa: E731
    capped = store.grep("tea", "/sandbox", max_count=2)
    assert (lines(capped), capped.truncated) == ([("/sandbox/outputs/tea.md", 1), ("/sandbox/outputs/tea.md", 2)], True)
    exact = store.grep("tea", "/sandbox", max_count=3)
    assert (len(exact.matches), exact.truncated) == (3, False)
    # Across `/sandbox` and `/spaces`, the cap is one cap: the spaces are asked whether they
    # hold more once the sandbox has filled it.
    assert store.grep("tea", "/", max_count=3).truncated is True
    everything = store.grep("tea", "/", max_count=5)
    assert (len(everything.matches), everything.truncated) == (5, False)
    assert store.grep("tea", "/").truncated is False
    assert lines(asyncio.run(store.agrep("tea", "/", max_count=4)))[-1] == ("/spaces/notes/tea.md", 1)


def test_delete(thread):
    store = thread.backend()
    store.write("/sandbox/outputs/drafts/one.md", "1\n")
    store.write("/sandbox/outputs/drafts/deeper/two.md", "2\n")
    store.write("/spaces/notes/old.md", "old\n")
    assert store.delete("/sandbox/outputs/drafts/one.md").path == "/sandbox/outputs/drafts/one.md"
    assert store.delete("/sandbox/outputs/drafts").path == "/sandbox/outputs/drafts"  # and all in it
    assert store.ls("/sandbox/outputs").entries == []
    assert asyncio.run(store.adelete("/spaces/notes/old.md")).error is None
    missing = store.delete("/sandbox/outputs/drafts")
    assert missing.path is None
    assert missing.error == "Error: nothing at '/sandbox/outputs/drafts' (NOT_FOUND)"
    # ferry's own rules hold: skills/ is read-only, and a standard folder comes back empty.
    assert store.delete("/sandbox/skills").error.endswith("(FORBIDDEN)")
    store.write("/sandbox/workspace/scratch.txt", "x")
    assert store.delete("/sandbox/workspace").error is None
    assert store.ls("/sandbox/workspace").entries == []


def test_upload_and_download_bytes(thread):
    store = thread.backend()
    files = [
        ("/sandbox/outputs/data.bin", bytes(range(256)) * 3),
        ("/sandbox/outputs/ünï côde.txt", "é\n".encode()),
        ("/sandbox/outputs/empty.txt", b""),
        ("/spaces/notes/bin/blob.bin", b"\x00\xff" * 100),
        ("scratch/rel.bin", b"\x01\x02"),  # relative: under /sandbox/workspace/
    ]
    uploaded = store.upload_files(files)
    assert [(u.path, u.error) for u in uploaded] == [(p, None) for p, _ in files]
    assert thread.sandbox_bytes("outputs/ünï côde.txt") == "é\n".encode()
    assert thread.sandbox_bytes("workspace/scratch/rel.bin") == b"\x01\x02"
    assert thread.space_bytes("notes", "bin/blob.bin") == b"\x00\xff" * 100

    # Uploading again replaces.
    assert store.upload_files([("/sandbox/outputs/empty.txt", b"now full")])[0].error is None

    wanted = [p for p, _ in files] + [
        "/sandbox/outputs/missing.bin",
        "/sandbox/outputs",
        "/etc/passwd",
        "/sandbox/outputs/../outputs/data.bin",
    ]
    got = store.download_files(wanted)
    assert [d.path for d in got] == wanted
    assert [(d.content, d.error) for d in got] == [
        (bytes(range(256)) * 3, None),
        ("é\n".encode(), None),
        (b"now full", None),
        (b"\x00\xff" * 100, None),
        (b"\x01\x02", None),
        (None, "file_not_found"),
        (None, "is_directory"),
        (None, "invalid_path"),
        (None, "invalid_path"),  # ferry refuses `..`; no client folds it away
    ]


def test_upload_refusals_do_not_stop_the_rest(thread):
    store = thread.backend()
    results = store.upload_files(
        [
            ("/sandbox/skills/mine.md", b"x"),
            ("/sandbox/outputs/ok.txt", b"ok"),
            ("/etc/passwd", b"x"),
            ("/sandbox/outputs", b"x"),
        ]
    )
    assert [(r.path, r.error) for r in results] == [
        ("/sandbox/skills/mine.md", "permission_denied"),
        ("/sandbox/outputs/ok.txt", None),
        ("/etc/passwd", "invalid_path"),
        ("/sandbox/outputs", "is_directory"),
    ]
    assert thread.sandbox_bytes("outputs/ok.txt") == b"ok"


def test_spaces(thread):
    store = thread.backend()
    assert store.write("/spaces/notes/ideas/tea.md", NOTE).path == "/spaces/notes/ideas/tea.md"
    assert thread.space_bytes("notes", "ideas/tea.md") == NOTE.encode()
    assert store.read("/spaces/notes/ideas/tea.md", offset=3).file_data["content"] == "Closed Sunday and Monday\n"
    assert store.edit("/spaces/notes/ideas/tea.md", "Open at 7", "Open at 9").occurrences == 1
    assert store.ls("/spaces").entries == [{"path": "/spaces/notes/", "is_dir": True}]
    assert store.ls("/spaces/notes").entries == [{"path": "/spaces/notes/ideas/", "is_dir": True}]
    assert [e["path"] for e in store.ls("/spaces/notes/ideas").entries] == ["/spaces/notes/ideas/tea.md"]
    assert store.download_files(["/spaces/notes/ideas/tea.md"])[0].content == NOTE.replace("7", "9").encode()
    assert store.download_files(["/spaces/notes/nothing.md"])[0].error == "file_not_found"
    assert store.read("/spaces/notes/nothing.md").error == "no file at '/spaces/notes/nothing.md' (NOT_FOUND)"


def test_the_owner_reads_but_does_not_change_the_sandbox(thread):
    store = thread.backend()
    store.write("/sandbox/outputs/tea.md", NOTE)
    owner = FerryBackend(url=thread.url, token=thread.user_token, thread=thread.id)
    assert owner.read("/sandbox/outputs/tea.md").file_data["content"] == NOTE
    assert [m["path"] for m in owner.glob("**/*.md").matches] == ["/sandbox/outputs/tea.md"]
    refused = owner.write("/sandbox/outputs/other.md", "x")
    assert refused.error.startswith("Error: only the thread's agent (or service_role) may do this")
    assert owner.upload_files([("/sandbox/outputs/other.md", b"x")])[0].error == "permission_denied"

    # Without a thread, a user's token has the spaces only.
    spaces_only = FerryBackend(url=thread.url, token=thread.user_token)
    assert spaces_only.thread is None
    assert spaces_only.ls("/").entries == [{"path": "/spaces/", "is_dir": True}]
    no_thread = spaces_only.read("/sandbox/outputs/tea.md")
    assert no_thread.error.startswith("a /sandbox path needs a thread")
    assert spaces_only.download_files(["/sandbox/outputs/tea.md"])[0].error.startswith("a /sandbox path needs a thread")


def test_an_expired_token_is_reported_as_such(thread):
    store = FerryBackend(url=thread.url, token=thread.expired_agent_token())
    expected = "ferry refused the token (UNAUTHENTICATED: the token has expired). Tokens expire (an agent token after an hour"
    assert store.ls("/sandbox").error.startswith(expected)
    assert store.read("/sandbox/outputs/tea.md").error.startswith(expected)
    assert store.write("/sandbox/outputs/tea.md", "x").error.startswith("Error: " + expected)
    assert store.edit("/sandbox/outputs/tea.md", "a", "b").error.startswith("Error: " + expected)
    assert store.glob("*").error.startswith(expected)
    assert store.grep("x").error.startswith("Error: " + expected)
    assert store.delete("/sandbox/outputs/tea.md").error.startswith("Error: " + expected)
    assert store.upload_files([("/sandbox/outputs/x.bin", b"x")])[0].error.startswith(expected)
    assert store.download_files(["/sandbox/outputs/x.bin"])[0].error.startswith(expected)


def test_an_unreachable_server_is_a_result_not_an_exception(thread):
    store = FerryBackend(url="http://127.0.0.1:9", token=thread.agent_token, retries=0)
    assert store.read("/sandbox/outputs/tea.md").error.startswith("could not reach ferry at http://127.0.0.1:9")
    assert store.write("/sandbox/outputs/tea.md", "x").error.startswith("Error: could not reach ferry")
    assert "(UNREACHABLE)" in store.download_files(["/sandbox/x"])[0].error


def test_batches_are_cut_by_count_and_size_and_large_files_go_alone(thread):
    small = [(f"/sandbox/workspace/s{i}.txt", b"x") for i in range(1001)]
    assert [len(g) for g in _upload_groups(small)] == [1000, 1]
    big = ("/sandbox/outputs/big.bin", bytes(range(256)) * (BATCH_BYTES // 256 + 1))
    half = b"h" * (BATCH_BYTES // 2 + 1)
    groups = _upload_groups([("/a", b"1"), big, ("/b", half), ("/c", half), ("/d", b"2")])
    assert [[p for p, _ in g] for g in groups] == [["/a"], ["/sandbox/outputs/big.bin"], ["/b"], ["/c", "/d"]]

    # Against the server: the large file alone (raw bytes), the rest in one batch, in order.
    store = thread.backend()
    files = [("/sandbox/outputs/one.txt", b"1"), big, ("/spaces/notes/two.txt", b"2"), ("/sandbox/skills/no.md", b"x")]
    assert [(u.path, u.error) for u in store.upload_files(files)] == [
        ("/sandbox/outputs/one.txt", None),
        ("/sandbox/outputs/big.bin", None),
        ("/spaces/notes/two.txt", None),
        ("/sandbox/skills/no.md", "permission_denied"),
    ]
    assert thread.sandbox_bytes("outputs/big.bin") == big[1]
    got = store.download_files(["/sandbox/outputs/big.bin", "/spaces/notes/two.txt", "/sandbox/outputs/one.txt"])
    assert [(d.path, d.content) for d in got] == [
        ("/sandbox/outputs/big.bin", big[1]),
        ("/spaces/notes/two.txt", b"2"),
        ("/sandbox/outputs/one.txt", b"1"),
    ]


def test_async_batches_answer_in_order(thread):
    store = thread.backend()
    files = [(f"/sandbox/outputs/a{i}.txt", str(i).encode()) for i in range(5)] + [("/etc/x", b"x")]
    uploaded = asyncio.run(store.aupload_files(files))
    assert [(u.path, u.error) for u in uploaded] == [(p, None) for p, _ in files[:5]] + [("/etc/x", "invalid_path")]
    got = asyncio.run(store.adownload_files([p for p, _ in files]))
    assert [(d.path, d.content, d.error) for d in got] == [(p, c, None) for p, c in files[:5]] + [("/etc/x", None, "invalid_path")]
