"""Measuring: the load tools (curl, wrk, /usr/bin/time), rounds of wrk against each side in
turn, timers, and the writeback flushed between runs."""

import json
import os
import re
import subprocess
import time

from .common import HERE, BenchError, log
from .procs import RssSampler, run


def curl(args, timeout):
    """Runs curl with -w; returns a dict of the write-out variables asked for."""
    fmt = "%{http_code} %{time_total} %{size_upload} %{size_download} %{speed_upload} %{speed_download}"
    out, err = run(
        ["curl", "-sS", "--fail-with-body", "-H", "Expect:", "-w", "\n" + fmt, *args],
        timeout=timeout,
    )
    code, total, up, down, sup, sdown = out.strip().splitlines()[-1].split()
    return dict(
        code=int(code), seconds=float(total), up=float(up), down=float(down),
        speed_up=float(sup), speed_down=float(sdown), body="\n".join(out.strip().splitlines()[:-1]),
    )


def wrk(url, seconds, connections, token=None, put_base=None, timeout=120, threads=2, put_urls=None):
    env = dict(os.environ)
    for var, value in (("BENCH_PUT_BASE", put_base), ("BENCH_PUT_URLS", put_urls)):
        if value:
            env[var] = value
        else:
            env.pop(var, None)
    env["BENCH_WRK_THREADS"] = str(threads)
    cmd = [
        "wrk", "-t", str(threads), "-c", str(connections), "-d", f"{seconds}s", "--timeout", "10s",
        "-s", os.path.join(HERE, "wrk", "bench.lua"),
    ]
    if token:
        cmd += ["-H", f"Authorization: Bearer {token}"]
    cmd.append(url)
    out, _ = run(cmd, env=env, timeout=timeout + seconds)
    line = next((l for l in out.splitlines() if l.startswith("WRKJSON ")), None)
    if not line:
        raise BenchError(f"wrk printed no result:\n{out[-2000:]}")
    r = json.loads(line[len("WRKJSON "):])
    errors = r["connect_errors"] + r["read_errors"] + r["write_errors"] + r["timeouts"] + r["non2xx"]
    if errors:
        raise BenchError(f"wrk against {url}: {errors} failed requests ({r})")
    r["rps"] = r["requests"] / (r["duration_us"] / 1e6)
    return r


def time_v(cmd, *, input=None, env=None, timeout=600):
    """Runs a command under /usr/bin/time -v; returns (seconds, peak RSS bytes, stdout)."""
    # time -v reports wall time in 10 ms steps: the wall time is taken here instead.
    t0 = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-v", *cmd], input=input, capture_output=True, env=env, timeout=timeout
    )
    secs = time.perf_counter() - t0
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise BenchError(f"{cmd[0]} exited {proc.returncode}: {err[-1500:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1)) * 1024
    return secs, rss, proc.stdout


def drop_dirty():
    """Writes back dirty pages so one run's writeback does not land in the next run."""
    os.sync()


def wrk_rounds(ctx, name, sides, per_round=False):
    """Each side is (name, url, token, put_base) or (name, url, token, None, put_urls file)."""
    cfg, ferry = ctx["cfg"], ctx["ferry"]
    names = [s[0] for s in (sides[0] if per_round else sides)]
    rps = {n: [] for n in names}
    p99 = {n: [] for n in names}
    overwrites = {}
    rss = []
    for r in range(cfg["rounds"]):
        round_sides = sides[r] if per_round else sides
        line = []
        for side, url, token, put_base, *rest in round_sides:
            put_urls = rest[0] if rest else None
            drop_dirty()
            if side == "ferry":
                with RssSampler(ferry.pid) as sampler:
                    res = wrk(url, cfg["wrk_seconds"], cfg["connections"], token, put_base, put_urls=put_urls)
                rss.append(sampler.peak)
            else:
                res = wrk(url, cfg["wrk_seconds"], cfg["connections"], token, put_base, put_urls=put_urls)
            rps[side].append(res["rps"])
            p99[side].append(res["p99_us"] / 1000)
            line.append(f"{side} {res['rps']:.0f} req/s p99 {res['p99_us'] / 1000:.2f} ms")
            if put_urls:
                # wrk started over on its list: the PUTs past its end overwrote keys of this round.
                with open(put_urls) as f:
                    again = max(0, res["requests"] - sum(1 for _ in f))
                overwrites.setdefault(side, []).append(again)
                if again:
                    line[-1] += f" ({again} overwrites)"
        log(f"  {name} round {r + 1}: " + ", ".join(line))
    res = dict(unit="req/s", higher_better=True, samples=rps, p99_ms=p99, peer=names[1], ferry_rss=rss)
    if overwrites:
        res["overwrites"] = overwrites
    return res


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def percentile99(samples):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
