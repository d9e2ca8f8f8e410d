"""Workload 20 of bench/run, and bench/memory-budget: peak resident memory of one `ferry serve`
under the five loads that hold files' bytes whole, once with a memory budget and once without one
(a budget larger than the machine, which no load reaches: the server as it was before the budget):

  - 60 concurrent `download_files` of a large file (base64 in JSON);
  - 60 concurrent `read_file` of the same file;
  - 60 concurrent `grep` over a folder of four 15 MiB text files (smaller with a smaller file);
  - 16 concurrent `write_file` of the large file (base64 in JSON);
  - 30 concurrent `read_space_file` over MCP of a 16 MiB space file (smaller with a smaller
    file): the tool's reply carries the file again, as base64 in JSON-RPC.

For each: the server's resident memory before the load, its peak during it (VmHWM, reset before
each load), how the requests were answered (200; 503 / UNAVAILABLE; or, for a body too large to
drain, refused with the connection closed), and the wall time. Each server is fresh, so no load
runs twice on one; the figures are peaks, not times, so the workload runs once whatever the rounds.
"""

import base64
import concurrent.futures
import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

from harness.common import log

MIB = 1 << 20
# The budget's bound: peak ≤ resident before the load + the budget + this (the server's own
# buffers, the connections and the allocator's slack), as the deployment test checks.
OVERHEAD = 160 * MIB
NO_BUDGET = 1 << 45
# The space file the MCP load reads, at most (the space file limit the servers get).
MCP_FILE_MIB = 16
TARGET = "with the budget: peak RSS ≤ resident before + the budget + 160 MiB; every request answered"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(method, url, token, body=None, content_type="application/json"):
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=300) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, ConnectionError):
        # Refused before its body was read: a body too large to drain is cut off with the
        # connection, so the client sees a broken pipe rather than the answer.
        return 0, b""


def memory(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) * 1024
    return fields["VmRSS"], fields["VmHWM"]


class Server:
    def __init__(self, ferry, budget):
        self.data = tempfile.mkdtemp(prefix="ferry-memory-")
        self.port = free_port()
        env = dict(os.environ, FERRY_JWT_SECRET="memory-budget-bench-secret-0123456789",
                   FERRY_MEMORY_BUDGET_BYTES=str(budget), FERRY_SPACE_MAX_BYTES=str(MCP_FILE_MIB * MIB))
        self.ferry, self.env = ferry, env
        self.process = subprocess.Popen(
            [ferry, "serve", "--data", self.data, "--addr", f"127.0.0.1:{self.port}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{self.url}/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.1)

    def token(self, *args):
        return subprocess.run([self.ferry, "token", *args], env=self.env, check=True,
                              capture_output=True, text=True).stdout.strip()

    def stop(self):
        self.process.kill()
        self.process.wait()
        subprocess.run(["rm", "-rf", self.data], check=False)


def run_load(server, name, count, send):
    pid = server.process.pid
    with open(f"/proc/{pid}/clear_refs", "w") as refs:
        refs.write("5")  # resets VmHWM to the current resident size
    before, _ = memory(pid)
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        statuses = list(pool.map(lambda i: send(i), range(count)))
    took = time.monotonic() - started
    _, peak = memory(pid)
    answered = sum(1 for s in statuses if s == "ok")
    refused = sum(1 for s in statuses if s == "unavailable")
    cut = sum(1 for s in statuses if s == "cut off")
    other = count - answered - refused - cut
    return (name, before, peak, answered, refused, cut, other, took)


def loads(server, size):
    user = server.token("--user", "bench")
    _, body = call("POST", f"{server.url}/api/threads", user, {})
    thread = json.loads(body)["id"]
    agent = server.token("--agent", "--thread", thread, "--user", "bench")
    big = bytes(i % 251 for i in range(size * MIB))
    status, _ = call("PUT", f"{server.url}/api/threads/{thread}/sandbox/outputs/big.bin", agent,
                     big, "application/octet-stream")
    assert status in (200, 201), status
    text_mib = min(15, size)
    line = (b"the quick brown fox jumps over the lazy dog 0123456789\n" * (text_mib * MIB // 55))
    for i in range(4):
        call("PUT", f"{server.url}/api/threads/{thread}/sandbox/workspace/text/t{i}.txt", agent,
             line, "text/plain")
    fs = f"{server.url}/api/fs"

    def outcome(status, body):
        if status == 0:
            return "cut off"
        if status == 503:
            return "unavailable"
        if status != 200:
            return f"status {status}"
        answer = json.loads(body)
        files = answer.get("files")
        if files and "error" in files[0]:
            return "unavailable" if files[0]["error"]["code"] == "UNAVAILABLE" else "error"
        return "ok"

    def download(_):
        return outcome(*call("POST", f"{fs}/download_files", agent,
                             {"paths": ["/sandbox/outputs/big.bin"]}))

    def read(_):
        return outcome(*call("POST", f"{fs}/read_file", agent,
                             {"path": "/sandbox/outputs/big.bin"}))

    def grep(_):
        return outcome(*call("POST", f"{fs}/grep", agent,
                             {"pattern": "lazy dog 01234", "path": "/sandbox/workspace/text",
                              "maxResults": 10}))

    encoded = base64.b64encode(big).decode()

    def write(i):
        return outcome(*call("POST", f"{fs}/write_file", agent,
                             {"path": f"/sandbox/outputs/w{i}.bin", "content": encoded,
                              "encoding": "base64"}))

    space_mib = min(MCP_FILE_MIB, size)
    status, _ = call("PUT", f"{server.url}/api/spaces/notes/files/big.bin", user, big[:space_mib * MIB],
                     "application/octet-stream")
    assert status in (200, 201), status

    def mcp_read(i):
        status, body = call("POST", f"{server.url}/mcp", user, {
            "jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": "read_space_file", "arguments": {"spaceName": "notes", "path": "big.bin"}}})
        if status != 200:
            return outcome(status, body)
        result = json.loads(body)["result"]
        if result.get("isError"):
            return "unavailable" if "UNAVAILABLE" in result["content"][0]["text"] else "error"
        return "ok"

    return [
        run_load(server, f"60 download_files of {size} MiB", 60, download),
        run_load(server, f"60 read_file of {size} MiB", 60, read),
        run_load(server, f"60 grep over 4 files of {text_mib} MiB", 60, grep),
        run_load(server, f"16 write_file of {size} MiB", 16, write),
        run_load(server, f"30 read_space_file over MCP of {space_mib} MiB", 30, mcp_read),
    ]



def measure(ferry, budget, size):
    """Every load against a server with `budget` (bytes): a row per load."""
    server = Server(ferry, budget)
    try:
        return [dict(name=name, budget=budget, before=before, peak=peak, answered=answered,
                     refused=refused, cut=cut, other=other, took=took)
                for name, before, peak, answered, refused, cut, other, took in loads(server, size)]
    finally:
        server.stop()


def table_rows(rows, label):
    """`rows` of [`measure`] as the lines of a markdown table (see [`TABLE_HEAD`])."""
    return [f"| {r['name']} | {label} | {r['before'] // MIB} MiB | {r['peak'] // MIB} MiB | {r['answered']} | "
            f"{r['refused']} | {r['cut']} | {r['other']} | {r['took']:.1f} s |" for r in rows]


TABLE_HEAD = ["| load | budget | resident before | peak | answered | refused (503) | refused, connection closed "
              "| other | time |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]


def run(ctx):
    """The workload, for bench/run (ctx: its run's cfg and ferry)."""
    cfg = ctx["cfg"]
    budget, size = cfg["memory_budget"], cfg["memory_file_mib"]
    sides = {}
    for side, bytes_ in (("budget", budget), ("none", NO_BUDGET)):
        sides[side] = measure(ctx["ferry"].binary, bytes_, size)
        for r in sides[side]:
            log(f"  memory, {side}: {r['name']}: peak {r['peak'] // MIB} MiB "
                f"({r['answered']} answered, {r['refused']} refused)")
    return dict(budget=budget, size=size, sides=sides)


def _held(r, budget):
    return r["peak"] <= r["before"] + budget + OVERHEAD and r["other"] == 0


def summary_rows(r, verdict, mib):
    """The summary table's rows for the workload's results `r`: one per load."""
    rows = []
    for with_budget, without in zip(r["sides"]["budget"], r["sides"]["none"]):
        rows.append(["20", f"peak RSS: {with_budget['name']}, budget {r['budget'] // MIB} MiB",
                     mib(with_budget["peak"]), f"no budget {mib(without['peak'])}",
                     f"{with_budget['peak'] / without['peak']:.2f}", mib(with_budget["peak"]), TARGET,
                     verdict(_held(with_budget, r["budget"]))])
    return rows


def details(r, w):
    """The workload's section of the report."""
    w("### 20. Memory under loads that hold files whole")
    w("")
    w(f"One fresh `ferry serve` with `--memory-budget-bytes {r['budget']}` and one with no budget (a budget no "
      f"load reaches), each taking the five loads in turn: 60 concurrent `download_files` and 60 `read_file` of a "
      f"{r['size']} MiB file, 60 `grep` over four text files of 15 MiB (or of the large file's size, when smaller), 16 `write_file` of the {r['size']} MiB file as "
      f"base64 JSON, 30 `read_space_file` over MCP of a space file of {min(MCP_FILE_MIB, r['size'])} MiB (the reply carries it as base64). Peak is the server's VmHWM, reset before each load; \"resident before\" is what it held when the "
      "load began (glibc keeps memory a load freed, so it carries over from the load before). A request past the "
      "budget waits up to 5 s, then is refused with 503 (a `download_files` file with `UNAVAILABLE`); a body "
      "refused before it was read closes its connection.")
    w("")
    for line in TABLE_HEAD:
        w(line)
    for line in table_rows(r["sides"]["budget"], f"{r['budget'] // MIB} MiB") + table_rows(r["sides"]["none"], "none"):
        w(line)
    w("")
