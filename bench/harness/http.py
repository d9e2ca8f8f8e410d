"""HTTP for setup calls (the measured traffic goes through wrk, curl or the probe)."""

import json
import urllib.error
import urllib.request

from .common import BenchError


def http(method, url, token=None, body=None, headers=None, timeout=120):
    req = urllib.request.Request(url, method=method, data=body)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            data = resp.read()
            return resp.status, data
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def http_json(method, url, token=None, obj=None, ok=(200, 201)):
    body = json.dumps(obj).encode() if obj is not None else None
    status, data = http(
        method, url, token, body, {"Content-Type": "application/json"} if body else None
    )
    if status not in ok:
        raise BenchError(f"{method} {url} answered {status}: {data[:500]!r}")
    return json.loads(data) if data else None
