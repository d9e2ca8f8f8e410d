"""The command: its options, the servers a run needs, the workloads in turn, the report."""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from .binaries import ferry_binary, need_boto3, need_tools, probe_binary, s3s_binary
from .common import REPO, BenchError, log
from .load import drop_dirty
from .procs import cleanup, raise_nofile
from .report import loadavg, machine, report, versions
from .settings import FULL, S3_WORKLOADS, SMOKE, TARGETS, WORKLOADS
from .sides import S3, Ferry, Nginx
from .workloads import RUNNERS
from .workloads.files import make_big_file


def load_baseline(args):
    """The earlier run's raw results named by --baseline, if any."""
    if not args.baseline:
        return None
    with open(args.baseline) as f:
        return json.load(f)


def main(description):
    """The run bench/run asks for; `description` is bench/run's docstring, shown by --help."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, one round (CI)")
    ap.add_argument("--rounds", type=int, help="rounds per workload (default 5; smoke 1)")
    ap.add_argument("--only", help=f"comma-separated workloads of {','.join(WORKLOADS)}")
    ap.add_argument("--out", help="the report (default: BENCHMARKS.md; smoke: under the work dir)")
    ap.add_argument("--json", help="also write the raw results here")
    ap.add_argument("--baseline", help="raw results of an earlier run (--json), for a before/after table")
    ap.add_argument("--keep", action="store_true", help="keep the work dir")
    ap.add_argument("--from-json", help="write the report from a run's raw results (--json) without measuring "
                    "(after bench/NOTES.md or the report's layout changed)")
    args = ap.parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        out = args.out or os.path.join(REPO, "BENCHMARKS.md")
        with open(out, "w") as f:
            f.write(report(saved["results"], saved["meta"], saved["cfg"], load_baseline(args)))
        log(f"wrote {out} from {args.from_json}")
        return

    cfg = dict(SMOKE if args.smoke else FULL)
    if args.rounds:
        cfg["rounds"] = args.rounds
    only = args.only.split(",") if args.only else WORKLOADS
    for o in only:
        if o not in WORKLOADS:
            ap.error(f"unknown workload {o}")

    raise_nofile()
    need_tools()
    started = time.time()
    meta = dict(smoke=args.smoke, started=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                load_before=loadavg(), machine=machine())
    busy = subprocess.run(["ps", "-eo", "pcpu,comm", "--sort=-pcpu"], capture_output=True, text=True).stdout.splitlines()[1:4]
    log(f"load average {meta['load_before']}; busiest: {'; '.join(b.strip() for b in busy)}")

    ferry_bin = ferry_binary()
    probe = probe_binary() if set(only) & {"events", "list"} else None
    s3s_bin = s3s_binary() if set(only) & ({"put4k"} | S3_WORKLOADS) else None
    if set(only) & S3_WORKLOADS:
        need_boto3()
    meta["versions"] = versions(ferry_bin, s3s_bin)

    base = os.environ.get("BENCH_TMP") or None
    work = tempfile.mkdtemp(prefix="ferry-bench-", dir=base)
    df = subprocess.run(["df", "-T", work], capture_output=True, text=True).stdout.splitlines()[-1].split()
    meta["disk"] = f"{df[0]} ({df[1]})"
    log(f"work dir {work}")
    try:
        ctx = dict(cfg=cfg, work=work, probe=probe)
        largest = max(cfg["big_bytes"], cfg["large_bytes"] if "large" in only else 0)
        ctx["ferry"] = Ferry(ferry_bin, work, largest)
        if set(only) & {"upload", "download", "get4k", "put4k", "events", "large"}:
            ctx["nginx"] = Nginx(work)
        if set(only) & {"put4k", "s3get4k", "s3put4k"}:
            ctx["s3"] = S3(s3s_bin, work)
        if set(only) & S3_WORKLOADS:
            ctx["s3v4"] = S3(s3s_bin, work, "benchkey", "bench-secret-" + os.urandom(8).hex())
        if set(only) & {"upload", "download", "s3multipart"}:
            ctx["big_file"] = os.path.join(work, "big.bin")
            make_big_file(ctx["big_file"], cfg["big_bytes"])
        results = {}
        for name in only:
            log(f"{name}: {TARGETS[name]}")
            # The workload before (the PUT rounds write gigabytes, the peers' too) must not
            # still be writing back while this one runs: a durable write would wait behind it.
            drop_dirty()
            t = time.time()
            results[name] = RUNNERS[name](ctx)
            log(f"{name}: done in {time.time() - t:.0f} s")
        meta["load_after"] = loadavg()
        meta["elapsed_min"] = (time.time() - started) / 60
        text = report(results, meta, cfg, load_baseline(args))
        out = args.out or (os.path.join(tempfile.gettempdir(), "ferry-BENCHMARKS-smoke.md") if args.smoke else os.path.join(REPO, "BENCHMARKS.md"))
        with open(out, "w") as f:
            f.write(text)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(dict(meta=meta, cfg=cfg, results=results), f, indent=1)
        print(text)
        log(f"wrote {out}")
    finally:
        t = time.time()
        cleanup()
        log(f"servers stopped in {time.time() - t:.1f} s")
        if args.keep:
            log(f"kept {work}")
        else:
            t = time.time()
            shutil.rmtree(work, ignore_errors=True)
            log(f"work dir removed in {time.time() - t:.1f} s")


def cli(description):
    """bench/run's entry: main(), a BenchError logged and exit status 1."""
    try:
        main(description)
    except BenchError as e:
        log(f"FAILED: {e}")
        sys.exit(1)
