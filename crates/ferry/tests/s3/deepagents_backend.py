"""ferry's S3 door (docs/s3.md) as the file system of a deepagents agent: the
`deepagents_contrib_aws.S3Backend` over a boto3 client pointed at ferry, on a space (with and
without a key prefix) and on a thread's sandbox under `outputs/`.

Run by crates/ferry/tests/clients/s3_clients.rs against a real `ferry serve`. Every check
prints nothing on success and exits non-zero with what it saw on failure.
"""

import warnings
from urllib.parse import quote

import boto3
from botocore.config import Config
from deepagents_contrib_aws import S3Backend

import ferry_s3
from ferry_s3 import check

# S3Backend still passes the deprecated `files_update=None` to each WriteResult and EditResult.
warnings.filterwarnings("ignore", message="`files_update` was deprecated")

args = ferry_s3.arguments("ferry's S3 door as a deepagents S3Backend")


def client(token):
    """A boto3 client signing with a new S3 key of `token`."""
    key = ferry_s3.new_key(args.url, token)
    return boto3.client(
        "s3",
        endpoint_url=args.url + "/s3",
        aws_access_key_id=key["accessKeyId"],
        aws_secret_access_key=key["secretAccessKey"],
        region_name="us-east-1",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def http_read(path):
    """The bytes at `path`, an HTTP API route below /api, read with alice's token."""
    status, _, body = ferry_s3.api(args.url, "GET", "/api" + quote(path), args.alice)
    check(status == 200, f"GET /api{path}", status, body)
    return body


def listing(entries):
    """ls_info / glob_info entries without their modification time, which must be a string."""
    check(all(isinstance(e.get("modified_at", ""), str) for e in entries), "modified_at is a string", entries)
    return [{k: v for k, v in e.items() if k != "modified_at"} for e in entries]


def exercise(where, store, http_root):
    """The backend's whole protocol on `store`, whose files the HTTP API serves at `http_root`."""
    note = "# Tea shop\n\nOpen at 7 — ünïcödé\nClosed Sunday and Monday\n"
    done = store.write("/notes/tea.md", note)
    check(done.error is None and done.path == "/notes/tea.md", f"{where}: write", done)
    again = store.write("/notes/tea.md", "other")
    check(again.error == "File already exists: /notes/tea.md", f"{where}: write refuses an existing file", again)
    check(http_read(f"{http_root}/notes/tea.md") == note.encode(), f"{where}: the HTTP API reads the written file")
    seen = store.read("/notes/tea.md")
    check(seen == "     1\t# Tea shop\n     2\t\n     3\tOpen at 7 — ünïcödé\n     4\tClosed Sunday and Monday", f"{where}: read", seen)
    seen = store.read("/notes/tea.md", offset=2, limit=1)
    check(seen == "     3\tOpen at 7 — ünïcödé", f"{where}: read with offset and limit", seen)

    edited = store.edit("/notes/tea.md", "Open at 7", "Open at 8")
    check(edited.error is None and edited.occurrences == 1, f"{where}: edit", edited)
    check(http_read(f"{http_root}/notes/tea.md") == note.replace("7", "8").encode(), f"{where}: the edit reached the file")
    ambiguous = store.edit("/notes/tea.md", "day", "DAY")
    check(ambiguous.error is not None and "appears 2 times" in ambiguous.error, f"{where}: an ambiguous edit is refused", ambiguous)
    every = store.edit("/notes/tea.md", "day", "DAY", replace_all=True)
    check(every.error is None and every.occurrences == 2, f"{where}: edit with replace_all", every)
    check(store.read("/notes/tea.md", offset=3) == "     4\tClosed SunDAY and MonDAY", f"{where}: read after the edits", store.read("/notes/tea.md"))

    store.write("/notes/todo.md", "- milk\n- tea\n")
    store.write("/top.txt", "tea at the top\n")
    ls = listing(store.ls_info("/"))
    check(ls == [{"path": "/notes/", "is_dir": True}, {"path": "/top.txt", "is_dir": False, "size": 15}], f"{where}: ls_info of the root", ls)
    size = len(note.replace("7", "8").replace("day", "DAY").encode())
    ls = listing(store.ls_info("/notes"))
    check(ls == [{"path": "/notes/tea.md", "is_dir": False, "size": size}, {"path": "/notes/todo.md", "is_dir": False, "size": 13}], f"{where}: ls_info of a folder", ls)
    check(store.ls_info("/nothing") == [], f"{where}: ls_info of a missing folder", store.ls_info("/nothing"))
    found = [e["path"] for e in store.glob_info("*.md")]
    check(found == ["/notes/tea.md", "/notes/todo.md"], f"{where}: glob_info", found)
    found = [e["path"] for e in store.glob_info("notes/to*", "/notes")]
    check(found == ["/notes/todo.md"], f"{where}: glob_info below a folder", found)
    matches = store.grep_raw("tea")
    check(matches == [{"path": "/notes/todo.md", "line": 2, "text": "- tea"}, {"path": "/top.txt", "line": 1, "text": "tea at the top"}], f"{where}: grep_raw", matches)
    matches = store.grep_raw("tea", "/", glob="*.md")
    check(matches == [{"path": "/notes/todo.md", "line": 2, "text": "- tea"}], f"{where}: grep_raw with a glob", matches)

    files = [("/bin/data.bin", bytes(range(256)) * 3), ("/bin/ünï côde.txt", "é\n".encode()), ("/bin/empty.txt", b"")]
    uploaded = store.upload_files(files)
    check([(u.path, u.error) for u in uploaded] == [(p, None) for p, _ in files], f"{where}: upload_files", uploaded)
    downloaded = store.download_files([p for p, _ in files] + ["/bin/missing.bin"])
    got = [(d.path, d.content, d.error) for d in downloaded]
    check(got == [(p, c, None) for p, c in files] + [("/bin/missing.bin", None, "file_not_found")], f"{where}: download_files", got)
    check(http_read(f"{http_root}/bin/ünï côde.txt") == "é\n".encode(), f"{where}: the HTTP API reads an uploaded file")

    check(store.read("/missing.md") == "Error: file not found: /missing.md", f"{where}: read of a missing file", store.read("/missing.md"))
    missing = store.edit("/missing.md", "a", "b")
    check(missing.error == "File not found: /missing.md", f"{where}: edit of a missing file", missing)


alice = client(args.alice)
alice.create_bucket(Bucket="agent-files")  # the space the agent keeps its files in
exercise("space", S3Backend("agent-files", client=alice), "/spaces/agent-files/files")
exercise("space with a prefix", S3Backend("agent-files", prefix="runs/1", client=alice), "/spaces/agent-files/files/runs/1")
bare = S3Backend("agent-files", client=alice)
check([e["path"] for e in bare.ls_info("/")] == ["/bin/", "/notes/", "/runs/", "/top.txt"], "the prefixed files sit below runs/1/", bare.ls_info("/"))

sandbox = f"sandbox-{args.thread}"
agent = client(args.agent)
exercise("sandbox", S3Backend(sandbox, prefix="outputs/", client=agent), f"/threads/{args.thread}/sandbox/outputs")
denied = S3Backend(sandbox, client=agent).upload_files([("/skills/x.md", b"x")])
check(denied[0].error == "permission_denied", "skills/ is read-only to the agent", denied)
as_user = S3Backend(sandbox, prefix="outputs/", client=alice)
check(as_user.read("/top.txt") == "     1\ttea at the top", "the user reads the sandbox", as_user.read("/top.txt"))
denied = as_user.upload_files([("/x.md", b"x")])
check(denied[0].error == "permission_denied", "the user does not write the sandbox", denied)
refused = as_user.write("/new.md", "x")
check(refused.error is not None and "AccessDenied" in refused.error, "nor through write", refused)

print("all deepagents checks passed")
