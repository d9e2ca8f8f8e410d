"""The settings per mode, the workloads in their order and each one's target."""

import documents_bench
import exec_bench
import memory_bench

from .common import GIB, MIB

FULL = dict(
    rounds=5,
    big_bytes=GIB,
    wrk_seconds=10,
    wrk_warmup_seconds=2,
    connections=32,
    events=[(1, 200), (1000, 100)],  # (subscribers, messages)
    list_files=100_000,
    search_files=10_000,
    search_bytes=100 * MIB,
    latency_calls=500,
    docs="big",
    part_bytes=64 * MIB,
    part_concurrency=4,
    disk_seq_bytes=GIB,
    disk_flush_seconds=3,
    large_bytes=5 * GIB,
    large_rounds=3,  # 5 GiB three ways a round: about a minute and a half each
    tus_part_bytes=8 * MIB,
    zip_files=1_000,
    zip_bytes=GIB,
    execute_calls=100,
    memory_budget=512 * MIB,
    memory_file_mib=60,
    document_files=100,
    document_pages=10,
    timeout=3600,
)
SMOKE = dict(
    rounds=1,
    big_bytes=16 * MIB,
    wrk_seconds=2,
    wrk_warmup_seconds=0,
    connections=32,
    events=[(1, 20), (100, 10)],
    list_files=1_000,
    search_files=200,
    search_bytes=2 * MIB,
    latency_calls=50,
    docs="fixtures",
    part_bytes=5 * MIB,  # S3's smallest part: 4 parts of the 16 MiB file
    part_concurrency=4,
    disk_seq_bytes=16 * MIB,
    disk_flush_seconds=0.5,
    large_bytes=24 * MIB,
    large_rounds=1,
    tus_part_bytes=8 * MIB,
    zip_files=20,
    zip_bytes=4 * MIB,
    execute_calls=5,
    memory_budget=32 * MIB,
    memory_file_mib=2,
    document_files=4,
    document_pages=3,
    timeout=300,
)

WORKLOADS = ["disk", "upload", "download", "get4k", "put4k", "events", "list", "extract", "s3get4k", "s3put4k", "s3multipart", "search", "pages", "large", "zip", "execute", "memory", "documents"]
S3_WORKLOADS = {"s3get4k", "s3put4k", "s3multipart"}

TARGETS = {
    "disk": "(no target: the disk's own limits, to read the write figures against)",
    "upload": "≥ 0.9× nginx; ferry peak RSS < 64 MiB",
    "download": "≥ 0.7× nginx",
    "get4k": "≥ 0.5× nginx req/s",
    "put4k": "ahead of the S3 peer (req/s)",
    "events": "p99 < 5 ms and ≤ nchan's; ≤ 32 KiB of ferry RSS per idle subscriber",
    "list": "first page of 1,000 < 250 ms; the whole list < 3 s",
    "extract": "(no target: time and peak RSS; pdftotext for the PDF)",
    "s3get4k": "(no target: side by side with s3s-fs, both SigV4)",
    "s3put4k": "(no target: side by side with s3s-fs, both SigV4)",
    "s3multipart": "(no target: side by side with s3s-fs, both SigV4)",
    "grep": "≥ 0.5× ripgrep (rg) on the same folder",
    "glob": "≥ 0.5× GNU find -name on the same folder",
    "edit": "p99 < 5 ms",
    "read": "p99 < 5 ms",
    "pages": "≤ 1.0× pdftoppm at the same pixel size; worker peak RSS ≤ 256 MiB",
    "large": "plain ≥ 0.9× and through tus ≥ 0.8× nginx's PUT; ferry peak RSS ≤ 64 MiB in both",
    "zip": "≥ 0.5× `zip -0 -r` of the same folder to /dev/null",
}
TARGETS["execute"] = exec_bench.TARGET
TARGETS["memory"] = memory_bench.TARGET
TARGETS["documents"] = documents_bench.TARGET
TARGETS["search"] = "; ".join(f"{k}: {TARGETS[k]}" for k in ("grep", "glob", "edit", "read"))
