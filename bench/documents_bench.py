"""Workload 21 of bench/run: `grep` with `documents: true` over a folder of PDFs in a sandbox,
side by side with ripgrep-all (`rga`) on the same folder.

Each round writes a fresh folder of PDFs (every page a few dozen lines of words; one line of each
file holds the needle), then searches it:
- cold: ferry's first search, which has the extraction worker read every file's text and keeps
  it by content hash, against rga's first search with an empty cache of its own (pdftotext per
  file, what it read kept; rga 0.10.9's `--rga-no-cache` fails on every file, "No cache?");
- warm: ferry's next search, which reads the kept text, against rga's next search on the same
  cache (rga's default way of working).
Where rga is not installed (bench/setup builds it into bench/.tools in full mode), the peer is
ripgrep over text pdftotext extracted beforehand: cold is pdftotext of every file then `rg`, warm
is `rg` alone.
"""

import os
import random
import shutil
import subprocess
import time

from harness.common import REPO, BenchError, log
from harness.http import http_json

TARGET = "`grep` with `documents: true` ≥ 0.5× ripgrep-all (`rga`) on the same folder of PDFs (warm: each with its extracted text kept)"
NEEDLE = "zanzibarite"
WORDS = ("harbour ferry cargo ledger invoice quarter region north south revenue freight manifest "
         "vessel crossing tide schedule berth pilot customs tonnage").split()


def pdf_bytes(pages):
    """A PDF whose pages show `pages` (a list of lists of lines) in Helvetica, one line under
    another."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    for i, lines in enumerate(pages):
        shown = " ".join(f"({line}) '" for line in lines)
        content = f"BT /F1 10 Tf 13 TL 56 806 Td {shown} ET".encode("latin-1")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> "
                       f"/Contents {5 + 2 * i} 0 R >>".encode())
        objects.append(b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream")
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def write_documents(folder, files, pages, seed):
    """`files` PDFs of `pages` pages of 50 lines each into `folder`; the needle is on one line of
    each file's last page. Answers how many lines hold it."""
    rnd = random.Random(seed)
    os.makedirs(folder, exist_ok=True)
    for f in range(files):
        doc = [[" ".join(rnd.choice(WORDS) for _ in range(10)) for _ in range(50)] for _ in range(pages)]
        doc[-1][17] = f"{rnd.choice(WORDS)} {NEEDLE} {rnd.choice(WORDS)}"
        with open(os.path.join(folder, f"report-{seed}-{f:04d}.pdf"), "wb") as out:
            out.write(pdf_bytes(doc))
    return files


def rga_binary():
    tools = os.path.join(REPO, "bench", ".tools", "bin", "rga")
    if os.access(tools, os.X_OK):
        return tools
    return shutil.which("rga")


def _timed(fn):
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def _count(output):
    """The matches `--count-matches` printed, one `path:count` line per file."""
    return sum(int(line.rsplit(":", 1)[1]) for line in output.splitlines() if ":" in line)


def run(ctx):
    """The workload, for bench/run (ctx: its run's cfg, work and ferry)."""
    cfg, ferry = ctx["cfg"], ctx["ferry"]
    rg, pdftotext = shutil.which("rg"), shutil.which("pdftotext")
    if not rg or not pdftotext:
        raise BenchError("the documents workload needs rg and pdftotext; bench/setup installs them")
    rga = rga_binary()
    peer = "rga" if rga else "pdftotext + rg"
    thread = ferry.new_thread("documents")
    agent = ferry.token("--agent", "--thread", thread, "--user", "u")
    sandbox = http_json("GET", f"{ferry.url}/api/threads/{thread}", agent)["sandboxDir"]
    files, pages = cfg["document_files"], cfg["document_pages"]

    def ferry_grep(folder):
        body = {"pattern": NEEDLE, "path": f"/sandbox/workspace/{folder}", "documents": True, "maxResults": 2000}
        return http_json("POST", f"{ferry.url}/api/fs/grep", agent, body, ok=(200,))

    def peer_search(folder, cold):
        path = os.path.join(sandbox, "workspace", folder)
        if rga:
            # A cache of the folder's own: empty for the first search.
            cache = os.path.join(ctx["work"], "rga-cache", folder)
            return subprocess.run([rga, f"--rga-cache-path={cache}", "--count-matches", NEEDLE, path],
                                  capture_output=True, text=True, timeout=cfg["timeout"]).stdout
        text = os.path.join(ctx["work"], "extracted", folder)
        if cold:
            shutil.rmtree(text, ignore_errors=True)
            os.makedirs(text)
            for name in sorted(os.listdir(path)):
                subprocess.run([pdftotext, os.path.join(path, name), os.path.join(text, name + ".txt")],
                               check=True, timeout=cfg["timeout"])
        return subprocess.run([rg, "--count-matches", NEEDLE, text], capture_output=True, text=True,
                              timeout=cfg["timeout"]).stdout

    samples = {"ferry cold": [], f"{peer} cold": [], "ferry warm": [], f"{peer} warm": []}
    for r in range(cfg["rounds"]):
        folder = f"docs{r}"
        needles = write_documents(os.path.join(sandbox, "workspace", folder), files, pages, seed=r)
        seconds, found = _timed(lambda: ferry_grep(folder))
        samples["ferry cold"].append(seconds)
        hits = len(found["matches"])
        if hits != needles or found["skipped"]["unreadable"]:
            raise BenchError(f"grep found {hits} of {needles} lines ({found['skipped']}, {found.get('unreadable')})")
        pages_seen = {m.get("page") for m in found["matches"]}
        if pages_seen != {pages}:
            raise BenchError(f"grep named the pages {pages_seen}, not {pages}")
        seconds, output = _timed(lambda: peer_search(folder, cold=True))
        samples[f"{peer} cold"].append(seconds)
        if _count(output) != needles:
            raise BenchError(f"{peer} found {_count(output)} of {needles} lines")
        samples["ferry warm"].append(_timed(lambda: ferry_grep(folder))[0])
        samples[f"{peer} warm"].append(_timed(lambda: peer_search(folder, cold=False))[0])
        log(f"  documents round {r + 1}: " + ", ".join(f"{k} {v[-1] * 1000:.0f} ms" for k, v in samples.items()))
    return dict(files=files, pages=pages, peer=peer, samples=samples)


def _median(xs):
    ordered = sorted(xs)
    return ordered[len(ordered) // 2]


def summary_rows(r, verdict):
    """The summary table's rows for the workload's results `r`."""
    s, peer = r["samples"], r["peer"]
    what = f"{r['files']:,} PDFs of {r['pages']} pages"
    fw, pw = _median(s["ferry warm"]), _median(s[f"{peer} warm"])
    fc, pc = _median(s["ferry cold"]), _median(s[f"{peer} cold"])
    return [
        ["21", f"grep `documents: true` over {what}, text kept (ms)", f"{fw * 1000:.0f}", f"{peer} {pw * 1000:.0f}",
         f"{pw / fw:.2f}", "–", TARGET, verdict(pw / fw >= 0.5)],
        ["21", f"the same, first search: every file's text read (ms)", f"{fc * 1000:.0f}", f"{peer} {pc * 1000:.0f}",
         f"{pc / fc:.2f}", "–", "(no target: shown beside the warm figure)", "–"],
    ]


def details(r, w):
    """The workload's section of the report."""
    peer = r["peer"]
    w("### 21. Documents searched in their text")
    w("")
    w(f"`POST /api/fs/grep` with `documents: true` for a word on one line of each of {r['files']:,} PDFs of "
      f"{r['pages']} pages (50 lines of Helvetica text a page), written into a sandbox folder; the peer, on the same "
      f"folder: {peer}" + (" (`--count-matches`, a cache of its own per folder: empty for the first search, filled "
                           "by it for the next; rga 0.10.9's `--rga-no-cache` fails on every file)"
                           if peer == "rga" else
                           " (cold: `pdftotext` of every file, then `rg --count-matches` over the text; warm: `rg` alone)")
      + ". Each round writes a new folder, so the first search of each reads every file. ferry's extraction "
      "workers (one per core) are shared fairly between users, one user holding at most all but one of them (here: "
      "one at a time); each text is kept by its content's SHA-256, and a warm search still reads each file to hash it.")
    w("")
    w(f"| round | ferry cold | {peer} cold | ferry warm | {peer} warm |")
    w("| --- | --- | --- | --- | --- |")
    s = r["samples"]
    for i in range(len(s["ferry cold"])):
        w(f"| {i + 1} | {s['ferry cold'][i] * 1000:.0f} ms | {s[f'{peer} cold'][i] * 1000:.0f} ms | "
          f"{s['ferry warm'][i] * 1000:.0f} ms | {s[f'{peer} warm'][i] * 1000:.0f} ms |")
    w("")
