-- wrk script for bench/run.
--
-- Without BENCH_PUT_BASE: wrk's plain GET of the URL (headers from -H).
-- With BENCH_PUT_BASE=/api/spaces/s/files/w4 (or /bucket/w4): every request is a PUT of
-- BENCH_PUT_BYTES bytes (default 4096) to a path no other request uses:
-- BASE/t<thread>/<counter>.bin.
-- Either way done() prints one line, "WRKJSON {...}", that bench/run reads.

local put_base = os.getenv("BENCH_PUT_BASE")
local put_bytes = tonumber(os.getenv("BENCH_PUT_BYTES") or "4096")
local put_body = nil
local counter = 0
local thread_no = 0
local created = 0

function setup(thread)
  created = created + 1
  thread:set("thread_no", created)
end

function init(args)
  thread_no = tonumber(wrk.thread:get("thread_no")) or 0
  if put_base then
    put_body = string.rep("x", put_bytes)
    wrk.headers["Content-Type"] = wrk.headers["Content-Type"] or "application/octet-stream"
  end
end

if put_base then
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
