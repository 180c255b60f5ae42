"""Chapter 3's DRAM bytes per row, measured with Nsight Compute in a separate process.

`dram_bytes` (parent) runs ncu (gpu/ncu.py's metrics: DRAM bytes read and written, caches flushed before each
profiled kernel) over `python -m launchlab.chapters.fusion.profile ROWS COLS PLAN_JSON NAMES`, a small program
that makes the named rows on one matrix (their own `make`, the fused kernels from the shape's plan) and launches
each once, with the empty kernel (kernels/empty.cu) before the first and after each: the kernels between two
markers are one row's, whatever their names. The copy is CuPy's elementwise copy kernel: the chapter's copy
is cudaMemcpyAsync, which is not a kernel and which Nsight Compute cannot profile.

The run keeps ncu's CSV and, beside it, the order the rows were launched in (`order`), which `attribute` reads.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from launchlab.gpu import ncu

MARKER = ncu.MARKER
# Runs made before the order was recorded launched these, cuDNN's place kept by its marker where it was absent.
ORDER_BEFORE_RECORDED = ("copy", "row4", "fused_rms", "fused_plain", "cudnn")


def child_argv(rows: int, cols: int, plan: dict, names) -> list[str]:
    return [sys.executable, "-m", "launchlab.chapters.fusion.profile", str(rows), str(cols),
            json.dumps(plan, sort_keys=True), ",".join(names)]


def run_under_ncu(argv: list[str], timeout_s: int = 240) -> dict:
    """{"command", "returncode", "csv", "error"}: ncu's CSV of DRAM bytes over the child `argv`, or why there is
    none. (The generic half of gpu/ncu.ncu_dram_bytes, for any child.)"""
    executable = ncu.find_ncu()
    if executable is None:
        return {"command": None, "returncode": None, "csv": "", "error": "ncu (Nsight Compute) is not on this host"}
    with tempfile.TemporaryDirectory() as scratch:
        log_file = str(Path(scratch) / "ncu.csv")
        command = [executable, "--clock-control", "none", "--cache-control", "all", "--metrics", ",".join(ncu.METRICS),
                   "--csv", "--print-units", "base", "--log-file", log_file, *argv]
        environment = dict(os.environ)
        source = str(Path(__file__).resolve().parents[3])
        environment["PYTHONPATH"] = source + os.pathsep + environment.get("PYTHONPATH", "")
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=environment)
        except subprocess.TimeoutExpired:
            return {"command": command, "returncode": None, "csv": "", "error": f"ncu did not finish in {timeout_s} s"}
        text = Path(log_file).read_text() if Path(log_file).exists() else ""
        text = text or done.stdout
    error = None
    if done.returncode != 0 or not ncu.parse_ncu_csv(text):
        tail = "\n".join((done.stderr + "\n" + text).strip().splitlines()[-12:])
        error = f"ncu exited with status {done.returncode} and no counter values: {tail}"
    return {"command": command, "returncode": done.returncode, "csv": text, "error": error}


def dram_bytes(rows: int, cols: int, plan: dict, names, timeout_s: int = 240) -> dict:
    """{"command", "returncode", "csv", "error", "order"}: one call of each named row at a shape under ncu."""
    return {**run_under_ncu(child_argv(rows, cols, plan, names), timeout_s), "order": list(names)}


def attribute(records: list[dict], order) -> dict:
    """{row: {"read_bytes", "write_bytes", "kernels"}} from parsed ncu records: the kernels between the k-th and
    (k+1)-th marker belong to order[k]; a row without kernels there (not launched) is left out."""
    ordered = sorted(records, key=lambda r: r["id"])
    marks = sorted({r["id"] for r in ordered if r["kernel"] == MARKER})
    result = {}
    for name, start, end in zip(order, marks, marks[1:]):
        picked = [r for r in ordered if start < r["id"] < end]
        if picked:
            result[name] = {
                "read_bytes": math.fsum(r["bytes"] for r in picked if r["metric"] == "dram__bytes_read.sum"),
                "write_bytes": math.fsum(r["bytes"] for r in picked if r["metric"] == "dram__bytes_write.sum"),
                "kernels": len({r["id"] for r in picked})}
    return result


def launches(stream, rows: int, cols: int, plan: dict, names) -> dict:
    """{row: one call}: the rows made as the run makes them, on one matrix of normal values; the copy as a kernel."""
    import cupy

    from launchlab.chapters import fusion
    from launchlab.chapters.fusion.targets import Context, Unavailable
    from launchlab.gpu import build

    case = f"{rows}x{cols}"
    modules = {"row_softmax": build.load_module("row_softmax"), plan["module"]: build.load_module(plan["family"], plan["defines"])}
    context = Context(stream, modules, {case: plan})
    x = context.input(case)
    x[...] = cupy.random.default_rng(1).standard_normal((rows, cols), dtype=cupy.float32)
    found = {}
    for name in names:
        if name == "copy":
            y, copy = cupy.empty_like(x), cupy.ElementwiseKernel("T x", "T y", "y = x", "copy_kernel")
            found[name] = lambda y=y: copy(x, y)
            continue
        try:
            found[name] = fusion.row(name).make(context, case).invoke
        except Unavailable:
            continue  # its marker still follows: the next row keeps its place
    return found


def child(rows: int, cols: int, plan: dict, names) -> None:
    """Under ncu: a marker, then each named row once, each followed by a marker; print nothing."""
    from launchlab.gpu import build
    from launchlab.gpu.backend import CupyBackend

    backend = CupyBackend()   # its stream, made current, is the one the run launches on
    marker = build.load_module("empty").kernel(MARKER)
    calls = launches(backend.stream, rows, cols, plan, names)
    backend.synchronize()
    marker((1,), (1,), ())
    for name in names:
        if name in calls:
            calls[name]()
        marker((1,), (1,), ())
    backend.synchronize()


if __name__ == "__main__":
    if len(sys.argv) == 5:
        child(int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3]), [n for n in sys.argv[4].split(",") if n])
    else:
        sys.exit("usage: python -m launchlab.chapters.fusion.profile ROWS COLS PLAN_JSON NAMES")
