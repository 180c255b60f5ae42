"""Persistent pipelined clusters against the policy's pick (a development probe; kernels in tools/dev_pcluster.cu):
at each shape, device time per call warm (a CUDA graph of many calls) and cold (after an L2 flush) of the copy
ceiling, of the fused launch policy's pick (calibrate_fused.measure_shape, plain mode) and of every variant
(CLUSTER blocks a row, BLOCK threads, blocks an SM) whose two slices fit the shared memory. Every variant's output
is poisoned, computed and checked against the float64 oracle on a sample of rows (every element finite) before it
is timed, and again after.

    PYTHONPATH=src python tools/dev_pcluster.py --cubins DIR --pick-cubins DIR2 --shapes 47x126781,... --out f.json

DIR holds pcluster_c<CLUSTER>_b<BLOCK>.cubin (built with --build DIR here: nvcc -arch=sm_90), DIR2 the policy's
picks (calibrate_fused.py --build-cubins DIR2 --picks-only --shapes ...). The result committed as
evidence/development/pcluster_probe.json (16 shapes of the fusion chapter's plane, its worst bandwidth points and
three many-row points, two buffers a block) and evidence/development/pcluster_depth_probe.json (11 of them,
--depths 2,3,4) are what chapters/fusion/pipelined_probe.py reads for the fusion page.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

from dev_probe import SHARED_PER_BLOCK, SHARED_PER_SM, Launch, command_line  # noqa: E402

WIDTHS = (1, 2, 4, 8, 16)
BLOCKS = (256, 512, 1024)
DEPTHS = (2,)  # shared-memory buffers a block cycles through (--depths)
STATIC_SHARED = 1024 + 1024  # the hardware's reservation a block and the kernel's own (under 1 KiB)


def build(directory: Path, depths=DEPTHS) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        for block in BLOCKS:
            for depth in depths:
                out = directory / f"pcluster_c{width}_b{block}_d{depth}.cubin"
                subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", f"-DCLUSTER={width}", f"-DBLOCK={block}",
                                f"-DDEPTH={depth}", "-o", str(out), str(ROOT / "tools" / "dev_pcluster.cu")], check=True)
    print(f"{len(WIDTHS) * len(BLOCKS) * len(depths)} cubins in {directory}")


def variants(rows: int, cols: int, sms: int, depths=DEPTHS):
    """(width, block, depth, blocks an SM, clusters, stride chunks, shared bytes) of every variant that fits."""
    from launchlab.model.fused_cost import cluster_sms
    from launchlab.model.fused_policy import worst_chunks

    found = []
    for width in WIDTHS:
        stride = -(-worst_chunks(rows, cols) // width)
        for depth in depths:
            shared = depth * 16 * stride
            if shared > SHARED_PER_BLOCK:
                continue
            for block in BLOCKS:
                most = min(2048 // block, SHARED_PER_SM // (shared + STATIC_SHARED))
                for per_sm in sorted({1, most}):
                    if per_sm < 1 or per_sm > most:
                        continue
                    clusters = min(max(1, cluster_sms(width, sms) * per_sm // width), rows)
                    found.append((width, block, depth, per_sm, clusters, stride, shared))
    return found


def targets(cubins: Path, depths):
    """dev_probe.probe's targets_at for the persistent clusters: every variant that fits, its cubin loaded once."""
    import cupy
    import numpy as np

    from launchlab.gpu.targets import allow_dynamic_shared

    kernels = {}

    def targets_at(rows, cols, x, y, sms):
        for width, block, depth, per_sm, clusters, stride, shared in variants(rows, cols, sms, depths):
            key = (width, block, depth)
            if key not in kernels:
                module = cupy.RawModule(path=str(cubins / f"pcluster_c{width}_b{block}_d{depth}.cubin"))
                kernels[key] = module.get_function("pcluster_softmax")
                if width > 8:
                    attribute = getattr(cupy.cuda.driver, "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 14)
                    cupy.cuda.driver.funcSetAttribute(kernels[key].kernel.ptr, attribute, 1)
            kernel = kernels[key]
            allow_dynamic_shared(kernel, max(shared, 48 * 1024))
            args = (x, y, np.int32(rows), np.int32(cols), np.int32(stride))
            entry = {"cluster": width, "block": block, "depth": depth, "per_sm": per_sm, "clusters": clusters,
                     "shared": shared}
            yield entry, Launch(kernel, clusters * width, block, args, shared, y)

    return targets_at


def label(entry: dict) -> str:
    return f"c{entry['cluster']} b{entry['block']} x{entry['per_sm']} d{entry['depth']}"


def depths_of(args) -> tuple:
    return tuple(int(d) for d in args.depths.split(","))


def main() -> None:
    command_line(__doc__, lambda args: build(args.build, depths_of(args)),
                 lambda args: targets(args.cubins, depths_of(args)), label,
                 extra=lambda parser: parser.add_argument("--depths", default="2",
                                                          help="buffers a block cycles through, e.g. 2,3,4"))


if __name__ == "__main__":
    main()
