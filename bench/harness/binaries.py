"""Building and finding the tools: ferry, the probe, s3s-fs, and the ones bench/setup installs."""

import os
import shutil
import subprocess

from .common import HERE, REPO, BenchError, log


def cargo_target_dir():
    return os.environ.get("CARGO_TARGET_DIR") or os.path.join(REPO, "target")


def ferry_binary():
    path = os.environ.get("FERRY_BIN")
    if path:
        if not os.access(path, os.X_OK):
            raise BenchError(f"FERRY_BIN={path} is not an executable")
        return os.path.abspath(path)
    log("building ferry (cargo build --release -p ferry)")
    subprocess.run(["cargo", "build", "--release", "-p", "ferry"], cwd=REPO, check=True)
    return os.path.abspath(os.path.join(cargo_target_dir(), "release", "ferry"))


def probe_binary():
    path = os.environ.get("PROBE_BIN")
    if path:
        return os.path.abspath(path)
    manifest = os.path.join(HERE, "probe", "Cargo.toml")
    target = os.environ.get("PROBE_TARGET_DIR") or os.path.join(HERE, ".target")
    log("building the probe (bench/probe, release)")
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "--manifest-path", manifest],
        env={**os.environ, "CARGO_TARGET_DIR": target},
        check=True,
    )
    return os.path.join(target, "release", "ferry-bench-probe")


def s3s_binary():
    path = os.environ.get("S3S_FS_BIN")
    if path:
        return os.path.abspath(path)
    local = os.path.join(HERE, ".tools", "bin", "s3s-fs")
    if os.access(local, os.X_OK):
        return local
    found = shutil.which("s3s-fs")
    if found:
        return found
    raise BenchError("s3s-fs not found (bench/.tools/bin, PATH or S3S_FS_BIN): run bench/setup")


def need_tools():
    missing = [t for t in ("nginx", "wrk", "curl", "pdftotext") if not shutil.which(t)]
    if not os.access("/usr/bin/time", os.X_OK):
        missing.append("time (/usr/bin/time)")
    if missing:
        raise BenchError(
            "missing tools: " + ", ".join(missing) + " (bench/setup installs them)"
        )
    return {t: shutil.which(t) for t in ("nginx", "wrk", "curl", "pdftotext")}


def need_boto3():
    try:
        import boto3  # noqa: F401
    except ImportError:
        raise BenchError("the S3 workloads need boto3 (bench/setup installs it)") from None
