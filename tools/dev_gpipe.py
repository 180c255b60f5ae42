"""Pipelined split rows against the policy's pick (a development probe; kernels in tools/dev_gpipe.cu): at each
shape, device time per call warm and cold of the copy ceiling, of the fused launch policy's pick and of every
variant (BLOCK threads, DEPTH buffers, blocks an SM, pieces a row) whose buffers fit the shared memory and whose
grid the GPU holds at once (the occupancy API). Every output is checked against the float64 oracle before and after
it is timed (tools/dev_probe.py).

    PYTHONPATH=src python tools/dev_gpipe.py --build DIR
    PYTHONPATH=src python tools/dev_gpipe.py --cubins DIR --pick-cubins DIR2 [--shapes 47x126781,...] --out f.json

(default shapes: the floor probe's few long rows and MANY_ROWS)

DIR holds gpipe_b<BLOCK>_d<DEPTH>.cubin, DIR2 the policy's picks (calibrate_fused.py --build-cubins DIR2
--picks-only --shapes ...). Run tools/dev_pipeline_floor.py first: it says how close to the copy this schedule can
come with nothing reduced.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

from dev_pipeline_floor import SHAPES as FEW_ROWS  # noqa: E402
from dev_probe import SHARED_PER_BLOCK, SHARED_PER_SM, command_line, resident_launch  # noqa: E402

LAYOUTS = ((512, 1), (512, 2), (1024, 1))  # threads a block, blocks an SM
DEPTHS = (1, 2, 4)
PIECES = (1, 2, 4, 12, 24, 33, 66, 132, 264)  # pieces a row (those that divide the grid): grid / pieces rows a step
# Beside the floor probe's few long rows, shapes of hundreds to thousands of rows where one block per row (the row
# kernel) misses the copy by 10-35 % on the fusion plane: pieces of 1-4 blocks a row, walked with loads ahead.
MANY_ROWS = ((377, 17183), (842, 4722), (2833, 2330))
SHAPES = FEW_ROWS + MANY_ROWS
PIECE_BYTES = (4 << 10, 160 << 10)  # a piece smaller keeps too few loads in flight a step, one larger fits no buffers
STATIC_SHARED = 1024 + 384  # the hardware's reservation a block and the kernel's own


def build(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for block in sorted({block for block, _ in LAYOUTS}):
        for depth in DEPTHS:
            subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", f"-DBLOCK={block}", f"-DDEPTH={depth}",
                            "-o", str(directory / f"gpipe_b{block}_d{depth}.cubin"), str(ROOT / "tools" / "dev_gpipe.cu")],
                           check=True)
    print(f"{len({b for b, _ in LAYOUTS}) * len(DEPTHS)} cubins in {directory}")


def variants(rows: int, cols: int, sms: int):
    """(block, depth, blocks an SM, pieces a row, grid, stride chunks, shared bytes) of every variant whose DEPTH
    buffers fit `blocks an SM` blocks' shared memory. A grid step holds grid / pieces whole rows; more than one
    buffer only where a block has a later step to load ahead."""
    from launchlab.model.fused_policy import worst_chunks

    chunks = worst_chunks(rows, cols)
    found = []
    for block, per_sm in LAYOUTS:
        grid = per_sm * sms
        for pieces in PIECES:
            if grid % pieces or not PIECE_BYTES[0] <= 16 * chunks / pieces <= PIECE_BYTES[1]:
                continue
            per_step = grid // pieces
            if per_step > rows:
                continue  # a step would leave blocks without a row
            stride = -(-chunks // pieces)
            for depth in DEPTHS:
                shared = depth * 16 * stride
                if depth > 1 and rows <= per_step:
                    continue
                if shared > SHARED_PER_BLOCK or per_sm * (shared + STATIC_SHARED) > SHARED_PER_SM:
                    continue
                found.append((block, depth, per_sm, pieces, grid, stride, shared))
    return found


def targets(cubins: Path):
    """dev_probe.probe's targets_at: every variant whose grid is resident, its slots zeroed first."""
    import cupy
    import numpy as np

    from launchlab.gpu.targets import allow_dynamic_shared

    kernels = {}

    def targets_at(rows, cols, x, y, sms):
        for block, depth, per_sm, pieces, grid, stride, shared in variants(rows, cols, sms):
            key = (block, depth)
            if key not in kernels:
                module = cupy.RawModule(path=str(cubins / f"gpipe_b{block}_d{depth}.cubin"))
                kernels[key] = module.get_function("gpipe_softmax")
            kernel = kernels[key]
            allow_dynamic_shared(kernel, max(shared, 48 * 1024))
            entry = {"block": block, "depth": depth, "per_sm": per_sm, "pieces": pieces, "grid": grid,
                     "shared": shared}
            slots = cupy.zeros(4 * rows * pieces, dtype=cupy.uint64)  # epoch 0 everywhere (dev_gpipe.cu)
            args = (x, y, np.int32(rows), np.int32(cols), np.int32(pieces), np.int32(stride), slots)
            yield resident_launch(entry, kernel, grid, block, per_sm, shared, args, y)

    return targets_at


def label(entry: dict) -> str:
    return f"b{entry['block']} x{entry['per_sm']} d{entry['depth']} pieces {entry['pieces']}"


def main() -> None:
    command_line(__doc__, lambda args: build(args.build), lambda args: targets(args.cubins), label, SHAPES)


if __name__ == "__main__":
    main()
