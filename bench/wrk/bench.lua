-- wrk script for bench/run.
--
-- Without BENCH_PUT_BASE: wrk's plain GET of the URL (headers from -H).
-- With BENCH_PUT_BASE=/api/spaces/s/files/w4 (or /bucket/w4): every request is a PUT of
-- BENCH_PUT_BYTES bytes (default 4096) to a path no other request uses:
-- BASE/t<thread>/<counter>.bin.
-- With BENCH_PUT_URLS=FILE (one "path?query" a line, e.g. presigned S3 URLs, and
-- BENCH_WRK_THREADS=N): every request is such a PUT to the next line of FILE; wrk thread i of N
-- takes lines i, i+N, i+2N, … so no two requests share a line until a thread has used all of
-- its lines; then it starts over (overwrites: bench/run counts them as requests - lines).
-- Either way done() prints one line, "WRKJSON {...}", that bench/run reads.

local put_base = os.getenv("BENCH_PUT_BASE")
local put_urls = os.getenv("BENCH_PUT_URLS")
local put_bytes = tonumber(os.getenv("BENCH_PUT_BYTES") or "4096")
local put_body = nil
local urls = nil
local counter = 0
local thread_no = 0
local created = 0

function setup(thread)
  created = created + 1
  thread:set("thread_no", created)
end

function init(args)
  thread_no = tonumber(wrk.thread:get("thread_no")) or 0
  if put_urls then
    local threads = tonumber(os.getenv("BENCH_WRK_THREADS") or "1")
    urls = {}
    local line_no = 0
    for line in io.lines(put_urls) do
      if line_no % threads == thread_no - 1 then
        urls[#urls + 1] = line
      end
      line_no = line_no + 1
    end
    if #urls == 0 then
      error("BENCH_PUT_URLS: no lines for wrk thread " .. thread_no)
    end
  end
  if put_base or put_urls then
    put_body = string.rep("x", put_bytes)
    wrk.headers["Content-Type"] = wrk.headers["Content-Type"] or "application/octet-stream"
  end
end

if put_urls then
  function request()
    counter = counter + 1
    return wrk.format("PUT", urls[(counter - 1) % #urls + 1], nil, put_body)
  end
elseif put_base then
  function request()
    counter = counter + 1
    local path = string.format("%s/t%d/%08d.bin", put_base, thread_no, counter)
    return wrk.format("PUT", path, nil, put_body)
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"bytes":%d,"connect_errors":%d,"read_errors":%d,' ..
    '"write_errors":%d,"timeouts":%d,"non2xx":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,' ..
    '"max_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.timeout,
    e.status, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean))
end
