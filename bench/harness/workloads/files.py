"""The HTTP file workloads: the disk's own limits (0), upload (1), download (2), 4 KiB GETs (3)
and PUTs (4), the recursive listing (6), one large upload plain and through tus (17), a folder
as one zip (18). Each returns a result dict."""

import json
import os
import shutil
import subprocess
import threading
import time
import urllib.parse

from ..common import MIB, BenchError, log
from ..http import http, http_json
from ..load import curl, drop_dirty, wrk, wrk_rounds
from ..procs import RssSampler, run
from ..sides import S3, Ferry


def make_big_file(path, size):
    block = os.urandom(MIB)
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(left, MIB)
            f.write(block[:n])
            left -= n
    with open(path, "rb") as f:  # into the page cache, so the client reads from memory
        while f.read(8 * MIB):
            pass


def w_disk(ctx):
    """The disk's own limits, in the work dir (the data's file system), measured in this run:
    a sequential write flushed at its end, and 4 KiB write + fsync cycles per second from one
    writer and from as many writers as the PUT workloads have connections."""
    cfg, work = ctx["cfg"], ctx["work"]
    seq, one, many = [], [], []
    block = os.urandom(MIB)
    for r in range(cfg["rounds"]):
        drop_dirty()
        path = os.path.join(work, "disk-seq.bin")
        t = time.perf_counter()
        with open(path, "wb") as f:
            for _ in range(cfg["disk_seq_bytes"] // MIB):
                f.write(block)
            f.flush()
            os.fsync(f.fileno())
        seq.append(cfg["disk_seq_bytes"] / (time.perf_counter() - t) / MIB)
        os.remove(path)
        drop_dirty()
        one.append(flushes_per_second(work, 1, cfg["disk_flush_seconds"]))
        many.append(flushes_per_second(work, cfg["connections"], cfg["disk_flush_seconds"]))
        log(f"  disk round {r + 1}: sequential write + fsync {seq[-1]:.0f} MiB/s; 4 KiB write + fsync "
            f"{one[-1]:,.0f}/s (1 writer), {many[-1]:,.0f}/s ({cfg['connections']} writers)")
    return dict(seq_mib_s=seq, flush_one=one, flush_many=many, writers=cfg["connections"])


def flushes_per_second(work, writers, seconds):
    """4 KiB write + fsync cycles per second, `writers` threads each rewriting a file of its own
    (fsync releases the GIL, so the threads' flushes overlap as the PUTs' do)."""
    stop = time.perf_counter() + seconds
    counts = [0] * writers
    page = os.urandom(4096)

    def writer(i):
        fd = os.open(os.path.join(work, f"disk-flush-{i}"), os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while time.perf_counter() < stop:
                os.pwrite(fd, page, 0)
                os.fsync(fd)
                counts[i] += 1
        finally:
            os.close(fd)
            os.remove(os.path.join(work, f"disk-flush-{i}"))

    t = time.perf_counter()
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return sum(counts) / (time.perf_counter() - t)


def w_upload(ctx):
    cfg, ferry, nginx = ctx["cfg"], ctx["ferry"], ctx["nginx"]
    src = ctx["big_file"]
    size = cfg["big_bytes"]
    thread = ferry.new_thread("bench upload")
    samples = {"ferry": [], "nginx": []}
    rss = []
    for r in range(cfg["rounds"]):
        drop_dirty()
        with RssSampler(ferry.pid) as sampler:
            res = curl(
                [
                    "-X", "POST", "-T", src, "-H", f"Authorization: Bearer {ferry.user}",
                    "-H", "Content-Type: application/octet-stream",
                    f"{ferry.url}/api/threads/{thread}/uploads?filename=big.bin",
                ],
                timeout=cfg["timeout"],
            )
        if res["code"] != 201 or res["up"] != size:
            raise BenchError(f"ferry upload answered {res['code']} after {res['up']} bytes: {res['body'][:300]}")
        answer = json.loads(res["body"])["uploads"][0]
        if answer["size"] != size or answer.get("preview") is not None:
            raise BenchError(f"unexpected upload answer: {str(answer)[:300]}")
        samples["ferry"].append(size / res["seconds"] / MIB)
        rss.append(sampler.peak)
        drop_dirty()
        res = curl(["-T", src, f"{nginx.url}/dav/big-{r}.bin"], timeout=cfg["timeout"])
        if res["code"] not in (201, 204) or res["up"] != size:
            raise BenchError(f"nginx PUT answered {res['code']}")
        samples["nginx"].append(size / res["seconds"] / MIB)
        os.remove(os.path.join(nginx.root, "dav", f"big-{r}.bin"))
        log(f"  upload round {r + 1}: ferry {samples['ferry'][-1]:.0f} MiB/s (peak RSS {rss[-1] / MIB:.1f} MiB), nginx {samples['nginx'][-1]:.0f} MiB/s")
    drop_dirty()
    return dict(unit="MiB/s", higher_better=True, samples=samples, peer="nginx", ferry_rss=rss)


def w_download(ctx):
    cfg, ferry, nginx = ctx["cfg"], ctx["ferry"], ctx["nginx"]
    src = ctx["big_file"]
    size = cfg["big_bytes"]
    thread = ferry.new_thread("bench download")
    agent = ferry.token("--agent", "--thread", thread, "--user", "u")
    sandbox = http_json("GET", f"{ferry.url}/api/threads/{thread}", agent)["sandboxDir"]
    os.makedirs(os.path.join(sandbox, "outputs"), exist_ok=True)
    shutil.copyfile(src, os.path.join(sandbox, "outputs", "big.bin"))
    pub = http_json(
        "POST", f"{ferry.url}/api/threads/{thread}/published", agent,
        {"file_path": "/sandbox/outputs/big.bin", "display_name": "Big"},
    )
    ferry_url = f"{ferry.url}/api/threads/{thread}/published/{pub['id']}/content"
    shutil.copyfile(src, os.path.join(nginx.root, "static", "big.bin"))
    nginx_url = f"{nginx.url}/static/big.bin"
    drop_dirty()
    # Both files come from the page cache in every measured round: one unmeasured read each.
    curl(["-o", "/dev/null", "-H", f"Authorization: Bearer {ferry.user}", ferry_url], cfg["timeout"])
    curl(["-o", "/dev/null", nginx_url], cfg["timeout"])
    samples = {"ferry": [], "nginx": []}
    rss = []
    for r in range(cfg["rounds"]):
        with RssSampler(ferry.pid) as sampler:
            res = curl(["-o", "/dev/null", "-H", f"Authorization: Bearer {ferry.user}", ferry_url], cfg["timeout"])
        if res["code"] != 200 or res["down"] != size:
            raise BenchError(f"ferry download answered {res['code']} with {res['down']} bytes")
        samples["ferry"].append(size / res["seconds"] / MIB)
        rss.append(sampler.peak)
        res = curl(["-o", "/dev/null", nginx_url], cfg["timeout"])
        if res["code"] != 200 or res["down"] != size:
            raise BenchError(f"nginx download answered {res['code']}")
        samples["nginx"].append(size / res["seconds"] / MIB)
        log(f"  download round {r + 1}: ferry {samples['ferry'][-1]:.0f} MiB/s, nginx {samples['nginx'][-1]:.0f} MiB/s")
    return dict(unit="MiB/s", higher_better=True, samples=samples, peer="nginx", ferry_rss=rss)


def w_get4k(ctx):
    cfg, ferry, nginx = ctx["cfg"], ctx["ferry"], ctx["nginx"]
    body = os.urandom(4096)
    status, data = http(
        "PUT", f"{ferry.url}/api/spaces/s/files/f.bin", ferry.user, body,
        {"Content-Type": "application/octet-stream"},
    )
    if status not in (200, 201):
        raise BenchError(f"space PUT answered {status}: {data[:300]!r}")
    with open(os.path.join(nginx.root, "static", "4k.bin"), "wb") as f:
        f.write(body)
    ferry_url = f"{ferry.url}/api/spaces/s/files/f.bin"
    nginx_url = f"{nginx.url}/static/4k.bin"
    for url, token in ((ferry_url, ferry.user), (nginx_url, None)):
        status, data = http("GET", url, token)
        if status != 200 or data != body:
            raise BenchError(f"GET {url} answered {status} with {len(data)} bytes")
        if cfg["wrk_warmup_seconds"]:
            wrk(url, cfg["wrk_warmup_seconds"], cfg["connections"], token)
    return wrk_rounds(ctx, "get4k", [("ferry", ferry_url, ferry.user, None), ("nginx", nginx_url, None, None)])


def w_put4k(ctx):
    cfg, ferry, s3, nginx = ctx["cfg"], ctx["ferry"], ctx["s3"], ctx["nginx"]
    # Check each side's PUT once by hand, so that a wrong URL fails loudly.
    for method_url, token in (
        (f"{ferry.url}/api/spaces/s/files/w4/check.bin", ferry.user),
        (f"{s3.url}/{S3.BUCKET}/w4/check.bin", None),
        (f"{nginx.url}/dav/w4/check.bin", None),
    ):
        status, data = http("PUT", method_url, token, b"x" * 4096, {"Content-Type": "application/octet-stream"})
        if status not in (200, 201, 204):
            raise BenchError(f"PUT {method_url} answered {status}: {data[:300]!r}")
    if cfg["wrk_warmup_seconds"]:
        wrk(ferry.url + "/", cfg["wrk_warmup_seconds"], cfg["connections"], ferry.user, "/api/spaces/s/files/w4/warm")
        wrk(s3.url + "/", cfg["wrk_warmup_seconds"], cfg["connections"], None, f"/{S3.BUCKET}/w4/warm")
    sides = []
    for r in range(cfg["rounds"]):
        sides.append([
            ("ferry", ferry.url + "/", ferry.user, f"/api/spaces/s/files/w4/r{r}"),
            ("s3s-fs", s3.url + "/", None, f"/{S3.BUCKET}/w4/r{r}"),
            ("nginx", nginx.url + "/", None, f"/dav/w4/r{r}"),
        ])
    res = wrk_rounds(ctx, "put4k", sides, per_round=True)
    res["peer"] = "s3s-fs"
    res["reference"] = "nginx"
    return res


def w_list(ctx):
    cfg, ferry, probe = ctx["cfg"], ctx["ferry"], ctx["probe"]
    n = cfg["list_files"]
    log(f"  seeding {n} files into space 'big' (32 connections)")
    stdout, _ = run(
        [probe, "seed", "--addr", ferry.addr, "--token", ferry.user, "--space", "big",
         "--prefix", "docs", "--count", str(n), "--concurrency", "32"],
        timeout=cfg["timeout"],
    )
    seed = json.loads(stdout)
    log(f"  seeded {n} files in {seed['seconds']:.1f} s ({seed['rps']:.0f} PUT/s)")
    first, total = [], []
    rss = []
    for r in range(cfg["rounds"]):
        with RssSampler(ferry.pid) as sampler:
            stdout, _ = run(
                [probe, "list", "--addr", ferry.addr, "--token", ferry.user, "--space", "big", "--limit", "1000"],
                timeout=cfg["timeout"],
            )
        rss.append(sampler.peak)
        res = json.loads(stdout)
        if res["entries"] != n:
            raise BenchError(f"the listing walked {res['entries']} entries, not {n}")
        first.append(res["first_page_ms"])
        total.append(res["total_ms"])
        log(f"  list round {r + 1}: first page {res['first_page_ms']:.1f} ms, all {n} in {res['total_ms']:.0f} ms ({res['pages']} pages)")
    return dict(unit="ms", higher_better=False, files=n, seed=seed, first_page_ms=first, total_ms=total, ferry_rss=rss)


def tus_upload(ferry, thread, path, size, part):
    """One upload through ferry's resumable endpoint, as tus clients send it: create, PATCH the
    file in parts of `part` bytes in order on one keep-alive connection, then read the finished
    upload's answer. Answers (seconds, the upload object)."""
    import base64
    import http.client

    def b64(text):
        return base64.b64encode(text.encode()).decode()

    conn = http.client.HTTPConnection("127.0.0.1", ferry.port, timeout=600)
    headers = {"Authorization": f"Bearer {ferry.user}", "Tus-Resumable": "1.0.0"}

    def call(method, url, body=None, extra=None):
        conn.request(method, url, body=body, headers={**headers, **(extra or {})})
        resp = conn.getresponse()
        return resp, resp.read()

    started = time.perf_counter()
    resp, body = call("POST", "/api/uploads/resumable", extra={
        "Upload-Length": str(size), "Upload-Metadata": f"threadId {b64(thread)},filename {b64('big.bin')}"})
    if resp.status != 201:
        raise BenchError(f"tus creation answered {resp.status}: {body[:300]}")
    url = urllib.parse.urlsplit(resp.getheader("Location")).path
    offset = 0
    with open(path, "rb", buffering=0) as f:
        while offset < size:
            data = f.read(part)
            resp, body = call("PATCH", url, data, {
                "Upload-Offset": str(offset), "Content-Type": "application/offset+octet-stream"})
            if resp.status != 204 or int(resp.getheader("Upload-Offset")) != offset + len(data):
                raise BenchError(f"tus PATCH at {offset} answered {resp.status}: {body[:300]}")
            offset += len(data)
    resp, body = call("GET", url)
    seconds = time.perf_counter() - started
    conn.close()
    if resp.status != 201:
        raise BenchError(f"the finished tus upload answered {resp.status}: {body[:300]}")
    return seconds, json.loads(body)["uploads"][0]


def w_large(ctx):
    """One large upload three ways: ferry's plain upload route, ferry's resumable endpoint in
    parts, and nginx's WebDAV PUT. Each round runs on a ferry server of its own, in a data folder
    removed after the round: a deleted thread's blobs stay until the sweep's grace has passed,
    and three rounds' 5 GiB blobs left on the disk filled it (a round needs about 25 GB)."""
    cfg, nginx = ctx["cfg"], ctx["nginx"]
    size, part = cfg["large_bytes"], cfg["tus_part_bytes"]
    src = os.path.join(ctx["work"], "large.bin")
    make_big_file(src, size)
    samples = {"ferry": [], "ferry tus": [], "nginx": []}
    rss = {"ferry": [], "ferry tus": []}
    for r in range(min(cfg["rounds"], cfg["large_rounds"])):
        round_work = os.path.join(ctx["work"], f"large-{r}")
        os.makedirs(round_work)
        ferry = Ferry(ctx["ferry"].binary, round_work, size)
        thread = ferry.new_thread(f"bench large {r}")
        drop_dirty()
        with RssSampler(ferry.pid) as sampler:
            res = curl(["-X", "POST", "-T", src, "-H", f"Authorization: Bearer {ferry.user}",
                        "-H", "Content-Type: application/octet-stream",
                        f"{ferry.url}/api/threads/{thread}/uploads?filename=big.bin"], timeout=cfg["timeout"])
        if res["code"] != 201 or json.loads(res["body"])["uploads"][0]["size"] != size:
            raise BenchError(f"ferry's large upload answered {res['code']}: {res['body'][:300]}")
        samples["ferry"].append(size / res["seconds"] / MIB)
        rss["ferry"].append(sampler.peak)
        drop_dirty()
        with RssSampler(ferry.pid) as sampler:
            seconds, answer = tus_upload(ferry, thread, src, size, part)
        if answer["size"] != size:
            raise BenchError(f"the tus upload made {answer['size']} bytes, not {size}")
        samples["ferry tus"].append(size / seconds / MIB)
        rss["ferry tus"].append(sampler.peak)
        ferry.stop()
        drop_dirty()
        res = curl(["-T", src, f"{nginx.url}/dav/large-{r}.bin"], timeout=cfg["timeout"])
        if res["code"] not in (201, 204) or res["up"] != size:
            raise BenchError(f"nginx PUT answered {res['code']}")
        samples["nginx"].append(size / res["seconds"] / MIB)
        os.remove(os.path.join(nginx.root, "dav", f"large-{r}.bin"))
        log(f"  large round {r + 1}: ferry {samples['ferry'][-1]:.0f} MiB/s ({rss['ferry'][-1] / MIB:.1f} MiB), "
            f"tus {samples['ferry tus'][-1]:.0f} MiB/s ({rss['ferry tus'][-1] / MIB:.1f} MiB), nginx {samples['nginx'][-1]:.0f} MiB/s")
    os.remove(src)
    drop_dirty()
    return dict(samples=samples, rss=rss, size=size, part=part)


def w_zip(ctx):
    """A folder of many files downloaded as one zip, against `zip -0 -r` of the same files,
    stored (not compressed) as ferry's zips are, written to /dev/null."""
    cfg, ferry = ctx["cfg"], ctx["ferry"]
    files, each = cfg["zip_files"], cfg["zip_bytes"] // cfg["zip_files"]
    local = os.path.join(ctx["work"], "zip-src")
    os.makedirs(os.path.join(local, "outputs"))
    block = os.urandom(each)
    for i in range(files):
        body = i.to_bytes(4, "big") + block[4:]  # no two files alike
        with open(os.path.join(local, "outputs", f"{i:05d}.bin"), "wb") as f:
            f.write(body)
        status, answer = http("PUT", f"{ferry.url}/api/spaces/zipbench/files/outputs/{i:05d}.bin", ferry.user, body,
                              {"Content-Type": "application/octet-stream"})
        if status not in (200, 201):
            raise BenchError(f"seeding the zip folder: PUT answered {status}: {answer[:300]}")
    total = files * each
    samples = {"ferry": [], "zip -0 -r": []}
    rss, zip_bytes = [], 0
    for r in range(cfg["rounds"]):
        drop_dirty()
        with RssSampler(ferry.pid) as sampler:
            res = curl(["-o", "/dev/null", "-H", f"Authorization: Bearer {ferry.user}",
                        f"{ferry.url}/api/spaces/zipbench/files?dir=outputs&format=zip"], timeout=cfg["timeout"])
        if res["code"] != 200 or res["down"] < total:
            raise BenchError(f"the folder zip answered {res['code']} with {res['down']:.0f} bytes")
        zip_bytes = int(res["down"])
        samples["ferry"].append(total / res["seconds"] / MIB)
        rss.append(sampler.peak)
        started = time.perf_counter()
        with open(os.devnull, "wb") as sink:
            subprocess.run(["zip", "-0", "-r", "-q", "-", "outputs"], cwd=local, stdout=sink, check=True,
                           timeout=cfg["timeout"])
        samples["zip -0 -r"].append(total / (time.perf_counter() - started) / MIB)
        log(f"  zip round {r + 1}: ferry {samples['ferry'][-1]:.0f} MiB/s ({rss[-1] / MIB:.1f} MiB), "
            f"zip -0 -r {samples['zip -0 -r'][-1]:.0f} MiB/s")
    shutil.rmtree(local)
    return dict(samples=samples, ferry_rss=rss, files=files, total=total, zip_bytes=zip_bytes)
