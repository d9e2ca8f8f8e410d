"""The document workloads: previews of an XLSX and a PDF (7) and PDF pages drawn for a model
(16). Each returns a result dict."""

import json
import os
import sys

from ..common import MIB, REPO, BenchError, log
from ..load import curl, time_v
from ..procs import RssSampler, run


def docs(ctx):
    if "docs" not in ctx:
        ctx["docs"] = make_docs(ctx)
    return ctx["docs"]


def make_docs(ctx):
    cfg, work = ctx["cfg"], ctx["work"]
    fixtures = os.path.join(REPO, "crates", "ferry-extract", "tests", "fixtures")
    if cfg["docs"] == "fixtures":
        return [
            ("seed.xlsx", os.path.join(fixtures, "seed.xlsx"), "the XLSX fixture seed.xlsx"),
            ("two-pages.pdf", os.path.join(fixtures, "two-pages.pdf"), "a 2-page PDF fixture"),
        ]
    out = os.path.join(work, "docs")
    os.makedirs(out, exist_ok=True)
    log("  generating the 100,000-row XLSX and the 100-page PDF (make_big.py)")
    run([sys.executable, os.path.join(fixtures, "make_big.py"), out], timeout=900)
    return [
        ("big-100k-rows.xlsx", os.path.join(out, "big-100k-rows.xlsx"), "100,000 rows × 8 columns, shared strings (XlsxWriter, as Excel writes)"),
        ("big-100k-rows-inline.xlsx", os.path.join(out, "big-100k-rows-inline.xlsx"), "the same rows, inline strings (openpyxl)"),
        ("big-100-pages.pdf", os.path.join(out, "big-100-pages.pdf"), "100 pages of text (reportlab)"),
    ]


CONTENT_TYPES = {
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".pdf": "application/pdf",
}


def w_extract(ctx):
    cfg, ferry = ctx["cfg"], ctx["ferry"]
    files = docs(ctx)
    thread = ferry.new_thread("bench extract")
    results = []
    for name, path, what in files:
        ext = os.path.splitext(name)[1]
        req = json.dumps({"op": "preview", "path": path, "file_name": name, "max_chars": 4000})
        row = dict(name=name, what=what, bytes=os.path.getsize(path), worker_s=[], worker_rss=[],
                   upload_s=[], upload_rss=[], pdftotext_s=[], pdftotext_rss=[])
        for r in range(cfg["rounds"]):
            secs, rss, stdout = time_v([ferry.binary, "__extract"], input=req.encode(), env={}, timeout=120)
            answer = json.loads(stdout.decode().strip().split("\n")[-1])  # "\n" only: text may hold U+2028
            if answer.get("status") != "preview":
                raise BenchError(f"the worker could not preview {name}: {str(answer)[:300]}")
            row["worker_s"].append(secs)
            row["worker_rss"].append(rss)
            row["preview_chars"] = len((answer.get("preview") or {}).get("text") or "")
            with RssSampler(ferry.pid) as sampler:
                res = curl(
                    ["-X", "POST", "--data-binary", f"@{path}", "-H", f"Authorization: Bearer {ferry.user}",
                     "-H", f"Content-Type: {CONTENT_TYPES[ext]}",
                     f"{ferry.url}/api/threads/{thread}/uploads?filename={name}"],
                    timeout=300,
                )
            upload = json.loads(res["body"])["uploads"][0]
            if not upload.get("preview"):
                raise BenchError(f"the upload of {name} has no preview: {upload.get('previewError')}")
            row["upload_s"].append(res["seconds"])
            row["upload_rss"].append(sampler.peak)
            if ext == ".pdf":
                secs, rss, _ = time_v(["pdftotext", path, "/dev/null"], timeout=120)
                row["pdftotext_s"].append(secs)
                row["pdftotext_rss"].append(rss)
            log(
                f"  extract {name} round {r + 1}: worker {row['worker_s'][-1] * 1000:.0f} ms "
                f"({row['worker_rss'][-1] / MIB:.0f} MiB), upload→answer {row['upload_s'][-1] * 1000:.0f} ms"
                + (f", pdftotext {row['pdftotext_s'][-1] * 1000:.0f} ms ({row['pdftotext_rss'][-1] / MIB:.0f} MiB)" if row["pdftotext_s"] else "")
            )
        results.append(row)
    return dict(docs=results)


def scanned_page(path):
    """A one-page PDF holding only a 300 dpi greyscale scan of a letter page (2,550 × 3,300
    pixels of text lines with paper noise, as JPEG): what a scanner hands over."""
    from PIL import Image, ImageDraw

    page = Image.new("L", (2550, 3300), 238)
    draw = ImageDraw.Draw(page)
    for line in range(70):
        draw.text((180, 200 + line * 42), f"{line + 1:>3}  Invoice 2026-114 · item {line * 7 % 31} · 1,234.56 EUR", fill=25)
    noise = Image.effect_noise((2550, 3300), 24)
    Image.blend(page, noise, 0.12).save(path, "PDF", resolution=300.0, quality=85)


def w_pages(ctx):
    """Page 1 drawn for a model: ferry's worker (`op: pdf_page`, long edge 1,568 px, PNG or
    JPEG, with the page's text) against `pdftoppm -scale-to 1568 -png` of the same page."""
    cfg, ferry, work = ctx["cfg"], ctx["ferry"], ctx["work"]
    scan = os.path.join(work, "scanned-page.pdf")
    scanned_page(scan)
    files = [(n, p, w) for n, p, w in docs(ctx) if n.endswith(".pdf")]
    files.append(("scanned-page.pdf", scan, "one 300 dpi greyscale scan of a letter page (Pillow, JPEG)"))
    results = []
    for name, path, what in files:
        req = json.dumps({"op": "pdf_page", "path": path, "file_name": name, "max_chars": 4000, "page": 1})
        row = dict(name=name, what=what, bytes=os.path.getsize(path), worker_s=[], worker_rss=[],
                   pdftoppm_s=[], pdftoppm_rss=[])
        prefix = os.path.join(work, "pdftoppm-page")
        for r in range(cfg["rounds"]):
            secs, rss, stdout = time_v([ferry.binary, "__extract"], input=req.encode(), env={}, timeout=120)
            answer = json.loads(stdout.decode().strip().split("\n")[-1])  # "\n" only: text may hold U+2028
            if answer.get("status") != "page" or not answer["page"].get("image"):
                raise BenchError(f"the worker could not draw page 1 of {name}: {str(answer)[:300]}")
            row["worker_s"].append(secs)
            row["worker_rss"].append(rss)
            row["shown"] = f"{answer['page']['image']['width']}×{answer['page']['image']['height']} {answer['page']['image']['mime_type']}"
            secs, rss, _ = time_v(["pdftoppm", "-f", "1", "-l", "1", "-scale-to", "1568", "-png", "-singlefile", path, prefix], timeout=120)
            row["pdftoppm_s"].append(secs)
            row["pdftoppm_rss"].append(rss)
            log(f"  pages {name} round {r + 1}: worker {row['worker_s'][-1] * 1000:.0f} ms "
                f"({row['worker_rss'][-1] / MIB:.0f} MiB), pdftoppm {secs * 1000:.0f} ms ({rss / MIB:.0f} MiB)")
        results.append(row)
    return dict(docs=results)
