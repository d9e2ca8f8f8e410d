"""FerryBackend's async methods against a real ferry server. Each test runs in its own event
loop (`asyncio.run`), as a caller may."""

from __future__ import annotations

import asyncio

import httpx

from ferry_deepagents import FerryBackend

NOTE = "# Tea shop\n\nOpen at 7\nClosed Sunday and Monday\n"


def test_async_round_trip(thread):
    store = thread.backend()

    async def session():
        listed = await store.als("/sandbox")
        assert "/sandbox/outputs/" in [e["path"] for e in listed.entries]
        assert (await store.als("/")).entries == [{"path": "/sandbox/", "is_dir": True}, {"path": "/spaces/", "is_dir": True}]

        done = await store.awrite("/sandbox/outputs/tea.md", NOTE)
        assert done.error is None and done.path == "/sandbox/outputs/tea.md"
        # A write replaces what is there.
        assert (await store.awrite("/sandbox/outputs/tea.md", "x")).error is None
        assert (await store.aread("/sandbox/outputs/tea.md")).file_data["content"] == "x"
        await store.awrite("/sandbox/outputs/tea.md", NOTE)

        read = await store.aread("/sandbox/outputs/tea.md", offset=1, limit=2)
        assert read.file_data == {"content": "\nOpen at 7\n", "encoding": "utf-8"}
        assert (read.start_line, read.end_line, read.total_lines, read.next_offset) == (2, 3, 4, 3)
        assert (await store.aread("/sandbox/outputs/missing.md")).error == "no file at '/sandbox/outputs/missing.md' (NOT_FOUND)"

        edited = await store.aedit("/sandbox/outputs/tea.md", "Open at 7", "Open at 8")
        assert edited.occurrences == 1
        ambiguous = await store.aedit("/sandbox/outputs/tea.md", "day", "DAY")
        assert "occurs 2 times" in ambiguous.error
        assert (await store.aedit("/sandbox/outputs/tea.md", "day", "DAY", replace_all=True)).occurrences == 2

        await store.awrite("/spaces/notes/tea.md", "Sunday tea\n")
        globbed = await store.aglob("**/*.md", "/")
        assert [m["path"] for m in globbed.matches] == ["/sandbox/outputs/tea.md", "/spaces/notes/tea.md"]
        grepped = await store.agrep("SunDAY")
        assert grepped.matches == [{"path": "/sandbox/outputs/tea.md", "line": 4, "text": "Closed SunDAY and MonDAY"}]
        assert (await store.agrep("Sunday", "/spaces")).matches == [{"path": "/spaces/notes/tea.md", "line": 1, "text": "Sunday tea"}]
        assert (await store.agrep("Sun", "/", max_count=1)).truncated is True

        assert (await store.adelete("/spaces/notes/tea.md")).path == "/spaces/notes/tea.md"
        assert (await store.als("/spaces/notes/tea.md")).error == "Path '/spaces/notes/tea.md': path_not_found"

    asyncio.run(session())
    assert thread.sandbox_bytes("outputs/tea.md") == NOTE.replace("7", "8").replace("day", "DAY").encode()


def test_async_bytes(thread):
    store = thread.backend()
    blob = bytes(range(256)) * 8
    files = [(f"/sandbox/outputs/part-{i}.bin", blob[i:]) for i in range(12)] + [
        ("/sandbox/skills/nope.md", b"x"),
        ("/spaces/notes/blob.bin", blob),
    ]

    async def session():
        uploaded = await store.aupload_files(files)
        assert [u.path for u in uploaded] == [p for p, _ in files]  # in the order given
        assert [u.error for u in uploaded] == [None] * 12 + ["permission_denied", None]
        paths = [p for p, _ in files] + ["/sandbox/outputs/missing.bin", "/sandbox/outputs"]
        got = await store.adownload_files(paths)
        assert [d.path for d in got] == paths
        assert [d.content for d in got[:12]] == [c for _, c in files[:12]]
        assert got[12].error == "file_not_found"  # skills/nope.md was never written
        assert got[13].content == blob
        assert [d.error for d in got[14:]] == ["file_not_found", "is_directory"]

    asyncio.run(session())


def test_async_refusals(thread):
    expired = FerryBackend(url=thread.url, token=thread.expired_agent_token())
    outside = thread.backend()

    async def session():
        listed = await expired.als("/sandbox")
        assert listed.error.startswith("ferry refused the token (UNAUTHENTICATED: the token has expired)")
        assert (await expired.awrite("/sandbox/outputs/x.md", "x")).error.startswith("Error: ferry refused the token")
        assert (await expired.adownload_files(["/sandbox/outputs/x.md"]))[0].error.startswith("ferry refused the token")
        refused = await outside.aread("/etc/passwd")
        assert refused.error.startswith("'/etc/passwd' is outside the agent's files")
        skills = await outside.awrite("/sandbox/skills/x.md", "x")
        assert skills.error.endswith("(FORBIDDEN)")

    asyncio.run(session())


def test_a_given_async_client_is_used(thread):
    seen = []

    async def session():
        async def note(request: httpx.Request) -> None:
            seen.append(request.url.path)

        async with httpx.AsyncClient(event_hooks={"request": [note]}) as client:
            store = FerryBackend(url=thread.url, token=thread.agent_token, async_http_client=client)
            assert (await store.awrite("/sandbox/outputs/a.txt", "a")).error is None
            assert (await store.aread("/sandbox/outputs/a.txt")).file_data["content"] == "a"

    asyncio.run(session())
    # The read ends at the end of the file: its last byte says whether a line break ends it.
    assert seen == ["/api/fs/write_file", "/api/fs/read_file", f"/api/threads/{thread.id}/sandbox/outputs/a.txt"]
