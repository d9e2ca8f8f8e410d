"""The HTTP side of the package: one ferry server, one token, requests and their refusals.

Each operation is written once, as a generator that yields `Request`s and receives what each
one answered (a dict for JSON, bytes for a raw GET); it may also yield a `Pause` to wait before
its next request. `Connection.run` drives such a plan with a blocking `httpx.Client` (and
`time.sleep`), `Connection.arun` with an `httpx.AsyncClient` (and `asyncio.sleep`), so the sync
and async methods of the backend share every line of their logic.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import threading
import time
import weakref
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

T = TypeVar("T")

# Statuses a read may be retried on: a gateway in front of ferry, or a sandbox busy past its
# timeout (503 UNAVAILABLE).
_RETRY_STATUSES = frozenset({502, 503, 504})


class FerryError(Exception):
    """A refusal from ferry (its error envelope), or a failure to reach it.

    `status` is the HTTP status (0 when no answer came), `code` the envelope's code
    (`NOT_FOUND`, `ALREADY_EXISTS`, `INVALID_PATH`, `FORBIDDEN`, ..., or `UNREACHABLE`),
    `message` the envelope's message, `retry_after` the seconds of a `Retry-After` header
    (a 429 or 503 carries one), else `None`.
    """

    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after

    def describe(self) -> str:
        """The refusal as one sentence a model can act on."""
        if self.status == 401:
            return (
                f"ferry refused the token ({self.code}: {self.message}). Tokens expire (an agent "
                "token after an hour by default): mint a new one with POST /api/threads/{id}/agent-token "
                "and pass it as token="
            )
        return f"{self.message} ({self.code})"

    def __repr__(self) -> str:
        return f"FerryError(status={self.status}, code={self.code!r}, message={self.message!r})"


@dataclass
class Request:
    """One HTTP request of a plan. `route` is below the server's base URL (it starts with
    `/api/`) unless `absolute` is set, for a URL ferry handed out."""

    method: str
    route: str
    json: Any = None
    content: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bool = False
    """Answer the body's bytes instead of its JSON."""
    idempotent: bool = False
    """Safe to send again after a network failure (reads only)."""
    absolute: bool = False
    read_timeout: float | None = None
    """Seconds to wait for the answer, when not the connection's own `timeout` (a command's
    answer comes when the command ends). Connecting and sending keep the connection's."""


@dataclass
class Pause:
    """A wait of a plan before its next request (e.g. for a `Retry-After`); answered `None`."""

    seconds: float


Plan = Generator[Request | Pause, Any, T]


def token_claims(token: str) -> dict[str, Any]:
    """The claims of a JWT, read without checking its signature (ferry checks it); `{}` for a
    token that is not a JWT."""
    try:
        payload = token.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError, binascii.Error):
        return {}


def quote_path(path: str) -> str:
    """A path below a route, each segment percent-encoded. A `.` or `..` segment is encoded too,
    so that no client folds it away: ferry sees it and refuses it itself."""
    segments = []
    for segment in path.split("/"):
        if segment in (".", ".."):
            segments.append(segment.replace(".", "%2E"))
        else:
            segments.append(quote(segment, safe=""))
    return "/".join(segments)


def _retry_after(response: httpx.Response) -> float | None:
    """A `Retry-After` header's seconds; `None` without one (or with the HTTP-date form)."""
    try:
        seconds = float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def _refusal(response: httpx.Response) -> FerryError:
    retry_after = _retry_after(response)
    try:
        envelope = response.json()["error"]
        return FerryError(response.status_code, str(envelope["code"]), str(envelope["message"]), retry_after)
    except (ValueError, KeyError, TypeError):
        text = response.text.strip()[:300] or response.reason_phrase
        return FerryError(response.status_code, f"HTTP_{response.status_code}", text, retry_after)


def _answer(request: Request, response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise _refusal(response)
    if request.raw:
        return response.content
    if not response.content:
        return {}
    try:
        return response.json()
    except ValueError as exc:
        raise FerryError(response.status_code, "BAD_ANSWER", f"ferry answered something that is not JSON: {exc}") from exc


class Connection:
    """A ferry server, a bearer token and the thread they act in."""

    def __init__(
        self,
        url: str,
        token: str,
        thread: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 2,
        http_client: httpx.Client | None = None,
        async_http_client: httpx.AsyncClient | None = None,
    ) -> None:
        if not url:
            raise ValueError("url is required: the ferry server's base URL, e.g. http://127.0.0.1:8080")
        if not token:
            raise ValueError("token is required: an agent token (ferry token --agent, or POST /api/threads/{id}/agent-token)")
        self.url = url.rstrip("/")
        self.token = token
        self.named_thread = thread
        claim = token_claims(token).get("thread")
        self.thread: str | None = thread or (claim if isinstance(claim, str) else None)
        """The thread whose sandbox `/sandbox` is: the one named, else the agent token's own."""
        self.timeout = timeout
        self.retries = max(0, retries)
        self._client = http_client
        self._owns_client = http_client is None
        self._async_client = async_http_client
        self._lock = threading.Lock()

    # -- routes ---------------------------------------------------------------------------

    def fs(self, tool: str) -> str:
        """The route of one file operation: the named thread's, else the token's own."""
        if self.named_thread:
            return f"/api/threads/{quote(self.named_thread, safe='')}/fs/{tool}"
        return f"/api/fs/{tool}"

    def thread_route(self, tail: str) -> str:
        if not self.thread:
            raise FerryError(
                400,
                "INVALID_REQUEST",
                "no thread: pass thread= or use an agent token, which names its thread",
            )
        return f"/api/threads/{quote(self.thread, safe='')}/{tail}"

    def raw_route(self, path: str) -> str | None:
        """The route serving the bytes of a `/sandbox/...` or `/spaces/{space}/...` path, or
        `None` for any other form (ask ferry for a file URL instead)."""
        if path.startswith("/sandbox/"):
            return self.thread_route("sandbox/" + quote_path(path[len("/sandbox/") :]))
        if path.startswith("/spaces/"):
            space, _, rest = path[len("/spaces/") :].partition("/")
            if space and rest:
                return f"/api/spaces/{quote_path(space)}/files/{quote_path(rest)}"
        return None

    # -- transport ------------------------------------------------------------------------

    def _headers(self, request: Request) -> dict[str, str]:
        headers = dict(request.headers)
        if not request.absolute:
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    def _url(self, request: Request) -> str:
        return request.route if request.absolute else self.url + request.route

    def _timeout(self, request: Request) -> httpx.Timeout:
        return httpx.Timeout(self.timeout, read=self.timeout if request.read_timeout is None else request.read_timeout)

    def _unreachable(self, exc: Exception) -> FerryError:
        return FerryError(0, "UNREACHABLE", f"could not reach ferry at {self.url}: {type(exc).__name__}: {exc}")

    def client(self) -> httpx.Client:
        # The agent's tools may call from several threads at once (deepagents runs glob in a
        # pool); one client and its connection pool serve them all.
        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=self.timeout)
                # Closed with the connection when it is collected, if close() was not called.
                weakref.finalize(self, self._client.close)
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._client is not None and self._owns_client:
                self._client.close()
                self._client = None

    def send(self, request: Request) -> Any:
        attempts = 1 + (self.retries if request.idempotent else 0)
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                response = self.client().request(
                    request.method,
                    self._url(request),
                    json=request.json,
                    content=request.content,
                    headers=self._headers(request),
                    timeout=self._timeout(request),
                )
            except httpx.TransportError as exc:
                if last:
                    raise self._unreachable(exc) from exc
                time.sleep(0.2 * 2**attempt)
                continue
            if response.status_code in _RETRY_STATUSES and not last:
                time.sleep(0.2 * 2**attempt)
                continue
            return _answer(request, response)
        raise RuntimeError("no attempt was made")  # attempts is at least 1

    async def asend(self, request: Request) -> Any:
        attempts = 1 + (self.retries if request.idempotent else 0)
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                if self._async_client is not None:
                    response = await self._async_client.request(
                        request.method,
                        self._url(request),
                        json=request.json,
                        content=request.content,
                        headers=self._headers(request),
                        timeout=self._timeout(request),
                    )
                else:
                    # A client of its own for each call: an AsyncClient belongs to the event loop
                    # it was first used in, and callers may run each call in a new loop.
                    async with httpx.AsyncClient(timeout=self.timeout) as client:
                        response = await client.request(
                            request.method,
                            self._url(request),
                            json=request.json,
                            content=request.content,
                            headers=self._headers(request),
                            timeout=self._timeout(request),
                        )
            except httpx.TransportError as exc:
                if last:
                    raise self._unreachable(exc) from exc
                await asyncio.sleep(0.2 * 2**attempt)
                continue
            if response.status_code in _RETRY_STATUSES and not last:
                await asyncio.sleep(0.2 * 2**attempt)
                continue
            return _answer(request, response)
        raise RuntimeError("no attempt was made")  # attempts is at least 1

    # -- plans ----------------------------------------------------------------------------

    def run(self, plan: Plan[T]) -> T:
        """Drive `plan` with blocking requests. A refusal is thrown into the plan, which may
        catch it; if it does not, it comes out of `run`."""
        try:
            request = next(plan)
            while True:
                if isinstance(request, Pause):
                    time.sleep(request.seconds)
                    request = plan.send(None)
                    continue
                try:
                    answer = self.send(request)
                except FerryError as exc:
                    request = plan.throw(exc)
                else:
                    request = plan.send(answer)
        except StopIteration as stop:
            return stop.value

    async def arun(self, plan: Plan[T]) -> T:
        """`run`, with the requests awaited."""
        try:
            request = next(plan)
            while True:
                if isinstance(request, Pause):
                    await asyncio.sleep(request.seconds)
                    request = plan.send(None)
                    continue
                try:
                    answer = await self.asend(request)
                except FerryError as exc:
                    request = plan.throw(exc)
                else:
                    request = plan.send(answer)
        except StopIteration as stop:
            return stop.value
