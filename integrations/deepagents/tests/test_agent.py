"""The backend and the tools inside a real deep agent: deepagents' own file tools (ls, read_file,
write_file, edit_file, delete, glob, grep) and its execute tool call the backend, and a scripted chat
model stands in for the language model. Run once through `invoke` (the sync methods) and once
through `ainvoke` (the async ones)."""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest
from deepagents import create_deep_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from ferry_deepagents import FerryBackend, ferry_tools

CALLS = [
    ("ls", {"path": "/"}),
    ("ls", {"path": "/sandbox/user_uploads"}),
    ("read_file", {"file_path": "/sandbox/user_uploads/regions.csv"}),
    ("write_file", {"file_path": "/sandbox/outputs/report.md", "content": "draft"}),
    ("write_file", {"file_path": "/sandbox/outputs/report.md", "content": "# Regions\n\nNorth: 10\nSouth: 12\n"}),
    ("edit_file", {"file_path": "/sandbox/outputs/report.md", "old_string": "North: 10", "new_string": "North: 11"}),
    ("read_file", {"file_path": "/sandbox/outputs/report.md", "offset": 2, "limit": 1}),
    ("glob", {"pattern": "**/*.md", "path": "/"}),
    ("grep", {"pattern": "South", "path": "/sandbox", "output_mode": "content"}),
    ("write_file", {"file_path": "/sandbox/workspace/scratch.md", "content": "x"}),
    ("delete", {"file_path": "/sandbox/workspace/scratch.md"}),
    ("ls", {"path": "/sandbox/workspace/scratch.md"}),
    ("read_file", {"file_path": "/etc/passwd"}),
    ("write_file", {"file_path": "/sandbox/skills/mine.md", "content": "x"}),
    ("publish_file_to_user", {"file_path": "/sandbox/outputs/report.md", "display_name": "Regions"}),
]

EXPECTED = [
    ("success", "['/sandbox/', '/spaces/']"),
    ("success", "['/sandbox/user_uploads/regions.csv']"),
    ("success", "@@ lines 1-3 of 3 @@\nregion,revenue\nnorth,10\nsouth,12"),
    ("success", "Updated file /sandbox/outputs/report.md"),
    ("success", "Updated file /sandbox/outputs/report.md"),  # a write replaces
    ("success", "Successfully replaced 1 instance(s) of the string in '/sandbox/outputs/report.md'"),
    ("success", "@@ lines 3-3 of 4 | next offset 3 @@\nNorth: 11"),
    ("success", "['/sandbox/outputs/report.md']"),
    ("success", "/sandbox/outputs/report.md:\n  4: South: 12"),
    ("success", "Updated file /sandbox/workspace/scratch.md"),
    ("success", "Deleted /sandbox/workspace/scratch.md"),
    ("error", "Error: Path '/sandbox/workspace/scratch.md': path_not_found"),
    ("error", "Error: '/etc/passwd' is outside the agent's files: paths start with /sandbox/ or /spaces/{space}/ (a relative path is taken under /sandbox/workspace/) (INVALID_PATH)"),
    ("error", "Error: /sandbox/skills/ is read-only: skills are copied in when the thread starts (FORBIDDEN)"),
    ("success", "Published /sandbox/outputs/report.md to the user as 'Regions'"),
]


class ScriptedChatModel(BaseChatModel):
    """Emits `calls` (CALLS by default) one at a time, one per model turn, then stops. The
    tools it is given (name: description) are added to `seen`, when one is given."""

    calls: list[tuple[str, dict[str, Any]]] = CALLS
    seen: Any = None

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        offered = {tool.name: tool.description for tool in tools}
        assert {name for name, _ in self.calls} <= offered.keys(), offered.keys()
        if self.seen is not None:
            self.seen.append(offered)
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        step = sum(isinstance(m, ToolMessage) for m in messages)
        if step < len(self.calls):
            name, args = self.calls[step]
            message = AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": f"call-{step}"}])
        else:
            message = AIMessage(content="done")
        return ChatResult(generations=[ChatGeneration(message=message)])


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_deep_agent_works_on_ferry(thread, mode):
    thread.upload("regions.csv", b"region,revenue\nnorth,10\nsouth,12\n", "text/csv")
    agent = create_deep_agent(
        model=ScriptedChatModel(),
        backend=FerryBackend(url=thread.url, token=thread.agent_token),
        tools=ferry_tools(url=thread.url, token=thread.agent_token),
    )
    question = {"messages": [{"role": "user", "content": "Summarise the CSV I uploaded."}]}
    state = agent.invoke(question) if mode == "sync" else asyncio.run(agent.ainvoke(question))
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.name for m in results] == [name for name, _ in CALLS]
    for (name, _), message, (status, text) in zip(CALLS, results, EXPECTED, strict=True):
        assert message.status == status, (name, message.content)
        assert message.content.startswith(text), (name, message.content)
    assert state["messages"][-1].content == "done"
    assert thread.sandbox_bytes("outputs/report.md") == b"# Regions\n\nNorth: 11\nSouth: 12\n"
    cards = thread.http("GET", f"/api/threads/{thread.id}/published").json()["files"]
    assert [card["display_name"] for card in cards] == ["Regions"]


def test_the_agent_is_given_deepagents_execute_tool():
    # deepagents offers its execute tool, which describes itself to the model, only for a backend
    # that is a SandboxBackendProtocol. No request is sent: the model answers at once.
    seen: list[Any] = []
    claims = base64.urlsafe_b64encode(json.dumps({"role": "agent", "thread": "t-1"}).encode()).rstrip(b"=").decode()
    agent = create_deep_agent(
        model=ScriptedChatModel(calls=[], seen=seen),
        backend=FerryBackend(url="http://127.0.0.1:9", token=f"e30.{claims}.sig"),
    )
    state = agent.invoke({"messages": [{"role": "user", "content": "hello"}]})
    assert state["messages"][-1].content == "done"
    (tools,) = seen
    assert {"execute", "ls", "read_file", "write_file", "edit_file", "delete", "glob", "grep"} <= tools.keys()
    assert "shell command" in tools["execute"]


EXECUTE_CALLS = [
    ("execute", {"command": "wc -l < /sandbox/user_uploads/regions.csv"}),
    ("execute", {"command": "grep north /sandbox/user_uploads/regions.csv > /sandbox/outputs/north.csv"}),
    ("read_file", {"file_path": "/sandbox/outputs/north.csv"}),
    ("execute", {"command": "echo nope >&2; exit 3"}),
    ("execute", {"command": "sleep 30", "timeout": 1}),
    ("publish_file_to_user", {"file_path": "/sandbox/outputs/north.csv", "display_name": "North"}),
]

EXECUTE_EXPECTED = [
    ("success", "3\n\n[Command succeeded with exit code 0]"),
    ("success", "\n[Command succeeded with exit code 0]"),
    ("success", "@@ lines 1-1 of 1 @@\nnorth,10"),
    ("success", "nope\n\n[Command failed with exit code 3]"),
    ("success", "[ferry: stopped after 1 s, the command's time limit]\n\n[Command failed with exit code 124]"),
    ("success", "Published /sandbox/outputs/north.csv to the user as 'North'"),
]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_deep_agent_runs_commands_on_ferry(executing, mode):
    executing.upload("regions.csv", b"region,revenue\nnorth,10\nsouth,12\n", "text/csv")
    agent = create_deep_agent(
        model=ScriptedChatModel(calls=EXECUTE_CALLS),
        backend=FerryBackend(url=executing.url, token=executing.agent_token),
        tools=ferry_tools(url=executing.url, token=executing.agent_token),
    )
    question = {"messages": [{"role": "user", "content": "Which rows are about the north?"}]}
    state = agent.invoke(question) if mode == "sync" else asyncio.run(agent.ainvoke(question))
    results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.name for m in results] == [name for name, _ in EXECUTE_CALLS]
    for (name, _), message, (status, text) in zip(EXECUTE_CALLS, results, EXECUTE_EXPECTED, strict=True):
        assert message.status == status, (name, message.content)
        assert message.content.startswith(text), (name, message.content)
    assert executing.sandbox_bytes("outputs/north.csv") == b"north,10\n"
