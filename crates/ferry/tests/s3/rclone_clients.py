"""ferry's S3 door (docs/s3.md) driven by rclone, as a container syncing a bucket would:
`copy`, `sync`, `lsf` and `check` both ways, against a space and an agent's sandbox.

Run by crates/ferry/tests/clients/s3_clients.rs against a real `ferry serve`.
"""

import os
import subprocess
import tempfile

import ferry_s3
from ferry_s3 import check

args = ferry_s3.arguments("ferry's S3 door driven by rclone")


def remote(token):
    """rclone's environment for a remote named `ferry` signing with a new key of `token`."""
    key = ferry_s3.new_key(args.url, token)
    # Only the remote's own settings: an AWS_* variable of the machine (AWS_CA_BUNDLE, a
    # profile) would be read by rclone's S3 SDK as well.
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    return dict(
        inherited,
        RCLONE_CONFIG=os.devnull,
        RCLONE_CONFIG_FERRY_TYPE="s3",
        RCLONE_CONFIG_FERRY_PROVIDER="Other",
        RCLONE_CONFIG_FERRY_ENDPOINT=args.url + "/s3",
        RCLONE_CONFIG_FERRY_ACCESS_KEY_ID=key["accessKeyId"],
        RCLONE_CONFIG_FERRY_SECRET_ACCESS_KEY=key["secretAccessKey"],
        RCLONE_CONFIG_FERRY_REGION="us-east-1",
        RCLONE_CONFIG_FERRY_FORCE_PATH_STYLE="true",
    )


def rclone(env, *argv, ok=True):
    """`rclone …`: its stdout, or its stderr when `ok` is False."""
    done = subprocess.run(["rclone", "--retries", "1", "--low-level-retries", "1", *argv], env=env, capture_output=True, text=True, timeout=300)
    check((done.returncode == 0) == ok, f"rclone {' '.join(argv)} exited {done.returncode}", done.stdout, done.stderr)
    return done.stdout if ok else done.stderr


alice = remote(args.alice)
agent = remote(args.agent)
sandbox = f"ferry:sandbox-{args.thread}/outputs"

with tempfile.TemporaryDirectory() as work:
    local = os.path.join(work, "local")
    for i in range(60):
        ferry_s3.write_file(os.path.join(local, f"d{i % 3}", f"n{i:02}.md"), f"# note {i}\n".encode() * (i + 1))
    ferry_s3.write_file(os.path.join(local, "big.bin"), os.urandom(12 << 20))

    # copy up; lsf lists what arrived; check compares sizes and hashes both ways.
    rclone(alice, "copy", local, "ferry:rc/tree")
    listed = rclone(alice, "lsf", "-R", "--files-only", "ferry:rc/tree").split()
    check(sorted(listed) == sorted(ferry_s3.tree(local)), "lsf -R lists every copied file", listed[:5])
    check(rclone(alice, "lsf", "ferry:rc/tree").split() == ["big.bin", "d0/", "d1/", "d2/"], "lsf shows folders")
    rclone(alice, "check", local, "ferry:rc/tree")
    rclone(alice, "check", "--download", "ferry:rc/tree", local)

    # The HTTP API reads what rclone wrote.
    status, _, body = ferry_s3.api(args.url, "GET", "/api/spaces/rc/files/tree/d1/n04.md", args.alice)
    check(status == 200 and body == b"# note 4\n" * 5, "HTTP read of an rclone write", status)

    # sync up after local changes: a changed file, a new one, a deleted one.
    ferry_s3.write_file(os.path.join(local, "d0", "n00.md"), b"# rewritten\n")
    ferry_s3.write_file(os.path.join(local, "d3", "fresh.md"), b"# fresh\n")
    os.remove(os.path.join(local, "d2", "n05.md"))
    rclone(alice, "sync", local, "ferry:rc/tree")
    rclone(alice, "check", local, "ferry:rc/tree")
    status, _, _ = ferry_s3.api(args.url, "GET", "/api/spaces/rc/files/tree/d2/n05.md", args.alice)
    check(status == 404, "sync deleted the removed file", status)

    # A change made through the HTTP API comes down with sync.
    status, _, _ = ferry_s3.api(args.url, "PUT", "/api/spaces/rc/files/tree/d1/from-http.md", args.alice, b"# via http\n", {"content-type": "text/markdown"})
    check(status == 201, "HTTP write", status)
    mirror = os.path.join(work, "mirror")
    rclone(alice, "sync", "ferry:rc/tree", mirror)
    rclone(alice, "check", "ferry:rc/tree", mirror)
    check(ferry_s3.tree(mirror)["d1/from-http.md"] == b"# via http\n", "sync down brings the HTTP write")
    check(len(ferry_s3.tree(mirror)) == len(ferry_s3.tree(local)) + 1, "and everything else", sorted(ferry_s3.tree(mirror)))

    # An agent syncs its outputs into its sandbox; the user reads them; another thread's
    # sandbox stays shut to the agent.
    outputs = os.path.join(work, "outputs")
    ferry_s3.write_file(os.path.join(outputs, "report.md"), b"# Report\n")
    ferry_s3.write_file(os.path.join(outputs, "data", "table.csv"), b"a,b\n1,2\n")
    rclone(agent, "copy", outputs, sandbox)
    rclone(agent, "check", outputs, sandbox)
    status, _, body = ferry_s3.api(args.url, "GET", f"/api/threads/{args.thread}/sandbox/outputs/data/table.csv", args.alice)
    check(status == 200 and body == b"a,b\n1,2\n", "the sandbox holds the agent's sync", status, body)
    # rclone asks whether the bucket is there (NoSuchBucket), then tries to make it, which a
    # sandbox- name never may be (InvalidBucketName): refused either way, and nothing lands.
    err = rclone(agent, "copy", outputs, f"ferry:sandbox-{args.other_thread}/outputs", ok=False)
    refusals = ("NoSuchBucket", "AccessDenied", "InvalidBucketName")
    check(any(code in err for code in refusals), "another thread's sandbox is refused", err)
    status, _, _ = ferry_s3.api(args.url, "GET", f"/api/threads/{args.other_thread}/sandbox/outputs/report.md", args.alice)
    check(status == 404, "and nothing reached it", status)

    # purge removes the tree.
    rclone(alice, "purge", "ferry:rc/tree")
    check(rclone(alice, "lsf", "-R", "ferry:rc").strip() == "", "purge leaves nothing")

print("all rclone checks passed")
