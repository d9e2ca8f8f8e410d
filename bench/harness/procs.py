"""Child processes (the servers, kept in CHILDREN and stopped at exit or on a signal), commands
run to completion, ports, and what /proc says of a process: RSS, peak RSS, CPU time."""

import atexit
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

from .common import BenchError

# The servers started, stopped in reverse order by cleanup() (at exit, on SIGTERM or SIGINT, or
# when main() is done).
CHILDREN = []


def cleanup():
    for proc in reversed(CHILDREN):
        if proc.poll() is None:
            try:
                proc.terminate()
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            except ProcessLookupError:
                pass
    CHILDREN.clear()


atexit.register(cleanup)


def on_signal(signum, _frame):
    cleanup()
    sys.exit(128 + signum)


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = hard if hard != resource.RLIM_INFINITY else 65536
    want = min(want, 65536)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def run(cmd, *, env=None, timeout=600, input=None, check=True, cwd=None):
    """Runs a command to completion; returns (stdout, stderr)."""
    proc = subprocess.run(
        cmd,
        env=env,
        input=input,
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        text=isinstance(input, str) or input is None,
    )
    if check and proc.returncode != 0:
        raise BenchError(
            f"{' '.join(map(str, cmd[:3]))}… exited {proc.returncode}:\n{proc.stderr[-2000:]}"
        )
    return proc.stdout, proc.stderr


def start(cmd, logfile, env=None):
    out = open(logfile, "wb")
    proc = subprocess.Popen(
        cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
    )
    CHILDREN.append(proc)
    return proc


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, name, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise BenchError(f"{name} exited with {proc.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise BenchError(f"{name} did not listen on {port} within {timeout} s")


def peak_rss_reset(pid):
    # Writing 5 to clear_refs resets VmHWM to the current RSS (Linux ≥ 4.0).
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def proc_status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def tree_cpu_seconds(pid):
    """User and system CPU seconds of a process and every process below it (nginx's workers
    are its master's children), from `/proc/*/stat`."""
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    # The fields after the command name, which is in parentheses and may hold spaces.
                    rest = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            # What follows the name starts at field 3: ppid is field 4, utime and stime 14 and 15.
            stats[int(entry)] = (int(rest[1]), (int(rest[11]) + int(rest[12])) / tick)
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += stats.get(p, (0, 0.0))[1]
        todo.extend(c for c, (ppid, _) in stats.items() if ppid == p)
    return total


class RssSampler:
    """Peak RSS of a process over a span: VmHWM after a reset, and VmRSS sampled every 20 ms
    as a cross-check (VmHWM cannot be reset without clear_refs)."""

    def __init__(self, pid):
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()

    def __enter__(self):
        self.reset_ok = peak_rss_reset(self.pid)
        self.peak = proc_status(self.pid, "VmRSS")
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self):
        while not self._stop.wait(0.02):
            try:
                self.peak = max(self.peak, proc_status(self.pid, "VmRSS"))
            except OSError:
                return

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        if self.reset_ok:
            self.peak = max(self.peak, proc_status(self.pid, "VmHWM"))
