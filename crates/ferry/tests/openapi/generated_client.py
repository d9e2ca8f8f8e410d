"""A client generated from ferry's OpenAPI document writes and reads a space file.

Usage: generated_client.py BASE_URL TOKEN

openapi-python-client generates a package from the document the server serves; this script
imports it and, through it alone, writes a binary file (bytes that are not UTF-8, so a client
that sent anything but the bytes would be caught), reads it back, lists it, sees a create-only
write refused, and deletes it.
"""

import importlib
import io
import json
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

base_url, token = sys.argv[1], sys.argv[2]

work = Path(tempfile.mkdtemp(prefix="ferry-client-"))
document = work / "openapi.json"
with urllib.request.urlopen(f"{base_url}/api/openapi.json") as answer:
    document.write_bytes(answer.read())
generated = subprocess.run(
    ["openapi-python-client", "generate", "--path", str(document), "--meta", "none",
     "--output-path", str(work / "ferry_client")],
    capture_output=True, text=True,
)
if generated.returncode != 0:
    sys.exit(f"the generator failed:\n{generated.stdout}\n{generated.stderr}")
sys.path.insert(0, str(work))

client_module = importlib.import_module("ferry_client")
put_file = importlib.import_module("ferry_client.api.spaces.put_file")
get_file = importlib.import_module("ferry_client.api.spaces.get_file")
list_files = importlib.import_module("ferry_client.api.spaces.list_files")
delete_file = importlib.import_module("ferry_client.api.spaces.delete_file")
types = importlib.import_module("ferry_client.types")

client = client_module.AuthenticatedClient(base_url=base_url, token=token)
payload = bytes(range(256)) * 4 + b"\x89PNG\r\n\x1a\n\xff\xfe"


def check(condition, what):
    if not condition:
        sys.exit(f"FAILED: {what}")


written = put_file.sync_detailed(
    space="generated", path="bin/blob.dat", client=client,
    body=types.File(payload=io.BytesIO(payload), file_name="blob.dat"),
)
check(written.status_code == 201, f"the write answered {written.status_code}: {written.content!r}")
etag = written.parsed.etag
check(written.parsed.size == len(payload), f"the write stored {written.parsed.size} bytes")

read = get_file.sync_detailed(space="generated", path="bin/blob.dat", client=client)
check(read.status_code == 200, f"the read answered {read.status_code}")
check(read.content == payload, "the bytes read back differ from the bytes written")
check(read.headers.get("etag", "").strip('"') == etag.strip('"'), "the ETag of the read differs")

listed = list_files.sync_detailed(space="generated", client=client, recursive=True)
check(listed.status_code == 200, f"the listing answered {listed.status_code}")
check([f.path for f in listed.parsed.files] == ["bin/blob.dat"], f"listed {listed.parsed}")

# Create-only: the path is taken, so the envelope comes back as the document says.
again = put_file.sync_detailed(
    space="generated", path="bin/blob.dat", client=client,
    body=types.File(payload=io.BytesIO(b"other"), file_name="blob.dat"),
    if_none_match=put_file.PutFileIfNoneMatch("*"),
)
check(again.status_code == 409, f"a create-only write over a file answered {again.status_code}")
check(again.parsed.error.code.value == "ALREADY_EXISTS", f"the envelope says {again.parsed}")

removed = delete_file.sync_detailed(space="generated", path="bin/blob.dat", client=client)
check(removed.status_code == 204, f"the removal answered {removed.status_code}")

print(json.dumps({"bytes": len(payload), "etag": etag, "roundTrip": "ok"}))
