"""The agent's file tools over a local sandbox (12–15): grep and glob against ripgrep and GNU
find, edit_file and read_file latency. Returns a result dict."""

import os
import shutil

from ..common import MIB, BenchError, log
from ..http import http_json
from ..load import percentile99, timed
from ..procs import run


NEEDLE = "zanzibar"
WORDS = ("ferry river harbour cargo manifest ledger invoice revenue quarter north south east west "
         "report draft summary table figure chart agent user upload sandbox space").split()


def write_search_corpus(root, files, total_bytes):
    """`files` text files of about total_bytes/files bytes each, 100 to a folder; one line in
    997 holds the needle. Answers how many lines hold it."""
    import random
    rnd = random.Random(7)
    per_file = max(total_bytes // files, 64)
    needles, line_no = 0, 0
    for i in range(files):
        folder = os.path.join(root, f"d{i // 100:03d}")
        os.makedirs(folder, exist_ok=True)
        lines, size = [], 0
        while size < per_file:
            line_no += 1
            words = [rnd.choice(WORDS) for _ in range(9)]
            if line_no % 997 == 0:
                words[4] = NEEDLE
                needles += 1
            line = " ".join(words)
            lines.append(line)
            size += len(line) + 1
        with open(os.path.join(folder, f"f{i}.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return needles


def w_search(ctx):
    """The agent's grep and glob over a local sandbox, side by side with ripgrep and GNU find on
    the same folder (page cache warm for both); then the latency of edit_file on a 1 MiB file
    and of read_file of a 2,000-line window."""
    cfg, ferry = ctx["cfg"], ctx["ferry"]
    rg, find = shutil.which("rg"), shutil.which("find")
    if not rg or not find:
        raise BenchError("the search workload needs rg (Debian's ripgrep) and find; bench/setup installs them")
    thread = ferry.new_thread("search")
    agent = ferry.token("--agent", "--thread", thread, "--user", "u")
    sandbox = http_json("GET", f"{ferry.url}/api/threads/{thread}", agent)["sandboxDir"]
    corpus = os.path.join(sandbox, "workspace", "corpus")
    n, total = cfg["search_files"], cfg["search_bytes"]
    log(f"  writing {n:,} files ({total / MIB:.0f} MiB) into the sandbox")
    needles = write_search_corpus(corpus, n, total)
    fs = lambda tool, body: http_json("POST", f"{ferry.url}/api/fs/{tool}", agent, body)
    grep_body = {"pattern": NEEDLE, "path": "/sandbox/workspace/corpus", "maxResults": 2000}
    glob_body = {"pattern": "**/f*7.txt", "path": "/sandbox/workspace/corpus"}
    expected_glob = sum(1 for i in range(n) if str(i).endswith("7"))
    rg_cmd = [rg, "--count-matches", "--no-heading", NEEDLE, corpus]
    find_cmd = [find, corpus, "-name", "f*7.txt"]
    # Warm the page cache and check that both sides find the same.
    found = fs("grep", grep_body)
    if len(found["matches"]) != min(needles, 2000):
        raise BenchError(f"grep found {len(found['matches'])} of {needles} lines")
    globbed = fs("glob", glob_body)
    if len(globbed["paths"]) != min(expected_glob, 1000):
        raise BenchError(f"glob found {len(globbed['paths'])} of {expected_glob} files")
    run(rg_cmd, check=False)
    run(find_cmd)
    samples = {"ferry grep": [], "rg": [], "ferry glob": [], "find": []}
    for r in range(cfg["rounds"]):
        samples["ferry grep"].append(timed(lambda: fs("grep", grep_body))[0])
        samples["rg"].append(timed(lambda: run(rg_cmd, check=False))[0])
        samples["ferry glob"].append(timed(lambda: fs("glob", glob_body))[0])
        samples["find"].append(timed(lambda: run(find_cmd))[0])
        log(f"  search round {r + 1}: " + ", ".join(f"{k} {v[-1] * 1000:.0f} ms" for k, v in samples.items()))
    # Latency: an edit of a 1 MiB file, back and forth, and a 2,000-line window of a longer file.
    big = "".join(f"line {i:07d} of the report, with some words after it to fill it out\n" for i in range(15_000))
    big = big[: MIB - 20] + "MARKER-A\n"
    fs("write_file", {"path": "/sandbox/workspace/big.md", "content": big})
    calls = cfg["latency_calls"]
    edits, reads = [], []
    for i in range(calls):
        old, new = ("MARKER-A", "MARKER-B") if i % 2 == 0 else ("MARKER-B", "MARKER-A")
        body = {"path": "/sandbox/workspace/big.md", "old_string": old, "new_string": new}
        edits.append(timed(lambda: fs("edit_file", body))[0])
    window = {"path": "/sandbox/workspace/big.md", "offset": 5000, "limit": 2000}
    for _ in range(calls):
        reads.append(timed(lambda: fs("read_file", window))[0])
    log(f"  edit_file of 1 MiB: p99 {percentile99(edits) * 1000:.2f} ms; read_file of 2,000 lines: p99 {percentile99(reads) * 1000:.2f} ms ({calls} calls each)")
    return dict(unit="s", higher_better=False, files=n, bytes=total, needles=needles, samples=samples,
                edit_ms=[x * 1000 for x in edits], read_ms=[x * 1000 for x in reads], ferry_rss=[0])
