"""Runs agent.py end to end against a ferry server it starts, and checks what the user gets.

    FERRY_BIN=target/debug/ferry python3 examples/deepagents-agent/run_example.py

It starts `ferry serve` on a free port in a temporary folder, creates a thread as a user,
uploads a CSV and an XLSX spreadsheet into it as that user, mints an agent token, runs agent.py
twice (the second run finds the first report's name taken and picks the next one), and checks
what the user got (`GET /api/threads/{id}/published`): a report card whose two revisions are the
two reports, with the edited line, and a card for what the agent made of the spreadsheet with
pandas through deepagents' `execute` tool (a PNG chart, or a CSV summary where the sandbox has
no matplotlib), in two revisions too.

Without the binary it says so and exits 0; with FERRY_CI set that is a failure instead. The same
goes for a server that runs no commands (`execute` answers 501): the spreadsheet part is skipped,
saying why, and the rest is checked.
"""

from __future__ import annotations

import io
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from xml.sax.saxutils import escape

import httpx

HERE = Path(__file__).resolve().parent
SECRET = "deepagents-example-secret"
CSV = b"region,revenue,orders\nnorth,1200,31\nsouth,950,27\neast,1410,40\n"
SHEET = [["month", "revenue", "orders"], ["Jan", 1200, 31], ["Feb", 950, 27], ["Mar", 1410, 40], ["Apr", 1130, 35]]
XLSX_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def xlsx(rows: list[list[object]]) -> bytes:
    """A workbook of one sheet holding `rows` (text as inline strings), as Excel writes one in
    its simplest form; openpyxl, and so pandas, read it."""
    main = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    package = "http://schemas.openxmlformats.org/package/2006"

    def cell(ref: str, value: object) -> str:
        if isinstance(value, (int, float)):
            return f'<c r="{ref}"><v>{value}</v></c>'
        return f'<c r="{ref}" t="inlineStr"><is><t>{escape(str(value))}</t></is></c>'

    data = "".join(
        f'<row r="{r}">' + "".join(cell(f"{chr(ord('A') + c)}{r}", v) for c, v in enumerate(row)) + "</row>"
        for r, row in enumerate(rows, start=1)
    )
    head = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
    parts = {
        "[Content_Types].xml": f'{head}<Types xmlns="{package}/content-types">'
        f'<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        f'<Default Extension="xml" ContentType="application/xml"/>'
        f'<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
        f'<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
        "</Types>",
        "_rels/.rels": f'{head}<Relationships xmlns="{package}/relationships">'
        f'<Relationship Id="rId1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        "xl/workbook.xml": f'{head}<workbook xmlns="{main}" xmlns:r="{rel}"><sheets><sheet name="Sales" sheetId="1" r:id="rId1"/></sheets></workbook>',
        "xl/_rels/workbook.xml.rels": f'{head}<Relationships xmlns="{package}/relationships">'
        f'<Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>',
        "xl/worksheets/sheet1.xml": f'{head}<worksheet xmlns="{main}"><sheetData>{data}</sheetData></worksheet>',
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in parts.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def fail(message: str) -> None:
    print(f"FAILED: {message}", flush=True)
    sys.exit(1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(binary: Path, data: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (data / "server.log").open("wb")
    server = subprocess.Popen(
        [str(binary), "serve", "--data", str(data / "data"), "--addr", f"127.0.0.1:{port}"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "FERRY_JWT_SECRET": SECRET},
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if server.poll() is not None:
            fail(f"ferry serve exited with {server.returncode}:\n{(data / 'server.log').read_text()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return server, url
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    server.kill()
    fail(f"ferry serve did not answer on {url} within 30 s")
    raise AssertionError


def skip_or_fail(message: str) -> None:
    """A part the machine cannot run: skipped, saying why; with FERRY_CI set, a failure."""
    if os.environ.get("FERRY_CI"):
        fail(f"FERRY_CI is set and {message}")
    print(f"SKIPPED: {message}", flush=True)


def run_agent(url: str, token: str) -> str:
    done = subprocess.run(
        [sys.executable, str(HERE / "agent.py"), "--url", url],
        env={**os.environ, "FERRY_TOKEN": token},
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(done.stdout + done.stderr, flush=True)
    if done.returncode != 0:
        fail(f"agent.py exited with {done.returncode}")
    return done.stdout


def main() -> None:
    configured = os.environ.get("FERRY_BIN")
    binary = Path(configured).resolve() if configured else (HERE / "../../target/debug/ferry").resolve()
    if not binary.is_file():
        message = f"no ferry binary at {binary}: build it (cargo build -p ferry) or point FERRY_BIN at one"
        if os.environ.get("FERRY_CI"):
            fail(message)
        print(f"SKIPPED: {message}")
        return

    with tempfile.TemporaryDirectory() as temp:
        server, url = start(binary, Path(temp))
        try:
            user = subprocess.run(
                [str(binary), "token", "--user", "alice"],
                env={**os.environ, "FERRY_JWT_SECRET": SECRET},
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {user}"}, timeout=30)
            thread = http.post("/api/threads", json={"title": "Quarterly regions"}).raise_for_status().json()["id"]
            upload = http.post(
                f"/api/threads/{thread}/uploads",
                params={"filename": "regions-q3.csv"},
                content=CSV,
                headers={"Content-Type": "text/csv"},
            ).raise_for_status()
            print("uploaded", upload.json()["uploads"][0]["sandboxPath"])
            sheet = http.post(
                f"/api/threads/{thread}/uploads",
                params={"filename": "sales-h1.xlsx"},
                content=xlsx(SHEET),
                headers={"Content-Type": XLSX_TYPE},
            ).raise_for_status()
            print("uploaded", sheet.json()["uploads"][0]["sandboxPath"])
            agent = http.post(f"/api/threads/{thread}/agent-token").raise_for_status().json()["token"]

            first = run_agent(url, agent)
            second = run_agent(url, agent)
            # The second run lists the first report before it writes, and takes the next name.
            if not re.search(r"<- ls \[success\] .*'/sandbox/outputs/regions-q3-report\.md'", second):
                fail("the second run did not meet the first report")
            # The agent says so when the server runs no commands (execute answered 501).
            executes = "(NOT_IMPLEMENTED)" not in first + second

            # One card a title: publishing under the same display name adds a revision to it.
            cards = http.get(f"/api/threads/{thread}/published").raise_for_status().json()["files"]
            shown = sorted((c["display_name"], c["revision"], c["sandbox_path"]) for c in cards)
            report_card = ("Report on regions-q3.csv", 2, "/sandbox/outputs/regions-q3-report-2.md")
            charts = [
                [("Chart of sales-h1.xlsx", 2, "/sandbox/outputs/sales-h1-chart.png"), report_card],
                [report_card, ("Summary of sales-h1.xlsx", 2, "/sandbox/outputs/sales-h1-summary.csv")],
            ]
            if shown not in (charts if executes else [[report_card]]):
                fail(f"unexpected cards: {cards}")
            every = http.get(f"/api/threads/{thread}/published", params={"revisions": "all"}).raise_for_status().json()["files"]
            paths = [c["sandbox_path"] for c in every if c["display_name"] == "Report on regions-q3.csv"]
            if paths != ["/sandbox/outputs/regions-q3-report.md", "/sandbox/outputs/regions-q3-report-2.md"]:
                fail(f"the revisions are {paths}")
            for report in ("regions-q3-report.md", "regions-q3-report-2.md"):
                text = http.get(f"/api/threads/{thread}/sandbox/outputs/{report}").raise_for_status().text
                if "Status: final" not in text or "- revenue: total 3560, highest 1410" not in text:
                    fail(f"{report} is not what the agent wrote:\n{text}")

            if not executes:
                said = re.search(r"commands cannot run on this ferry server: (.*?) \(NOT_IMPLEMENTED\)", first + second)
                reason = said.group(1) if said else "execute answered 501"
                skip_or_fail(f"the spreadsheet part: this ferry server runs no commands ({reason})")
            else:
                made = next(path for title, _, path in shown if title.endswith("of sales-h1.xlsx"))
                data = http.get(f"/api/threads/{thread}/sandbox/{made.removeprefix('/sandbox/')}").raise_for_status().content
                if made.endswith(".png"):
                    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
                        fail(f"{made} is not a PNG image")
                    print(f"the spreadsheet's chart: {made}, {len(data)} bytes", flush=True)
                else:
                    if b"revenue,4690" not in data.replace(b".0,", b","):
                        fail(f"{made} is not the spreadsheet's summary:\n{data.decode(errors='replace')}")
                    print(f"the spreadsheet's summary (the sandbox has no matplotlib): {made}", flush=True)
        finally:
            server.terminate()
            server.wait(timeout=10)
    print("OK: the deepagents example published its reports")


if __name__ == "__main__":
    main()
