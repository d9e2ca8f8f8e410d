"""ferry's tools in a LangGraph agent, loaded through langchain-mcp-adapters.

A scripted chat model stands in for the language model: it reads the conversation and emits the
tool calls a model would, so the example runs anywhere with no API key. Swap `ScriptedChatModel()`
for any LangChain chat model that supports tool calling (and give it the server's instructions as
its system prompt) and the graph is unchanged.

    FERRY_URL=http://127.0.0.1:8080 FERRY_TOKEN=<agent token> python3 agent.py [--transport stdio]

The user's latest message reaches the model as ferry hands it to models (its `model-content`:
the text, then each upload, an image as the image itself). The agent lists the user's uploads,
saves a note about the CSV among them into the user's "notes" space (create-only; on
ALREADY_EXISTS it picks a new name instead of overwriting), checks the note is listed, and tells
the user where it is with `say`, and what it saw in any picture they sent.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import re
import struct
import sys
from datetime import datetime
from typing import Any, Sequence

import httpx
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

SPACE = "notes"
USES = {"list_uploads", "write_space_file", "list_space_files", "say"}


def text_of(message: ToolMessage) -> str:
    """A tool message's text: the MCP result's text block, which ferry fills with the server's
    JSON answer (or its error envelope)."""
    if isinstance(message.content, str):
        return message.content
    return "".join(part.get("text", "") for part in message.content if isinstance(part, dict))


def looked_at(messages: list[BaseMessage]) -> list[str]:
    """What the model sees of the pictures in the user's message: for each image block, its type,
    its size in pixels (a real model would look at the pixels; the script reads the header) and
    the file name from the hidden note that follows it."""
    first = next((m for m in messages if isinstance(m, HumanMessage)), None)
    blocks = first.content if first is not None and isinstance(first.content, list) else []
    seen = []
    for i, block in enumerate(blocks):
        if not isinstance(block, dict) or block.get("type") != "image":
            continue
        data = base64.b64decode(block["base64"])
        size = "?"
        if data.startswith(b"\x89PNG\r\n\x1a\n"):
            width, height = struct.unpack(">II", data[16:24])
            size = f"{width}x{height}"
        note = blocks[i + 1].get("text", "") if i + 1 < len(blocks) and isinstance(blocks[i + 1], dict) else ""
        name = re.search(r"<FileName>(.*?)</FileName>", note)
        seen.append(f"{name.group(1) if name else 'an image'} ({block['mime_type']}, {size})")
    return seen


class ScriptedChatModel(BaseChatModel):
    """Decides the next step from the conversation so far, by rules instead of weights."""

    stamp: str
    """`YYYYMMDD-HHmm` for the note's name, as the server's instructions ask."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> "ScriptedChatModel":
        # A real model receives the tools' names, descriptions and schemas here; the script only
        # checks that the ones it calls were offered.
        missing = USES - {tool.name for tool in tools}
        if missing:
            raise ValueError(f"the MCP server does not offer {sorted(missing)}")
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.decide(messages))])

    def decide(self, messages: list[BaseMessage]) -> AIMessage:
        # Like a model, the script keeps no memory of its own: everything it knows is in the
        # conversation, so each step is read off the tool results so far.
        results = [m for m in messages if isinstance(m, ToolMessage)]
        step = len(results)

        def call(name: str, args: dict[str, Any]) -> AIMessage:
            return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{step}-{name}"}])

        if step == 0:
            return call("list_uploads", {})
        uploads = json.loads(text_of(results[0]))["uploads"]
        csvs = [u for u in uploads if u["fileName"].lower().endswith(".csv")]
        if not csvs:
            return AIMessage(content="Upload a CSV and I will take notes on it.")
        upload = csvs[-1]
        writes = [m for m in results if m.name == "write_space_file"]
        last = results[-1]
        if last.name == "list_uploads":
            return call("write_space_file", self.note(upload, attempt=1))
        saved = next((json.loads(text_of(m))["path"] for m in writes if m.status != "error"), None)
        if last.name == "write_space_file":
            if saved is None:
                envelope = json.loads(text_of(last))
                if envelope["error"]["code"] == "ALREADY_EXISTS" and len(writes) < 5:
                    # Never overwrite without asking: take the next free name instead.
                    return call("write_space_file", self.note(upload, attempt=len(writes) + 1))
                return AIMessage(content=f"I could not save the note: {envelope['error']['message']}")
            return call("list_space_files", {"spaceName": SPACE, "dir": "ideas"})
        if last.name == "list_space_files":
            listed = [f["path"] for f in json.loads(text_of(last))["files"]]
            if saved not in listed:
                return AIMessage(content=f"{saved} was written but is not listed")
            reply = f"I saved notes on {upload['fileName']} as {saved} in your {SPACE} space."
            pictures = looked_at(messages)
            if pictures:
                reply += f" I also looked at {', '.join(pictures)}."
            return call("say", {"text": f"<say>{reply}</say>"})
        if last.name == "say" and last.status != "error":
            return AIMessage(content=f"Done: {saved}")
        return AIMessage(content=f"Stopped after {last.name}: {text_of(last)}")

    def note(self, upload: dict[str, Any], attempt: int) -> dict[str, Any]:
        """The arguments of write_space_file for a note on `upload`."""
        suffix = "" if attempt == 1 else f"-{attempt}"
        stem = upload["fileName"].rsplit(".", 1)[0].lower().replace(" ", "-")
        note = (
            f"# Notes on {upload['fileName']}\n\n"
            f"Uploaded to the thread as `{upload['sandboxPath']}` ({upload['size']} bytes).\n\n"
            f"First rows:\n\n```\n{upload.get('preview') or '(no preview)'}\n```\n"
        )
        return {
            "spaceName": SPACE,
            "path": f"ideas/{self.stamp}-{stem}-notes{suffix}.md",
            "content": note,
            "contentType": "text/markdown; charset=utf-8",
            "ifNoneMatch": "*",
        }


def build_graph(tools: list[Any], model: BaseChatModel) -> Any:
    """The usual tool-calling loop: the model speaks, tools run, until it answers in words."""
    bound = model.bind_tools(tools)

    async def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [await bound.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "agent")
    return graph.compile()


ASK = "Please save notes on the CSV I uploaded in my notes space, and tell me where."


async def users_last_message(url: str, token: str) -> HumanMessage:
    """The user's latest message as a model takes it: ferry's content blocks (text, then each
    upload; an image as base64 with its MIME type, in LangChain's standard shape), or the
    default ask when the user has said nothing yet."""
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    thread = claims["thread"]
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
        events = (await http.get(f"/api/threads/{thread}/events", params={"format": "json"})).raise_for_status().json()
        said = [e for e in events if e["type"] == "message" and e["role"] == "user"]
        if not said:
            return HumanMessage(ASK)
        blocks = (await http.get(f"/api/threads/{thread}/events/{said[-1]['id']}/model-content")).raise_for_status().json()
    return HumanMessage(content=blocks)


def connection(transport: str, url: str, token: str, ferry: str) -> dict[str, Any]:
    if transport == "stdio":
        # `ferry mcp` as a child process; the token travels in its environment.
        return {
            "transport": "stdio",
            "command": ferry,
            "args": ["mcp", "--url", url],
            "env": {"FERRY_TOKEN": token, "PATH": os.environ.get("PATH", "")},
        }
    return {"transport": "streamable_http", "url": f"{url.rstrip('/')}/mcp", "headers": {"Authorization": f"Bearer {token}"}}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("FERRY_URL"), help="ferry's base URL [FERRY_URL]")
    parser.add_argument("--transport", choices=["http", "stdio"], default="http")
    parser.add_argument("--ferry", default="ferry", help="the ferry binary, for --transport stdio")
    parser.add_argument("--stamp", default=datetime.now().strftime("%Y%m%d-%H%M"), help="YYYYMMDD-HHmm for the note's name")
    args = parser.parse_args()
    token = os.environ.get("FERRY_TOKEN")
    if not args.url or not token:
        parser.error("set FERRY_URL (or --url) and FERRY_TOKEN (an agent token)")

    client = MultiServerMCPClient({"ferry": connection(args.transport, args.url, token, args.ferry)})
    # One session for the whole run (with stdio, one `ferry mcp` process).
    async with client.session("ferry") as session:
        tools = await load_mcp_tools(session)
        print("tools:", ", ".join(tool.name for tool in tools), flush=True)
        graph = build_graph(tools, ScriptedChatModel(stamp=args.stamp))
        question = await users_last_message(args.url, token)
        for seen in looked_at([question]):
            print(f"the model is shown {seen}", flush=True)
        state = await graph.ainvoke({"messages": [question]})
    for message in state["messages"]:
        if isinstance(message, AIMessage) and message.tool_calls:
            for tool_call in message.tool_calls:
                print(f"-> {tool_call['name']} {json.dumps(tool_call['args'])[:160]}")
        elif isinstance(message, ToolMessage):
            print(f"<- {message.name} [{message.status}] {text_of(message)[:160]}")
        elif isinstance(message.content, str):
            print(f"{message.type}: {message.content}")
        else:
            kinds = [block.get("type") for block in message.content if isinstance(block, dict)]
            print(f"{message.type}: [{', '.join(kinds)}]")
    final = state["messages"][-1]
    return 0 if isinstance(final, AIMessage) and str(final.content).startswith("Done:") else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
