"""The rules every door shares, tried through the S3 door the way an attacker would: stored
markup served on ferry's origin, content types, declared lengths that lie, request ids that
carry markup, the `/s3/` endpoint, reserved bucket names, an agent's keys, and a deleted
thread's agent, which reaches nothing through any door.

Run by crates/ferry/tests/clients/s3_clients.rs against a real `ferry serve` whose space
limit is 128 MiB. Requests that boto3 will not send as they are here (a length that lies, a
hostile header) are signed by hand below (SigV4, the session-token way: key and secret
`ferry`, the bearer token as `X-Amz-Security-Token`).
"""

import datetime
import hashlib
import hmac
import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
import base64

import ferry_s3
from ferry_s3 import check

args = ferry_s3.arguments("the rules every door shares, through S3")
SPACE_LIMIT = 128 * 1024 * 1024
endpoint = urllib.parse.urlsplit(args.url)


def client(token):
    return ferry_s3.boto3_client(args.url, session_token=token)


error_code = ferry_s3.error_code


def fetch(url, headers=None):
    """(status, headers, body) of a plain GET, errors included."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def signed(method, path, token, headers=None, payload_hash="UNSIGNED-PAYLOAD", query=""):
    """The headers of a SigV4-signed request for `path` (already URL-encoded)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    headers = dict(headers or {})
    headers.update({
        "host": endpoint.netloc,
        "x-amz-date": amz_date,
        "x-amz-content-sha256": payload_hash,
        "x-amz-security-token": token,
    })
    names = sorted(h.lower() for h in headers)
    lowered = {k.lower(): str(v).strip() for k, v in headers.items()}
    canonical_headers = "".join(f"{n}:{lowered[n]}\n" for n in names)
    signed_headers = ";".join(names)
    canonical = "\n".join([method, path, query, canonical_headers, signed_headers, payload_hash])
    scope = f"{day}/us-east-1/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4ferry").encode()
    for part in (day, "us-east-1", "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (
        f"AWS4-HMAC-SHA256 Credential=ferry/{scope}, SignedHeaders={signed_headers}, Signature={signature}"
    )
    return headers


def raw(method, path, headers, body=b"", query="", send_body=True, timeout=20):
    """Sends a request as it is; (status, headers, body, seconds)."""
    connection = http.client.HTTPConnection(endpoint.hostname, endpoint.port, timeout=timeout)
    started = time.monotonic()
    connection.putrequest(method, path + (f"?{query}" if query else ""), skip_host=True, skip_accept_encoding=True)
    for name, value in headers.items():
        connection.putheader(name, value)
    connection.endheaders()
    if send_body and body:
        try:
            connection.send(body)
        except (BrokenPipeError, ConnectionResetError):
            pass
    response = connection.getresponse()
    answer = (response.status, response.headers, response.read(), time.monotonic() - started)
    connection.close()
    return answer


s3 = client(args.alice)
s3.create_bucket(Bucket="site")

# 1. Stored markup never runs on ferry's origin: an active type is an attachment, whatever
#    type it was stored or asked for with, and every answer is sandboxed and unsniffable.
page = b"<html><script>alert(document.cookie)</script></html>"
s3.put_object(Bucket="site", Key="page.html", Body=page, ContentType="text/html")
s3.put_object(Bucket="site", Key="logo.svg", Body=b"<svg onload='alert(1)'/>", ContentType="image/svg+xml")
s3.put_object(Bucket="site", Key="note.txt", Body=b"<script>alert(1)</script>", ContentType="text/plain")
s3.put_object(Bucket="site", Key="chart.png", Body=b"\x89PNG\r\n\x1a\n", ContentType="image/png")
week = 7 * 24 * 3600
for key in ["page.html", "logo.svg"]:
    url = s3.generate_presigned_url("get_object", Params={"Bucket": "site", "Key": key}, ExpiresIn=week)
    status, headers, body = fetch(url)
    check(status == 200, f"a presigned GET of {key}", status, body)
    check(headers.get("Content-Disposition", "").startswith("attachment"), f"{key} is an attachment", dict(headers))
    check("sandbox" in headers.get("Content-Security-Policy", ""), f"{key} is sandboxed", dict(headers))
    check(headers.get("X-Content-Type-Options") == "nosniff", f"{key} is not sniffed", dict(headers))
forced = s3.generate_presigned_url(
    "get_object",
    Params={"Bucket": "site", "Key": "note.txt", "ResponseContentType": "text/html", "ResponseContentDisposition": "inline"},
)
status, headers, _ = fetch(forced)
check(status == 200 and headers.get("Content-Disposition", "").startswith("attachment"),
      "response-content-type=text/html turns the object into an attachment, not a page", dict(headers))
check("sandbox" in headers.get("Content-Security-Policy", ""), "and it is sandboxed", dict(headers))
# A type list passes as its first type to some readers and as its last to browsers: refused.
smuggled = s3.generate_presigned_url(
    "get_object", Params={"Bucket": "site", "Key": "page.html", "ResponseContentType": "application/pdf;,text/html"},
)
status, headers, body = fetch(smuggled)
check(status == 400 and b"InvalidArgument" in body, "response-content-type that is a list", status, body)
status, headers, _ = fetch(s3.generate_presigned_url("get_object", Params={"Bucket": "site", "Key": "chart.png"}))
check(status == 200 and "Content-Disposition" not in headers, "a PNG is shown in place", dict(headers))
check("sandbox" in headers.get("Content-Security-Policy", ""), "and sandboxed too", dict(headers))
head = s3.head_object(Bucket="site", Key="page.html")
check(head["ResponseMetadata"]["HTTPHeaders"].get("content-disposition", "").startswith("attachment"),
      "HeadObject says the same", head)
# The HTTP API serves the same bytes the same way.
status, headers, _ = ferry_s3.api(args.url, "GET", "/api/spaces/site/files/page.html", args.alice)
headers = {k.lower(): v for k, v in headers.items()}
check(status == 200 and headers.get("content-disposition", "").startswith("attachment"),
      "the HTTP API answers stored HTML as an attachment", headers)
check("sandbox" in headers.get("content-security-policy", ""), "sandboxed", headers)

# 3. One content type rule for every door: what the HTTP API refuses with 415, S3 refuses.
for bad in ["foo", "text/html, text/plain", "<img src=x onerror=alert(1)>"]:
    code = error_code(lambda: s3.put_object(Bucket="site", Key="typed.txt", Body=b"x", ContentType=bad))
    check(code == "InvalidArgument", f"PutObject with Content-Type {bad!r}", code)
    status, _, body = ferry_s3.api(args.url, "PUT", "/api/spaces/site/files/typed.txt", args.alice, b"x", {"Content-Type": bad})
    check(status == 415 and b"UNSUPPORTED_MEDIA_TYPE" in body, f"HTTP PUT with Content-Type {bad!r}", status, body)
    code = error_code(lambda: s3.create_multipart_upload(Bucket="site", Key="typed.txt", ContentType=bad))
    check(code == "InvalidArgument", f"CreateMultipartUpload with Content-Type {bad!r}", code)
check(error_code(lambda: s3.head_object(Bucket="site", Key="typed.txt")) == "404", "no typed.txt was stored")

# 4. A declared length over the limit is refused before any byte is read, as over HTTP.
put_url = s3.generate_presigned_url("put_object", Params={"Bucket": "site", "Key": "big.bin"})
target = urllib.parse.urlsplit(put_url)
for expect in [{}, {"expect": "100-continue"}]:
    status, _, body, seconds = raw(
        "PUT", target.path, {"host": endpoint.netloc, "content-length": str(SPACE_LIMIT + 1), **expect},
        query=target.query, send_body=False,
    )
    check(status == 400 and b"EntityTooLarge" in body, "a PutObject declaring more than the limit", expect, status, body)
    check(seconds < 5, "is refused at once, not after waiting for the body", expect, seconds)

#    An aws-chunked body is held to its decoded length: a lie either way stores nothing.
def chunked_put(key, data, decoded_length):
    crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
    body = f"{len(data):x}\r\n".encode() + data + b"\r\n0\r\n" + f"x-amz-checksum-crc32:{crc}\r\n\r\n".encode()
    path = f"/s3/site/{key}"
    headers = signed("PUT", path, args.alice, {
        "content-encoding": "aws-chunked",
        "content-length": str(len(body)),
        "x-amz-decoded-content-length": str(decoded_length),
        "x-amz-trailer": "x-amz-checksum-crc32",
        "content-type": "application/octet-stream",
    }, payload_hash="STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    return raw("PUT", path, headers, body)

status, _, body, _ = chunked_put("chunked-true.bin", b"y" * 1000, 1000)
check(status == 200, "an honest aws-chunked PutObject", status, body)
check(s3.get_object(Bucket="site", Key="chunked-true.bin")["Body"].read() == b"y" * 1000, "stores its bytes")
status, _, body, _ = chunked_put("chunked-short.bin", b"y" * 1000, 10)
check(status == 400, "an aws-chunked body longer than its decoded length", status, body)
status, _, body, _ = chunked_put("chunked-long.bin", b"y" * 1000, 1_000_000)
check(status == 400, "an aws-chunked body shorter than its decoded length", status, body)
status, _, body, _ = chunked_put("chunked-huge.bin", b"y" * 1000, 10**12)
check(status == 400 and b"EntityTooLarge" in body, "a decoded length over the limit", status, body)
for key in ["chunked-short.bin", "chunked-long.bin", "chunked-huge.bin"]:
    check(error_code(lambda: s3.head_object(Bucket="site", Key=key)) == "404", f"nothing stored for {key}")

# 6. A request id carrying markup is replaced, never written into S3's XML or the headers.
hostile_id = "</RequestId><Code>Injected</Code>"
path = "/s3/site/missing.txt"
status, headers, body, _ = raw("GET", path, signed("GET", path, args.alice, {"x-request-id": hostile_id}))
check(status == 404 and b"Injected" not in body, "a hostile request id is not in the error XML", body)
check(headers.get("x-request-id") not in (None, hostile_id), "and a new id is made", dict(headers))
status, headers, body, _ = raw("GET", path, signed("GET", path, args.alice, {"x-request-id": "trace-42"}))
check(headers.get("x-request-id") == "trace-42" and b"<RequestId>trace-42</RequestId>" in body,
      "a plain request id is kept", dict(headers), body)

# 7. The endpoint with a trailing slash answers ListBuckets, and sandbox- names are reserved
#    with one answer whether or not such a thread exists.
status, _, body, _ = raw("GET", "/s3/", signed("GET", "/s3/", args.alice))
check(status == 200 and b"<Name>site</Name>" in body, "GET /s3/ lists the caller's buckets", status, body)
for name in [f"sandbox-{args.thread}", "sandbox-no-such-thread"]:
    code = error_code(lambda: s3.create_bucket(Bucket=name))
    check(code == "InvalidBucketName", f"CreateBucket {name}", code)

# Owners, as S3 names them: every object in a version 1 listing, in version 2 only with
# fetch-owner=true, and the caller on ListBuckets; the id is the user's sub.
v2_plain = s3.list_objects_v2(Bucket="site")["Contents"]
check(all("Owner" not in o for o in v2_plain), "ListObjectsV2 leaves owners out unless asked", v2_plain[0])
v2_owned = s3.list_objects_v2(Bucket="site", FetchOwner=True)["Contents"]
owner_id = v2_owned[0].get("Owner", {}).get("ID")
check(owner_id and all(o["Owner"]["ID"] == owner_id for o in v2_owned), "and names them with fetch-owner", v2_owned[0])
v1 = s3.list_objects(Bucket="site")["Contents"]
check(all(o.get("Owner", {}).get("ID") == owner_id for o in v1), "ListObjects always names them", v1[0])
check(s3.list_buckets().get("Owner", {}).get("ID") == owner_id, "ListBuckets names the caller")

# 2. An agent's key ends with the token that made it, and the thread's owner sees and
#    revokes it; another user does neither.
def agent_token(ttl):
    status, _, body = ferry_s3.api(args.url, "POST", f"/api/threads/{args.thread}/agent-token", args.alice,
                                   json.dumps({"ttlSeconds": ttl}).encode())
    check(status == 200, "an agent token", status, body)
    return json.loads(body)["token"]


def key_client(key):
    return ferry_s3.boto3_client(args.url, key)


sandbox = f"sandbox-{args.thread}"
short_key = ferry_s3.new_key(args.url, agent_token(4))
check(short_key.get("kind") == "agent" and short_key.get("threadId") == args.thread and "expiresAt" in short_key,
      "an agent's key says whose it is and when it ends", short_key)
short = key_client(short_key)
short.put_object(Bucket=sandbox, Key="outputs/by-short-key.txt", Body=b"made in time")
ends = datetime.datetime.fromisoformat(short_key["expiresAt"].replace("Z", "+00:00"))
time.sleep(max(0.0, (ends - datetime.datetime.now(datetime.timezone.utc)).total_seconds()) + 1.5)
code = error_code(lambda: short.put_object(Bucket=sandbox, Key="outputs/late.txt", Body=b"too late"))
check(code == "InvalidAccessKeyId", "an agent's key is refused once its token would have ended", code)
code = error_code(lambda: short.get_object(Bucket=sandbox, Key="outputs/by-short-key.txt"))
check(code == "InvalidAccessKeyId", "for reads too", code)

long_key = ferry_s3.new_key(args.url, args.agent)
check(long_key.get("kind") == "agent", "a key of the harness's agent", long_key)
status, _, body = ferry_s3.api(args.url, "GET", "/api/s3/keys", args.alice)
listed = [k["accessKeyId"] for k in json.loads(body)["keys"]]
check(status == 200 and long_key["accessKeyId"] in listed and short_key["accessKeyId"] in listed,
      "the thread's owner lists the keys acting in its thread", listed)
check(all("secretAccessKey" not in k for k in json.loads(body)["keys"]), "without secrets", body)
status, _, body = ferry_s3.api(args.url, "GET", "/api/s3/keys", args.bob)
check(long_key["accessKeyId"] not in body.decode(), "another user does not", body)
status, _, _ = ferry_s3.api(args.url, "DELETE", f"/api/s3/keys/{long_key['accessKeyId']}", args.bob)
check(status == 404, "nor revokes them", status)
key_client(long_key).head_bucket(Bucket=sandbox)
status, _, body = ferry_s3.api(args.url, "DELETE", f"/api/s3/keys/{long_key['accessKeyId']}", args.alice)
check(status == 204, "the owner revokes an agent's key", status, body)
code = error_code(lambda: key_client(long_key).head_bucket(Bucket=sandbox))
check(code in ("403", "InvalidAccessKeyId"), "which is refused at once", code)

# 3. A deleted thread's agent reaches nothing, through every door, at once: its token (over
#    HTTP, MCP and S3 as a session token), the S3 keys it made, and the file URLs it was
#    handed, for the owner's spaces as much as for the thread.
status, _, body = ferry_s3.api(args.url, "POST", "/api/threads", args.alice, b"{}",
                               {"content-type": "application/json"})
check(status == 201, "a thread to delete", status, body)
doomed = json.loads(body)["id"]
status, _, body = ferry_s3.api(args.url, "POST", f"/api/threads/{doomed}/agent-token", args.alice, b"{}",
                               {"content-type": "application/json"})
doomed_agent = json.loads(body)["token"]
doomed_key = ferry_s3.new_key(args.url, doomed_agent)


def fs(token, operation, payload):
    return ferry_s3.api(args.url, "POST", f"/api/fs/{operation}", token, json.dumps(payload).encode(),
                        {"content-type": "application/json"})


def mcp_write(token, path):
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "write_file", "arguments": {"path": path, "content": "x"}}}
    return ferry_s3.api(args.url, "POST", "/mcp", token, json.dumps(call).encode(),
                        {"content-type": "application/json", "accept": "application/json, text/event-stream"})


status, _, body = fs(doomed_agent, "write_file", {"path": "/spaces/notes/by-doomed.md", "content": "# before"})
check(status in (200, 201), "before: the agent writes its owner's notes over HTTP", status, body)
check(mcp_write(doomed_agent, "/spaces/notes/by-doomed-mcp.md")[0] == 200, "and over MCP")
client(doomed_agent).put_object(Bucket="notes", Key="by-doomed-s3.md", Body=b"# s3")
key_client(doomed_key).head_bucket(Bucket="notes")
status, _, body = fs(doomed_agent, "file_url", {"path": "/spaces/notes/by-doomed.md", "method": "GET"})
check(status == 200, "and is handed a file URL", status, body)
doomed_url = json.loads(body)["url"]
check(urllib.request.urlopen(doomed_url).read() == b"# before", "which reads the note")

status, _, body = ferry_s3.api(args.url, "DELETE", f"/api/threads/{doomed}", args.alice)
check(status == 204, "the owner deletes the thread", status, body)
status, _, body = fs(doomed_agent, "write_file", {"path": "/spaces/notes/after.md", "content": "x"})
check(status == 401 and b"thread does not exist" in body, "after: HTTP refuses the token (401)", status, body)
status, _, body = fs(doomed_agent, "read_file", {"path": "/spaces/notes/by-doomed.md"})
check(status == 401, "for reads too", status, body)
status, _, body = mcp_write(doomed_agent, "/spaces/notes/after-mcp.md")
check(status == 401, "MCP refuses it", status, body)
code = error_code(lambda: client(doomed_agent).put_object(Bucket="notes", Key="after.md", Body=b"x"))
check(code == "InvalidToken", "S3 refuses it as a session token", code)
code = error_code(lambda: key_client(doomed_key).get_object(Bucket="notes", Key="by-doomed-s3.md"))
check(code == "InvalidAccessKeyId", "and the key the agent made", code)
try:
    urllib.request.urlopen(doomed_url)
    check(False, "the file URL it was handed is refused")
except urllib.error.HTTPError as e:
    check(e.code == 403, "the file URL it was handed is refused (403)", e.code)
status, _, body = ferry_s3.api(args.url, "GET", "/api/spaces/notes/files/by-doomed.md", args.alice)
check(status == 200 and body == b"# before", "what it wrote before stays the owner's", status, body)

print("all door rule checks passed")
