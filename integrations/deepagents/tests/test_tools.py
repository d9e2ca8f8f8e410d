"""publish_file_to_user and send_file against a real ferry server."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.messages import ToolMessage

from ferry_deepagents import FerryBackend, ferry_tools


def by_name(tools):
    return {tool.name: tool for tool in tools}


def call(tool, args, call_id="call-1"):
    """Invoke a tool as an agent's loop does, with a tool call: the answer is a ToolMessage."""
    return tool.invoke({"type": "tool_call", "name": tool.name, "args": args, "id": call_id})


def published(thread):
    response = thread.http("GET", f"/api/threads/{thread.id}/published")
    assert response.status_code == 200, response.text
    return response.json()["files"]


def test_the_tools_and_their_arguments(thread):
    tools = by_name(ferry_tools(url=thread.url, token=thread.agent_token))
    assert set(tools) == {"publish_file_to_user", "send_file"}
    assert set(tools["publish_file_to_user"].args) == {"file_path", "display_name", "description"}
    assert set(tools["send_file"].args) == {"file_path"}


def test_publish_file_to_user(thread):
    FerryBackend(url=thread.url, token=thread.agent_token).write("/sandbox/outputs/report.md", "# Report\n\nAll good.\n")
    tools = by_name(ferry_tools(url=thread.url, token=thread.agent_token))
    answer = call(tools["publish_file_to_user"], {"file_path": "/sandbox/outputs/report.md", "display_name": "Report", "description": "The summary"})
    assert isinstance(answer, ToolMessage) and answer.status == "success"
    assert answer.content.startswith("Published /sandbox/outputs/report.md to the user as 'Report' (report.md, 20 bytes; id ")
    [card] = published(thread)
    assert (card["display_name"], card["description"], card["sandbox_path"], card["revision"]) == (
        "Report",
        "The summary",
        "/sandbox/outputs/report.md",
        1,
    )
    # Publishing again makes a new revision.
    again = call(tools["publish_file_to_user"], {"file_path": "/sandbox/outputs/report.md", "display_name": "Report"})
    assert "revision 2" in again.content


def test_publish_refusals_are_tool_errors(thread):
    tools = by_name(ferry_tools(url=thread.url, token=thread.agent_token))
    missing = call(tools["publish_file_to_user"], {"file_path": "/sandbox/outputs/missing.md", "display_name": "Nothing"})
    assert missing.status == "error"
    assert missing.content == "File not found: /sandbox/outputs/missing.md (NOT_FOUND)"
    assert published(thread) == []
    expired = by_name(ferry_tools(url=thread.url, token=thread.expired_agent_token()))
    refused = call(expired["publish_file_to_user"], {"file_path": "/sandbox/outputs/x.md", "display_name": "X"})
    assert refused.status == "error" and refused.content.startswith("ferry refused the token (UNAUTHENTICATED: the token has expired)")


def test_send_file(thread):
    store = FerryBackend(url=thread.url, token=thread.agent_token)
    store.write("/sandbox/outputs/notes.md", "- tea\n- milk\n")
    store.upload_files([("/sandbox/outputs/data.bin", b"\x00\x01")])
    tools = by_name(ferry_tools(url=thread.url, token=thread.agent_token))
    sent = call(tools["send_file"], {"file_path": "/sandbox/outputs/notes.md"})
    assert sent.status == "success" and sent.content.startswith('Sent "notes.md" to the user')
    events = thread.http("GET", f"/api/threads/{thread.id}/events", params={"format": "json"}).json()
    [event] = [e for e in events if e["type"] == "file_send"]
    assert event["fileContents"]["content"] == "- tea\n- milk\n"
    refused = call(tools["send_file"], {"file_path": "/sandbox/outputs/data.bin"})
    assert refused.status == "error"
    assert refused.content.startswith('"data.bin" is not a supported text file type.')
    assert refused.content.endswith("(UNSUPPORTED_FILE_TYPE)")


def test_async_tools(thread):
    FerryBackend(url=thread.url, token=thread.agent_token).write("/sandbox/outputs/a.md", "# A\n")
    tools = by_name(ferry_tools(url=thread.url, token=thread.agent_token, thread=thread.id))

    async def session():
        done = await tools["publish_file_to_user"].ainvoke(
            {"type": "tool_call", "name": "publish_file_to_user", "args": {"file_path": "/sandbox/outputs/a.md", "display_name": "A"}, "id": "1"}
        )
        sent = await tools["send_file"].ainvoke({"type": "tool_call", "name": "send_file", "args": {"file_path": "/sandbox/outputs/a.md"}, "id": "2"})
        missing = await tools["send_file"].ainvoke({"type": "tool_call", "name": "send_file", "args": {"file_path": "/sandbox/outputs/b.md"}, "id": "3"})
        return done, sent, missing

    done, sent, missing = asyncio.run(session())
    assert done.status == "success" and sent.status == "success"
    assert missing.status == "error" and missing.content.endswith("(NOT_FOUND)")
    assert [card["display_name"] for card in published(thread)] == ["A"]


def test_a_thread_is_required(thread):
    with pytest.raises(ValueError, match="needs a thread"):
        ferry_tools(url=thread.url, token=thread.user_token)
