"""DRAM bytes read and written per kernel, measured with Nsight Compute in a separate process.

`ncu_dram_bytes` (parent) runs `ncu --clock-control none --metrics dram__bytes_read.sum,
dram__bytes_write.sum` over `python -m launchlab.gpu.ncu target ...`, a small program that
launches the four-kernel row path and the fused kernel (both modes) once each on one matrix.
It never runs inside a timed region, and what it returns is raw text for the run to keep:
ncu's CSV, or the error where counters cannot be read. `parse_ncu_csv` reads that text on
any machine. ncu's default cache control flushes the caches before each profiled kernel, so
the bytes are those of a kernel that starts with a cold L2.
"""
from __future__ import annotations

import csv
import glob
import io
import json
import os
import math
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum")
KERNEL_FILTER = "regex:^(row_|fused_)"
UNIT_BYTES = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "kibyte": 2**10, "mibyte": 2**20, "gibyte": 2**30}
# Which launches of the target make up which variant (kernel names, in launch order).
VARIANT_KERNELS = {"row4": ("row_rms", "row_max", "row_exp_sum", "row_scale"),
                   "fused_rms": ("fused_rms_softmax",), "fused_plain": ("fused_softmax",)}


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda-*/bin/ncu"):
        matches = sorted(glob.glob(pattern))
        if matches:
            return matches[-1]
    return None


def ncu_command(ncu: str, log_file: str, rows: int, cols: int, config: dict) -> list[str]:
    return [ncu, "--clock-control", "none", "--cache-control", "all", "--metrics", ",".join(METRICS),
            "--kernel-name", KERNEL_FILTER, "--csv", "--print-units", "base", "--log-file", log_file,
            sys.executable, "-m", "launchlab.gpu.ncu", "target", str(rows), str(cols), json.dumps(config, sort_keys=True)]


def ncu_dram_bytes(rows: int, cols: int, config: dict, timeout_s: int = 240) -> dict:
    """{"command", "returncode", "csv", "error"}: ncu's CSV text, or why there is none."""
    ncu = find_ncu()
    if ncu is None:
        return {"command": None, "returncode": None, "csv": "", "error": "ncu (Nsight Compute) is not on this host"}
    with tempfile.TemporaryDirectory() as scratch:
        log_file = str(Path(scratch) / "ncu.csv")
        command = ncu_command(ncu, log_file, rows, cols, config)
        environment = dict(os.environ)
        source = str(Path(__file__).resolve().parents[2])
        environment["PYTHONPATH"] = source + os.pathsep + environment.get("PYTHONPATH", "")
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=environment)
        except subprocess.TimeoutExpired:
            return {"command": command, "returncode": None, "csv": "", "error": f"ncu did not finish in {timeout_s} s"}
        text = Path(log_file).read_text() if Path(log_file).exists() else ""
        text = text or done.stdout
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


def dram_by_variant(rows: list[dict]) -> dict:
    """{variant: {"read_bytes", "write_bytes", "kernels"}} summed over each variant's kernels."""
    result = {}
    for variant, kernels in VARIANT_KERNELS.items():
        picked = [r for r in rows if r["kernel"] in kernels]
        if {r["kernel"] for r in picked} != set(kernels):
            continue
        result[variant] = {
            "read_bytes": math.fsum(r["bytes"] for r in picked if r["metric"] == "dram__bytes_read.sum"),
            "write_bytes": math.fsum(r["bytes"] for r in picked if r["metric"] == "dram__bytes_write.sum"),
            "kernels": len({r["id"] for r in picked}),
        }
    return result


def _target(rows: int, cols: int, config: dict) -> None:
    """Launch the row path and both fused modes once each (under ncu); print nothing."""
    import cupy

    from launchlab.gpu import build
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.targets import FusedRow, RowPath

    CupyBackend()
    row_path = RowPath(build.load_module("row_softmax"), rows, cols)
    fused_module = build.load_module("fused_softmax", config["defines"])
    row_path.x[...] = cupy.random.default_rng(1).standard_normal((rows, cols), dtype=cupy.float32)
    cupy.cuda.get_current_stream().synchronize()
    row_path.invoke()
    for mode in ("rms", "plain"):
        FusedRow(fused_module, rows, cols, mode, config["shared_bytes"], x=row_path.x).invoke()
    cupy.cuda.get_current_stream().synchronize()


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "target":
        _target(int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]))
    else:
        sys.exit("usage: python -m launchlab.gpu.ncu target ROWS COLS CONFIG_JSON")
