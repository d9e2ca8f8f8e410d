"""Every kind of event a running server emits, held to the OpenAPI document's schemas.

Makes one thread produce each event type the document's `ThreadEvent` names (an upload, a
message with it, sandbox writes, a move and a removal, send_file, a publish that ends well and
one that fails, a say-mode reply with a file) and one space produce each change of its feed,
then validates every event read back (`format=json`) against `ThreadEvent` or `SpaceEvent`,
and the live thread list's events (while a thread is made, renamed and deleted) against
`ThreadListEvent`, and fails unless every type each schema lists was seen. The web UI's types are generated from
the same schemas, so this is what keeps the server, the document and the UI in step.

Usage: python3 .ci/events_schema.py BASE_URL USER_TOKEN
"""

import json
import sys
import threading
import time

import httpx
from openapi_schema_validator import OAS31Validator


def check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"FAILED: {what}")


def validator(document: dict, name: str) -> OAS31Validator:
    # The schema refers into the document's own components, so it travels with them.
    return OAS31Validator({"$ref": f"#/components/schemas/{name}", "components": document["components"]})


def kinds_of(document: dict, name: str) -> set[str]:
    """The `type` values a schema allows: every enum under a `type` property, at any depth."""
    found: set[str] = set()
    schemas = document["components"]["schemas"]

    def walk(node, seen):
        if isinstance(node, dict):
            ref = node.get("$ref")
            if ref and ref not in seen:
                walk(schemas[ref.rsplit("/", 1)[1]], seen | {ref})
            kind = node.get("properties", {}).get("type", {})
            if "$ref" in kind:
                kind = schemas[kind["$ref"].rsplit("/", 1)[1]]
            found.update(kind.get("enum", []))
            for value in node.values():
                walk(value, seen)
        elif isinstance(node, list):
            for value in node:
                walk(value, seen)

    walk(schemas[name], frozenset())
    return found


def held_to(document: dict, name: str, got: list[dict], what: str) -> None:
    """Every event of `got` is a `name`, and every type `name` lists is among them."""
    schema = validator(document, name)
    for event in got:
        errors = sorted(schema.iter_errors(event), key=str)
        check(not errors, f"{what}: {event.get('type')} is a {name}: {errors[:1]} in {event}")
    expected = kinds_of(document, name)
    seen = {event["type"] for event in got}
    check(expected <= seen, f"{what} show every type of {name}; missing {sorted(expected - seen)}")
    print(f"{len(got)} {what} match {name}: {', '.join(sorted(seen))}")


def main() -> None:
    base, user = sys.argv[1].rstrip("/"), sys.argv[2]
    http = httpx.Client(base_url=base, timeout=30)

    def call(method: str, path: str, token: str, expect: tuple[int, ...], **kwargs) -> httpx.Response:
        headers = {"authorization": f"Bearer {token}", **kwargs.pop("headers", {})}
        reply = http.request(method, path, headers=headers, **kwargs)
        check(reply.status_code in expect, f"{method} {path}: {reply.status_code} {reply.text[:300]}")
        return reply

    document = call("GET", "/api/openapi.json", user, (200,)).json()

    thread = call("POST", "/api/threads", user, (201,), json={"title": "events"}).json()["id"]
    agent = call("POST", f"/api/threads/{thread}/agent-token", user, (200, 201)).json()["token"]
    t = f"/api/threads/{thread}"

    upload = call("POST", f"{t}/uploads", user, (200, 201), files={"file": ("q.csv", b"a,b\n1,2\n", "text/csv")})
    upload_id = upload.json()["uploads"][0]["id"]
    call("POST", f"{t}/messages", user, (200, 201), json={"text": "here", "uploadIds": [upload_id]})
    call("POST", f"{t}/fs/write_file", agent, (200, 201), json={"path": "/sandbox/outputs/a.md", "content": "# A\n"})
    call("POST", f"{t}/fs/move_file", agent, (200,), json={"source": "/sandbox/outputs/a.md", "destination": "/sandbox/outputs/report.md"})
    call("POST", f"{t}/send-file", agent, (200,), json={"filePath": "/sandbox/outputs/report.md"})
    call("POST", f"{t}/published", agent, (200, 201), json={"file_path": "/sandbox/outputs/report.md", "display_name": "Report"})
    # A missing file is found once the publish has started: it ends in a failure event.
    call("POST", f"{t}/published", agent, (404,), json={"file_path": "/sandbox/outputs/gone.md", "display_name": "Gone"})
    call("POST", f"{t}/say", agent, (200,), json={"text": '<say>Done.</say><file mode="doc">/sandbox/outputs/report.md</file>'})
    call("POST", f"{t}/fs/delete_file", agent, (200,), json={"path": "/sandbox/outputs/report.md"})
    # A command (CI runs commands: bubblewrap is installed), which writes a file as it goes.
    call("POST", f"{t}/execute", agent, (200,), json={"command": "echo done > /sandbox/outputs/ran.txt; echo ok"})

    space = "/api/spaces/notes"
    call("PUT", f"{space}/files/a.md", user, (200, 201), content=b"# a\n", headers={"content-type": "text/markdown"})
    call("POST", "/api/fs/move_file", user, (200,), json={"source": "/spaces/notes/a.md", "destination": "/spaces/notes/b.md"})
    call("DELETE", f"{space}/files/b.md", user, (200, 204))

    def events(path: str, until: set[str]) -> list[dict]:
        # A publish ends in the background: wait (briefly) for its end.
        for _ in range(100):
            got = call("GET", path, user, (200,), params={"after": 0, "format": "json"}).json()
            if until <= {event["type"] for event in got}:
                return got
            time.sleep(0.1)
        return got

    for path, name in ((f"{t}/events", "ThreadEvent"), (f"{space}/events", "SpaceEvent")):
        expected = kinds_of(document, name)
        check(len(expected) >= 3, f"{name} names its types ({sorted(expected)})")
        held_to(document, name, events(path, expected), f"events of {path.split('/')[2]}")

    # The live thread list: its events, read off the stream while a thread is made, renamed
    # and deleted, each held to `ThreadListEvent`.
    heard: list[dict] = []

    def follow() -> None:
        headers = {"authorization": f"Bearer {user}"}
        with httpx.Client(base_url=base, timeout=30).stream("GET", "/api/threads/live", headers=headers) as stream:
            for line in stream.iter_lines():
                if line.startswith("data: "):
                    heard.append(json.loads(line[len("data: "):]))
                    if heard[-1]["type"] == "thread_deleted":
                        return

    def hear(count: int) -> None:
        # Changes close together reach a follower as one difference (a thread made and deleted
        # at once is no change at all): each step waits to be heard before the next.
        for _ in range(200):
            if len(heard) >= count or not reader.is_alive():
                return
            time.sleep(0.05)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    hear(1)
    made = call("POST", "/api/threads", user, (201,), json={}).json()["id"]
    hear(2)
    call("PATCH", f"/api/threads/{made}", user, (200,), json={"title": "renamed"})
    hear(3)
    call("DELETE", f"/api/threads/{made}", user, (204,))
    reader.join(timeout=20)
    held_to(document, "ThreadListEvent", heard, "events of the live thread list")


if __name__ == "__main__":
    main()
