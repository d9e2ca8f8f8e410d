"""bench/run's harness, a module per part (bench/run is the command; bench/README.md says what is
measured):

    common.py     HERE (bench/), REPO, GIB, MIB, log(), BenchError
    settings.py   FULL and SMOKE, the workloads in their order, their targets
    procs.py      child processes (CHILDREN, cleanup at exit), run(), ports, /proc figures, RssSampler
    http.py       http() and http_json() for setup calls
    binaries.py   ferry, the probe, s3s-fs and the tools bench/setup installs
    sides.py      the servers: Ferry, Nginx (and nchan), S3 (s3s-fs), S3Side, s3_sides()
    load.py       curl, wrk and wrk_rounds, /usr/bin/time, timers, drop_dirty()
    workloads/    the workloads by family, and RUNNERS
    report.py     BENCHMARKS.md: formatting, the machine, the summary and the details
    main.py       the options and the run

Workloads 19–21 live beside the package (bench/exec_bench.py, memory_bench.py,
documents_bench.py; bench/memory-budget runs memory_bench alone) and import what they need
from it.
"""
