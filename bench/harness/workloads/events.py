"""The events workload (5): SSE receipt latency on ferry, nchan and the floor (`probe fanout`).
Returns a result dict."""

import json
import os
import subprocess

from ..common import BenchError, log
from ..procs import RssSampler, free_port, proc_status, start, tree_cpu_seconds, wait_port
from ..sides import NCHAN_MODULE


def w_events(ctx):
    cfg, ferry, nginx, probe = ctx["cfg"], ctx["ferry"], ctx["nginx"], ctx["probe"]
    if not nginx.nchan:
        raise BenchError(f"the events peer needs nchan ({NCHAN_MODULE}): bench/setup installs it")
    # The floor: `probe fanout`, a server that does nothing but write each POSTed body to every
    # subscriber, from one thread per core (bench/probe/src/fanout.rs).
    floor_port = free_port()
    floor = start([probe, "fanout", "--addr", f"127.0.0.1:{floor_port}", "--writers", str(os.cpu_count() or 2)],
                  os.path.join(ctx["work"], "fanout.log"))
    wait_port(floor_port, floor, "probe fanout")
    out, peer, floors, idle = {}, {}, {}, {}
    rss = []
    for subscribers, messages in cfg["events"]:
        runs, peer_runs, floor_runs, per_idle = [], [], [], []
        for r in range(cfg["rounds"]):
            thread = ferry.new_thread(f"bench events {subscribers}")
            before = proc_status(ferry.pid, "VmRSS")
            with RssSampler(ferry.pid) as sampler:
                res, subscribed = probe_events(
                    probe, cfg, ferry.pid,
                    ["--addr", ferry.addr, "--token", ferry.user, "--thread", thread],
                    subscribers, messages,
                )
            rss.append(sampler.peak)
            per_idle.append((subscribed - before) / subscribers)
            runs.append(res)
            channel = f"bench-{subscribers}-{r}"
            nres, _ = probe_events(
                probe, cfg, nginx.pid,
                ["--addr", nginx.addr, "--sub", f"/nchan/sub?ch={channel}", "--pub", f"/nchan/pub?ch={channel}"],
                subscribers, messages,
            )
            peer_runs.append(nres)
            fres, _ = probe_events(
                probe, cfg, floor.pid,
                ["--addr", f"127.0.0.1:{floor_port}", "--sub", f"/sub?ch={channel}", "--pub", f"/pub?ch={channel}"],
                subscribers, messages,
            )
            floor_runs.append(fres)
            log(
                f"  events x{subscribers} round {r + 1}: p50 / p99 / server CPU per message: "
                + "; ".join(f"{name} {x['all']['p50_ms']:.2f} / {x['all']['p99_ms']:.2f} / {x['server_cpu_ms']:.2f} ms"
                            for name, x in (("ferry", res), ("nchan", nres), ("floor", fres)))
                + f"; ferry {per_idle[-1] / 1024:.1f} KiB RSS per idle subscriber"
            )
        out[str(subscribers)] = runs
        peer[str(subscribers)] = peer_runs
        floors[str(subscribers)] = floor_runs
        idle[str(subscribers)] = per_idle
    return dict(unit="ms", higher_better=False, runs=out, peer_runs=peer, floor_runs=floors, idle_rss=idle, ferry_rss=rss)


def probe_events(probe, cfg, pid, target, subscribers, messages):
    """One `probe events` run. Answers its result, with the server's CPU time per message
    (its process and children's, from the moment every subscription is open to the result), and
    the server's RSS read while every subscription was open and idle."""
    proc = subprocess.Popen(
        [probe, "events", *target, "--subscribers", str(subscribers), "--messages", str(messages)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    subscribed, cpu_open = 0, 0.0
    try:
        for line in proc.stdout:
            line = line.strip()
            if line == "subscribed":
                subscribed = proc_status(pid, "VmRSS")
                cpu_open = tree_cpu_seconds(pid)
            elif line.startswith("{"):
                res = json.loads(line)
                res["server_cpu_ms"] = (tree_cpu_seconds(pid) - cpu_open) * 1e3 / messages
        proc.wait(timeout=cfg["timeout"])
    finally:
        if proc.poll() is None:
            proc.kill()
    if proc.returncode != 0:
        raise BenchError(f"probe events exited {proc.returncode}: {proc.stderr.read()[-2000:]}")
    if res["lost"]:
        raise BenchError(f"{res['lost']} event receipts missing with {subscribers} subscribers ({target[1]})")
    return res, subscribed
