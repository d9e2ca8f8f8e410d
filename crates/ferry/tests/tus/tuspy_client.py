"""Resumable uploads with tuspy, the tus project's Python client, unchanged, against the real
`ferry` binary (docs/reference/resumable-uploads.md): an upload into a thread, with a SHA-1
checksum on every part, survives a SIGKILL of the server and continues after the restart from
its last durable part; a space file goes up the same way. Both end byte for byte as the plain
routes would have stored them.

Usage: FERRY_BIN=target/debug/ferry python3 tuspy_client.py
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time

import httpx
from tusclient import client as tus
from tusclient.exceptions import TusCommunicationError, TusUploadFailed

MIB = 1 << 20


class Ferry:
    """`ferry serve` in a data folder; `restart` brings it back on the same folder and port."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.data = tempfile.mkdtemp(prefix="ferry-tuspy-")
        self.secret = secrets.token_hex(32)
        self.addr = "127.0.0.1:0"
        self.process: subprocess.Popen[str] | None = None
        self.start()

    def start(self) -> None:
        env = {**os.environ, "FERRY_JWT_SECRET": self.secret, "FERRY_LOG": "info"}
        self.process = subprocess.Popen(
            [self.binary, "serve", "--addr", self.addr, "--data", self.data],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.time() + 30
        assert self.process.stderr is not None
        while time.time() < deadline:
            line = self.process.stderr.readline()
            found = re.search(r"addr=(\S+)", re.sub(r"\x1b\[[0-9;]*m", "", line))
            if found:
                self.addr = found.group(1)
                break
        else:
            raise SystemExit("ferry did not print its address")
        # Keep reading its log so that it never blocks on a full pipe.
        import threading

        threading.Thread(target=self.process.stderr.read, daemon=True).start()
        for _ in range(200):
            try:
                if httpx.get(f"{self.base}/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise SystemExit("ferry did not become healthy")

    @property
    def base(self) -> str:
        return f"http://{self.addr}"

    def token(self, *args: str) -> str:
        env = {**os.environ, "FERRY_JWT_SECRET": self.secret}
        return subprocess.check_output([self.binary, "token", *args], env=env, text=True).strip()

    def crash(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"FAILED: {what}")


def main() -> None:
    ferry = Ferry(os.environ["FERRY_BIN"])
    try:
        user = ferry.token("--user", "alice")
        auth = {"Authorization": f"Bearer {user}"}
        thread = httpx.post(f"{ferry.base}/api/threads", json={"title": "tuspy"}, headers=auth).json()
        data = secrets.token_bytes(10 * MIB)
        endpoint = f"{ferry.base}/api/uploads/resumable"

        # Six of ten MiB go up in 2 MiB parts, each with its SHA-1; then the server is killed.
        uploader = tus.TusClient(endpoint, headers=auth).uploader(
            file_stream=io.BytesIO(data),
            chunk_size=2 * MIB,
            metadata={"threadId": thread["id"], "filename": "scan.bin"},
            upload_checksum=True,
        )
        uploader.upload(stop_at=6 * MIB)
        check(uploader.offset == 6 * MIB, f"six MiB acknowledged ({uploader.offset})")
        url = uploader.url
        ferry.crash()
        try:
            uploader.upload_chunk()
            check(False, "a part sent to a dead server fails")
        except (TusCommunicationError, TusUploadFailed, httpx.TransportError, OSError):
            pass

        ferry.start()
        resumed = tus.TusClient(endpoint, headers=auth).uploader(
            file_stream=io.BytesIO(data), url=url, chunk_size=2 * MIB, upload_checksum=True
        )
        check(resumed.offset == 6 * MIB, f"the server still has six MiB after the kill ({resumed.offset})")
        resumed.upload()
        answer = httpx.get(f"{ferry.base}{httpx.URL(url).path}", headers=auth)
        check(answer.status_code == 201, f"the answer is the plain upload's ({answer.status_code})")
        upload = answer.json()["uploads"][0]
        check(upload["sha256"] == hashlib.sha256(data).hexdigest(), "the upload's sha256")
        copy = httpx.get(f"{ferry.base}/api/threads/{thread['id']}/sandbox/user_uploads/scan.bin", headers=auth)
        check(copy.content == data, "the sandbox copy holds the exact bytes")

        # A space file, in one go.
        note = "# Notes\n\nUploaded with tuspy.\n".encode()
        tus.TusClient(endpoint, headers=auth).uploader(
            file_stream=io.BytesIO(note),
            metadata={"spaceName": "notes", "path": "tuspy/notes.md", "contentType": "text/markdown"},
            upload_checksum=True,
        ).upload()
        stored = httpx.get(f"{ferry.base}/api/spaces/notes/files/tuspy/notes.md", headers=auth)
        check(stored.status_code == 200 and stored.content == note, "the space file")
        check(stored.headers["content-type"] == "text/markdown", "its content type")
        print("tuspy: a killed upload resumed and finished byte for byte; a space file went up")
    finally:
        ferry.stop()


if __name__ == "__main__":
    sys.exit(main())
