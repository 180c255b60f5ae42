"""Chapter 3's Nsight Compute child (`python -m launchlab.chapters.fusion.profile ROWS COLS PLAN_JSON cudnn|no-cudnn`):
once each on one matrix, a copy kernel, the four-kernel row path, the fused kernel the plan names (both modes) and,
where asked, cuDNN's softmax, with the empty kernel before each and after the last, so that gpu/ncu.py's markers
attribute the kernels between them. The copy is CuPy's elementwise copy kernel: the chapter's copy contender is
cudaMemcpyAsync, which is not a kernel and which Nsight Compute cannot profile."""
from __future__ import annotations

import json
import sys

PROFILED = ("copy", "row4", "fused_rms", "fused_plain", "cudnn")  # the order the child launches them in
CHILD = "launchlab.chapters.fusion.profile"


def child_arguments(rows: int, cols: int, plan: dict, cudnn: bool) -> list[str]:
    return [CHILD, str(rows), str(cols), json.dumps(plan, sort_keys=True), "cudnn" if cudnn else "no-cudnn"]


def dram_bytes(rows: int, cols: int, plan: dict, cudnn: bool = True, timeout_s: int = 240) -> dict:
    """ncu's CSV over this child at one shape (gpu/ncu.py's `profile`)."""
    from launchlab.gpu import ncu

    return ncu.profile(child_arguments(rows, cols, plan, cudnn), timeout_s=timeout_s)


def launch_each(rows: int, cols: int, plan: dict, cudnn: bool) -> None:
    """Under ncu: a marker, then each of PROFILED once, each followed by a marker; prints nothing."""
    import cupy

    from launchlab.chapters.fusion.run import make_fused
    from launchlab.gpu import baselines, build
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.ncu import MARKER
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
    for name in PROFILED:
        if name in launches:
            launches[name]()
        marker((1,), (1,), ())
    backend.synchronize()


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: python -m launchlab.chapters.fusion.profile ROWS COLS PLAN_JSON cudnn|no-cudnn")
    launch_each(int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4] == "cudnn")
