"""A small ferry agent with a scripted decision in place of a language model.

It follows one thread's events with an agent token. When the user has uploaded a CSV and asks
for a summary, it writes a Markdown summary into /sandbox/outputs/, publishes it (a card with a
preview and a download) and sends it (shown inline), then answers in the chat.

    FERRY_URL=http://127.0.0.1:8080 FERRY_TOKEN=<agent token> python3 agent.py [--once]

The event stream and the sandbox are plain HTTP (docs/reference/threads-and-sandbox.md, events.md); the deliveries go through
ferry's MCP tools at /mcp (docs/mcp.md), the same tools a model-driven agent would call.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import csv
import io
import json
import os
import re
import statistics
import sys
from contextlib import asynccontextmanager
from pathlib import PurePosixPath
from typing import Any, AsyncIterator
from urllib.parse import quote

import httpx
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client

# The scripted "model": the user asks for a summary in words like these.
ASKS_FOR_SUMMARY = re.compile(r"\b(summar(y|ise|ize)|overview|recap)\b", re.IGNORECASE)


def log(*parts: Any) -> None:
    # stdout is for people watching the agent; keep lines short and flushed.
    print(*parts, flush=True)


def thread_of(token: str) -> str | None:
    """The `thread` claim of an agent token (read, not verified: the server verifies)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    thread = claims.get("thread")
    return thread if isinstance(thread, str) and thread else None


async def events(http: httpx.AsyncClient, thread: str, after: int) -> AsyncIterator[dict[str, Any]]:
    """The thread's events after `after`, forever: Server-Sent Events, resumed where they
    stopped when the connection drops (the server replays what was missed)."""
    last = after
    while True:
        try:
            async with http.stream(
                "GET",
                f"/api/threads/{quote(thread, safe='')}/events",
                headers={"accept": "text/event-stream", "last-event-id": str(last)},
                timeout=httpx.Timeout(10, read=None),
            ) as stream:
                stream.raise_for_status()
                data: list[str] = []
                async for line in stream.aiter_lines():
                    if line.startswith("data:"):
                        data.append(line[5:].removeprefix(" "))
                    elif line == "" and data:
                        event = json.loads("\n".join(data))
                        data = []
                        last = max(last, int(event["id"]))
                        yield event
        except httpx.TransportError as error:
            log(f"event stream interrupted ({error}); resuming after event {last}")
            await asyncio.sleep(1)


def summarize(name: str, text: str) -> str:
    """A Markdown summary of a CSV: its shape, a statistic per numeric column, the first rows."""
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return f"# Summary of {name}\n\nThe file is empty.\n"
    header, body = rows[0], [r for r in rows[1:] if any(cell.strip() for cell in r)]
    lines = [
        f"# Summary of {name}",
        "",
        f"{len(body)} rows × {len(header)} columns: {', '.join(header)}.",
        "",
    ]
    numeric = []
    for index, column in enumerate(header):
        values = []
        for row in body:
            try:
                values.append(float(row[index].replace(",", "")))
            except (IndexError, ValueError):
                break
        else:
            if values:
                numeric.append((column, values))
    if numeric:
        lines += ["| column | min | max | mean | total |", "| --- | --- | --- | --- | --- |"]
        for column, values in numeric:
            lines.append(
                f"| {column} | {min(values):,.2f} | {max(values):,.2f} | "
                f"{statistics.fmean(values):,.2f} | {sum(values):,.2f} |"
            )
        lines.append("")
        best = max(body, key=lambda row: float(row[header.index(numeric[-1][0])].replace(",", "")))
        lines += [f"Highest {numeric[-1][0]}: {', '.join(best)}.", ""]
    lines += ["First rows:", "", "| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in body[:5]:
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


class Agent:
    def __init__(self, url: str, token: str) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.thread = thread_of(token)
        self.http = httpx.AsyncClient(
            base_url=self.url, headers={"authorization": f"Bearer {token}"}, timeout=30
        )
        self.csv_uploads: list[dict[str, Any]] = []

    @asynccontextmanager
    async def tools(self) -> AsyncIterator[ClientSession]:
        """ferry's MCP tools over streamable HTTP, acting with this agent's token."""
        async with streamable_http_client(f"{self.url}/mcp", http_client=self.http) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session

    async def call(self, session: ClientSession, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await session.call_tool(tool, arguments)
        text = next(c.text for c in result.content if isinstance(c, types.TextContent))
        if result.isError:
            # The server's error envelope, unchanged: say what went wrong and stop this task.
            raise RuntimeError(f"{tool} failed: {text}")
        return json.loads(text)

    def remember_uploads(self, uploads: list[dict[str, Any]]) -> None:
        for upload in uploads:
            if upload.get("fileName", "").lower().endswith(".csv") and upload not in self.csv_uploads:
                self.csv_uploads.append(upload)

    async def handle(self, event: dict[str, Any]) -> bool:
        """Reacts to one event; True when it delivered a summary."""
        if event["type"] == "upload":
            self.remember_uploads([event["upload"]])
            return False
        if event["type"] != "message" or event.get("role") != "user":
            return False
        self.remember_uploads(event.get("uploads") or [])
        text = event.get("content") or ""
        if not ASKS_FOR_SUMMARY.search(text):
            return False
        if not self.csv_uploads:
            await self.say("Upload a CSV file and I will summarize it.")
            return False
        # The scripted decision: the CSV the message names, else the latest one.
        named = [u for u in self.csv_uploads if u["fileName"].lower() in text.lower()]
        upload = (named or self.csv_uploads)[-1]
        await self.deliver_summary(upload)
        return True

    async def deliver_summary(self, upload: dict[str, Any]) -> None:
        name = upload["fileName"]
        log(f"summarizing {name}")
        # The original bytes are in the sandbox, at the path the upload event names.
        relative = upload["sandboxPath"].removeprefix("/sandbox/")
        reply = await self.http.get(f"/api/threads/{self.thread}/sandbox/{quote(relative)}")
        reply.raise_for_status()
        summary = summarize(name, reply.content.decode("utf-8", errors="replace"))

        output = f"/sandbox/outputs/{PurePosixPath(name).stem}-summary.md"
        reply = await self.http.put(
            f"/api/threads/{self.thread}/sandbox/{quote(output.removeprefix('/sandbox/'))}",
            content=summary.encode(),
            headers={"content-type": "text/markdown; charset=utf-8"},
        )
        reply.raise_for_status()
        log(f"wrote {output} ({len(summary.encode())} bytes)")

        async with self.tools() as session:
            published = await self.call(
                session,
                "publish_file_to_user",
                {
                    "file_path": output,
                    "display_name": f"Summary of {name}",
                    "description": f"Columns, statistics and first rows of {name}",
                },
            )
            log(f"published {published['filename']} (revision {published['revision']})")
            sent = await self.call(session, "send_file", {"filePath": output})
            log(sent["message"])
        await self.say(f"Here is the summary of {name}: published as a file, and shown above.")

    async def say(self, text: str) -> None:
        reply = await self.http.post(f"/api/threads/{self.thread}/messages", json={"text": text})
        reply.raise_for_status()

    async def run(self, once: bool) -> None:
        if not self.thread:
            raise SystemExit("FERRY_TOKEN must be an agent token: it names the agent's thread")
        # Pick up where the agent last spoke: what the user said since then is still
        # unanswered. Uploads from any time are known from the thread's upload list.
        listed = await self.http.get(f"/api/threads/{self.thread}/uploads")
        listed.raise_for_status()
        self.remember_uploads(listed.json().get("uploads", []))
        after, seen = 0, 0
        while True:
            page = await self.http.get(
                f"/api/threads/{self.thread}/events", params={"after": seen, "format": "json"}
            )
            page.raise_for_status()
            batch = page.json()
            if not batch:
                break
            seen = batch[-1]["id"]
            after = max([after] + [e["id"] for e in batch if e.get("role") == "agent"])
        log(f"following thread {self.thread} after event {after}")
        async for event in events(self.http, self.thread, after):
            try:
                delivered = await self.handle(event)
            except (RuntimeError, httpx.HTTPError) as error:
                log(f"could not finish: {error}")
                await self.say(f"Sorry, I could not finish: {error}")
                delivered = False
            if delivered and once:
                return


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("FERRY_URL"), help="ferry's base URL [FERRY_URL]")
    parser.add_argument("--once", action="store_true", help="exit after delivering one summary")
    args = parser.parse_args()
    token = os.environ.get("FERRY_TOKEN")
    if not args.url or not token:
        parser.error("set FERRY_URL (or --url) and FERRY_TOKEN (an agent token)")
    agent = Agent(args.url, token)
    try:
        await agent.run(args.once)
    finally:
        await agent.http.aclose()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(asyncio.run(main()))
    except KeyboardInterrupt:
        sys.exit(130)
