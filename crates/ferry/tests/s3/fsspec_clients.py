"""ferry's S3 door (docs/s3.md) driven by fsspec's s3fs, as data tools (pandas, dask, …) reach
files: ls, find, glob, info, file objects (multipart past the block size, ranged reads), cat,
put and get of trees and rm, against a space and an agent's sandbox.

Run by crates/ferry/tests/clients/s3_clients.rs against a real `ferry serve`. Every check
prints nothing on success and exits non-zero with what it saw on failure.
"""

import hashlib
import os
import tempfile

import s3fs
from s3fs.utils import FileExpired

import ferry_s3
from ferry_s3 import check

args = ferry_s3.arguments("ferry's S3 door driven by fsspec (s3fs)")


def filesystem(token):
    """An s3fs filesystem signing with a new key of `token`, without a listings cache."""
    key = ferry_s3.new_key(args.url, token)
    return s3fs.S3FileSystem(
        key=key["accessKeyId"],
        secret=key["secretAccessKey"],
        client_kwargs={"endpoint_url": args.url + "/s3", "region_name": "us-east-1"},
        config_kwargs={"s3": {"addressing_style": "path"}, "retries": {"max_attempts": 1}},
        use_listings_cache=False,
        skip_instance_cache=True,
    )


def check_raises(error, what, call):
    """Checks that `call()` raises `error`, showing what it did instead."""
    try:
        outcome = call()
    except error:
        return
    except Exception as e:
        outcome = e
    check(False, what, f"expected {error.__name__}, got {outcome!r}")


def write_tree(root):
    """Writes `local_tree` below `root`."""
    for name, data in local_tree.items():
        ferry_s3.write_file(os.path.join(root, name), data)


def sha(data):
    return f'"{hashlib.sha256(data).hexdigest()}"'


def write_in_blocks(fs, path, data, mode="wb"):
    """Writes `data` through a file object in 1 MiB writes with 5 MiB blocks; the part count."""
    with fs.open(path, mode, block_size=5 << 20) as f:
        for at in range(0, len(data), 1 << 20):
            f.write(data[at : at + (1 << 20)])
    return len(f.parts or [])


local_tree = {
    "a.txt": b"alpha\n",
    os.path.join("sub", "b.md"): "# Bé\n".encode(),
    os.path.join("sub", "deeper", "c.bin"): bytes(range(256)) * 17,
}
big = b"".join(hashlib.sha256(bytes([i])).digest() * (1 << 15) for i in range(12))  # 12 MiB, no repeating MiB

fs = filesystem(args.alice)
check_raises(FileNotFoundError, "a space never made is no bucket", lambda: fs.ls("lake"))
fs.mkdir("lake")  # CreateBucket: an empty space
check(fs.ls("lake") == [], "a new space is empty", fs.ls("lake"))

# File objects: text and binary, one-shot and multipart; info, cat and ranged reads.
note = "# Tea shop\n\nOpen at 7 — ünïcödé\n"
with fs.open("lake/notes/tea.md", "w", encoding="utf-8") as f:
    f.write(note)
with fs.open("lake/notes/tea.md", "r", encoding="utf-8") as f:
    check(f.read() == note, "text write and read")
with fs.open("lake/notes/todo.md", "wb") as f:
    f.write(b"- [ ] milk\n")
with fs.open("lake/data/small.bin", "wb") as f:
    f.write(bytes(range(256)))
check(fs.cat("lake/data/small.bin") == bytes(range(256)), "binary write, cat")
with fs.open("lake/data/small.bin", "rb", block_size=16) as f:
    f.read(16)
    fs.pipe("lake/data/small.bin", bytes(range(255, -1, -1)))
    f.seek(128)
    check_raises(FileExpired, "a file rewritten under an open reader is FileExpired (If-Match on the ranged GET)", lambda: f.read(16))
parts = write_in_blocks(fs, "lake/data/big.bin", big)
check(parts == 3, "12 MiB written in 5 MiB blocks is a 3-part multipart upload", parts)
info = fs.info("lake/data/big.bin")
check(info["type"] == "file" and info["size"] == len(big) and info["ETag"] == sha(big), "info of the multipart object", info)
with fs.open("lake/data/big.bin", "rb", block_size=1 << 20) as f:
    f.seek((7 << 20) - 5)
    check(f.read(10) == big[(7 << 20) - 5 : (7 << 20) + 5], "a ranged read across a block boundary")
    f.seek(0)
    check(f.read() == big, "the whole multipart object read back in 1 MiB blocks")
status, headers, body = ferry_s3.api(args.url, "GET", "/api/spaces/lake/files/data/big.bin", args.alice)
check(status == 200 and body == big and ferry_s3.etag_of(headers) == info["ETag"], "the HTTP API reads the same bytes and ETag", status, headers)
status, headers, body = ferry_s3.api(args.url, "GET", "/api/spaces/lake/files/notes/tea.md", args.alice)
check(body == note.encode() and ferry_s3.etag_of(headers) == fs.info("lake/notes/tea.md")["ETag"], "and of the text file", headers)
check_raises(FileExistsError, "exclusive create of a taken key", lambda: fs.pipe("lake/notes/tea.md", b"x", mode="create"))
check_raises(FileExistsError, "exclusive multipart create of a taken key", lambda: write_in_blocks(fs, "lake/data/big.bin", big[: 6 << 20], "xb"))
check(fs.cat("lake/notes/tea.md") == note.encode() and fs.info("lake/data/big.bin")["size"] == len(big), "both left the files alone")
check_raises(FileNotFoundError, "cat of a missing key", lambda: fs.cat("lake/notes/missing.md"))

# Listing: buckets, folders, find, glob, exists.
check(fs.ls("") == ["lake"], "ls of the root lists the spaces", fs.ls(""))
check(fs.ls("lake") == ["lake/data", "lake/notes"], "ls of a space", fs.ls("lake"))
listed = {e["name"]: (e["type"], e["size"]) for e in fs.ls("lake/data", detail=True)}
check(listed == {"lake/data/big.bin": ("file", len(big)), "lake/data/small.bin": ("file", 256)}, "ls with details", listed)
check(fs.find("lake") == ["lake/data/big.bin", "lake/data/small.bin", "lake/notes/tea.md", "lake/notes/todo.md"], "find", fs.find("lake"))
check(fs.find("lake", withdirs=True) == ["lake/data", "lake/data/big.bin", "lake/data/small.bin", "lake/notes", "lake/notes/tea.md", "lake/notes/todo.md"], "find with folders", fs.find("lake", withdirs=True))
check(fs.glob("lake/**/*.md") == ["lake/notes/tea.md", "lake/notes/todo.md"], "glob **", fs.glob("lake/**/*.md"))
check(fs.glob("lake/data/s*.bin") == ["lake/data/small.bin"], "glob *", fs.glob("lake/data/s*.bin"))
check(fs.cat("lake/notes/*.md") == {"lake/notes/tea.md": note.encode(), "lake/notes/todo.md": b"- [ ] milk\n"}, "cat of a glob")
check(fs.exists("lake/notes/tea.md") and fs.isfile("lake/notes/tea.md"), "exists: a file")
check(fs.exists("lake/notes") and fs.isdir("lake/notes"), "exists: a folder")
check(not fs.exists("lake/notes/missing.md") and not fs.exists("lake/nothing/"), "exists: nothing")

# put and get of a tree, rm of a file and a folder.
with tempfile.TemporaryDirectory() as work:
    write_tree(os.path.join(work, "up"))
    fs.put(os.path.join(work, "up") + "/", "lake/tree/", recursive=True)
    found = fs.find("lake/tree")
    check(found == sorted(f"lake/tree/{n.replace(os.sep, '/')}" for n in local_tree), "put of a tree", found)
    status, _, body = ferry_s3.api(args.url, "GET", "/api/spaces/lake/files/tree/sub/b.md", args.alice)
    check(status == 200 and body == local_tree[os.path.join("sub", "b.md")], "the HTTP API reads a put file", status, body)
    fs.get("lake/tree/", os.path.join(work, "down") + "/", recursive=True)
    check(ferry_s3.tree(os.path.join(work, "down")) == local_tree, "get of the tree brings the same bytes back", ferry_s3.tree(os.path.join(work, "down")))
fs.rm("lake/tree/a.txt")
check(not fs.exists("lake/tree/a.txt"), "rm of a file")
fs.rm("lake/tree/sub", recursive=True)
check(fs.find("lake/tree") == [] and not fs.exists("lake/tree"), "rm -r of a folder", fs.find("lake/tree"))
status, _, _ = ferry_s3.api(args.url, "GET", "/api/spaces/lake/files/tree/sub/deeper/c.bin", args.alice)
check(status == 404, "removed through the HTTP API too", status)

# The sandbox: the agent writes under outputs/, the user reads, skills/ stays read-only.
agent = filesystem(args.agent)
box = f"sandbox-{args.thread}"
with agent.open(f"{box}/outputs/report.md", "w", encoding="utf-8") as f:
    f.write("# Report\n\nDone — ✓\n")
with agent.open(f"{box}/outputs/report.md", "r", encoding="utf-8") as f:
    check(f.read() == "# Report\n\nDone — ✓\n", "the agent writes and reads its sandbox")
sandbox_big = big[: 6 << 20]
parts = write_in_blocks(agent, f"{box}/outputs/data/big.bin", sandbox_big)
check(parts == 2, "6 MiB into the sandbox in 5 MiB blocks is a 2-part multipart upload", parts)
with agent.open(f"{box}/outputs/data/big.bin", "rb", block_size=1 << 20) as f:
    check(f.read() == sandbox_big, "the sandbox's multipart object read back in blocks")
info = agent.info(f"{box}/outputs/data/big.bin")
status, headers, body = ferry_s3.api(args.url, "GET", f"/api/threads/{args.thread}/sandbox/outputs/data/big.bin", args.alice)
check(status == 200 and body == sandbox_big and ferry_s3.etag_of(headers) == info["ETag"], "the HTTP API reads the sandbox file, same ETag", status, headers, info)
with tempfile.TemporaryDirectory() as work:
    write_tree(os.path.join(work, "up"))
    agent.put(os.path.join(work, "up") + "/", f"{box}/outputs/tree/", recursive=True)
    agent.get(f"{box}/outputs/tree/", os.path.join(work, "down") + "/", recursive=True)
    check(ferry_s3.tree(os.path.join(work, "down")) == local_tree, "put and get of a tree in the sandbox")
found = agent.find(f"{box}/outputs")
check(found == sorted([f"{box}/outputs/report.md", f"{box}/outputs/data/big.bin"] + [f"{box}/outputs/tree/{n.replace(os.sep, '/')}" for n in local_tree]), "find in the sandbox", found)
check(agent.ls(f"{box}/outputs") == [f"{box}/outputs/data", f"{box}/outputs/report.md", f"{box}/outputs/tree"], "ls in the sandbox", agent.ls(f"{box}/outputs"))
check(agent.glob(f"{box}/outputs/**/*.md") == [f"{box}/outputs/report.md", f"{box}/outputs/tree/sub/b.md"], "glob in the sandbox", agent.glob(f"{box}/outputs/**/*.md"))
agent.rm(f"{box}/outputs/tree", recursive=True)
check(agent.find(f"{box}/outputs/tree") == [], "rm -r in the sandbox", agent.find(f"{box}/outputs/tree"))
status, _, _ = ferry_s3.api(args.url, "GET", f"/api/threads/{args.thread}/sandbox/outputs/tree/a.txt", args.alice)
check(status == 404, "removed from the sandbox through the HTTP API too", status)
check(fs.cat(f"{box}/outputs/report.md") == "# Report\n\nDone — ✓\n".encode(), "the user reads the sandbox")
check_raises(PermissionError, "the user does not write the sandbox", lambda: fs.pipe(f"{box}/outputs/x.md", b"x"))
check_raises(PermissionError, "skills/ stays read-only", lambda: agent.pipe(f"{box}/skills/x.md", b"x"))
check_raises(FileNotFoundError, "another thread's sandbox is not there (NoSuchBucket)", lambda: agent.pipe(f"sandbox-{args.other_thread}/outputs/x.md", b"x"))

print("all fsspec checks passed")
