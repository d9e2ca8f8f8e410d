"""ferry's S3 door (docs/s3.md) driven by boto3, as an agent's code would use it.

Run by crates/ferry/tests/clients/s3_clients.rs against a real `ferry serve`. Every check
prints nothing on success and exits non-zero with what it saw on failure.
"""

import base64
import concurrent.futures
import hashlib
import json
import os
import tempfile
import urllib.error
import urllib.request
import zlib
from email.utils import formatdate

from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

import ferry_s3
from ferry_s3 import check

args = ferry_s3.arguments("ferry's S3 door driven by boto3")


def api(method, path, token, body=None, headers=None):
    return ferry_s3.api(args.url, method, path, token, body, headers)


def new_key(token):
    return ferry_s3.new_key(args.url, token)


def client(key=None, session_token=None):
    return ferry_s3.boto3_client(args.url, key, session_token)


error_code = ferry_s3.error_code


alice_key = new_key(args.alice)
s3 = client(alice_key)

# Buckets are spaces: a name never made is NoSuchBucket; CreateBucket makes an empty space.
check(error_code(lambda: s3.put_object(Bucket="notes", Key="a.md", Body=b"x")) == "NoSuchBucket", "a space never made")
check(error_code(lambda: s3.head_bucket(Bucket="notes")) == "404", "HeadBucket of a space never made")
for name in ["notes", "race", "odd", "many", "gone"]:
    s3.create_bucket(Bucket=name)
s3.create_bucket(Bucket="notes")  # us-east-1: a repeated create by its owner succeeds
s3.head_bucket(Bucket="gone")
status, _, body = api("GET", "/api/spaces", args.alice)
check([sp["name"] for sp in json.loads(body)["spaces"]] == ["gone", "many", "notes", "odd", "race"], "empty spaces are listed over HTTP", body)
s3.put_object(Bucket="gone", Key="f.txt", Body=b"x")
check(error_code(lambda: s3.delete_bucket(Bucket="gone")) == "BucketNotEmpty", "DeleteBucket of a space with files")
s3.delete_object(Bucket="gone", Key="f.txt")
s3.delete_bucket(Bucket="gone")
check(error_code(lambda: s3.head_bucket(Bucket="gone")) == "404", "a deleted bucket is gone")
check(error_code(lambda: s3.delete_bucket(Bucket="gone")) == "NoSuchBucket", "and deleting it again is NoSuchBucket")

# Keys: listed without their secret.
status, _, body = api("GET", "/api/s3/keys", args.alice)
listed = json.loads(body)["keys"]
check([k["accessKeyId"] for k in listed] == [alice_key["accessKeyId"]], "GET /api/s3/keys", listed)
check("secretAccessKey" not in listed[0], "no secret in the listing", listed)

# Put, get, head; the same etag through both doors.
note = "# Tea shop\n\nOpen at 7 — ünïcödé\n".encode()
put = s3.put_object(Bucket="notes", Key="ideas/tea.md", Body=note, ContentType="text/markdown; charset=utf-8")
sha = hashlib.sha256(note).hexdigest()
check(put["ETag"] == f'"{sha}"', "PutObject ETag is the HTTP API's", put["ETag"])
got = s3.get_object(Bucket="notes", Key="ideas/tea.md")
check(got["Body"].read() == note and got["ContentType"] == "text/markdown; charset=utf-8", "GetObject", got)
status, headers, body = api("GET", "/api/spaces/notes/files/ideas/tea.md", args.alice)
check(status == 200 and body == note and ferry_s3.etag_of(headers) == put["ETag"], "HTTP read of an S3 write", status, headers)
status, headers, _ = api("PUT", "/api/spaces/notes/files/http.txt", args.alice, b"from http", {"content-type": "text/plain"})
check(status == 201, "HTTP write", status)
head = s3.head_object(Bucket="notes", Key="http.txt")
check(head["ETag"] == ferry_s3.etag_of(headers) and head["ContentLength"] == 9, "S3 head of an HTTP write", head, headers)

# Ranges and conditional reads.
check(s3.get_object(Bucket="notes", Key="http.txt", Range="bytes=5-")["Body"].read() == b"http", "range")
check(error_code(lambda: s3.get_object(Bucket="notes", Key="http.txt", Range="bytes=50-60")) == "InvalidRange", "range past the end")
check(error_code(lambda: s3.get_object(Bucket="notes", Key="http.txt", IfMatch='"nope"')) == "PreconditionFailed", "If-Match")
check(error_code(lambda: s3.head_object(Bucket="notes", Key="http.txt", IfNoneMatch=head["ETag"])) == "304", "If-None-Match")

# Conditional writes.
check(error_code(lambda: s3.put_object(Bucket="notes", Key="http.txt", Body=b"x", IfNoneMatch="*")) == "PreconditionFailed", "If-None-Match: * on a taken key")
check(error_code(lambda: s3.put_object(Bucket="notes", Key="http.txt", Body=b"x", IfMatch='"0000"')) == "PreconditionFailed", "stale If-Match")
s3.put_object(Bucket="notes", Key="http.txt", Body=b"updated", IfMatch=head["ETag"])
check(s3.get_object(Bucket="notes", Key="http.txt")["Body"].read() == b"updated", "If-Match write")


def racer(i):
    try:
        client(alice_key).put_object(Bucket="race", Key="once.txt", Body=f"writer {i}".encode(), IfNoneMatch="*")
        return True
    except ClientError as e:
        check(e.response["Error"]["Code"] == "PreconditionFailed", "a losing racer's answer", e.response)
        return False


with concurrent.futures.ThreadPoolExecutor(32) as pool:
    wins = sum(pool.map(racer, range(32)))
check(wins == 1, "exactly one of 32 racing If-None-Match: * puts wins", wins)

# Checksums: Content-MD5 and x-amz-checksum-* are verified (boto3 sends CRC32 by default).
s3.put_object(Bucket="notes", Key="sum.bin", Body=b"abc", ChecksumAlgorithm="SHA256")
s3.put_object(Bucket="notes", Key="sum.bin", Body=b"abc", ContentMD5="kAFQmDzST7DWlj99KOF/cg==")
bad_md5 = error_code(lambda: s3.put_object(Bucket="notes", Key="sum.bin", Body=b"abd", ContentMD5="kAFQmDzST7DWlj99KOF/cg=="))
check(bad_md5 == "BadDigest", "a wrong Content-MD5", bad_md5)
check(s3.get_object(Bucket="notes", Key="sum.bin")["Body"].read() == b"abc", "a refused body left the object alone")

# Metadata and content headers are kept with a space object; a SHA-256 sent as a header is
# answered with ChecksumMode; COPY keeps them, REPLACE sets new ones; an HTTP write drops them.
sha = base64.b64encode(hashlib.sha256(b"meta").digest()).decode()
s3.put_object(
    Bucket="notes", Key="meta.txt", Body=b"meta", Metadata={"Mtime": "1700000000", "owner": "alice"},
    CacheControl="max-age=60", ContentDisposition='attachment; filename="m.txt"', ChecksumSHA256=sha,
)
head = s3.head_object(Bucket="notes", Key="meta.txt", ChecksumMode="ENABLED")
check(head["Metadata"] == {"mtime": "1700000000", "owner": "alice"} and head["CacheControl"] == "max-age=60", "metadata kept", head)
check(head["ContentDisposition"] == 'attachment; filename="m.txt"' and head.get("ChecksumSHA256") == sha, "headers and checksum kept", head)
check("ChecksumSHA256" not in s3.head_object(Bucket="notes", Key="meta.txt"), "the checksum only when asked for")
s3.copy_object(Bucket="notes", Key="meta-copy.txt", CopySource={"Bucket": "notes", "Key": "meta.txt"})
check(s3.head_object(Bucket="notes", Key="meta-copy.txt")["Metadata"] == head["Metadata"], "COPY keeps metadata")
s3.copy_object(Bucket="notes", Key="meta-copy.txt", CopySource={"Bucket": "notes", "Key": "meta.txt"}, Metadata={"new": "1"}, MetadataDirective="REPLACE")
replaced = s3.head_object(Bucket="notes", Key="meta-copy.txt")
check(replaced["Metadata"] == {"new": "1"} and "CacheControl" not in replaced, "REPLACE sets new metadata", replaced)
api("PUT", "/api/spaces/notes/files/meta-copy.txt", args.alice, b"http", {"content-type": "text/plain"})
check(s3.head_object(Bucket="notes", Key="meta-copy.txt")["Metadata"] == {}, "an HTTP write replaces the file without metadata")
s3.delete_objects(Bucket="notes", Delete={"Objects": [{"Key": "meta.txt"}, {"Key": "meta-copy.txt"}]})

# Keys with characters XML or URL decoding would change are listed as they are.
s3.put_object(Bucket="odd", Key="a+b c/ü%20.txt", Body=b"x")
listed = [o["Key"] for o in s3.list_objects_v2(Bucket="odd")["Contents"]]
check(listed == ["a+b c/ü%20.txt"], "an odd key lists unchanged", listed)
check([p["Prefix"] for p in s3.list_objects(Bucket="odd", Delimiter="/")["CommonPrefixes"]] == ["a+b c/"], "and its prefix", listed)

# Keys that break the path rules.
check(error_code(lambda: s3.put_object(Bucket="notes", Key="a/../b.md", Body=b"x")) == "InvalidArgument", "a key with ..")
check(error_code(lambda: s3.put_object(Bucket="notes", Key="a//b.md", Body=b"x")) == "InvalidArgument", "a key with //")

# Copy and batch delete; a copy onto itself must change something.
s3.copy_object(Bucket="notes", Key="copies/tea.md", CopySource={"Bucket": "notes", "Key": "ideas/tea.md"})
check(error_code(lambda: s3.copy_object(Bucket="notes", Key="ideas/tea.md", CopySource={"Bucket": "notes", "Key": "ideas/tea.md"})) == "InvalidRequest", "a copy onto itself")
check(s3.get_object(Bucket="notes", Key="copies/tea.md")["Body"].read() == note, "CopyObject")
deleted = s3.delete_objects(Bucket="notes", Delete={"Objects": [{"Key": "copies/tea.md"}, {"Key": "never-there"}]})
check(sorted(d["Key"] for d in deleted["Deleted"]) == ["copies/tea.md", "never-there"], "DeleteObjects", deleted)
check(error_code(lambda: s3.head_object(Bucket="notes", Key="copies/tea.md")) == "404", "deleted")
status, _, body = api("GET", "/api/spaces/notes/files", args.alice)
check([f["path"] for f in json.loads(body)["files"]] == ["http.txt", "ideas", "sum.bin"], "the emptied folder is gone over HTTP too", body)

# Listing 2,500 keys: v2 with pagination, v2 and v1 with a delimiter.
def put_many(i):
    client(alice_key).put_object(Bucket="many", Key=f"d{i % 5}/f{i:04}.txt", Body=b"x")


with concurrent.futures.ThreadPoolExecutor(16) as pool:
    list(pool.map(put_many, range(2500)))
keys = []
for page in s3.get_paginator("list_objects_v2").paginate(Bucket="many", PaginationConfig={"PageSize": 700}):
    check(page["KeyCount"] <= 700, "page size", page["KeyCount"])
    keys += [o["Key"] for o in page.get("Contents", [])]
check(keys == sorted(f"d{i % 5}/f{i:04}.txt" for i in range(2500)), "2,500 keys listed once each, in order", len(keys))
top = s3.list_objects_v2(Bucket="many", Delimiter="/")
check([p["Prefix"] for p in top["CommonPrefixes"]] == [f"d{i}/" for i in range(5)] and "Contents" not in top, "delimiter", top)
prefixes = []
for page in s3.get_paginator("list_objects").paginate(Bucket="many", Delimiter="/", PaginationConfig={"PageSize": 2}):
    prefixes += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
check(prefixes == [f"d{i}/" for i in range(5)], "v1 with a delimiter, two per page", prefixes)
one = s3.list_objects_v2(Bucket="many", Prefix="d3/f00", MaxKeys=3)
check([o["Key"] for o in one["Contents"]] == ["d3/f0003.txt", "d3/f0008.txt", "d3/f0013.txt"], "prefix", one)
check(one["IsTruncated"], "max keys", one)
after = s3.list_objects_v2(Bucket="many", Prefix="d1/", StartAfter="d1/f2490.txt")
check([o["Key"] for o in after["Contents"]] == ["d1/f2491.txt", "d1/f2496.txt"], "start-after", after)

# Buckets: the caller's spaces; another user's names are their own (empty) spaces.
names = [b["Name"] for b in s3.list_buckets()["Buckets"]]
check(names == ["many", "notes", "odd", "race"], "ListBuckets", names)
pages = [[b["Name"] for b in page["Buckets"]] for page in s3.get_paginator("list_buckets").paginate(PaginationConfig={"PageSize": 3})]
check(pages == [["many", "notes", "odd"], ["race"]], "ListBuckets in pages", pages)
bob = client(new_key(args.bob))
check(error_code(lambda: bob.list_objects_v2(Bucket="notes")) == "NoSuchBucket", "bob has no 'notes' of his own")
bob.create_bucket(Bucket="notes")
check(bob.list_objects_v2(Bucket="notes").get("KeyCount") == 0, "bob's 'notes' is his own, empty")
check(error_code(lambda: bob.get_object(Bucket="notes", Key="ideas/tea.md")) == "NoSuchKey", "bob cannot read alice's notes")
check(error_code(lambda: bob.list_objects_v2(Bucket=f"sandbox-{args.thread}")) == "NoSuchBucket", "another user's sandbox is NoSuchBucket")

# Presigned URLs, GET and PUT.
url = s3.generate_presigned_url("get_object", Params={"Bucket": "notes", "Key": "ideas/tea.md"}, ExpiresIn=300)
with urllib.request.urlopen(url) as response:
    check(response.read() == note, "presigned GET")
url = s3.generate_presigned_url("put_object", Params={"Bucket": "notes", "Key": "presigned.txt"}, ExpiresIn=300)
with urllib.request.urlopen(urllib.request.Request(url, data=b"presigned", method="PUT")) as response:
    check(response.status == 200, "presigned PUT", response.status)
check(s3.get_object(Bucket="notes", Key="presigned.txt")["Body"].read() == b"presigned", "presigned PUT stored")
url = s3.generate_presigned_url("get_object", Params={"Bucket": "notes", "Key": "ideas/tea.md"}, ExpiresIn=7 * 24 * 3600 + 1)
try:
    urllib.request.urlopen(url)
    check(False, "a presigned URL made to last over a week is refused")
except urllib.error.HTTPError as e:
    check(e.code == 403 and b"AccessDenied" in e.read(), "a presigned URL made to last over a week is refused", e.code)

url = s3.generate_presigned_url("get_object", Params={"Bucket": "notes", "Key": "ideas/tea.md"}, ExpiresIn=-1000)
try:
    urllib.request.urlopen(url)
    check(False, "a presigned URL made to last a negative time is refused")
except urllib.error.HTTPError as e:
    check(e.code == 403 and b"AccessDenied" in e.read(), "a presigned URL made to last a negative time is refused", e.code)

# A request dated by its Date header instead of X-Amz-Date (boto3 signs it that way when the
# caller sets Date).
dated = client(alice_key)
dated.meta.events.register("before-call.s3.PutObject", lambda params, **kw: params["headers"].update({"Date": formatdate(usegmt=True)}))
dated.put_object(Bucket="notes", Key="dated.txt", Body=b"dated")
check(s3.get_object(Bucket="notes", Key="dated.txt")["Body"].read() == b"dated", "a request dated by Date")
s3.delete_object(Bucket="notes", Key="dated.txt")

# A wrong secret; a revoked key; no signature at all.
wrong = client({"accessKeyId": alice_key["accessKeyId"], "secretAccessKey": "x" * 43})
check(error_code(lambda: wrong.list_buckets()) == "SignatureDoesNotMatch", "a wrong signature")
check(error_code(lambda: client({"accessKeyId": "FERRYNOSUCHKEY000000", "secretAccessKey": "x"}).list_buckets()) == "InvalidAccessKeyId", "an unknown key")
doomed = new_key(args.alice)
client(doomed).list_buckets()
status, _, _ = api("DELETE", f"/api/s3/keys/{doomed['accessKeyId']}", args.alice)
check(status == 204, "revoke", status)
check(error_code(lambda: client(doomed).list_buckets()) == "InvalidAccessKeyId", "a revoked key is refused at once")
with urllib.request.urlopen(args.url + "/healthz") as response:
    check(response.status == 200, "health")
try:
    urllib.request.urlopen(args.url + "/s3/notes/ideas/tea.md")
    check(False, "an unsigned request is refused")
except urllib.error.HTTPError as e:
    check(e.code == 403 and b"AccessDenied" in e.read(), "an unsigned request is AccessDenied", e.code)

# A bearer token as the session token, and an agent's own sandbox.
session = client(session_token=args.alice)
check(session.get_object(Bucket="notes", Key="http.txt")["Body"].read() == b"updated", "a session token acts as its user")
check(error_code(lambda: client(session_token="not.a.token").list_buckets()) == "InvalidToken", "a bad session token")
agent = client(new_key(args.agent))
sandbox = f"sandbox-{args.thread}"
agent.put_object(Bucket=sandbox, Key="outputs/report.md", Body=b"# Report")
status, _, body = api("GET", f"/api/threads/{args.thread}/sandbox/outputs/report.md", args.alice)
check(status == 200 and body == b"# Report", "an S3 write to the sandbox is the sandbox's file", status, body)
listing = agent.list_objects_v2(Bucket=sandbox, Prefix="outputs/")
check([o["Key"] for o in listing["Contents"]] == ["outputs/report.md"], "sandbox listing", listing)
check(error_code(lambda: agent.put_object(Bucket=f"sandbox-{args.other_thread}", Key="outputs/x.md", Body=b"x")) == "NoSuchBucket", "an agent's key cannot reach another thread's sandbox")
check(error_code(lambda: s3.put_object(Bucket=sandbox, Key="outputs/x.md", Body=b"x")) == "AccessDenied", "the user reads the sandbox but does not write it")
check(s3.get_object(Bucket=sandbox, Key="outputs/report.md")["Body"].read() == b"# Report", "the user reads the sandbox")
check(error_code(lambda: agent.put_object(Bucket=sandbox, Key="skills/x.md", Body=b"x")) == "AccessDenied", "skills stay read-only")
check(error_code(lambda: s3.delete_object(Bucket=sandbox, Key="outputs/report.md")) == "AccessDenied", "the user does not delete sandbox files")
agent.put_object(Bucket=sandbox, Key="outputs/scratch.txt", Body=b"scratch")
# A conditional delete in a sandbox: a stale If-Match leaves the file; the current ETag removes it.
check(error_code(lambda: agent.delete_object(Bucket=sandbox, Key="outputs/scratch.txt", IfMatch='"0-0"')) == "PreconditionFailed", "a stale If-Match keeps a sandbox file")
scratch_etag = agent.head_object(Bucket=sandbox, Key="outputs/scratch.txt")["ETag"]
agent.delete_object(Bucket=sandbox, Key="outputs/scratch.txt", IfMatch=scratch_etag)
check(error_code(lambda: agent.head_object(Bucket=sandbox, Key="outputs/scratch.txt")) == "404", "the agent deletes its sandbox file")
status, _, _ = api("GET", f"/api/threads/{args.thread}/sandbox/outputs/scratch.txt", args.alice)
check(status == 404, "gone through the HTTP API too", status)
agent.delete_object(Bucket=sandbox, Key="outputs/never-there.txt")

# Multipart: a 64 MiB file in 5 MiB parts, up and down, the same bytes and the same etag
# through the HTTP API; then the protocol's own rules.
with tempfile.TemporaryDirectory() as work:
    big = os.path.join(work, "big.bin")
    block = os.urandom(1 << 20)
    with open(big, "wb") as f:
        for i in range(64):
            f.write(block[i:] + block[:i])
    digest = hashlib.sha256(open(big, "rb").read()).hexdigest()
    small_parts = TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20, max_concurrency=4)
    s3.upload_file(big, "notes", "big/data.bin", Config=small_parts)
    head = s3.head_object(Bucket="notes", Key="big/data.bin")
    check(head["ContentLength"] == 64 << 20 and head["ETag"] == f'"{digest}"', "multipart object", head)
    back = os.path.join(work, "back.bin")
    s3.download_file("notes", "big/data.bin", back, Config=small_parts)
    check(hashlib.sha256(open(back, "rb").read()).hexdigest() == digest, "download_file of the multipart object")
    status, headers, _ = api("HEAD", "/api/spaces/notes/files/big/data.bin", args.alice)
    check(ferry_s3.etag_of(headers) == f'"{digest}"', "the HTTP API sees the same object", headers)

upload = s3.create_multipart_upload(Bucket="notes", Key="parts.txt", ContentType="text/plain")["UploadId"]
listed = s3.list_multipart_uploads(Bucket="notes")["Uploads"]
check([(u["Key"], u["UploadId"]) for u in listed] == [("parts.txt", upload)], "ListMultipartUploads", listed)
first = s3.upload_part(Bucket="notes", Key="parts.txt", UploadId=upload, PartNumber=1, Body=b"a" * (5 << 20))
second = s3.upload_part_copy(Bucket="notes", Key="parts.txt", UploadId=upload, PartNumber=2, CopySource={"Bucket": "notes", "Key": "http.txt"}, CopySourceRange="bytes=0-2")
parts = s3.list_parts(Bucket="notes", Key="parts.txt", UploadId=upload)["Parts"]
check([(p["PartNumber"], p["Size"]) for p in parts] == [(1, 5 << 20), (2, 3)], "ListParts", parts)
check(error_code(lambda: bob.list_parts(Bucket="notes", Key="parts.txt", UploadId=upload)) == "NoSuchUpload", "another user's upload")
wrong_order = [{"PartNumber": 2, "ETag": second["CopyPartResult"]["ETag"]}, {"PartNumber": 1, "ETag": first["ETag"]}]
check(error_code(lambda: s3.complete_multipart_upload(Bucket="notes", Key="parts.txt", UploadId=upload, MultipartUpload={"Parts": wrong_order})) == "InvalidPartOrder", "parts out of order")
done = s3.complete_multipart_upload(Bucket="notes", Key="parts.txt", UploadId=upload, MultipartUpload={"Parts": wrong_order[::-1]})
body = s3.get_object(Bucket="notes", Key="parts.txt")["Body"].read()
check(body == b"a" * (5 << 20) + b"upd" and done["ETag"] == f'"{hashlib.sha256(body).hexdigest()}"', "CompleteMultipartUpload", done)
check(s3.list_multipart_uploads(Bucket="notes").get("Uploads", []) == [], "a completed upload is gone")
again = s3.complete_multipart_upload(Bucket="notes", Key="parts.txt", UploadId=upload, MultipartUpload={"Parts": wrong_order[::-1]})
check(again["ETag"] == done["ETag"], "completing it again answers as the first time", again)
second_part = s3.get_object(Bucket="notes", Key="parts.txt", PartNumber=2)
check(second_part["Body"].read() == b"upd" and second_part["PartsCount"] == 2, "partNumber reads one part", second_part)
check(error_code(lambda: s3.head_object(Bucket="notes", Key="parts.txt", PartNumber=3)) == "400", "a part it does not have")
attributes = s3.get_object_attributes(Bucket="notes", Key="parts.txt", ObjectAttributes=["ETag", "ObjectSize", "ObjectParts", "StorageClass"])
check(attributes["ObjectSize"] == (5 << 20) + 3 and attributes["ObjectParts"]["TotalPartsCount"] == 2, "GetObjectAttributes", attributes)
check(attributes["ETag"] == done["ETag"].strip('"'), "GetObjectAttributes names the ETag without quotes, as S3 does", attributes)
check([p["Size"] for p in attributes["ObjectParts"]["Parts"]] == [5 << 20, 3], "and its parts", attributes)
# Multipart checksums: an upload that names an algorithm gets its object's checksum from its
# parts'. FULL_OBJECT is the CRC of every byte (boto3 checks it again on the way down);
# COMPOSITE is the digest of the parts' digests, "-N"; a part read answers the part's own.
pieces = [b"A" * (5 << 20), b"B" * (5 << 20), b"tail"]
whole = b"".join(pieces)


def b64(raw):
    return base64.b64encode(raw).decode()


def sent_in_parts(key, algorithm, kind=None):
    extra = {"ChecksumType": kind} if kind else {}
    started = s3.create_multipart_upload(Bucket="notes", Key=key, ChecksumAlgorithm=algorithm, **extra)
    check(started["ChecksumAlgorithm"] == algorithm and started["ChecksumType"] == (kind or "COMPOSITE"), "the upload's checksum", started)
    field = "Checksum" + algorithm
    listed = []
    for number, piece in enumerate(pieces, 1):
        part = s3.upload_part(Bucket="notes", Key=key, UploadId=started["UploadId"], PartNumber=number, Body=piece, ChecksumAlgorithm=algorithm)
        listed.append({"PartNumber": number, "ETag": part["ETag"], field: part[field]})
    return started["UploadId"], listed


crc = b64(zlib.crc32(whole).to_bytes(4, "big"))
upload, listed = sent_in_parts("sums/full.bin", "CRC32", "FULL_OBJECT")
check(listed[2]["ChecksumCRC32"] == b64(zlib.crc32(b"tail").to_bytes(4, "big")), "a part's CRC32", listed)
check(error_code(lambda: s3.complete_multipart_upload(Bucket="notes", Key="sums/full.bin", UploadId=upload, ChecksumCRC32="AAAAAA==", MultipartUpload={"Parts": listed})) == "BadDigest", "a wrong object checksum")
misread = [dict(p, ChecksumCRC32="AAAAAA==") if p["PartNumber"] == 2 else p for p in listed]
check(error_code(lambda: s3.complete_multipart_upload(Bucket="notes", Key="sums/full.bin", UploadId=upload, MultipartUpload={"Parts": misread})) == "BadDigest", "a part listed with another checksum")
done = s3.complete_multipart_upload(Bucket="notes", Key="sums/full.bin", UploadId=upload, ChecksumCRC32=crc, MultipartUpload={"Parts": listed})
check(done["ChecksumCRC32"] == crc and done["ChecksumType"] == "FULL_OBJECT", "a FULL_OBJECT CRC32 is the CRC32 of the object", done)
head = s3.head_object(Bucket="notes", Key="sums/full.bin", ChecksumMode="ENABLED")
check(head["ChecksumCRC32"] == crc and head["ChecksumType"] == "FULL_OBJECT", "and HEAD answers it", head)
got = s3.get_object(Bucket="notes", Key="sums/full.bin", ChecksumMode="ENABLED")
check(got["Body"].read() == whole and got["ChecksumCRC32"] == crc, "GET answers it and boto3 validates the body against it", got)
second = s3.get_object(Bucket="notes", Key="sums/full.bin", PartNumber=2, ChecksumMode="ENABLED")
check(second["Body"].read() == pieces[1] and second["ChecksumCRC32"] == listed[1]["ChecksumCRC32"], "a part read answers the part's CRC32", second)
ranged = s3.get_object(Bucket="notes", Key="sums/full.bin", Range="bytes=0-9", ChecksumMode="ENABLED")
check("ChecksumCRC32" not in ranged, "a range has no checksum", ranged)

upload, listed = sent_in_parts("sums/composite.bin", "SHA256")
composite = b64(hashlib.sha256(b"".join(hashlib.sha256(p).digest() for p in pieces)).digest()) + "-3"
# Parts listed without their checksums stand for the parts as stored.
unlisted = [{"PartNumber": p["PartNumber"], "ETag": p["ETag"]} for p in listed]
done = s3.complete_multipart_upload(Bucket="notes", Key="sums/composite.bin", UploadId=upload, MultipartUpload={"Parts": unlisted})
check(done["ChecksumSHA256"] == composite and done["ChecksumType"] == "COMPOSITE", "a COMPOSITE SHA-256 is the digest of the parts' digests", done)
attributes = s3.get_object_attributes(Bucket="notes", Key="sums/composite.bin", ObjectAttributes=["Checksum", "ObjectParts"])
check(attributes["Checksum"]["ChecksumSHA256"] == composite and attributes["Checksum"]["ChecksumType"] == "COMPOSITE", "GetObjectAttributes: the object's checksum", attributes)
check([p["ChecksumSHA256"] for p in attributes["ObjectParts"]["Parts"]] == [b64(hashlib.sha256(p).digest()) for p in pieces], "and each part's", attributes)
check("ChecksumSHA256" not in s3.head_object(Bucket="notes", Key="sums/composite.bin"), "only when asked for")
check(error_code(lambda: s3.create_multipart_upload(Bucket="notes", Key="sums/no.bin", ChecksumAlgorithm="SHA1", ChecksumType="FULL_OBJECT")) == "InvalidRequest", "a SHA-1 cannot cover the full object")
mixed = s3.create_multipart_upload(Bucket="notes", Key="sums/mixed.bin", ChecksumAlgorithm="SHA256")["UploadId"]
check(error_code(lambda: s3.upload_part(Bucket="notes", Key="sums/mixed.bin", UploadId=mixed, PartNumber=1, Body=b"x", ChecksumAlgorithm="CRC32")) == "InvalidRequest", "a part with another algorithm than its upload's")
s3.abort_multipart_upload(Bucket="notes", Key="sums/mixed.bin", UploadId=mixed)
s3.delete_objects(Bucket="notes", Delete={"Objects": [{"Key": "sums/full.bin"}, {"Key": "sums/composite.bin"}]})

tiny = s3.create_multipart_upload(Bucket="notes", Key="tiny.txt")["UploadId"]
t1 = s3.upload_part(Bucket="notes", Key="tiny.txt", UploadId=tiny, PartNumber=1, Body=b"small")
t2 = s3.upload_part(Bucket="notes", Key="tiny.txt", UploadId=tiny, PartNumber=2, Body=b"parts")
tiny_parts = {"Parts": [{"PartNumber": 1, "ETag": t1["ETag"]}, {"PartNumber": 2, "ETag": t2["ETag"]}]}
check(error_code(lambda: s3.complete_multipart_upload(Bucket="notes", Key="tiny.txt", UploadId=tiny, MultipartUpload=tiny_parts)) == "EntityTooSmall", "a small part that is not the last")
s3.abort_multipart_upload(Bucket="notes", Key="tiny.txt", UploadId=tiny)
check(error_code(lambda: s3.list_parts(Bucket="notes", Key="tiny.txt", UploadId=tiny)) == "NoSuchUpload", "an aborted upload is gone")
check(error_code(lambda: s3.head_object(Bucket="notes", Key="tiny.txt")) == "404", "an aborted upload wrote nothing")

print("all boto3 checks passed")
