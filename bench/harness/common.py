"""What every part of the harness shares: where it lives, the sizes, the log and the error that
stops a run."""

import os
import sys
import time

# bench/ (this package's parent folder) and the repository above it.
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(HERE)
GIB = 1 << 30
MIB = 1 << 20


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class BenchError(Exception):
    pass
