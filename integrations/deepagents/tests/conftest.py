"""A real ferry server for the tests: the built binary, on a free port, in a temporary folder.

The binary is `FERRY_BIN`, by default `target/debug/ferry` of the checkout this package sits in.
Without it every test is skipped with a message saying so; with `FERRY_CI` set it is a failure
instead, so that CI cannot pass by skipping.

Each test gets a thread of its own, owned by a user of its own (so spaces never collide), with
the owner's token and an agent token from `POST /api/threads/{id}/agent-token`.

A test that runs commands takes `executing` instead of `thread`: where the server answers
`execute` with 501 (commands are turned off, or cannot be confined on this machine) it is skipped
with ferry's reason; with `FERRY_CI` set that is a failure instead.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from ferry_deepagents import FerryBackend

PACKAGE = Path(__file__).resolve().parents[1]
SECRET = "ferry-deepagents-tests-secret"


def ferry_binary() -> Path:
    configured = os.environ.get("FERRY_BIN")
    return Path(configured).resolve() if configured else (PACKAGE / "../../target/debug/ferry").resolve()


@dataclass
class Server:
    url: str
    binary: Path

    def user_token(self, user: str) -> str:
        """A user's token, as `ferry token --user` prints it."""
        env = {**os.environ, "FERRY_JWT_SECRET": SECRET}
        done = subprocess.run([str(self.binary), "token", "--user", user], env=env, capture_output=True, text=True, check=True)
        return done.stdout.strip()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory):
    binary = ferry_binary()
    if not binary.is_file():
        message = f"no ferry binary at {binary}: build it (cargo build -p ferry) or point FERRY_BIN at one"
        if os.environ.get("FERRY_CI"):
            pytest.fail(f"FERRY_CI is set and there is {message}", pytrace=False)
        pytest.skip(message)
    data = tmp_path_factory.mktemp("ferry-data")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (data / "server.log").open("wb")
    env = {**os.environ, "FERRY_JWT_SECRET": SECRET, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
    process = subprocess.Popen(
        [str(binary), "serve", "--data", str(data / "data"), "--addr", f"127.0.0.1:{port}"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            pytest.fail(f"ferry serve exited with {process.returncode}:\n{(data / 'server.log').read_text()}", pytrace=False)
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"ferry serve did not answer on {url} within 30 s:\n{(data / 'server.log').read_text()}", pytrace=False)
        time.sleep(0.05)
    try:
        yield Server(url=url, binary=binary)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@dataclass
class Thread:
    """One thread: its owner, the owner's token, the agent's token, and HTTP helpers."""

    url: str
    id: str
    user: str
    user_token: str
    agent_token: str

    def backend(self, **options) -> FerryBackend:
        return FerryBackend(url=self.url, token=self.agent_token, **options)

    def http(self, method: str, route: str, *, token: str | None = None, **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token or self.user_token}", **kwargs.pop("headers", {})}
        return httpx.request(method, self.url + route, headers=headers, timeout=30, **kwargs)

    def sandbox_bytes(self, path: str) -> bytes:
        """The bytes of a sandbox file as its owner reads them over HTTP (`path` below /sandbox/)."""
        response = self.http("GET", f"/api/threads/{self.id}/sandbox/{quote(path)}")
        assert response.status_code == 200, response.text
        return response.content

    def space_bytes(self, space: str, path: str) -> bytes:
        response = self.http("GET", f"/api/spaces/{space}/files/{quote(path)}")
        assert response.status_code == 200, response.text
        return response.content

    def upload(self, filename: str, content: bytes, content_type: str) -> dict:
        """Upload a file as the user does; it lands in /sandbox/user_uploads/."""
        response = self.http(
            "POST",
            f"/api/threads/{self.id}/uploads",
            params={"filename": filename},
            content=content,
            headers={"Content-Type": content_type},
        )
        assert response.status_code == 201, response.text
        return response.json()["uploads"][0]

    def expired_agent_token(self) -> str:
        """An agent token for this thread, signed with the server's secret, that expired an hour ago."""

        def part(value: bytes) -> str:
            return base64.urlsafe_b64encode(value).rstrip(b"=").decode()

        now = int(time.time())
        claims = {"sub": self.user, "role": "agent", "aud": "authenticated", "iat": now - 7200, "exp": now - 3600, "thread": self.id}
        signing = part(json.dumps({"typ": "JWT", "alg": "HS256"}).encode()) + "." + part(json.dumps(claims).encode())
        signature = hmac.new(SECRET.encode(), signing.encode(), hashlib.sha256).digest()
        return signing + "." + part(signature)


@pytest.fixture
def thread(server: Server) -> Thread:
    user = f"user-{uuid.uuid4().hex[:10]}"
    user_token = server.user_token(user)
    headers = {"Authorization": f"Bearer {user_token}"}
    made = httpx.post(f"{server.url}/api/threads", json={"title": "deepagents tests"}, headers=headers, timeout=30)
    assert made.status_code == 201, made.text
    thread_id = made.json()["id"]
    minted = httpx.post(f"{server.url}/api/threads/{thread_id}/agent-token", headers=headers, timeout=30)
    assert minted.status_code in (200, 201), minted.text
    return Thread(url=server.url, id=thread_id, user=user, user_token=user_token, agent_token=minted.json()["token"])


@pytest.fixture
def executing(thread: Thread) -> Thread:
    """`thread`, on a server that runs commands (see the module's note)."""
    response = thread.http("POST", f"/api/threads/{thread.id}/execute", token=thread.agent_token, json={"command": "true"})
    if response.status_code == 501:
        try:
            reason = response.json()["error"]["message"]
        except (ValueError, KeyError, TypeError):
            reason = response.text
        message = f"this ferry server runs no commands (execute answered 501: {reason})"
        if os.environ.get("FERRY_CI"):
            pytest.fail(f"FERRY_CI is set and {message}", pytrace=False)
        pytest.skip(message)
    assert response.status_code == 200, f"POST /api/threads/{{id}}/execute answered {response.status_code}: {response.text}"
    return thread
