"""FerryBackend as deepagents' SandboxBackendProtocol: `execute` and `aexecute`.

The first tests need no server (a scripted transport stands in for ferry); the rest run
commands on the real one, and are skipped where it runs none (see conftest's `executing`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time

import httpx
from deepagents.backends.protocol import BackendProtocol, ExecuteResponse, SandboxBackendProtocol, execute_accepts_timeout

from ferry_deepagents import FerryBackend


def agent_token(thread: str = "t-1") -> str:
    claims = base64.urlsafe_b64encode(json.dumps({"role": "agent", "thread": thread}).encode()).rstrip(b"=").decode()
    return f"e30.{claims}.sig"


def ran(output: str = "", exit_code: int | None = 0, **more) -> dict:
    return {"output": output, "exitCode": exit_code, "truncated": False, "timedOut": False, "durationMs": 5, "outputBytes": len(output), **more}


class Script:
    """A transport answering each request with the next of `answers` (a Response, or an
    exception to raise), and noting what was sent."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.seen: list[httpx.Request] = []

    def answer(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def backend(self, token: str | None = None, **options) -> FerryBackend:
        client = httpx.Client(transport=httpx.MockTransport(self.answer))
        return FerryBackend("http://ferry.test", token or agent_token(), http_client=client, **options)

    def bodies(self) -> list[dict]:
        return [json.loads(request.content) for request in self.seen]


def refusal(status: int, code: str, message: str, **headers: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message}}, headers=headers)


# -- without a server ---------------------------------------------------------------------------


def test_it_is_a_sandbox_backend():
    store = FerryBackend("http://ferry.test", agent_token("t-9"))
    assert isinstance(store, SandboxBackendProtocol)
    assert isinstance(store, BackendProtocol)
    # deepagents hands the execute tool's timeout on only to a backend whose execute takes one.
    assert execute_accepts_timeout(FerryBackend)
    assert store.id == "t-9"  # the thread, from the agent token
    assert FerryBackend("http://ferry.test", "opaque", thread="t 2").id == "t 2"
    assert FerryBackend("http://ferry.test/", "opaque").id == "http://ferry.test"  # no thread known


def test_the_request_and_its_answer():
    script = Script(httpx.Response(200, json=ran("hi\n")), httpx.Response(200, json=ran("", 3, truncated=True)))
    store = script.backend()
    assert store.execute("echo hi") == ExecuteResponse(output="hi\n", exit_code=0, truncated=False)
    assert store.execute("exit 3", timeout=300) == ExecuteResponse(output="", exit_code=3, truncated=True)
    assert [(r.method, r.url.raw_path.decode()) for r in script.seen] == [("POST", "/api/threads/t-1/execute")] * 2
    assert script.bodies() == [{"command": "echo hi"}, {"command": "exit 3", "timeout": 300}]
    assert all(r.headers["authorization"] == f"Bearer {agent_token()}" for r in script.seen)
    # The answer comes when the command ends: the request waits for the command's time limit
    # and more (without one, for the longest a server's default may be), connecting as usual.
    assert script.seen[0].extensions["timeout"]["read"] > 900
    assert script.seen[1].extensions["timeout"]["read"] > 300
    assert script.seen[1].extensions["timeout"]["read"] < 900
    assert script.seen[1].extensions["timeout"]["connect"] == 30


def test_a_timeout_and_a_signal_have_no_exit_code_from_ferry():
    stopped = "started\n[ferry: stopped after 2 s, the command's time limit]\n"
    memory = "[ferry: a process was killed: the command used more than 2 GiB of memory]\n"
    script = Script(
        httpx.Response(200, json=ran(stopped, None, timedOut=True, stoppedBy="timeout")),
        httpx.Response(200, json=ran("partial", None)),
        httpx.Response(200, json=ran(memory, None, stoppedBy="memory")),
        httpx.Response(200, json=ran(memory, 137, stoppedBy="memory")),
    )
    store = script.backend()
    # ferry says why in the output; the exit code is timeout(1)'s, as in deepagents' shell.
    assert store.execute("echo started; sleep 999", timeout=2) == ExecuteResponse(output=stopped, exit_code=124)
    killed = store.execute("printf partial; kill -9 $$")
    assert killed == ExecuteResponse(output="partial\n[the command was ended by a signal: it has no exit code]\n", exit_code=None)
    assert store.execute("python3 -c 'x = bytearray(1 << 40)'") == ExecuteResponse(output=memory, exit_code=None)
    assert store.execute("python3 -c 'x = bytearray(1 << 40)'").exit_code == 137


def test_commands_turned_off_are_a_clear_result():
    script = Script(refusal(501, "NOT_IMPLEMENTED", "commands are turned off on this server (--execute off)"))
    result = script.backend().execute("ls")
    assert result.exit_code == 1 and result.truncated is False
    assert result.output.startswith(
        "Error: commands cannot run on this ferry server: commands are turned off on this server (--execute off) (NOT_IMPLEMENTED)."
    )
    assert "read_file" in result.output  # what still works


def test_a_busy_sandbox_is_waited_for():
    busy = refusal(429, "TOO_MANY_REQUESTS", "this thread already runs a command", **{"Retry-After": "0"})
    script = Script(busy, busy, httpx.Response(200, json=ran("ok\n")))
    started = time.monotonic()
    assert script.backend().execute("echo ok").output == "ok\n"
    assert len(script.seen) == 3
    assert time.monotonic() - started < 5

    # Past busy_timeout, the 429 is the result, saying when to try again.
    later = refusal(429, "TOO_MANY_REQUESTS", "this thread already runs a command", **{"Retry-After": "2"})
    script = Script(later)
    result = script.backend(busy_timeout=1).execute("echo ok")
    assert len(script.seen) == 1
    assert result.exit_code == 1
    assert result.output == (
        "Error: this thread already runs a command (TOO_MANY_REQUESTS). The command did not run; run it again in 2 seconds."
    )


def test_commands_are_never_sent_twice():
    script = Script(httpx.ConnectError("connection refused"))
    result = script.backend().execute("echo once")
    assert result.exit_code == 1 and result.output.startswith("Error: could not reach ferry at http://ferry.test")
    assert len(script.seen) == 1
    script = Script(refusal(503, "UNAVAILABLE", "the sandbox is busy"))
    assert script.backend().execute("echo once").output == "Error: the sandbox is busy (UNAVAILABLE)"
    assert len(script.seen) == 1


def test_refusals_are_results():
    script = Script(refusal(413, "REQUEST_TOO_LARGE", "the command is over 100000 bytes"))
    assert script.backend().execute("x" * 100_001) == ExecuteResponse(
        output="Error: the command is over 100000 bytes (REQUEST_TOO_LARGE)", exit_code=1
    )
    # A token that names no thread, and no thread= given: nothing is sent.
    script = Script()
    result = script.backend(token="opaque").execute("ls")
    assert result.exit_code == 1 and result.output.startswith("Error: no thread: pass thread= or use an agent token")
    assert script.seen == []


def test_aexecute_without_a_server():
    script = Script(
        refusal(429, "TOO_MANY_REQUESTS", "busy", **{"Retry-After": "0"}),
        httpx.Response(200, json=ran("hi\n")),
        refusal(501, "NOT_IMPLEMENTED", "no bubblewrap"),
    )

    async def session():
        async with httpx.AsyncClient(transport=httpx.MockTransport(script.answer)) as client:
            store = FerryBackend("http://ferry.test", agent_token(), async_http_client=client)
            return await store.aexecute("echo hi", timeout=5), await store.aexecute("ls")

    done, off = asyncio.run(session())
    assert done == ExecuteResponse(output="hi\n", exit_code=0)
    assert off.exit_code == 1 and "(NOT_IMPLEMENTED)" in off.output
    assert script.bodies() == [{"command": "echo hi", "timeout": 5}] * 2 + [{"command": "ls"}]
    assert script.seen[1].extensions["timeout"]["read"] > 5


# -- against ferry --------------------------------------------------------------------------------


def test_echo(executing):
    store = executing.backend()
    assert store.execute("echo hi") == ExecuteResponse(output="hi\n", exit_code=0, truncated=False)
    assert store.execute("pwd").output == "/sandbox/workspace\n"  # where commands start


def test_a_failing_command(executing):
    store = executing.backend()
    assert store.execute("exit 3").exit_code == 3
    failed = store.execute("echo oops >&2; exit 2")
    assert (failed.output, failed.exit_code) == ("oops\n", 2)
    missing = store.execute("cat /sandbox/outputs/missing.txt")
    assert missing.exit_code != 0 and "missing.txt" in missing.output


def test_a_timeout(executing):
    store = executing.backend()
    started = time.monotonic()
    result = store.execute("echo started; sleep 30", timeout=1)
    assert time.monotonic() - started < 15
    assert result.exit_code == 124
    assert result.output == "started\n[ferry: stopped after 1 s, the command's time limit]\n"
    # A timeout ferry does not allow is its refusal, as a result.
    refused = store.execute("true", timeout=0)
    assert refused.exit_code == 1 and refused.output.startswith("Error: ") and refused.output.endswith("(INVALID_REQUEST)")


def test_files_a_command_writes_are_seen_through_the_backend(executing):
    store = executing.backend()
    made = store.execute("printf 'made by a command\\n' > /sandbox/outputs/made.txt && echo rel > rel.txt")
    assert made.exit_code == 0, made.output
    assert store.read("/sandbox/outputs/made.txt").file_data["content"] == "made by a command\n"
    assert store.read("/sandbox/workspace/rel.txt").file_data["content"] == "rel\n"
    assert "/sandbox/outputs/made.txt" in [e["path"] for e in store.ls("/sandbox/outputs").entries]
    assert executing.sandbox_bytes("outputs/made.txt") == b"made by a command\n"


def test_a_command_reads_uploaded_and_written_files(executing):
    store = executing.backend()
    executing.upload("regions.csv", b"region,revenue\nnorth,10\nsouth,12\n", "text/csv")
    counted = store.execute("wc -l < /sandbox/user_uploads/regions.csv")
    assert (counted.output.strip(), counted.exit_code) == ("3", 0)
    assert store.write("/sandbox/workspace/note.md", "# Note\n").error is None
    assert store.upload_files([("/sandbox/outputs/data.bin", b"\x00\x01\x02")])[0].error is None
    shown = store.execute("cat note.md && wc -c < /sandbox/outputs/data.bin")
    assert shown.output == "# Note\n3\n"


def test_aexecute(executing):
    store = executing.backend()

    async def session():
        hi = await store.aexecute("echo hi")
        failed = await store.aexecute("exit 5")
        slow = await store.aexecute("sleep 30", timeout=1)
        return hi, failed, slow

    hi, failed, slow = asyncio.run(session())
    assert hi == ExecuteResponse(output="hi\n", exit_code=0, truncated=False)
    assert failed.exit_code == 5
    assert slow.exit_code == 124 and "the command's time limit" in slow.output
    # A signal: 128 + its number, as sh reports it (or no exit code, and the output says so).
    killed = asyncio.run(store.aexecute("kill -9 $$"))
    assert killed.exit_code == 137 or (killed.exit_code is None and "ended by a signal" in killed.output)


def test_one_command_at_a_time_in_a_thread(executing):
    # The second command finds the first running: with the default busy_timeout it waits for
    # it, with none it is told to try again.
    first: list[ExecuteResponse] = []
    runner = threading.Thread(target=lambda: first.append(executing.backend().execute("sleep 2; echo first")))
    runner.start()
    try:
        time.sleep(0.7)
        impatient = executing.backend(busy_timeout=0).execute("echo second")
        patient = executing.backend().execute("echo second")
    finally:
        runner.join()
    assert first[0].output == "first\n"
    assert impatient.exit_code == 1 and "(TOO_MANY_REQUESTS)" in impatient.output
    assert "The command did not run; run it again" in impatient.output
    assert patient == ExecuteResponse(output="second\n", exit_code=0, truncated=False)


def test_refusals_from_ferry(executing):
    expired = FerryBackend(url=executing.url, token=executing.expired_agent_token())
    refused = expired.execute("echo hi")
    assert refused.exit_code == 1 and refused.output.startswith("Error: ferry refused the token (UNAUTHENTICATED")
    huge = executing.backend().execute("#" * 100_001)
    assert huge.exit_code == 1 and huge.output.endswith("(REQUEST_TOO_LARGE)")
