"""DRAM bytes read and written per kernel, measured with Nsight Compute in a separate process.

`profile(child)` (parent) runs `ncu --clock-control none --cache-control all --metrics dram__bytes_read.sum,
dram__bytes_write.sum` over `python -m <child module> <arguments>`, a small program a chapter writes that launches
what it profiles once each. Where a chapter profiles several things in one child, it puts the empty kernel
(kernels/empty.cu, MARKER) before each of them and after the last: `dram_by_marker` gives the kernels between two
markers to one name, whatever their own names. It never runs inside a timed region, and what it returns is raw
text for the run to keep: ncu's CSV, or the error where counters cannot be read. `parse_ncu_csv` reads that text
on any machine. ncu's cache control flushes the caches before each profiled kernel, so the bytes are those of a
kernel that starts with a cold L2.
"""
from __future__ import annotations

import csv
import glob
import io
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
UNIT_BYTES = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "kibyte": 2**10, "mibyte": 2**20, "gibyte": 2**30}
MARKER = "empty_kernel"


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda-*/bin/ncu"):
        matches = sorted(glob.glob(pattern))
        if matches:
            return matches[-1]
    return None


def ncu_command(ncu: str, log_file: str, child: list[str], kernel_filter: str | None = None) -> list[str]:
    """ncu over `python -m <child...>` with the options and metrics every profile here uses."""
    command = [ncu, "--clock-control", "none", "--cache-control", "all", "--metrics", ",".join(METRICS)]
    if kernel_filter:
        command += ["--kernel-name", kernel_filter]
    return command + ["--csv", "--print-units", "base", "--log-file", log_file, sys.executable, "-m", *map(str, child)]


def profile(child: list[str], kernel_filter: str | None = None, timeout_s: int = 240) -> dict:
    """{"command", "returncode", "csv", "error"}: ncu's CSV text over the child module's run, or why there is none."""
    from launchlab.gpu.sanitizer import child_environment

    ncu = find_ncu()
    if ncu is None:
        return {"command": None, "returncode": None, "csv": "", "error": "ncu (Nsight Compute) is not on this host"}
    with tempfile.TemporaryDirectory() as scratch:
        log_file = str(Path(scratch) / "ncu.csv")
        command = ncu_command(ncu, log_file, child, kernel_filter)
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=child_environment())
        except subprocess.TimeoutExpired:
            return {"command": command, "returncode": None, "csv": "", "error": f"ncu did not finish in {timeout_s} s"}
        text = (Path(log_file).read_text() if Path(log_file).exists() else "") or done.stdout
    error = None
    if done.returncode != 0 or not parse_ncu_csv(text):
        tail = "\n".join((done.stderr + "\n" + text).strip().splitlines()[-12:])
        error = f"ncu exited with status {done.returncode} and no counter values: {tail}"
    return {"command": command, "returncode": done.returncode, "csv": text, "error": error}


def _number(value: str) -> float:
    return float(value.replace(",", ""))


def parse_ncu_csv(text: str) -> list[dict]:
    """[{"id", "kernel", "metric", "bytes"}] from ncu's --csv output (other lines ignored)."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if not lines:
        return []
    rows = []
    for record in csv.DictReader(io.StringIO("\n".join(lines))):
        metric = record.get("Metric Name")
        if metric not in METRICS:
            continue
        unit = (record.get("Metric Unit") or "byte").strip().lower()
        try:
            value = _number(record["Metric Value"]) * UNIT_BYTES.get(unit, float("nan"))
        except (KeyError, ValueError):
            continue
        name = record.get("Kernel Name", "")
        rows.append({"id": int(_number(record.get("ID", "0"))), "kernel": name.split("(")[0].strip(),
                     "metric": metric, "bytes": value})
    return rows


def dram_by_marker(rows: list[dict], names) -> dict:
    """{name: {"read_bytes", "write_bytes", "kernels"}}: the kernels between the k-th and (k+1)-th marker belong
    to names[k]; a name without kernels there (nothing launched) is left out."""
    ordered = sorted(rows, key=lambda r: r["id"])
    marks = sorted({r["id"] for r in ordered if r["kernel"] == MARKER})
    result = {}
    for name, start, end in zip(names, marks, marks[1:]):
        picked = [r for r in ordered if start < r["id"] < end]
        if not picked:
            continue
        result[name] = {
            "read_bytes": math.fsum(r["bytes"] for r in picked if r["metric"] == "dram__bytes_read.sum"),
            "write_bytes": math.fsum(r["bytes"] for r in picked if r["metric"] == "dram__bytes_write.sum"),
            "kernels": len({r["id"] for r in picked}),
        }
    return result
