"""DRAM bytes read and written per kernel, measured with Nsight Compute in a separate process.

`ncu_dram_bytes` (parent) runs `ncu --clock-control none --metrics dram__bytes_read.sum,
dram__bytes_write.sum` over `python -m launchlab.gpu.ncu target ...`, a small program that launches,
once each on one matrix, a copy kernel, the four-kernel row path, the fused kernel the plan names (both
modes) and, where asked, cuDNN's softmax, with the empty kernel (kernels/empty.cu) before each of them and
after the last: the kernels between two markers are one variant's, whatever their names. The copy is
CuPy's elementwise copy kernel: the chapter's copy contender is cudaMemcpyAsync, which is not a kernel and
which Nsight Compute cannot profile.
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
UNIT_BYTES = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "kibyte": 2**10, "mibyte": 2**20, "gibyte": 2**30}
MARKER = "empty_kernel"
VARIANTS = ("copy", "row4", "fused_rms", "fused_plain", "cudnn")  # the order the target launches them in


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda-*/bin/ncu"):
        matches = sorted(glob.glob(pattern))
        if matches:
            return matches[-1]
    return None


def ncu_command(ncu: str, log_file: str, rows: int, cols: int, plan: dict, cudnn: bool) -> list[str]:
    return [ncu, "--clock-control", "none", "--cache-control", "all", "--metrics", ",".join(METRICS),
            "--csv", "--print-units", "base", "--log-file", log_file, sys.executable, "-m", "launchlab.gpu.ncu",
            "target", str(rows), str(cols), json.dumps(plan, sort_keys=True), "cudnn" if cudnn else "no-cudnn"]


def ncu_dram_bytes(rows: int, cols: int, plan: dict, cudnn: bool = True, timeout_s: int = 240) -> dict:
    """{"command", "returncode", "csv", "error"}: ncu's CSV text, or why there is none."""
    ncu = find_ncu()
    if ncu is None:
        return {"command": None, "returncode": None, "csv": "", "error": "ncu (Nsight Compute) is not on this host"}
    with tempfile.TemporaryDirectory() as scratch:
        log_file = str(Path(scratch) / "ncu.csv")
        command = ncu_command(ncu, log_file, rows, cols, plan, cudnn)
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
    """{variant: {"read_bytes", "write_bytes", "kernels"}}: the kernels between the k-th and (k+1)-th marker
    belong to VARIANTS[k]; a variant without kernels there (not launched) is left out."""
    ordered = sorted(rows, key=lambda r: r["id"])
    marks = sorted({r["id"] for r in ordered if r["kernel"] == MARKER})
    result = {}
    for variant, start, end in zip(VARIANTS, marks, marks[1:]):
        picked = [r for r in ordered if start < r["id"] < end]
        if not picked:
            continue
        result[variant] = {
            "read_bytes": math.fsum(r["bytes"] for r in picked if r["metric"] == "dram__bytes_read.sum"),
            "write_bytes": math.fsum(r["bytes"] for r in picked if r["metric"] == "dram__bytes_write.sum"),
            "kernels": len({r["id"] for r in picked}),
        }
    return result


def _target(rows: int, cols: int, plan: dict, cudnn: bool) -> None:
    """Under ncu: a marker, then each variant of VARIANTS once, each followed by a marker; print nothing."""
    import cupy

    from launchlab.chapters.fusion.run import make_fused
    from launchlab.gpu import baselines, build
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.targets import RowPath

    backend = CupyBackend()
    marker = build.load_module("empty").kernel(MARKER)
    row_path = RowPath(build.load_module("row_softmax"), rows, cols)
    modules = {plan["module"]: build.load_module(plan["family"], plan["defines"])}
    row_path.x[...] = cupy.random.default_rng(1).standard_normal((rows, cols), dtype=cupy.float32)
    y = cupy.empty_like(row_path.x)
    copy = cupy.ElementwiseKernel("T x", "T y", "y = x", "copy_kernel")
    launches = {"copy": lambda: copy(row_path.x, y), "row4": row_path.invoke}
    for mode in ("rms", "plain"):
        launches[f"fused_{mode}"] = make_fused(modules, plan, rows, cols, mode, row_path.x).invoke
    if cudnn:
        target, _ = baselines.make_baseline("cudnn", row_path.x, backend.stream)
        if target is not None:
            launches["cudnn"] = target.invoke
    backend.synchronize()
    marker((1,), (1,), ())
    for variant in VARIANTS:
        if variant in launches:
            launches[variant]()
        marker((1,), (1,), ())
    backend.synchronize()


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "target":
        _target(int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]), sys.argv[5] == "cudnn")
    else:
        sys.exit("usage: python -m launchlab.gpu.ncu target ROWS COLS PLAN_JSON cudnn|no-cudnn")
