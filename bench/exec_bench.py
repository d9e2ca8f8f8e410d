"""Workload 19 of bench/run: `execute` of `true` end to end over HTTP, against a bare bubblewrap
start of the same confinement (the same namespaces and mounts, run directly, with no server and
no HTTP), side by side at 1, 2 and 8 clients.

Each ferry client has a thread of its own (a thread runs one command at a time) and sends
`POST /api/threads/{id}/execute` `{"command": "true"}` on a kept-alive connection, one call after
another; each peer client runs `bwrap … -- /bin/sh -c true` one after another. The figures are
each call's latency (p50, p99) and the calls per second of all clients together.
"""

import http.client
import json
import os
import shutil
import statistics
import subprocess
import threading
import time

from harness.common import BenchError, log
from harness.http import http_json

CLIENTS = (1, 2, 8)
TARGET = "`execute` of `true` over HTTP ≤ 2× a bare bubblewrap start of the same confinement (p50, one client)"

# The host files a command's runtime binds, as ferry's default runtime does (ferry_exec::spec).
HOST_ETC = ["alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "timezone", "mime.types",
            "fonts", "ssl/certs", "ssl/openssl.cnf", "ca-certificates", "matplotlibrc", "os-release",
            "nsswitch.conf", "magic"]


def bare_bwrap(bwrap, sandbox):
    """bubblewrap's arguments for `sh -c true` in `sandbox` with the namespaces and mounts ferry
    gives a command (no seccomp filter, control group or helper: what ferry adds on top is what is
    measured)."""
    args = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net",
            "--unshare-cgroup-try", "--disable-userns", "--die-with-parent", "--new-session",
            "--uid", "1000", "--gid", "1000", "--hostname", "sandbox", "--cap-drop", "ALL",
            "--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
        path = f"/{top}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in HOST_ETC + sorted(n for n in os.listdir("/etc") if n.startswith("python3")):
        path = f"/etc/{name}"
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(256 << 20), "--tmpfs", "/tmp", "--dir", "/tmp/home",
             "--bind", sandbox, "/sandbox",
             "--ro-bind", os.path.join(sandbox, "user_uploads"), "/sandbox/user_uploads",
             "--ro-bind", os.path.join(sandbox, "skills"), "/sandbox/skills",
             "--chdir", "/sandbox/workspace", "--clearenv",
             "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/tmp/home",
             "--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", "/tmp",
             "--", "/bin/sh", "-c", "true"]
    return args


def _in_parallel(clients, calls, one_call):
    """`clients` threads making `calls` calls each with `one_call(client)`: every call's latency
    in seconds, and the wall time of the whole."""
    latencies, errors = [], []
    lock = threading.Lock()

    def client(index):
        mine = []
        try:
            for _ in range(calls):
                started = time.perf_counter()
                one_call(index)
                mine.append(time.perf_counter() - started)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started
    if errors:
        raise errors[0]
    return latencies, wall


def run(ctx):
    """The workload, for bench/run (ctx: its run's cfg, work and ferry)."""
    cfg, ferry = ctx["cfg"], ctx["ferry"]
    limits = http_json("GET", f"{ferry.url}/api/limits", ferry.user, ok=(200,))
    if not limits.get("execute", {}).get("enabled"):
        reason = limits.get("execute", {}).get("reason", "?")
        if os.environ.get("FERRY_CI") == "1":
            raise BenchError(f"commands do not run on this machine: {reason}")
        log(f"  SKIPPED: commands do not run here: {reason}")
        return dict(skipped=reason)
    bwrap = shutil.which("bwrap")
    calls = cfg["execute_calls"]
    host, port = ferry.addr.split(":")
    tokens = []
    for i in range(max(CLIENTS)):
        thread = ferry.new_thread(f"execute bench {i}")
        tokens.append((thread, ferry.token("--agent", "--thread", thread, "--user", "u")))
    sandbox = os.path.join(ctx["work"], "exec-peer")
    for folder in ("workspace", "outputs", "user_uploads", "skills"):
        os.makedirs(os.path.join(sandbox, folder), exist_ok=True)
    peer_args = bare_bwrap(bwrap, sandbox)
    body = json.dumps({"command": "true"})
    connections = {}

    def ferry_call(client):
        thread, token = tokens[client]
        conn = connections.get(client)
        if conn is None:
            conn = connections[client] = http.client.HTTPConnection(host, int(port), timeout=60)
        conn.request("POST", f"/api/threads/{thread}/execute", body,
                     {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        answer = conn.getresponse()
        data = answer.read()
        if answer.status != 200 or json.loads(data)["exitCode"] != 0:
            raise BenchError(f"execute answered {answer.status}: {data[:300]!r}")

    def peer_call(_client):
        done = subprocess.run(peer_args, stdin=subprocess.DEVNULL, capture_output=True)
        if done.returncode != 0:
            raise BenchError(f"bare bwrap failed: {done.stderr[:300]!r}")

    results = {}
    for clients in CLIENTS:
        rounds = {"ferry": [], "bwrap": []}
        for r in range(cfg["rounds"]):
            for side, call in (("ferry", ferry_call), ("bwrap", peer_call)):
                # A warm-up call per client, not counted.
                _in_parallel(clients, 1, call)
                latencies, wall = _in_parallel(clients, calls, call)
                rounds[side].append(dict(
                    p50=statistics.median(latencies),
                    p99=sorted(latencies)[min(len(latencies) - 1, int(len(latencies) * 0.99))],
                    per_second=len(latencies) / wall,
                ))
            f, b = rounds["ferry"][-1], rounds["bwrap"][-1]
            log(f"  execute round {r + 1}, {clients} client(s): ferry p50 {f['p50'] * 1000:.1f} ms, "
                f"{f['per_second']:.0f}/s; bare bwrap p50 {b['p50'] * 1000:.1f} ms, {b['per_second']:.0f}/s")
        results[clients] = rounds
    for conn in connections.values():
        conn.close()
    return dict(calls=calls, by_clients=results)


def _by_clients(r):
    """The rounds by number of clients; a report written again from a run's JSON has the
    numbers as text (JSON keys are strings), so they are read back as numbers."""
    return {int(clients): rounds for clients, rounds in r["by_clients"].items()}


def _median(rounds, key):
    return statistics.median(r[key] for r in rounds)


def summary_row(r, verdict):
    """The summary table's row for the workload's results `r`."""
    if r.get("skipped"):
        return ["19", "`execute` of `true` over HTTP", "skipped", r["skipped"], "–", "–", TARGET, "–"]
    one = _by_clients(r)[1]
    f, b = _median(one["ferry"], "p50"), _median(one["bwrap"], "p50")
    return ["19", "`execute` of `true` over HTTP, one client (p50 ms)", f"{f * 1000:.1f}",
            f"bare bwrap {b * 1000:.1f}", f"{f / b:.2f}", "–", TARGET, verdict(f / b <= 2.0)]


def details(r, w):
    """The workload's section of the report."""
    w("### 19. A command in the sandbox")
    w("")
    if r.get("skipped"):
        w(f"Skipped: commands do not run on this machine ({r['skipped']}).")
        w("")
        return
    w(f"`POST /api/threads/{{id}}/execute` with `{{\"command\": \"true\"}}`, each client on a thread of its own and "
      f"a kept-alive connection, {r['calls']} calls a client a round; the peer: `bwrap` with the namespaces and "
      "mounts ferry gives a command (the same runtime binds, `/tmp`, `/proc`, `/dev`, the sandbox and its read-only "
      "folders), run directly by the client, `sh -c true` inside. What ferry adds on top is what the ratio shows: "
      "HTTP, access, the sandbox listed before and after, the helper process, the seccomp filter, a control "
      "group per command, and the `command_executed` event stored. The server ran with `--execute-concurrent 8`.")
    w("")
    w("| clients | ferry p50 / p99 (ms) | bare bwrap p50 / p99 (ms) | ferry / bwrap p50 | ferry calls/s | bwrap calls/s |")
    w("| --- | --- | --- | --- | --- | --- |")
    for clients, rounds in sorted(_by_clients(r).items()):
        fp50, fp99 = _median(rounds["ferry"], "p50"), _median(rounds["ferry"], "p99")
        bp50, bp99 = _median(rounds["bwrap"], "p50"), _median(rounds["bwrap"], "p99")
        w(f"| {clients} | {fp50 * 1000:.1f} / {fp99 * 1000:.1f} | {bp50 * 1000:.1f} / {bp99 * 1000:.1f} | "
          f"{fp50 / bp50:.2f} | {_median(rounds['ferry'], 'per_second'):.0f} | "
          f"{_median(rounds['bwrap'], 'per_second'):.0f} |")
    w("")
