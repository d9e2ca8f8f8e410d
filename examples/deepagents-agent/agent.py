"""A deepagents agent whose file system is ferry: `create_deep_agent` with `FerryBackend` and
`ferry_tools`.

A scripted chat model stands in for the language model: it reads the conversation and emits the
tool calls a model would, so the example runs anywhere with no API key. Swap
`ScriptedChatModel()` for any LangChain chat model that supports tool calling (for example
`model="anthropic:claude-sonnet-4-6"`) and the agent is unchanged.

    python3 agent.py --url http://127.0.0.1:8080 --token <agent token>
    FERRY_URL=... FERRY_TOKEN=... python3 agent.py

The agent uses deepagents' own file tools, which act on the thread's sandbox through ferry: it
lists the user's uploads, reads the CSV among them with `read_file`, writes a Markdown report to
`/sandbox/outputs/` with `write_file` (create-only; if the name is taken it picks the next one),
corrects one line with `edit_file`, and delivers the report with `publish_file_to_user`.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import re
import sys
from pathlib import Path
from typing import Any, Sequence

from deepagents import create_deep_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

try:
    from ferry_deepagents import FerryBackend, ferry_tools
except ImportError:  # run from a checkout without installing the package
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "integrations" / "deepagents"))
    from ferry_deepagents import FerryBackend, ferry_tools

USES = {"ls", "read_file", "write_file", "edit_file", "publish_file_to_user"}
NUMBERED = re.compile(r"^\s*\d+\t(.*)$")


def rows_of(numbered: str) -> list[list[str]]:
    """The CSV's rows from read_file's answer (`cat -n` lines: number, tab, line)."""
    lines = [m.group(1) for m in map(NUMBERED.match, numbered.splitlines()) if m]
    return [line.split(",") for line in lines if line.strip()]


def report(name: str, rows: list[list[str]]) -> str:
    """A short Markdown report: the shape, and the total of each numeric column."""
    header, body = rows[0], rows[1:]
    lines = [f"# Report on {name}", "", "Status: draft", "", f"{len(body)} rows, {len(header)} columns: {', '.join(header)}.", ""]
    for i, column in enumerate(header):
        try:
            values = [float(row[i]) for row in body]
        except (ValueError, IndexError):
            continue
        lines.append(f"- {column}: total {sum(values):g}, highest {max(values):g}")
    return "\n".join(lines) + "\n"


class ScriptedChatModel(BaseChatModel):
    """Decides the next step from the conversation so far, by rules instead of weights."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        # A real model receives the tools' names, descriptions and schemas here; the script only
        # checks that the ones it calls were offered.
        missing = USES - {tool.name for tool in tools}
        if missing:
            raise ValueError(f"the agent was not given {sorted(missing)}")
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.decide(messages))])

    def decide(self, messages: list[BaseMessage]) -> AIMessage:
        # Like a model, the script keeps no memory of its own: each step is read off the tool
        # results so far.
        results = [m for m in messages if isinstance(m, ToolMessage)]
        step = len(results)

        def call(name: str, args: dict[str, Any]) -> AIMessage:
            return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{step}-{name}"}])

        if step == 0:
            return call("ls", {"path": "/sandbox/user_uploads"})
        uploads = ast.literal_eval(str(results[0].content)) if results[0].status != "error" else []
        csvs = [path for path in uploads if path.lower().endswith(".csv")]
        if not csvs:
            return AIMessage(content="Upload a CSV and I will write a report on it.")
        source = csvs[-1]
        name = source.rsplit("/", 1)[-1]
        stem = name.rsplit(".", 1)[0].lower().replace(" ", "-")
        last = results[-1]
        writes = [m for m in results if m.name == "write_file"]

        if last.name == "ls":
            return call("read_file", {"file_path": source})
        if last.name == "read_file" and last.status != "error":
            return call("write_file", self.report_args(stem, name, rows_of(str(last.content)), attempt=1))
        if last.name == "write_file":
            if last.status == "error":
                if "already exists" in str(last.content) and len(writes) < 5:
                    # Never overwrite: take the next free name instead.
                    read = next(m for m in results if m.name == "read_file")
                    return call("write_file", self.report_args(stem, name, rows_of(str(read.content)), attempt=len(writes) + 1))
                return AIMessage(content=f"I could not write the report: {last.content}")
            written = str(last.content).removeprefix("Updated file ").strip()
            return call("edit_file", {"file_path": written, "old_string": "Status: draft", "new_string": "Status: final"})
        if last.name == "edit_file" and last.status != "error":
            written = re.search(r"in '([^']+)'", str(last.content)).group(1)
            return call(
                "publish_file_to_user",
                {"file_path": written, "display_name": f"Report on {name}", "description": f"Totals of each numeric column of {name}."},
            )
        if last.name == "publish_file_to_user" and last.status != "error":
            return AIMessage(content=f"Done: {last.content}")
        return AIMessage(content=f"Stopped after {last.name}: {last.content}")

    @staticmethod
    def report_args(stem: str, name: str, rows: list[list[str]], attempt: int) -> dict[str, Any]:
        suffix = "" if attempt == 1 else f"-{attempt}"
        return {"file_path": f"/sandbox/outputs/{stem}-report{suffix}.md", "content": report(name, rows)}


ASK = "Please write a report on the CSV I uploaded and send it to me."


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("FERRY_URL"), help="ferry's base URL [FERRY_URL]")
    parser.add_argument("--token", default=os.environ.get("FERRY_TOKEN"), help="an agent token [FERRY_TOKEN]")
    parser.add_argument(
        "--thread",
        default=os.environ.get("FERRY_THREAD"),
        help="the thread to work in [FERRY_THREAD]; an agent token names its own, so this is only needed with a service_role token",
    )
    args = parser.parse_args()
    if not args.url or not args.token:
        parser.error("give --url and --token (or FERRY_URL and FERRY_TOKEN): ferry's address and an agent token")

    agent = create_deep_agent(
        model=ScriptedChatModel(),
        backend=FerryBackend(url=args.url, token=args.token, thread=args.thread),
        tools=ferry_tools(url=args.url, token=args.token, thread=args.thread),
    )
    state = await agent.ainvoke({"messages": [{"role": "user", "content": ASK}]})
    for message in state["messages"]:
        if isinstance(message, AIMessage) and message.tool_calls:
            for tool_call in message.tool_calls:
                print(f"-> {tool_call['name']} {str(tool_call['args'])[:160]}")
        elif isinstance(message, ToolMessage):
            print(f"<- {message.name} [{message.status}] {str(message.content)[:160]!r}")
        else:
            print(f"{message.type}: {message.content}")
    final = state["messages"][-1]
    return 0 if isinstance(final, AIMessage) and str(final.content).startswith("Done:") else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
