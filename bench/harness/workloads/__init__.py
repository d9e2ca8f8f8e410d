"""The workloads, by family: HTTP file workloads (files.py), events (events.py), S3 (s3.py),
documents (documents.py), the agent's file tools (search.py); and the ones kept in bench/ beside
the harness, which bench/memory-budget shares: exec_bench, memory_bench, documents_bench.
RUNNERS maps each workload's name to the function that runs it (ctx in, a result dict out)."""

import documents_bench
import exec_bench
import memory_bench

from .documents import w_extract, w_pages
from .events import w_events
from .files import w_disk, w_download, w_get4k, w_large, w_list, w_put4k, w_upload, w_zip
from .s3 import w_s3get4k, w_s3multipart, w_s3put4k
from .search import w_search

RUNNERS = dict(
    disk=w_disk, upload=w_upload, download=w_download, get4k=w_get4k, put4k=w_put4k,
    events=w_events, list=w_list, extract=w_extract,
    s3get4k=w_s3get4k, s3put4k=w_s3put4k, s3multipart=w_s3multipart,
    search=w_search, pages=w_pages, large=w_large, zip=w_zip,
    execute=exec_bench.run,
    memory=memory_bench.run,
    documents=documents_bench.run,
)
