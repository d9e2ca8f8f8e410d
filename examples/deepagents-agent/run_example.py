"""Runs agent.py end to end against a ferry server it starts, and checks what the user gets.

    FERRY_BIN=target/debug/ferry python3 examples/deepagents-agent/run_example.py

It starts `ferry serve` on a free port in a temporary folder, creates a thread as a user,
uploads a CSV into it as that user, mints an agent token, runs agent.py twice (the second run
finds the first report's name taken and picks the next one), and checks what the user got: one
card (`GET /api/threads/{id}/published`) whose two revisions are the two reports, with the
edited line.

Without the binary it says so and exits 0; with FERRY_CI set that is a failure instead.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
SECRET = "deepagents-example-secret"
CSV = b"region,revenue,orders\nnorth,1200,31\nsouth,950,27\neast,1410,40\n"


def fail(message: str) -> None:
    print(f"FAILED: {message}", flush=True)
    sys.exit(1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(binary: Path, data: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (data / "server.log").open("wb")
    server = subprocess.Popen(
        [str(binary), "serve", "--data", str(data / "data"), "--addr", f"127.0.0.1:{port}"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "FERRY_JWT_SECRET": SECRET},
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            fail(f"ferry serve exited with {server.returncode}:\n{(data / 'server.log').read_text()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return server, url
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    server.kill()
    fail(f"ferry serve did not answer on {url} within 30 s")
    raise AssertionError


def run_agent(url: str, token: str) -> str:
    done = subprocess.run(
        [sys.executable, str(HERE / "agent.py"), "--url", url],
        env={**os.environ, "FERRY_TOKEN": token},
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(done.stdout + done.stderr, flush=True)
    if done.returncode != 0:
        fail(f"agent.py exited with {done.returncode}")
    return done.stdout


def main() -> None:
    configured = os.environ.get("FERRY_BIN")
    binary = Path(configured).resolve() if configured else (HERE / "../../target/debug/ferry").resolve()
    if not binary.is_file():
        message = f"no ferry binary at {binary}: build it (cargo build -p ferry) or point FERRY_BIN at one"
        if os.environ.get("FERRY_CI"):
            fail(message)
        print(f"SKIPPED: {message}")
        return

    with tempfile.TemporaryDirectory() as temp:
        server, url = start(binary, Path(temp))
        try:
            user = subprocess.run(
                [str(binary), "token", "--user", "alice"],
                env={**os.environ, "FERRY_JWT_SECRET": SECRET},
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {user}"}, timeout=30)
            thread = http.post("/api/threads", json={"title": "Quarterly regions"}).raise_for_status().json()["id"]
            upload = http.post(
                f"/api/threads/{thread}/uploads",
                params={"filename": "regions-q3.csv"},
                content=CSV,
                headers={"Content-Type": "text/csv"},
            ).raise_for_status()
            print("uploaded", upload.json()["uploads"][0]["sandboxPath"])
            agent = http.post(f"/api/threads/{thread}/agent-token").raise_for_status().json()["token"]

            run_agent(url, agent)
            second = run_agent(url, agent)
            if "Cannot write to /sandbox/outputs/regions-q3-report.md because it already exists" not in second:
                fail("the second run did not meet the first report")

            # One card: publishing under the same display name adds a revision to it.
            cards = http.get(f"/api/threads/{thread}/published").raise_for_status().json()["files"]
            if [(c["display_name"], c["revision"], c["sandbox_path"]) for c in cards] != [
                ("Report on regions-q3.csv", 2, "/sandbox/outputs/regions-q3-report-2.md")
            ]:
                fail(f"unexpected cards: {cards}")
            every = http.get(f"/api/threads/{thread}/published", params={"revisions": "all"}).raise_for_status().json()["files"]
            paths = [c["sandbox_path"] for c in every]
            if paths != ["/sandbox/outputs/regions-q3-report.md", "/sandbox/outputs/regions-q3-report-2.md"]:
                fail(f"the revisions are {paths}")
            for report in ("regions-q3-report.md", "regions-q3-report-2.md"):
                text = http.get(f"/api/threads/{thread}/sandbox/outputs/{report}").raise_for_status().text
                if "Status: final" not in text or "- revenue: total 3560, highest 1410" not in text:
                    fail(f"{report} is not what the agent wrote:\n{text}")
        finally:
            server.terminate()
            server.wait(timeout=10)
    print("OK: the deepagents example published its reports")


if __name__ == "__main__":
    main()
