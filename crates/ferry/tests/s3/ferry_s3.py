"""What every S3 client script here shares: the arguments the Rust harness
(crates/ferry/tests/clients/s3_clients.rs) passes, a check that stops the script with what it
saw, ferry's HTTP API, and minting S3 access keys through it.
"""

import argparse
import atexit
import json
import os
import sys
import urllib.error
import urllib.request


def arguments(description):
    """The harness's arguments: the server, two users' tokens, an agent's, and two threads."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--url", required=True)
    parser.add_argument("--alice", required=True, help="a user token")
    parser.add_argument("--bob", required=True, help="another user's token")
    parser.add_argument("--agent", required=True, help="an agent token of --thread")
    parser.add_argument("--thread", required=True, help="a thread of alice")
    parser.add_argument("--other-thread", required=True, help="another thread of alice")
    return parser.parse_args()


# With FERRY_CHECKS_KEEP_GOING=1 a failed check is reported and the script goes on (it still
# exits non-zero at the end): every failure of a run at once, to see what a change fixed.
KEEP_GOING = os.environ.get("FERRY_CHECKS_KEEP_GOING") == "1"
failed = []


def check(ok, what, *seen):
    """Stops the script, saying what failed and what was seen, unless `ok`."""
    if not ok:
        print(f"FAILED: {what}", *seen, file=sys.stderr)
        if not KEEP_GOING:
            sys.exit(1)
        if not failed:
            atexit.register(lambda: os._exit(1))
        failed.append(what)


def api(url, method, path, token, body=None, headers=None):
    """One HTTP API request: (status, headers, body), errors included."""
    request = urllib.request.Request(url + path, method=method, data=body, headers=headers or {})
    request.add_header("authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def new_key(url, token):
    """A fresh S3 access key of the token's principal: {accessKeyId, secretAccessKey, …}."""
    status, _, body = api(url, "POST", "/api/s3/keys", token)
    check(status == 201, "POST /api/s3/keys", status, body)
    key = json.loads(body)
    check(key["accessKeyId"].startswith("FERRY") and len(key["secretAccessKey"]) >= 40, "key shape", key)
    return key


def etag_of(headers):
    return headers.get("ETag", headers.get("etag"))


def write_file(path, data):
    """Writes `data` at `path`, making its folders."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def tree(root):
    """{relative path: bytes} of every file under `root`."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = f.read()
    return found


def boto3_client(url, key=None, session_token=None):
    """A boto3 S3 client of the door at `url`: signing with `key` (an access key from
    `new_key`), or with the bearer `session_token` the session-token way (key and secret
    `ferry`); path-style, one attempt per call."""
    import boto3
    from botocore.config import Config

    if key is None:
        key = {"accessKeyId": "ferry", "secretAccessKey": "ferry"}
    return boto3.client(
        "s3",
        endpoint_url=url + "/s3",
        aws_access_key_id=key["accessKeyId"],
        aws_secret_access_key=key["secretAccessKey"],
        aws_session_token=session_token,
        region_name="us-east-1",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
    )


def error_code(call):
    """The S3 error code `call` raised, or None when it succeeded."""
    from botocore.exceptions import ClientError

    try:
        call()
    except ClientError as e:
        return e.response["Error"]["Code"]
    return None
