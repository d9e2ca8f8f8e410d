"""ferry's S3 door (docs/s3.md) driven by the AWS CLI, as a person or a sandbox script would:
`aws s3 cp/sync/ls/rm --recursive` over a tree of 200 files, and `aws s3api` for one object.

Run by crates/ferry/tests/clients/s3_clients.rs against a real `ferry serve`.
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile

import ferry_s3
from ferry_s3 import check

args = ferry_s3.arguments("ferry's S3 door driven by the AWS CLI")
key = ferry_s3.new_key(args.url, args.alice)
env = dict(
    os.environ,
    AWS_ACCESS_KEY_ID=key["accessKeyId"],
    AWS_SECRET_ACCESS_KEY=key["secretAccessKey"],
    AWS_DEFAULT_REGION="us-east-1",
    AWS_CONFIG_FILE=os.devnull,
    AWS_SHARED_CREDENTIALS_FILE=os.devnull,
    AWS_MAX_ATTEMPTS="1",
)
env.pop("AWS_SESSION_TOKEN", None)


def aws(*argv, ok=True):
    """`aws … --endpoint-url <ferry>/s3`: its stdout, or its stderr when `ok` is False."""
    done = subprocess.run(
        ["aws", *argv, "--endpoint-url", args.url + "/s3"], env=env, capture_output=True, text=True, timeout=300
    )
    check((done.returncode == 0) == ok, f"aws {' '.join(argv)} exited {done.returncode}", done.stdout, done.stderr)
    return done.stdout if ok else done.stderr


with tempfile.TemporaryDirectory() as work:
    source = os.path.join(work, "source")
    for i in range(200):
        path = os.path.join(source, f"dir{i % 4}", f"sub{i % 3}", f"file{i:03}.txt")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(f"file {i}\n".encode() * (i + 1))
    expected = ferry_s3.tree(source)

    # mb makes the space (a bucket); cp --recursive up and down: the same 200 files.
    aws("s3", "mb", "s3://cli")
    aws("s3", "cp", "--recursive", source, "s3://cli/tree/")
    listed = aws("s3", "ls", "--recursive", "s3://cli/tree/").splitlines()
    check(len(listed) == 200, "ls --recursive lists 200 files", len(listed), listed[:3])
    check(aws("s3", "ls", "s3://cli/tree/").split() == ["PRE", "dir0/", "PRE", "dir1/", "PRE", "dir2/", "PRE", "dir3/"], "ls rolls up folders")
    down = os.path.join(work, "down")
    aws("s3", "cp", "--recursive", "s3://cli/tree/", down)
    check(ferry_s3.tree(down) == expected, "cp --recursive down returns the same tree")

    # The HTTP API sees what the CLI wrote, with the same etag.
    head = json.loads(aws("s3api", "head-object", "--bucket", "cli", "--key", "tree/dir1/sub1/file001.txt"))
    status, headers, body = ferry_s3.api(args.url, "GET", "/api/spaces/cli/files/tree/dir1/sub1/file001.txt", args.alice)
    check(status == 200 and body == expected["dir1/sub1/file001.txt"], "HTTP read of a CLI write", status)
    check(ferry_s3.etag_of(headers) == head["ETag"] == f'"{hashlib.sha256(body).hexdigest()}"', "one etag", headers, head)

    # sync: only the changed and new files go up; --delete removes what is gone locally.
    with open(os.path.join(source, "dir0", "sub0", "file000.txt"), "wb") as f:
        f.write(b"changed, and longer than before\n")
    with open(os.path.join(source, "new.txt"), "wb") as f:
        f.write(b"new\n")
    os.remove(os.path.join(source, "dir3", "sub2", "file011.txt"))
    synced = aws("s3", "sync", "--no-progress", "--delete", source, "s3://cli/tree/").splitlines()
    check(sorted(line.split()[0] for line in synced) == ["delete:", "upload:", "upload:"], "sync moves only what changed", synced)
    check(aws("s3", "sync", "--no-progress", "--delete", source, "s3://cli/tree/").strip() == "", "a second sync has nothing to do")
    back = os.path.join(work, "back")
    aws("s3", "sync", "s3://cli/tree/", back)
    check(ferry_s3.tree(back) == ferry_s3.tree(source), "sync down mirrors the local tree")

    # A file of 20 MiB goes up in parts (the CLI's threshold is 8 MiB) and comes back whole.
    big = os.path.join(work, "big.bin")
    with open(big, "wb") as f:
        f.write(os.urandom(20 << 20))
    aws("s3", "cp", big, "s3://cli/big.bin")
    aws("s3", "cp", "s3://cli/big.bin", os.path.join(work, "big.back"))
    with open(big, "rb") as a, open(os.path.join(work, "big.back"), "rb") as b:
        check(a.read() == b.read(), "a multipart cp comes back whole")

    # Errors the CLI shows: a bucket of another user's sandbox, a key breaking the path rules.
    bob = ferry_s3.new_key(args.url, args.bob)
    bob_env = dict(env, AWS_ACCESS_KEY_ID=bob["accessKeyId"], AWS_SECRET_ACCESS_KEY=bob["secretAccessKey"])
    refused = subprocess.run(
        ["aws", "s3", "ls", f"s3://sandbox-{args.thread}/", "--endpoint-url", args.url + "/s3"],
        env=bob_env, capture_output=True, text=True, timeout=60,
    )
    check(refused.returncode != 0 and "NoSuchBucket" in refused.stderr, "another user's sandbox is NoSuchBucket", refused.stderr)
    err = aws("s3api", "put-object", "--bucket", "cli", "--key", "a/../b.txt", "--body", big, ok=False)
    check("InvalidArgument" in err, "a key with .. is InvalidArgument", err)

    # rm --recursive empties the bucket, through the HTTP API too.
    aws("s3", "rm", "--recursive", "s3://cli/")
    check(aws("s3", "ls", "--recursive", "s3://cli/").strip() == "", "rm --recursive leaves nothing")
    status, _, body = ferry_s3.api(args.url, "GET", "/api/spaces/cli/files", args.alice)
    check(json.loads(body)["files"] == [], "the space is empty over HTTP", body)
    aws("s3", "rb", "s3://cli")
    check("cli" not in aws("s3", "ls").split(), "rb removes the empty space")
    shutil.rmtree(down)

print("all AWS CLI checks passed")
