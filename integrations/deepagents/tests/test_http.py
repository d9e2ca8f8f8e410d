"""Retries, routes and refusals, against a scripted transport (no server needed)."""

from __future__ import annotations

import asyncio
import base64
import json

import httpx

from ferry_deepagents import FerryBackend
from ferry_deepagents._http import quote_path, token_claims


def agent_token(thread: str = "t-1") -> str:
    claims = base64.urlsafe_b64encode(json.dumps({"role": "agent", "thread": thread}).encode()).rstrip(b"=").decode()
    return f"e30.{claims}.sig"


class Script:
    """A transport that fails the first `failures` requests of each kind, then answers."""

    def __init__(self, failures: int, fail_with: str = "connect", batch_too_large: bool = False) -> None:
        self.failures = failures
        self.fail_with = fail_with
        # Whether download_files answers every file as too large for a batch (read alone).
        self.batch_too_large = batch_too_large
        self.seen: list[tuple[str, str]] = []

    def answer(self, request: httpx.Request) -> httpx.Response:
        self.seen.append((request.method, request.url.raw_path.decode()))
        if len(self.seen) <= self.failures:
            if self.fail_with == "connect":
                raise httpx.ConnectError("connection refused", request=request)
            return httpx.Response(503, json={"error": {"code": "UNAVAILABLE", "message": "the sandbox is busy"}})
        if request.url.path.endswith("/read_file"):
            return httpx.Response(200, json={"kind": "text", "path": "/sandbox/a.md", "content": "     1\thi\n", "totalLines": 1, "etag": '"x"'})
        if request.url.path.endswith("/write_file"):
            return httpx.Response(200, json={"path": "/sandbox/a.md", "size": 2, "etag": '"x"', "created": True})
        if request.url.path.endswith("/download_files"):
            paths = json.loads(request.content)["paths"]
            if self.batch_too_large:
                files = [{"path": p, "error": {"code": "REQUEST_TOO_LARGE", "message": "read it alone"}} for p in paths]
            else:
                files = [{"path": p, "content": base64.b64encode(b"bytes").decode(), "encoding": "base64"} for p in paths]
            return httpx.Response(200, json={"files": files})
        if request.url.path.endswith("/upload_files"):
            files = [{"path": f["path"], "size": 1, "etag": '"x"', "created": True} for f in json.loads(request.content)["files"]]
            return httpx.Response(200, json={"files": files})
        if request.method == "GET":
            # The file read_file answers ends with a line break: its last byte says so.
            return httpx.Response(200, content=b"\n" if request.url.path.endswith("/sandbox/a.md") else b"bytes")
        return httpx.Response(200, json={})

    def backend(self, retries: int = 2) -> FerryBackend:
        return FerryBackend("http://ferry.test", agent_token(), retries=retries, http_client=httpx.Client(transport=httpx.MockTransport(self.answer)))

    async def abackend(self, client: httpx.AsyncClient) -> FerryBackend:
        return FerryBackend("http://ferry.test", agent_token(), async_http_client=client)


READ = ("POST", "/api/fs/read_file")
LAST_BYTE = ("GET", "/api/threads/t-1/sandbox/a.md")


def test_reads_are_retried_after_a_network_failure():
    script = Script(failures=2)
    assert script.backend().read("/sandbox/a.md").file_data["content"] == "hi\n"
    assert script.seen == [READ, READ, READ, LAST_BYTE]


def test_reads_are_retried_when_the_server_is_busy():
    script = Script(failures=1, fail_with="503")
    assert script.backend().read("/sandbox/a.md").file_data["content"] == "hi\n"
    assert script.seen == [READ, READ, LAST_BYTE]


def test_reads_give_up_after_the_retries():
    script = Script(failures=10)
    result = script.backend(retries=1).read("/sandbox/a.md")
    assert result.error.startswith("could not reach ferry at http://ferry.test: ConnectError")
    assert result.error.endswith("(UNREACHABLE)")
    assert len(script.seen) == 2


def test_changes_are_never_sent_twice():
    script = Script(failures=1)
    assert script.backend().write("/sandbox/a.md", "hi").error.startswith("Error: could not reach ferry")
    assert len(script.seen) == 1
    script = Script(failures=1)
    assert script.backend().edit("/sandbox/a.md", "a", "b").error.startswith("Error: could not reach ferry")
    assert len(script.seen) == 1
    script = Script(failures=1)
    assert script.backend().upload_files([("/sandbox/a.bin", b"x")])[0].error.startswith("could not reach ferry")
    assert len(script.seen) == 1
    script = Script(failures=1, fail_with="503")
    assert script.backend().write("/sandbox/a.md", "hi").error == "Error: the sandbox is busy (UNAVAILABLE)"
    assert len(script.seen) == 1


def test_downloads_are_retried():
    script = Script(failures=1)
    assert script.backend().download_files(["/sandbox/a.bin"])[0].content == b"bytes"
    assert script.seen == [("POST", "/api/fs/download_files")] * 2
    # A file too large for a batch answer is read alone.
    script = Script(failures=0, batch_too_large=True)
    assert script.backend().download_files(["/sandbox/a.bin"])[0].content == b"bytes"
    assert script.seen == [("POST", "/api/fs/download_files"), ("GET", "/api/threads/t-1/sandbox/a.bin")]


def test_async_reads_are_retried():
    script = Script(failures=2)

    async def session():
        async with httpx.AsyncClient(transport=httpx.MockTransport(script.answer)) as client:
            store = await script.abackend(client)
            return await store.aread("/sandbox/a.md")

    assert asyncio.run(session()).file_data["content"] == "hi\n"
    assert script.seen == [READ, READ, READ, LAST_BYTE]


def test_routes():
    # Files read alone (too large for a batch answer) go to their raw routes.
    script = Script(failures=0, batch_too_large=True)
    store = script.backend()
    store.download_files(["/sandbox/out/ünï côde #1?.txt", "/spaces/my notes/a/b.md", "/sandbox/a/../b", "rel.txt"])
    assert script.seen == [
        ("POST", "/api/fs/download_files"),
        ("GET", "/api/threads/t-1/sandbox/out/%C3%BCn%C3%AF%20c%C3%B4de%20%231%3F.txt"),
        ("GET", "/api/spaces/my%20notes/files/a/b.md"),
        ("GET", "/api/threads/t-1/sandbox/a/%2E%2E/b"),
        # Any other form: ferry is asked for a URL, and says what the path is (or refuses it).
        ("POST", "/api/fs/file_url"),
    ]
    # With a thread named, the file operations go to that thread's routes.
    named = FerryBackend("http://ferry.test", "not-a-jwt", thread="t 2", http_client=httpx.Client(transport=httpx.MockTransport(script.answer)))
    named.read("/sandbox/a.md")
    assert script.seen[-2:] == [("POST", "/api/threads/t%202/fs/read_file"), ("GET", "/api/threads/t%202/sandbox/a.md")]


def test_token_claims_and_quoting():
    assert token_claims(agent_token("abc"))["thread"] == "abc"
    assert token_claims("opaque") == {}
    assert quote_path("a/./b c") == "a/%2E/b%20c"


def test_an_answer_that_is_not_an_envelope():
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="<html>bad gateway</html>")

    store = FerryBackend("http://ferry.test", agent_token(), retries=0, http_client=httpx.Client(transport=httpx.MockTransport(answer)))
    assert store.ls("/sandbox").error == "<html>bad gateway</html> (HTTP_502)"
