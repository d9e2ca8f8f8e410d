"""The S3 workloads: GetObject (8) and PutObject (9) of 4 KiB, the multipart upload and large
GetObject (10), on ferry's S3 door and s3s-fs. Each returns a result dict."""

import contextlib
import os
import time

from ..common import MIB, BenchError, log
from ..http import http
from ..load import curl, drop_dirty, wrk, wrk_rounds
from ..procs import RssSampler
from ..sides import s3_sides


def w_s3get4k(ctx):
    cfg = ctx["cfg"]
    body = os.urandom(4096)
    sides = []
    for side in s3_sides(ctx, unsigned=True):
        side.client().put_object(Bucket=side.bucket, Key="g4/f.bin", Body=body)
        # One presigned URL per side, sent again and again: each request is verified anew.
        url = side.url("g4/f.bin")
        status, data = http("GET", url)
        if status != 200 or data != body:
            raise BenchError(f"GetObject {url} answered {status} with {len(data)} bytes")
        if cfg["wrk_warmup_seconds"]:
            wrk(url, cfg["wrk_warmup_seconds"], cfg["connections"])
        sides.append((side.name, url, None, None))
    res = wrk_rounds(ctx, "s3get4k", sides)
    res["reference"] = "s3s-fs unsigned"
    return res


# The rate the PUT URL lists are sized for when there is no warm-up to measure it (smoke).
S3_PUT_GUESS_RPS = 5000


def w_s3put4k(ctx):
    cfg = ctx["cfg"]
    sides = s3_sides(ctx, unsigned=True)
    urls = os.path.join(ctx["work"], "s3-urls")
    os.makedirs(urls, exist_ok=True)
    rate = {}
    for i, side in enumerate(sides):
        # Check each side's PUT once by hand, so that a wrong URL or signature fails loudly.
        url = side.url("s3w4/check.bin", "PUT")
        status, data = http("PUT", url, None, b"x" * 4096, {"Content-Type": "application/octet-stream"})
        if status != 200:
            raise BenchError(f"PutObject {url} answered {status}: {data[:300]!r}")
        rate[side.name] = S3_PUT_GUESS_RPS
        if cfg["wrk_warmup_seconds"]:
            if side.access_key:  # 5,000 keys, written over and over: overwrites are fine here
                warm = side.put_url_file(os.path.join(urls, f"{i}-warm.txt"), "s3w4/warm", 5000)
                res = wrk(side.endpoint + "/", cfg["wrk_warmup_seconds"], cfg["connections"], put_urls=warm)
            else:
                res = wrk(side.endpoint + "/", cfg["wrk_warmup_seconds"], cfg["connections"], None, f"/{side.bucket}/s3w4/warm")
            rate[side.name] = res["rps"]
    # Signed sides PUT to presigned URLs, one per key: twice as many per round as the warm-up's
    # rate makes in a round, so that no key is written twice (wrk_rounds counts any overwrite).
    rounds = []
    t = time.time()
    for r in range(cfg["rounds"]):
        row = []
        for i, side in enumerate(sides):
            if side.access_key:
                n = max(1000, int(2 * rate[side.name] * cfg["wrk_seconds"]))
                path = side.put_url_file(os.path.join(urls, f"{i}-r{r}.txt"), f"s3w4/r{r}", n)
                row.append((side.name, side.endpoint + "/", None, None, path))
            else:
                row.append((side.name, side.endpoint + "/", None, f"/{side.bucket}/s3w4/r{r}"))
        rounds.append(row)
    log(f"  presigned the PUT URLs in {time.time() - t:.0f} s (" + ", ".join(
        f"{s.name} {int(2 * rate[s.name] * cfg['wrk_seconds']):,} a round" for s in sides if s.access_key) + ")")
    res = wrk_rounds(ctx, "s3put4k", rounds, per_round=True)
    res["peer"] = "s3s-fs"
    res["reference"] = "s3s-fs unsigned"
    return res


def w_s3multipart(ctx):
    from boto3.s3.transfer import TransferConfig

    cfg, ferry = ctx["cfg"], ctx["ferry"]
    src, size = ctx["big_file"], cfg["big_bytes"]
    part = cfg["part_bytes"]
    # The same client and settings for both sides: boto3's transfer manager, as `aws s3 cp` uses it.
    transfer = TransferConfig(multipart_threshold=part, multipart_chunksize=part, max_concurrency=cfg["part_concurrency"])
    sides = s3_sides(ctx)
    up = {s.name: [] for s in sides}
    down = {s.name: [] for s in sides}
    up_rss, down_rss = [], []
    for r in range(cfg["rounds"]):
        key = f"big/r{r}.bin"
        for side in sides:
            drop_dirty()
            with RssSampler(ferry.pid) if side.name == "ferry" else contextlib.nullcontext() as sampler:
                t = time.perf_counter()
                side.client().upload_file(src, side.bucket, key, Config=transfer)
                secs = time.perf_counter() - t
            got = side.client().head_object(Bucket=side.bucket, Key=key)["ContentLength"]
            if got != size:
                raise BenchError(f"{side.name}: the multipart upload made {got} bytes, not {size}")
            up[side.name].append(size / secs / MIB)
            if sampler:
                up_rss.append(sampler.peak)
        for side in sides:
            url = side.url(key)
            drop_dirty()
            curl(["-o", "/dev/null", url], cfg["timeout"])  # unmeasured: from the page cache, as in workload 2
            with RssSampler(ferry.pid) if side.name == "ferry" else contextlib.nullcontext() as sampler:
                res = curl(["-o", "/dev/null", url], cfg["timeout"])
            if res["code"] != 200 or res["down"] != size:
                raise BenchError(f"{side.name} GetObject answered {res['code']} with {res['down']} bytes")
            down[side.name].append(size / res["seconds"] / MIB)
            if sampler:
                down_rss.append(sampler.peak)
        for side in sides:
            side.client().delete_object(Bucket=side.bucket, Key=key)
        log(f"  s3multipart round {r + 1}: upload " + ", ".join(f"{n} {v[-1]:.0f}" for n, v in up.items())
            + " MiB/s; GetObject " + ", ".join(f"{n} {v[-1]:.0f}" for n, v in down.items())
            + f" MiB/s; ferry peak RSS {up_rss[-1] / MIB:.1f} / {down_rss[-1] / MIB:.1f} MiB")
    return dict(unit="MiB/s", higher_better=True, samples=up, get_samples=down, peer="s3s-fs",
                ferry_rss=up_rss, get_rss=down_rss, part_bytes=part, parts=-(-size // part),
                concurrency=cfg["part_concurrency"])
