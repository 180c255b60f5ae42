"""Chapter 3's DRAM bytes per row, measured with Nsight Compute in a separate process.

`dram_bytes` (parent) runs ncu (gpu/ncu.py's metrics: DRAM bytes read and written, caches flushed before each
profiled kernel) over `python -m launchlab.chapters.fusion.profile ROWS COLS PLAN_JSON NAMES`, a small program
that makes the named rows on one matrix (their own `make`, the fused kernels from the shape's plan) and launches
each once, with the empty kernel (kernels/empty.cu) before the first and after each: the kernels between two
markers are one row's, whatever their names. The copy is CuPy's elementwise copy kernel: the chapter's copy
is cudaMemcpyAsync, which is not a kernel and which Nsight Compute cannot profile.

The run keeps ncu's CSV and, beside it, the order the rows were launched in (`order`), which the summary hands
to gpu/ncu.py's `dram_by_marker`.
"""
from __future__ import annotations

import json
import sys

from launchlab.gpu import ncu

MARKER = ncu.MARKER
# Runs made before the order was recorded launched these, cuDNN's place kept by its marker where it was absent.
ORDER_BEFORE_RECORDED = ("copy", "row4", "fused_rms", "fused_plain", "cudnn")


def child_arguments(rows: int, cols: int, plan: dict, names) -> list[str]:
    """What gpu/ncu.py's `profile` runs after `python -m`: this module at one shape, the rows by name."""
    return ["launchlab.chapters.fusion.profile", str(rows), str(cols), json.dumps(plan, sort_keys=True), ",".join(names)]


def dram_bytes(rows: int, cols: int, plan: dict, names, timeout_s: int = 240) -> dict:
    """{"command", "returncode", "csv", "error", "order"}: one call of each named row at a shape under ncu."""
    return {**ncu.profile(child_arguments(rows, cols, plan, names), timeout_s=timeout_s), "order": list(names)}


def launches(stream, rows: int, cols: int, plan: dict, names) -> dict:
    """{row: one call}: the rows made as the run makes them, on one matrix of normal values; the copy as CuPy's
    elementwise kernel (the float4 copy kernel is a row of its own)."""
    import cupy

    from launchlab.chapters import fusion
    from launchlab.chapters.fusion import copy_kernel
    from launchlab.chapters.fusion.targets import Context, Unavailable
    from launchlab.gpu import build

    case = f"{rows}x{cols}"
    modules = {"row_softmax": build.load_module("row_softmax"), plan["module"]: build.load_module(plan["family"], plan["defines"]),
               copy_kernel.MODULE: build.load_module(copy_kernel.FAMILY, copy_kernel.DEFINES)}
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
