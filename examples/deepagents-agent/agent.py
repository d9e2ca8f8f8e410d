"""A deepagents agent whose file system is ferry: `create_deep_agent` with `FerryBackend` and
`ferry_tools`.

A scripted chat model stands in for the language model: it reads the conversation and emits the
tool calls a model would, so the example runs anywhere with no API key. Swap
`ScriptedChatModel()` for any LangChain chat model that supports tool calling (for example
`model="anthropic:claude-sonnet-4-6"`) and the agent is unchanged.

    python3 agent.py --url http://127.0.0.1:8080 --token <agent token>
    FERRY_URL=... FERRY_TOKEN=... python3 agent.py

The agent uses deepagents' own file tools, which act on the thread's sandbox through ferry: it
lists the user's uploads, reads the CSV among them with `read_file`, lists `/sandbox/outputs/`
to find a report name not yet taken (`write_file` replaces a file, and an earlier report is kept),
writes a Markdown report there with `write_file`, corrects one line with `edit_file`, and delivers
the report with `publish_file_to_user`.

For a spreadsheet (XLSX) among the uploads it uses deepagents' `execute` tool, which runs a shell
command in the thread's sandbox through ferry: a Python script reads the sheet with pandas and
draws a bar chart with matplotlib into `/sandbox/outputs/` (or, where the sandbox has no
matplotlib, writes a CSV summary there), and the agent publishes that too. Where the server runs
no commands (`execute` answers 501) it says so and delivers the report alone.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

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
"""The tools the script calls. `execute` is called too when offered: deepagents offers it for a
backend that runs commands (a `SandboxBackendProtocol`, as `FerryBackend` is)."""
READ_HEADER = re.compile(r"^@@ .* @@$")
"""The line deepagents' read_file puts above the lines it read (`@@ lines 1-4 of 4 @@`)."""
SPREADSHEETS = (".xlsx", ".xlsm")
OUTPUTS = "/sandbox/outputs"
TURNED_OFF = "(NOT_IMPLEMENTED)"
"""How FerryBackend's `execute` ends the first sentence of its answer when the server runs no
commands (ferry answered 501)."""

# The program the agent runs in the sandbox: python3 reads it from the here-document. It prints
# what it found and the path it wrote, on a line of its own after `WROTE `.
SHEET_SCRIPT = """\
import sys

import pandas as pd

source, stem = sys.argv[1], sys.argv[2]
frame = pd.read_excel(source)
numeric = frame.select_dtypes("number")
print(f"{len(frame)} rows; columns: {', '.join(map(str, frame.columns))}")
summary = numeric.agg(["sum", "mean", "max"]).T
print(summary.to_string())
try:
    import matplotlib
except ImportError:
    out = f"/sandbox/outputs/{stem}-summary.csv"
    summary.to_csv(out, index_label="column")
else:
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    label, column = frame.columns[0], numeric.columns[0]
    axes = frame.plot.bar(x=label, y=column, legend=False, title=f"{column} by {label}", rot=0)
    axes.set_ylabel(column)
    plt.tight_layout()
    out = f"/sandbox/outputs/{stem}-chart.png"
    plt.savefig(out, dpi=100)
print("WROTE", out)
"""


def sheet_command(source: str, stem: str) -> str:
    """The shell command: the script above, on the sheet, with matplotlib's cache in /tmp (the
    sandbox's home need not be writable)."""
    return f"MPLCONFIGDIR=/tmp/matplotlib python3 - {shlex.quote(source)} {shlex.quote(stem)} <<'PY'\n{SHEET_SCRIPT}PY"


def rows_of(read: str) -> list[list[str]]:
    """The CSV's rows from read_file's answer: the file's lines, below a header saying which."""
    lines = [line for line in read.splitlines() if not READ_HEADER.match(line)]
    return [line.split(",") for line in lines if line.strip()]


def listed(answer: ToolMessage) -> list[str]:
    """The paths an `ls` answered (it says `No files found` for an empty folder)."""
    text = str(answer.content)
    return ast.literal_eval(text) if answer.status != "error" and text.startswith("[") else []


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

    offered: frozenset[str] = frozenset()
    """The tools it was given (set by `bind_tools`)."""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        # A real model receives the tools' names, descriptions and schemas here; the script only
        # checks that the ones it calls were offered.
        offered = frozenset(tool.name for tool in tools)
        missing = USES - offered
        if missing:
            raise ValueError(f"the agent was not given {sorted(missing)}")
        return self.model_copy(update={"offered": offered})

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
        uploads = listed(results[0])
        csvs = [path for path in uploads if path.lower().endswith(".csv")]
        sheets = [path for path in uploads if path.lower().endswith(SPREADSHEETS)]
        if not csvs and not sheets:
            return AIMessage(content="Upload a CSV or a spreadsheet and I will write a report on it.")
        last = results[-1]
        delivered = [m for m in results if m.name == "publish_file_to_user" and m.status != "error"]

        # First the CSV: read it, write a report, mark it final, publish it.
        if csvs and not delivered:
            return self.report_step(call, results, last, csvs[-1])
        if last.name == "publish_file_to_user" and last.status == "error":
            return AIMessage(content=f"Stopped after {last.name}: {last.content}")
        done = "Done: " + " ".join(str(m.content) for m in delivered)

        # Then the spreadsheet, with code: deepagents' execute tool runs it in the sandbox.
        if not sheets:
            return AIMessage(content=done)
        if "execute" not in self.offered:
            return AIMessage(content=f"{done} (No execute tool was offered, so the spreadsheet was left alone.)")
        source = sheets[-1]
        name = source.rsplit("/", 1)[-1]
        ran = [m for m in results if m.name == "execute"]
        if not ran:
            return call("execute", {"command": sheet_command(source, name.rsplit(".", 1)[0].lower().replace(" ", "-"))})
        output = str(ran[-1].content)
        if TURNED_OFF in output:
            reason = output.removeprefix("Error: ").split(TURNED_OFF, 1)[0] + TURNED_OFF
            return AIMessage(content=f"{done} I could not chart {name}: {reason}.")
        wrote = re.search(r"^WROTE (/\S+)$", output, re.MULTILINE)
        if "[Command succeeded with exit code 0]" not in output or wrote is None:
            return AIMessage(content=f"Stopped: the script on {name} failed:\n{output}")
        if last.name == "execute":
            path = wrote.group(1)
            chart = path.endswith(".png")
            return call(
                "publish_file_to_user",
                {
                    "file_path": path,
                    "display_name": f"{'Chart' if chart else 'Summary'} of {name}",
                    "description": f"{'A bar chart of' if chart else 'The totals, means and highest values of'} {name}, made with pandas in the sandbox.",
                },
            )
        return AIMessage(content=done)

    def report_step(self, call: Callable[[str, dict[str, Any]], AIMessage], results: list[ToolMessage], last: ToolMessage, source: str) -> AIMessage:
        """The next step of the CSV report, until it is published."""
        name = source.rsplit("/", 1)[-1]
        stem = name.rsplit(".", 1)[0].lower().replace(" ", "-")
        read = next((m for m in results if m.name == "read_file"), None)

        if read is None:
            return call("read_file", {"file_path": source})
        if last.name == "read_file" and last.status != "error":
            # write_file replaces a file: look first, so that an earlier report is kept.
            return call("ls", {"path": OUTPUTS})
        if last.name == "ls":
            taken = set(listed(last))
            attempt = next(n for n in range(1, len(taken) + 2) if self.report_path(stem, n) not in taken)
            return call("write_file", {"file_path": self.report_path(stem, attempt), "content": report(name, rows_of(str(read.content)))})
        if last.name == "write_file":
            if last.status == "error":
                return AIMessage(content=f"I could not write the report: {last.content}")
            written = str(last.content).removeprefix("Updated file ").strip()
            return call("edit_file", {"file_path": written, "old_string": "Status: draft", "new_string": "Status: final"})
        if last.name == "edit_file" and last.status != "error":
            written = re.search(r"in '([^']+)'", str(last.content)).group(1)
            return call(
                "publish_file_to_user",
                {"file_path": written, "display_name": f"Report on {name}", "description": f"Totals of each numeric column of {name}."},
            )
        return AIMessage(content=f"Stopped after {last.name}: {last.content}")

    @staticmethod
    def report_path(stem: str, attempt: int) -> str:
        suffix = "" if attempt == 1 else f"-{attempt}"
        return f"{OUTPUTS}/{stem}-report{suffix}.md"


ASK = "Please write a report on the CSV I uploaded, chart the spreadsheet, and send them to me."


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
