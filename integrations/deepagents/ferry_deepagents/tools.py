"""`ferry_tools`: the two ways an agent hands a file to its user, as LangChain tools."""

from __future__ import annotations

from typing import Any

import httpx
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from pydantic import BaseModel, Field

from ferry_deepagents._http import Connection, FerryError, Plan, Request


class PublishArgs(BaseModel):
    file_path: str = Field(description="The sandbox file to publish, e.g. /sandbox/outputs/report.md")
    display_name: str = Field(description="The title the user sees on the file's card, e.g. 'Sales report'")
    description: str | None = Field(default=None, description="One or two sentences on what the file holds")


class SendArgs(BaseModel):
    file_path: str = Field(description="The sandbox text file to send, e.g. /sandbox/outputs/notes.md")


PUBLISH_DESCRIPTION = (
    "Deliver a file from your sandbox to the user: it appears in the conversation as a card they "
    "can open, preview and download. Any file type. Publishing again with the same display_name "
    "adds a new revision of that card. Write the file first (under /sandbox/outputs/), then publish it."
)
SEND_DESCRIPTION = (
    "Send a small text file from your sandbox (Markdown, CSV, JSON, code, ...) to the user inline, "
    "in the conversation. For other file types, or to give the user a download, use "
    "publish_file_to_user."
)


def _publish(conn: Connection, file_path: str, display_name: str, description: str | None) -> Plan[str]:
    body: dict[str, Any] = {"file_path": file_path, "display_name": display_name}
    if description:
        body["description"] = description
    answer = yield Request("POST", conn.thread_route("published"), json=body)
    revision = answer.get("revision")
    again = f", revision {revision}" if isinstance(revision, int) and revision > 1 else ""
    return f"Published {file_path} to the user as '{answer.get('display_name', display_name)}' ({answer.get('filename', '')}, {answer.get('file_size', '?')} bytes{again}; id {answer.get('id')})."


def _send(conn: Connection, file_path: str) -> Plan[str]:
    answer = yield Request("POST", conn.thread_route("send-file"), json={"filePath": file_path})
    return str(answer.get("message") or f"Sent {file_path} to the user.")


def ferry_tools(
    url: str,
    token: str,
    thread: str | None = None,
    *,
    timeout: float = 30.0,
    http_client: httpx.Client | None = None,
    async_http_client: httpx.AsyncClient | None = None,
) -> list[BaseTool]:
    """`publish_file_to_user` and `send_file` as LangChain tools, for
    `create_deep_agent(tools=...)` or any tool-calling agent.

    `thread` defaults to the agent token's own thread. A refusal from ferry is the tool's error
    result (`ToolMessage(status="error")` holding ferry's message), never an exception in the
    agent's loop.
    """
    # Deliveries are never sent twice: a retried publish would add a second revision.
    conn = Connection(url, token, thread, timeout=timeout, retries=0, http_client=http_client, async_http_client=async_http_client)
    if conn.thread is None:
        raise ValueError("ferry_tools needs a thread: pass thread=, or an agent token (it names its thread)")

    def sync(plan: Plan[str]) -> str:
        try:
            return conn.run(plan)
        except FerryError as exc:
            raise ToolException(exc.describe()) from exc

    async def run_async(plan: Plan[str]) -> str:
        try:
            return await conn.arun(plan)
        except FerryError as exc:
            raise ToolException(exc.describe()) from exc

    def publish_file_to_user(file_path: str, display_name: str, description: str | None = None) -> str:
        return sync(_publish(conn, file_path, display_name, description))

    async def apublish_file_to_user(file_path: str, display_name: str, description: str | None = None) -> str:
        return await run_async(_publish(conn, file_path, display_name, description))

    def send_file(file_path: str) -> str:
        return sync(_send(conn, file_path))

    async def asend_file(file_path: str) -> str:
        return await run_async(_send(conn, file_path))

    return [
        StructuredTool.from_function(
            func=publish_file_to_user,
            coroutine=apublish_file_to_user,
            name="publish_file_to_user",
            description=PUBLISH_DESCRIPTION,
            args_schema=PublishArgs,
            handle_tool_error=True,
        ),
        StructuredTool.from_function(
            func=send_file,
            coroutine=asend_file,
            name="send_file",
            description=SEND_DESCRIPTION,
            args_schema=SendArgs,
            handle_tool_error=True,
        ),
    ]
