"""ferry's agent tools driven by the official MCP Python SDK, over both transports.

    python3 mcp_clients.py --ferry PATH/TO/ferry --url http://127.0.0.1:PORT --token USER_TOKEN

The server must be running at --url and accept --token (a user token). For each transport —
stdio (`ferry mcp --url … --token …` started by the SDK's stdio client) and streamable HTTP
(`/mcp` with the bearer header) — this script makes its own thread and agent token, then checks
what an MCP client that has never seen ferry would see: the handshake and instructions, the
tools and their schemas and annotations, and every tool working against the HTTP
API with the API's own rules and errors, unchanged.

Exits non-zero on the first failed check, printing what differed. Used by
crates/ferry/tests/clients/mcp_clients.rs; runnable by hand against any ferry.

Why one file: each transport goes through the same `exercise` and the same checklist, held to the
expected tools, schemas and instruction phrases at the top, so what differs between stdio and HTTP
is only the session each opens; one script keeps that symmetry in view and is what is run.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import struct
import sys
import uuid
import zlib
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

import httpx
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

TOOLS = [
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
    "file_url",
]

# The agent's file tools take the inputs of the server's /api/fs routes, with schemas derived
# from them: checked here by their required and optional fields.
FILE_TOOL_FIELDS: dict[str, tuple[list[str], set[str]]] = {
    "ls": ([], {"path"}),
    "read_file": (["path"], {"offset", "limit", "pages"}),
    "write_file": (["path", "content"], {"encoding", "ifNoneMatch", "ifMatch", "contentType"}),
    "edit_file": (["path", "old_string", "new_string"], {"replace_all", "ifMatch"}),
    "glob": (["pattern"], {"path"}),
    "grep": (["pattern"], {"path", "glob", "ignoreCase", "regex", "maxResults", "documents"}),
    "move_file": (["source", "destination"], {"overwrite"}),
    "delete_file": (["path"], {"recursive", "ifMatch"}),
    "file_url": (["path", "method"], {"expiresIn"}),
    # The command tool takes the body of POST /api/threads/{id}/execute.
    "execute": (["command"], {"timeout", "cwd"}),
}

# The tool schemas docs/mcp.md documents, with the descriptions left out (they are
# checked to exist, not compared word for word).
SCHEMAS: dict[str, dict[str, Any]] = {
    "send_file": {
        "type": "object",
        "properties": {"filePath": {"type": "string"}},
        "required": ["filePath"],
        "additionalProperties": False,
    },
    "publish_file_to_user": {
        "type": "object",
        "properties": {
            "file_path": {"type": "string"},
            "display_name": {"type": "string"},
            "description": {"type": "string"},
        },
        "required": ["file_path", "display_name"],
        "additionalProperties": False,
    },
    "list_space_files": {
        "type": "object",
        "properties": {
            "spaceName": {"type": "string"},
            "dir": {"type": "string"},
            "recursive": {"type": "boolean", "default": False},
        },
        "required": ["spaceName"],
        "additionalProperties": False,
    },
    "read_space_file": {
        "type": "object",
        "properties": {"spaceName": {"type": "string"}, "path": {"type": "string"}},
        "required": ["spaceName", "path"],
        "additionalProperties": False,
    },
    "write_space_file": {
        "type": "object",
        "properties": {
            "spaceName": {"type": "string"},
            "path": {"type": "string"},
            "content": {"type": "string"},
            "contentType": {"type": "string"},
            "ifNoneMatch": {"type": "string", "enum": ["*"]},
            "encoding": {"type": "string", "enum": ["utf-8", "base64"]},
        },
        "required": ["spaceName", "path", "content", "contentType"],
        "additionalProperties": False,
    },
    "delete_space_file": {
        "type": "object",
        "properties": {
            "spaceName": {"type": "string"},
            "path": {"type": "string"},
            "ifMatch": {"type": "string"},
        },
        "required": ["spaceName", "path"],
        "additionalProperties": False,
    },
    "say": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
        "additionalProperties": False,
    },
    "list_uploads": {"type": "object", "properties": {}, "additionalProperties": False},
    "read_upload": {
        "type": "object",
        "properties": {"uploadId": {"type": "string"}, "pages": {"type": "string"}},
        "required": ["uploadId"],
        "additionalProperties": False,
    },
}

def scanned_pdf(pages: int) -> bytes:
    """A PDF of `pages` letter pages, each a grey rectangle and no text: a scan, to a text reader."""
    content = b"0.3 g 72 400 400 300 re f"
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [{' '.join(f'{3 + i} 0 R' for i in range(pages))}] /Count {pages} >>".encode()]
    objects += [f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {3 + pages} 0 R >>".encode() for _ in range(pages)]
    objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _png_1x1() -> bytes:
    """A valid one-pixel RGB PNG, built here."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b"")


ONE_PIXEL_PNG = _png_1x1()

READ_ONLY = {"list_space_files", "read_space_file", "list_uploads", "read_upload", "ls", "read_file", "glob", "grep"}
# A command can remove or overwrite any file it may write.
DESTRUCTIVE = {"delete_space_file", "write_file", "move_file", "delete_file", "execute"}

# Phrases of the spaces guidance and the delivery rule the instructions must carry.
INSTRUCTION_PHRASES = [
    "confirm before overwriting",
    "ideas/",
    "YYYYMMDD-HHmm-<short-title>.md",
    "text/markdown; charset=utf-8",
    "list_space_files first",
    "INVALID_PATH",
    'ifNoneMatch: "*"',
    "never attached automatically",
    "send_file",
    "publish_file_to_user",
    "<file>",
]


class Failure(Exception):
    pass


def check(condition: bool, what: str, *details: Any) -> None:
    if not condition:
        raise Failure(what + "".join(f"\n  {d!r}" for d in details))


def without_descriptions(schema: dict[str, Any]) -> dict[str, Any]:
    stripped = {k: v for k, v in schema.items() if k != "description"}
    if "properties" in schema:
        stripped["properties"] = {
            name: {k: v for k, v in spec.items() if k != "description"} for name, spec in schema["properties"].items()
        }
    return stripped


def failures_in(error: BaseException) -> list[Failure]:
    """The Failures inside an error, which task groups wrap in exception groups."""
    if isinstance(error, Failure):
        return [error]
    if isinstance(error, BaseExceptionGroup):
        return [f for inner in error.exceptions for f in failures_in(inner)]
    return []


def text_of(result: types.CallToolResult) -> str:
    texts = [c.text for c in result.content if isinstance(c, types.TextContent)]
    check(len(texts) == 1, "one text block expected", result)
    return texts[0]


def ok(result: types.CallToolResult, what: str) -> dict[str, Any]:
    check(not result.isError, f"{what} failed", result)
    body = json.loads(text_of(result))
    check(result.structuredContent == body, f"{what}: structuredContent is the text's JSON", result)
    return body


def envelope(result: types.CallToolResult, code: str, what: str) -> dict[str, Any]:
    check(result.isError is True, f"{what}: isError expected", result)
    body = json.loads(text_of(result))
    check(body.get("error", {}).get("code") == code, f"{what}: envelope with {code} expected", body)
    check(bool(body["error"].get("message")), f"{what}: the envelope needs a message", body)
    return body


class Ferry:
    """The HTTP API, for setting up and for checking what the tools did."""

    def __init__(self, url: str, user_token: str) -> None:
        self.url = url.rstrip("/")
        self.user = user_token
        self.http = httpx.AsyncClient(base_url=self.url, timeout=30)

    async def request(self, method: str, path: str, token: str, **kwargs: Any) -> httpx.Response:
        headers = {"authorization": f"Bearer {token}", **kwargs.pop("headers", {})}
        return await self.http.request(method, path, headers=headers, **kwargs)

    async def new_thread(self, title: str) -> tuple[str, str]:
        reply = await self.request("POST", "/api/threads", self.user, json={"title": title})
        check(reply.status_code == 201, "creating a thread", reply.text)
        thread = reply.json()["id"]
        reply = await self.request("POST", f"/api/threads/{thread}/agent-token", self.user)
        check(reply.status_code in (200, 201), "minting an agent token", reply.text)
        return thread, reply.json()["token"]

    async def runs_commands(self, token: str) -> bool:
        reply = await self.request("GET", "/api/limits", token)
        check(reply.status_code == 200, "reading the limits", reply.text)
        return reply.json()["execute"]["enabled"] is True

    async def upload(self, thread: str, path: str) -> dict[str, Any]:
        name = path.rsplit("/", 1)[-1]
        with open(path, "rb") as file:
            reply = await self.request(
                "POST", f"/api/threads/{thread}/uploads", self.user, files={"file": (name, file.read())}
            )
        check(reply.status_code == 201, f"uploading {name}", reply.text)
        return reply.json()["uploads"][0]

    async def events(self, thread: str) -> list[dict[str, Any]]:
        reply = await self.request(
            "GET", f"/api/threads/{thread}/events", self.user, params={"after": 0, "format": "json"}
        )
        check(reply.status_code == 200, "reading events", reply.text)
        body = reply.json()
        return body["events"] if isinstance(body, dict) else body


@asynccontextmanager
async def stdio_session(ferry_exe: str, url: str, token: str) -> AsyncIterator[ClientSession]:
    # The token goes through the environment, as the docs recommend, and --url as a flag: both
    # ways of configuring `ferry mcp` are used.
    params = StdioServerParameters(
        command=ferry_exe, args=["mcp", "--url", url], env={"FERRY_TOKEN": token, "FERRY_LOG": "warn"}
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            yield session


@asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    client = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    async with client:
        async with streamable_http_client(f"{url}/mcp", http_client=client) as (read, write, _):
            async with ClientSession(read, write) as session:
                yield session


async def exercise(name: str, ferry: Ferry, session: ClientSession, thread: str, agent: str) -> None:
    space = f"mcp-{name}-{uuid.uuid4().hex[:8]}"

    # The handshake: who the server is, and the guidance every agent gets.
    init = await session.initialize()
    check(init.serverInfo.name == "ferry", "serverInfo.name", init.serverInfo)
    check(init.capabilities.tools is not None, "the server offers tools", init.capabilities)
    instructions = init.instructions or ""
    for phrase in INSTRUCTION_PHRASES:
        check(phrase in instructions, f"instructions mention {phrase!r}", instructions)

    # Discovery: exactly the eight tools, with the documented schemas and honest annotations.
    listed = (await session.list_tools()).tools
    # `execute` is listed last, where the server runs commands.
    expected = TOOLS + (["execute"] if await ferry.runs_commands(agent) else [])
    check([t.name for t in listed] == expected, "the tools, in order", [t.name for t in listed])
    for tool in listed:
        if tool.name in FILE_TOOL_FIELDS:
            required, optional = FILE_TOOL_FIELDS[tool.name]
            schema = tool.inputSchema
            check(schema.get("type") == "object" and schema.get("additionalProperties") is False, f"{tool.name}: a strict object", schema)
            check(sorted(schema.get("required", [])) == sorted(required), f"{tool.name}: required fields", schema)
            check(set(schema["properties"]) == set(required) | optional, f"{tool.name}: fields", schema)
        else:
            check(
                without_descriptions(tool.inputSchema) == SCHEMAS[tool.name],
                f"{tool.name}: input schema",
                tool.inputSchema,
                SCHEMAS[tool.name],
            )
        for prop, spec in tool.inputSchema.get("properties", {}).items():
            check(bool(spec.get("description")), f"{tool.name}.{prop} has a description")
        check(bool(tool.description) and len(tool.description) > 40, f"{tool.name}: description")
        hints = tool.annotations
        check(hints is not None, f"{tool.name}: annotations")
        check(hints.readOnlyHint is (tool.name in READ_ONLY), f"{tool.name}: readOnlyHint", hints)
        if tool.name in READ_ONLY:
            check(hints.idempotentHint is True, f"{tool.name}: idempotentHint", hints)
        destructive = tool.name in DESTRUCTIVE
        check(hints.destructiveHint is destructive, f"{tool.name}: destructiveHint", hints)
        if tool.name in ("write_space_file", "delete_space_file"):
            check(hints.idempotentHint is True, f"{tool.name}: idempotentHint", hints)

    # Spaces: write → read → list a Markdown note.
    note = "# Tea shop\n\nOpen at 7; matcha on Fridays. — ünïcödé ✓\n"
    path = "ideas/20261121-0930-tea-shop.md"
    written = ok(
        await session.call_tool(
            "write_space_file",
            {"spaceName": space, "path": path, "content": note, "contentType": "text/markdown; charset=utf-8"},
        ),
        "write_space_file",
    )
    check(written["path"] == path and written["size"] == len(note.encode()), "write answer", written)
    check(written["contentType"] == "text/markdown; charset=utf-8" and written.get("etag"), "write answer", written)

    read = ok(await session.call_tool("read_space_file", {"spaceName": space, "path": path}), "read_space_file")
    check(set(read) == {"contentBase64", "contentType", "size"}, "read answer fields", read)
    check(base64.b64decode(read["contentBase64"]).decode() == note, "round trip", read)
    check(read["contentType"] == "text/markdown; charset=utf-8" and read["size"] == len(note.encode()), "read", read)

    listing = ok(await session.call_tool("list_space_files", {"spaceName": space}), "list_space_files")
    check(listing["files"] == [{"path": "ideas", "type": "dir"}], "top level lists the folder", listing)
    listing = ok(
        await session.call_tool("list_space_files", {"spaceName": space, "dir": "ideas", "recursive": True}),
        "list_space_files recursive",
    )
    check([f["path"] for f in listing["files"]] == [path], "the note is listed", listing)
    check(listing["files"][0]["etag"] == written["etag"], "listing carries the etag", listing)
    direct = await ferry.request("GET", f"/api/spaces/{space}/files", ferry.user, params={"dir": "ideas", "recursive": "true"})
    check(direct.json() == listing, "the listing is the server's, unchanged", direct.text, listing)

    # Create-only on an existing path: the server's 409 envelope, byte for byte, with isError.
    conflict = await session.call_tool(
        "write_space_file",
        {"spaceName": space, "path": path, "content": "other", "contentType": "text/plain", "ifNoneMatch": "*"},
    )
    envelope(conflict, "ALREADY_EXISTS", "create-only on an existing path")
    direct = await ferry.request(
        "PUT",
        f"/api/spaces/{space}/files/{path}",
        ferry.user,
        headers={"content-type": "text/plain", "if-none-match": "*"},
        content=b"other",
    )
    check(direct.status_code == 409 and text_of(conflict) == direct.text, "envelope unchanged", text_of(conflict), direct.text)
    unchanged = ok(await session.call_tool("read_space_file", {"spaceName": space, "path": path}), "read after 409")
    check(base64.b64decode(unchanged["contentBase64"]).decode() == note, "409 left the note alone")

    # Binary content goes in and out as base64.
    png = bytes(range(256)) * 3
    ok(
        await session.call_tool(
            "write_space_file",
            {"spaceName": space, "path": "images/dot.png", "content": base64.b64encode(png).decode(), "contentType": "image/png"},
        ),
        "binary write",
    )
    back = ok(await session.call_tool("read_space_file", {"spaceName": space, "path": "images/dot.png"}), "binary read")
    check(base64.b64decode(back["contentBase64"]) == png and back["contentType"] == "image/png", "binary round trip")

    # Delete: a stale etag is refused and the file stays; the current one removes it, and the
    # folder it leaves empty goes with it.
    envelope(
        await session.call_tool("delete_space_file", {"spaceName": space, "path": "images/dot.png", "ifMatch": '"0000"'}),
        "PRECONDITION_FAILED",
        "delete with a stale etag",
    )
    listed = ok(await session.call_tool("list_space_files", {"spaceName": space, "dir": "images"}), "list images")
    current = listed["files"][0]["etag"]
    deleted = ok(
        await session.call_tool("delete_space_file", {"spaceName": space, "path": "images/dot.png", "ifMatch": current}),
        "delete_space_file",
    )
    check(deleted == {"path": "images/dot.png", "deleted": True}, "delete answer", deleted)
    listing = ok(await session.call_tool("list_space_files", {"spaceName": space}), "list after delete")
    check(listing["files"] == [{"path": "ideas", "type": "dir"}], "the emptied folder is gone", listing)
    envelope(
        await session.call_tool("delete_space_file", {"spaceName": space, "path": "images/dot.png"}),
        "NOT_FOUND",
        "delete twice",
    )

    # The server's rules hold unchanged: traversal, bad names, a missing type, a missing file.
    for bad in ["../secret.md", "ideas/../../etc/passwd", "/etc/passwd", "a//b.md", "%2e%2e/x.md"]:
        result = await session.call_tool("read_space_file", {"spaceName": space, "path": bad})
        if bad == "%2e%2e/x.md":
            # Written literally, percent signs are part of the name: encoded once, decoded once.
            envelope(result, "NOT_FOUND", f"read {bad!r}")
        else:
            envelope(result, "INVALID_PATH", f"read {bad!r}")
    envelope(
        await session.call_tool("write_space_file", {"spaceName": space, "path": "ideas/../x.md", "content": "x", "contentType": "text/plain"}),
        "INVALID_PATH",
        "write with ..",
    )
    envelope(await session.call_tool("list_space_files", {"spaceName": ".hidden"}), "INVALID_PATH", "bad space name")
    envelope(
        await session.call_tool("write_space_file", {"spaceName": space, "path": "x.md", "content": "x", "contentType": ""}),
        "UNSUPPORTED_MEDIA_TYPE",
        "empty content type",
    )
    envelope(await session.call_tool("read_space_file", {"spaceName": space, "path": "ideas/none.md"}), "NOT_FOUND", "missing file")
    envelope(
        await session.call_tool("read_space_file", {"spaceName": space, "path": path, "extra": 1}),
        "INVALID_REQUEST",
        "an argument outside the schema",
    )

    # Deliverables: an agent's file in the sandbox, published and sent.
    report = "# Report\n\nAll good.\n"
    put = await ferry.request(
        "PUT", f"/api/threads/{thread}/sandbox/outputs/report.md", agent, headers={"content-type": "text/markdown"}, content=report.encode()
    )
    check(put.status_code in (200, 201), "writing the sandbox file", put.text)

    published = await session.call_tool(
        "publish_file_to_user",
        {"file_path": "/sandbox/outputs/report.md", "display_name": "Weekly Report", "description": "This week"},
    )
    check(not published.isError, "publish failed", published)
    answer = json.loads(next(c.text for c in published.content if isinstance(c, types.TextContent)))
    check(published.structuredContent == answer, "publish: structuredContent", published)
    check(answer["success"] is True and answer["display_name"] == "Weekly Report", "publish answer", answer)
    check(answer["sandbox_path"] == "/sandbox/outputs/report.md" and answer["revision"] == 1, "publish answer", answer)
    links = [c for c in published.content if isinstance(c, types.ResourceLink)]
    check(len(links) == 1, "publish returns one resource_link", published.content)
    link = links[0]
    expected_uri = f"{ferry.url}/api/threads/{thread}/published/{answer['id']}/content?revision=1"
    check(str(link.uri) == expected_uri, "resource_link uri", str(link.uri), expected_uri)
    check(link.name == "report.md" and link.title == "Weekly Report", "resource_link names", link)
    check(link.mimeType == answer["mime_type"] and link.size == len(report.encode()), "resource_link type and size", link)
    fetched = await ferry.request("GET", str(link.uri), ferry.user)
    check(fetched.status_code == 200 and fetched.content == report.encode(), "the link serves the file", fetched.status_code)
    again = ok(
        await session.call_tool("publish_file_to_user", {"file_path": "/sandbox/outputs/report.md", "display_name": "Weekly Report"}),
        "publishing a revision",
    )
    check(again["id"] == answer["id"] and again["revision"] == 2, "same display_name, new revision", again)
    envelope(
        await session.call_tool("publish_file_to_user", {"file_path": "/sandbox/outputs/none.pdf", "display_name": "X"}),
        "NOT_FOUND",
        "publishing a missing file",
    )
    # The user sees each publish start and end, through MCP as through HTTP: three publishes,
    # each a file_publishing then a file_published or file_publish_failed with its publishId.
    lifecycle = [e for e in await ferry.events(thread) if e["type"].startswith("file_publish")]
    kinds = [e["type"] for e in lifecycle]
    check(kinds == ["file_publishing", "file_published"] * 2 + ["file_publishing", "file_publish_failed"], "publish events", kinds)
    for start, end in zip(lifecycle[::2], lifecycle[1::2]):
        check(start["publishId"] and start["publishId"] == end["publishId"], "one publishId per publish", start, end)
    check(lifecycle[-1]["error"]["code"] == "NOT_FOUND", "the failure carries the envelope", lifecycle[-1])

    sent = ok(await session.call_tool("send_file", {"filePath": "/sandbox/outputs/report.md"}), "send_file")
    check(sent["filename"] == "report.md" and sent["encoding"] == "utf-8", "send_file answer", sent)
    events = await ferry.events(thread)
    file_sends = [e for e in events if e["type"] == "file_send"]
    check(len(file_sends) == 1, "one file_send event", events)
    contents = file_sends[0]["fileContents"]
    check(contents["filename"] == "report.md" and contents["content"] == report, "file_send carries the file", contents)
    check(file_sends[0]["content"] == "Sent file: report.md", "file_send content", file_sends[0])
    check(any(e["type"] == "file_published" for e in events), "publish produced file_published", events)

    put = await ferry.request(
        "PUT", f"/api/threads/{thread}/sandbox/outputs/chart.png", agent, headers={"content-type": "image/png"}, content=png
    )
    check(put.status_code in (200, 201), "writing a binary sandbox file", put.text)
    refused = envelope(
        await session.call_tool("send_file", {"filePath": "/sandbox/outputs/chart.png"}),
        "UNSUPPORTED_FILE_TYPE",
        "send_file of a PNG",
    )
    check("publish_file_to_user" in refused["error"]["message"], "the refusal points to publish", refused)
    envelope(await session.call_tool("send_file", {"filePath": "/sandbox/outputs/none.md"}), "NOT_FOUND", "send_file of a missing file")

    # Say mode: each <say> block is one message; a <file> tag attaches to the last.
    said = ok(
        await session.call_tool(
            "say",
            {"text": "<say>Here is the report</say> thinking… <say>Anything else?</say><file mode=\"doc\">/sandbox/outputs/report.md</file>"},
        ),
        "say",
    )
    check(len(said["messages"]) == 2, "two messages", said)
    check(len(said["files"]) == 1, "one file attached", said)
    events = await ferry.events(thread)
    messages = [e for e in events if e["type"] == "message" and e.get("role") == "agent"]
    check([m["content"] for m in messages] == ["Here is the report", "Anything else?"], "say messages", messages)
    check(len(messages[-1].get("files") or []) == 1 and not messages[0].get("files"), "the file is on the last message", messages)

    # The user's uploads, with their previews.
    await upload_as_user(ferry, thread, "sales.csv", "text/csv", b"region,q1,q2\nNorth,125000,132000\nSouth,98000,101000\n")
    uploads = ok(await session.call_tool("list_uploads", {}), "list_uploads")
    check([u["fileName"] for u in uploads["uploads"]] == ["sales.csv"], "list_uploads", uploads)
    check("North" in (uploads["uploads"][0].get("preview") or ""), "the upload's preview", uploads)
    check(uploads["uploads"][0]["sandboxPath"] == "/sandbox/user_uploads/sales.csv", "sandboxPath", uploads)

    # read_upload: a document is its note with the preview; an image is the image itself.
    csv_id = uploads["uploads"][0]["id"]
    looked = await session.call_tool("read_upload", {"uploadId": csv_id})
    check(not looked.isError and [c.type for c in looked.content] == ["text"], "read_upload of a document", looked)
    check("<Preview>" in looked.content[0].text and "North" in looked.content[0].text, "the note carries the preview", looked)
    image_id = (await upload_as_user(ferry, thread, "dot.png", "image/png", ONE_PIXEL_PNG))["id"]
    looked = await session.call_tool("read_upload", {"uploadId": image_id})
    check([c.type for c in looked.content] == ["image", "text"], "read_upload of an image: image, then note", looked)
    check(looked.content[0].mimeType == "image/png", "the image's type", looked.content[0].mimeType)
    check(base64.b64decode(looked.content[0].data) == ONE_PIXEL_PNG, "a small PNG is shown as it is", looked)
    check("<UserUploadedImage" in looked.content[1].text, "the image's hidden note", looked)
    envelope(await session.call_tool("read_upload", {"uploadId": "nope"}), "NOT_FOUND", "read_upload of an unknown id")

    # A scanned PDF: no text, so the model is shown its pages as images.
    scan_id = (await upload_as_user(ferry, thread, "scan.pdf", "application/pdf", scanned_pdf(2)))["id"]
    looked = await session.call_tool("read_upload", {"uploadId": scan_id})
    check(not looked.isError, "read_upload of a scan", looked)
    check([c.type for c in looked.content] == ["text", "image", "text", "image", "text"], "the note, then each page's image and text", looked)
    check(looked.content[1].mimeType == "image/png" and base64.b64decode(looked.content[1].data)[:4] == b"\x89PNG", "a page is a PNG", looked.content[1].mimeType)
    check("Page 2 of 2 of scan.pdf: no text on this page" in looked.content[4].text, "a page without text says so", looked.content[4])
    one_page = await session.call_tool("read_upload", {"uploadId": scan_id, "pages": "2"})
    check([c.type for c in one_page.content] == ["text", "image", "text"], "read_upload of one page", one_page)
    envelope(await session.call_tool("read_upload", {"uploadId": scan_id, "pages": "3"}), "INVALID_REQUEST", "a page the PDF does not have")
    pages = await session.call_tool("read_file", {"path": "/sandbox/user_uploads/scan.pdf", "pages": "1"})
    check([c.type for c in pages.content] == ["image", "text"], "read_file with pages: the page's image and text", pages)
    check((pages.structuredContent or {}).get("totalPages") == 2, "read_file with pages says how many there are", pages.structuredContent)

    await agent_file_system(name, ferry, session, thread, agent)
    print(f"{name}: ok")


async def agent_file_system(name: str, ferry: Ferry, session: ClientSession, thread: str, agent: str) -> None:
    """An agent holding only its token does its whole job through the file tools: it reads an
    upload, writes a report, edits one line, greps, moves and deletes, has a chart uploaded
    with a file URL as `curl -T` would, and publishes both; each change is seen at once through
    the HTTP API with the same ETag."""
    csv = b"region,revenue\nnorth,10\nsouth,12\n"
    await upload_as_user(ferry, thread, "regions-q3.csv", "text/csv", csv)
    upload = ok(await session.call_tool("ls", {"path": "/sandbox/user_uploads"}), "ls of the uploads")
    check("/sandbox/user_uploads/regions-q3.csv" in [e["path"] for e in upload["entries"]], "the upload is listed", upload)
    read = await session.call_tool("read_file", {"path": "/sandbox/user_uploads/regions-q3.csv"})
    check(not read.isError, "read_file of the upload", read)
    check(text_of(read) == "     1\tregion,revenue\n     2\tnorth,10\n     3\tsouth,12\n", "numbered as cat -n", text_of(read))
    check(read.structuredContent["totalLines"] == 3, "totalLines", read.structuredContent)

    report = "# Sales\n\nNorth: 10\nSouth: 12\n"
    written = ok(await session.call_tool("write_file", {"path": "/sandbox/outputs/sales-report.md", "content": report}), "write_file")
    check(written["created"] is True and written["size"] == len(report), "write answer", written)
    edited = ok(
        await session.call_tool(
            "edit_file",
            {"path": "/sandbox/outputs/sales-report.md", "old_string": "North: 10", "new_string": "North: 11", "ifMatch": written["etag"]},
        ),
        "edit_file",
    )
    check(edited["replacements"] == 1, "one replacement", edited)
    stale = await session.call_tool(
        "edit_file",
        {"path": "/sandbox/outputs/sales-report.md", "old_string": "South", "new_string": "S", "ifMatch": written["etag"]},
    )
    envelope(stale, "PRECONDITION_FAILED", "an edit of a version that changed since")
    twice = await session.call_tool("edit_file", {"path": "/sandbox/outputs/sales-report.md", "old_string": "th:", "new_string": "x"})
    check("2 times" in envelope(twice, "INVALID_REQUEST", "an ambiguous edit")["error"]["message"], "the count is said")
    via_http = await ferry.request("GET", f"/api/threads/{thread}/sandbox/outputs/sales-report.md", ferry.user)
    check(via_http.text == report.replace("North: 10", "North: 11"), "the edit is seen over HTTP", via_http.text)
    check(via_http.headers["etag"] == edited["etag"], "with the same ETag", via_http.headers, edited)

    found = ok(await session.call_tool("grep", {"pattern": "south", "ignoreCase": True, "glob": "{outputs/sales-*.md,user_uploads/regions-*.csv}"}), "grep")
    check(
        [(m["path"], m["line"]) for m in found["matches"]]
        == [("/sandbox/outputs/sales-report.md", 4), ("/sandbox/user_uploads/regions-q3.csv", 3)],
        "grep finds across the sandbox",
        found,
    )
    globbed = ok(await session.call_tool("glob", {"pattern": "**/*.md"}), "glob")
    check("/sandbox/outputs/sales-report.md" in globbed["paths"], "glob", globbed)

    ok(await session.call_tool("write_file", {"path": "scratch/notes.txt", "content": "draft"}), "a scratch file")
    moved = ok(
        await session.call_tool("move_file", {"source": "/sandbox/outputs/sales-report.md", "destination": "/sandbox/outputs/final/sales-report.md"}),
        "move_file",
    )
    check(moved["etag"] == edited["etag"], "a move keeps the ETag", moved)
    gone = await ferry.request("GET", f"/api/threads/{thread}/sandbox/outputs/sales-report.md", ferry.user)
    check(gone.status_code == 404, "the old path is gone at once", gone.status_code)
    envelope(await session.call_tool("delete_file", {"path": "/sandbox/workspace/scratch"}), "INVALID_REQUEST", "a folder without recursive")
    deleted = ok(await session.call_tool("delete_file", {"path": "/sandbox/workspace/scratch", "recursive": True}), "delete_file")
    check(deleted["deleted"] == 1, "one file deleted", deleted)

    url = ok(await session.call_tool("file_url", {"path": "/sandbox/outputs/sales-chart.png", "method": "PUT"}), "file_url")
    # As the agent's own code would upload it: no token, no content type.
    async with httpx.AsyncClient(timeout=30) as outside:
        put = await outside.put(url["url"], content=ONE_PIXEL_PNG)
        check(put.status_code == 201, "the file URL takes the upload", put.status_code, put.text)
        refused = await outside.get(url["url"])
        check(refused.status_code == 403, "a PUT URL does not read", refused.status_code)
    listed = ok(await session.call_tool("ls", {"path": "/sandbox/outputs"}), "ls of the outputs")
    chart = [e for e in listed["entries"] if e["path"] == "/sandbox/outputs/sales-chart.png"]
    check(len(chart) == 1 and chart[0]["etag"] == put.headers["etag"], "the chart is there with its ETag", listed)
    image = await session.call_tool("read_file", {"path": "/sandbox/outputs/sales-chart.png"})
    check([c.type for c in image.content] == ["image", "text"], "read_file of an image: the image, then its name", image)

    for file_path, title in [("/sandbox/outputs/final/sales-report.md", "Sales report"), ("/sandbox/outputs/sales-chart.png", "Sales chart")]:
        ok(await session.call_tool("publish_file_to_user", {"file_path": file_path, "display_name": title}), f"publish {title}")
    published = await ferry.request("GET", f"/api/threads/{thread}/published", ferry.user)
    names = sorted(p["display_name"] for p in published.json()["files"])
    check({"Sales chart", "Sales report"} <= set(names), "both are published", names)

    await seen_through_s3(ferry, thread, agent, edited["etag"])

    # The same files as resources.
    templates = (await session.list_resource_templates()).resourceTemplates
    check(
        [t.uriTemplate for t in templates]
        == [
            "ferry://sandbox/{+path}",
            "ferry://spaces/{space}/{+path}",
            "ferry://uploads/{uploadId}",
            "ferry://uploads/{uploadId}/pages/{page}",
            "ferry://published/{publishedId}",
            "ferry://published/{publishedId}/revisions/{revision}",
            "ferry://published/{publishedId}/revisions/{revision}/preview",
            "ferry://published/{publishedId}/revisions/{revision}/pages/{page}",
        ],
        "the resource templates",
        templates,
    )
    report_uri = "ferry://sandbox/outputs/final/sales-report.md"
    as_resource = (await session.read_resource(report_uri)).contents
    check(len(as_resource) == 1 and as_resource[0].text == report.replace("North: 10", "North: 11"), "a text resource", as_resource)
    chart_resource = (await session.read_resource("ferry://sandbox/outputs/sales-chart.png")).contents[0]
    check(base64.b64decode(chart_resource.blob) == ONE_PIXEL_PNG, "a binary resource comes as base64", chart_resource)
    resources = (await session.list_resources()).resources
    check(any(str(r.uri).startswith("ferry://uploads/") for r in resources), "uploads are listed as resources", resources)
    check(any(str(r.uri).startswith("ferry://published/") for r in resources), "published files are listed", resources)
    try:
        await session.read_resource("ferry://sandbox/outputs/none.md")
        check(False, "a missing resource is an error")
    except Exception as error:  # noqa: BLE001 - the SDK raises McpError
        check("NOT_FOUND" in str(error), "a missing resource says NOT_FOUND", str(error))

    # The user's spaces through the same tools.
    space_note = f"/spaces/mcp-fs-{name}-{uuid.uuid4().hex[:6]}/ideas/plan.md"
    note = ok(await session.call_tool("write_file", {"path": space_note, "content": "plan\n"}), "write_file in a space")
    space, rest = space_note.removeprefix("/spaces/").split("/", 1)
    via_spaces = await ferry.request("GET", f"/api/spaces/{space}/files/{rest}", ferry.user)
    check(via_spaces.headers.get("etag") == note["etag"], "a space file written by the tool, over HTTP", via_spaces.headers)
    print(f"{name}: the agent's file system ok")


async def seen_through_s3(ferry: Ferry, thread: str, agent: str, etag: str) -> None:
    """What the tools did, as an S3 client sees it: the moved report at its new key only, with
    the ETag the edit answered."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError:
        print("S3 view SKIPPED: boto3 is not installed (pip install -r tests/s3/requirements.txt)")
        return
    s3 = boto3.client(
        "s3",
        endpoint_url=ferry.url + "/s3",
        aws_access_key_id="ferry",
        aws_secret_access_key="ferry",
        aws_session_token=agent,
        region_name="us-east-1",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )
    bucket = f"sandbox-{thread}"
    listed = await asyncio.to_thread(s3.list_objects_v2, Bucket=bucket, Prefix="outputs/")
    keys = [o["Key"] for o in listed.get("Contents", [])]
    check("outputs/final/sales-report.md" in keys and "outputs/sales-report.md" not in keys, "S3 sees the move", keys)
    head = await asyncio.to_thread(s3.head_object, Bucket=bucket, Key="outputs/final/sales-report.md")
    check(head["ETag"] == etag, "S3 answers the ETag the edit answered", head["ETag"], etag)
    scratch = await asyncio.to_thread(s3.list_objects_v2, Bucket=bucket, Prefix="workspace/scratch/")
    check(not scratch.get("Contents"), "S3 sees the recursive delete", scratch.get("Contents"))


async def subscriptions_over_stdio(ferry_exe: str, ferry: Ferry, thread: str, agent: str) -> None:
    """A client subscribed to a file is told when it changes through another door (here the
    HTTP API), and no longer once it unsubscribed."""
    updated: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ResourceUpdatedNotification):
            await updated.put(str(message.root.params.uri))

    params = StdioServerParameters(
        command=ferry_exe, args=["mcp", "--url", ferry.url], env={"FERRY_TOKEN": agent, "FERRY_LOG": "warn"}
    )
    space = f"watch-{uuid.uuid4().hex[:8]}"
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            check(init.capabilities.resources is not None and init.capabilities.resources.subscribe is True,
                  "a stdio session can subscribe", init.capabilities)
            sandbox_uri = "ferry://sandbox/outputs/watched.md"
            space_uri = f"ferry://spaces/{space}/w.md"
            put = await ferry.request("PUT", f"/api/threads/{thread}/sandbox/outputs/watched.md", agent,
                                      headers={"content-type": "text/markdown"}, content=b"one")
            check(put.status_code == 201, "the watched file exists", put.text)
            await session.subscribe_resource(sandbox_uri)
            await session.subscribe_resource(space_uri)
            await ferry.request("PUT", f"/api/threads/{thread}/sandbox/outputs/watched.md", agent,
                                headers={"content-type": "text/markdown"}, content=b"two")
            got = await asyncio.wait_for(updated.get(), 10)
            check(got == sandbox_uri, "told of the sandbox file's change", got)
            await ferry.request("PUT", f"/api/spaces/{space}/files/w.md", ferry.user,
                                headers={"content-type": "text/markdown"}, content=b"note")
            got = await asyncio.wait_for(updated.get(), 10)
            check(got == space_uri, "told of the space file's change", got)
            await session.unsubscribe_resource(sandbox_uri)
            await ferry.request("PUT", f"/api/threads/{thread}/sandbox/outputs/watched.md", agent,
                                headers={"content-type": "text/markdown"}, content=b"three")
            await asyncio.sleep(2.5)
            check(updated.empty(), "no word after unsubscribing", updated.qsize())
    print("resource subscriptions over stdio: ok")


async def upload_as_user(ferry: Ferry, thread: str, name: str, content_type: str, content: bytes) -> dict[str, Any]:
    """Uploads one file into the thread as its owner; answers the upload."""
    uploaded = await ferry.request(
        "POST",
        f"/api/threads/{thread}/uploads",
        ferry.user,
        params={"filename": name},
        headers={"content-type": content_type},
        content=content,
    )
    check(uploaded.status_code == 201, f"uploading {name}", uploaded.text)
    return uploaded.json()["uploads"][0]


async def user_token_without_thread(ferry_exe: str, ferry: Ferry) -> None:
    async with stdio_session(ferry_exe, ferry.url, ferry.user) as session:
        await session.initialize()
        result = await session.call_tool("list_uploads", {})
        body = envelope(result, "INVALID_REQUEST", "a thread tool with a user token")
        check("agent token" in body["error"]["message"], "the message says what to use", body)
        ok(await session.call_tool("list_space_files", {"spaceName": "anything"}), "space tools work with a user token")
    print("user token over stdio: ok")


# The seed's checklist, as an agent holding only an agent token does it through MCP: its code
# reads the person's uploads with the document libraries, changes the Word document into
# outputs/, and publishes it; the person downloads the change, and the upload stays as it was.
CHECKLIST = {
    "pandas/openpyxl read an uploaded XLSX": (
        "python3 -c \"import pandas as pd; d = pd.read_excel('/sandbox/user_uploads/seed.xlsx', "
        "sheet_name='Sheet1'); print(int(d.loc[d.Revenue == 'North', 'Q4'].iloc[0]))\"",
        "156000",
    ),
    "openpyxl reads the sheets": (
        "python3 -c \"import openpyxl; print(openpyxl.load_workbook('/sandbox/user_uploads/seed.xlsx').sheetnames)\"",
        "['Sheet1', 'Orders', 'Kinds']",
    ),
    "pypdf reads an uploaded PDF": (
        "python3 -c \"import pypdf; r = pypdf.PdfReader('/sandbox/user_uploads/two-pages.pdf'); "
        "print(len(r.pages), r.pages[1].extract_text().strip())\"",
        "2 Page two says hello.",
    ),
}

EDIT_DOCX = '''import docx
d = docx.Document("/sandbox/user_uploads/report.docx")
d.paragraphs[0].text = "Quarterly Report (reviewed)"
d.add_paragraph("Checked by the agent.")
d.save("/sandbox/outputs/report-reviewed.docx")
print("saved")
'''


async def seed_checklist(
    name: str, ferry: Ferry, session: ClientSession, thread: str, fixtures: str
) -> None:
    for upload in ("seed.xlsx", "two-pages.pdf", "report.docx"):
        await ferry.upload(thread, f"{fixtures}/{upload}")
    # The documents are searched in their text, each match saying where it is.
    plain = ok(await session.call_tool("grep", {"pattern": "South", "path": "/sandbox/user_uploads"}), "grep")
    check(plain["matches"] == [], "without documents, their bytes hold no such word", plain)
    found = ok(
        await session.call_tool("grep", {"pattern": "South", "path": "/sandbox/user_uploads", "documents": True}),
        "grep with documents",
    )
    places = [(m["path"].rsplit("/", 1)[1], m.get("sheet"), m.get("row"), m.get("page"), m["text"]) for m in found["matches"]]
    check(
        places
        == [
            ("report.docx", None, None, None, "South | 115000 | 122000"),
            ("seed.xlsx", "Sheet1", 3, None, "| South | 98000 | 103000 | 115000 | 122000 |"),
        ],
        f"grep finds a word inside a workbook with its sheet and row, over {name}",
        found,
    )
    paged = ok(
        await session.call_tool("grep", {"pattern": "hello", "path": "/sandbox/user_uploads", "documents": True}),
        "grep of a PDF",
    )
    check([(m.get("page"), m["line"]) for m in paged["matches"]] == [(2, 6)], "and a PDF's page", paged)
    if not await ferry.runs_commands(ferry.user):
        reason = (await ferry.request("GET", "/api/limits", ferry.user)).json()["execute"].get("reason")
        print(f"SKIPPED: the seed's checklist over {name}: {reason}", file=sys.stderr)
        check(os.environ.get("FERRY_CI") != "1", "commands must run in CI", reason)
        return
    original = await ferry.request("GET", f"/api/threads/{thread}/sandbox/user_uploads/report.docx", ferry.user)
    for what, (command, expected) in CHECKLIST.items():
        result = await session.call_tool("execute", {"command": command})
        answer = result.structuredContent or {}
        check(not result.isError and answer.get("exitCode") == 0, what, result)
        check(answer["output"].strip() == expected, what, answer["output"])
        check(text_of(result).endswith("[exit code 0]"), f"{what}: the text says how it ended", result)
    # python-docx changes the upload into outputs/, its output streamed as progress.
    script = await session.call_tool("write_file", {"path": "/sandbox/workspace/edit.py", "content": EDIT_DOCX})
    ok(script, "writing the script")
    told: list[str] = []

    async def progress(_progress: float, _total: float | None, message: str | None) -> None:
        told.append(message or "")

    result = await session.call_tool("execute", {"command": "python3 edit.py"}, progress_callback=progress)
    check(result.structuredContent["exitCode"] == 0, "python-docx edits the document", result)
    check("saved" in "".join(told), "the output came as progress", told)
    published = await session.call_tool(
        "publish_file_to_user",
        {"file_path": "/sandbox/outputs/report-reviewed.docx", "display_name": "Reviewed report"},
    )
    check(not published.isError, "publishing the changed document", published)
    file_id = published.structuredContent["id"]
    # The person downloads it with the change; the upload is unchanged.
    download = await ferry.request("GET", f"/api/threads/{thread}/published/{file_id}/content", ferry.user)
    check(download.status_code == 200, "downloading the published file", download.text)
    reread = await session.call_tool(
        "execute",
        {
            "command": "python3 -c \"import docx; d = docx.Document('/sandbox/outputs/report-reviewed.docx'); "
            "print(d.paragraphs[0].text); print(d.paragraphs[-1].text)\""
        },
    )
    check(
        reread.structuredContent["output"] == "Quarterly Report (reviewed)\nChecked by the agent.\n",
        "the change is in the document",
        reread.structuredContent,
    )
    check(zip_entry(download.content, "word/document.xml").count(b"(reviewed)") == 1, "the download has it", download.headers)
    after = await ferry.request("GET", f"/api/threads/{thread}/sandbox/user_uploads/report.docx", ferry.user)
    check(after.content == original.content, "the upload is unchanged")
    # The person sees each command in the thread.
    ran = [e for e in await ferry.events(thread) if e["type"] == "command_executed"]
    check(len(ran) == len(CHECKLIST) + 2, "every command is an event", [e["command"] for e in ran])
    print(f"seed checklist over {name}: ok")


def zip_entry(archive: bytes, name: str) -> bytes:
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(archive)) as z:
        return z.read(name)


async def unreachable_server(ferry_exe: str) -> None:
    # Port 9 (discard) on loopback: nothing listens there. The tool says so; nothing crashes.
    async with stdio_session(ferry_exe, "http://127.0.0.1:9", "token") as session:
        await session.initialize()
        result = await session.call_tool("list_space_files", {"spaceName": "s"})
        check(result.isError is True, "an unreachable server is a tool error", result)
        check(text_of(result).startswith("could not reach the ferry server"), "it says why", result)
        check(len((await session.list_tools()).tools) == len(TOOLS), "the session goes on")
    print("unreachable server over stdio: ok")


async def http_needs_a_token(ferry: Ferry) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    headers = {"accept": "application/json, text/event-stream"}
    reply = await ferry.http.post("/mcp", json=init, headers=headers)
    check(reply.status_code == 401, "/mcp without a token", reply.status_code, reply.text)
    check(reply.json()["error"]["code"] == "UNAUTHENTICATED", "/mcp: the 401 envelope", reply.text)
    reply = await ferry.http.post("/mcp", json=init, headers={**headers, "authorization": "Bearer not-a-jwt"})
    check(reply.status_code == 401 and reply.json()["error"]["code"] == "UNAUTHENTICATED", "/mcp with a bad token", reply.text)
    print("http without a token: ok")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ferry", required=True, help="the ferry binary")
    parser.add_argument("--url", required=True, help="the running server, e.g. http://127.0.0.1:8080")
    parser.add_argument("--token", required=True, help="a user token for that server")
    parser.add_argument("--transport", choices=["stdio", "http", "both"], default="both")
    parser.add_argument("--fixtures", help="the folder of seed.xlsx, two-pages.pdf and report.docx")
    args = parser.parse_args()
    ferry = Ferry(args.url, args.token)
    try:
        await http_needs_a_token(ferry)
        if args.transport in ("stdio", "both"):
            thread, agent = await ferry.new_thread("mcp over stdio")
            async with stdio_session(args.ferry, ferry.url, agent) as session:
                await exercise("stdio", ferry, session, thread, agent)
            if args.fixtures:
                thread, agent = await ferry.new_thread("the seed's checklist over stdio")
                async with stdio_session(args.ferry, ferry.url, agent) as session:
                    await session.initialize()
                    await seed_checklist("stdio", ferry, session, thread, args.fixtures)
            await subscriptions_over_stdio(args.ferry, ferry, thread, agent)
            await user_token_without_thread(args.ferry, ferry)
            await unreachable_server(args.ferry)
        if args.transport in ("http", "both"):
            thread, agent = await ferry.new_thread("mcp over http")
            async with http_session(ferry.url, agent) as session:
                await exercise("http", ferry, session, thread, agent)
                try:
                    await session.subscribe_resource("ferry://sandbox/outputs/x.md")
                    check(False, "/mcp keeps no session: subscribing is refused")
                except Failure:
                    raise
                except Exception as error:  # noqa: BLE001 - the SDK raises McpError
                    check("no session" in str(error), "the refusal says why", str(error))
            if args.fixtures:
                thread, agent = await ferry.new_thread("the seed's checklist over http")
                async with http_session(ferry.url, agent) as session:
                    await session.initialize()
                    await seed_checklist("http", ferry, session, thread, args.fixtures)
    except BaseException as error:  # noqa: BLE001 - report a check's failure plainly
        failures = failures_in(error)
        if not failures:
            raise
        for failure in failures:
            print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    finally:
        await ferry.http.aclose()
    print("all MCP client checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
