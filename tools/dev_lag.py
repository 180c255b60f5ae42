"""Lagged split rows against the policy's pick (a development probe; kernels in tools/dev_lag.cu): at each shape,
device time per call warm and cold of the copy ceiling, of the fused launch policy's pick and of every variant
(BLOCK threads and the blocks an SM they allow, pieces a row, lag) whose grid the GPU holds at once (the occupancy
API) and whose lagged pieces fit the L2 budget. A block reads a piece for its statistics at one grid step and writes
its y `lag` steps later, reading x again; lag 0 is the split design streaming both reads, and a lag of every step
reads all of a block's pieces before it writes any. Every output is checked against the float64 oracle before and
after it is timed (tools/dev_probe.py).

    PYTHONPATH=src python tools/dev_lag.py --build DIR
    PYTHONPATH=src python tools/dev_lag.py --cubins DIR --pick-cubins DIR2 [--shapes 47x126781,...] --out f.json

(default shapes: tools/dev_gpipe.py's, the fusion plane's worst bandwidth points and three of many rows, then the
plane's floor class, whose rows only an exchange between blocks can serve)

DIR holds lag_b<BLOCK>.cubin, DIR2 the policy's picks (calibrate_fused.py --build-cubins DIR2 --picks-only
--shapes ...).
"""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

from dev_gpipe import PIECES, SHAPES as GPIPE_SHAPES  # noqa: E402
from dev_probe import command_line, resident_launch  # noqa: E402

LAYOUTS = ((256, 4), (512, 2), (1024, 1))  # threads a block, blocks an SM: 1024 threads an SM, 64 KiB of loads in flight
UNROLL = 4
PIECE_TARGETS = (32 << 10, 128 << 10)  # per layout, the pieces a row whose size comes nearest each of these
PIECE_BYTES = (4 << 10, 4 << 20)      # and only pieces of these sizes
# The fusion plane's floor class: one or two rows of 5-7 MiB, and rows fewer than SMs holding more than the
# registers and shared memory: the L2 is the only on-chip store that holds a lag of them.
FLOOR_SHAPES = ((1, 1339742), (2, 1726970), (24, 751971), (31, 1169496))
SHAPES = GPIPE_SHAPES + FLOOR_SHAPES
L2_BUDGET = 32 << 20                   # lag x grid x piece bytes at most: x read again must still be in the 60 MiB L2
LAGS = (0, 1, 2)                       # beside a lag of every step, where it fits the budget


def build(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for block, _ in LAYOUTS:
        subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", f"-DBLOCK={block}", f"-DUNROLL={UNROLL}",
                        "-o", str(directory / f"lag_b{block}.cubin"), str(ROOT / "tools" / "dev_lag.cu")], check=True)
    print(f"{len(LAYOUTS)} cubins in {directory}")


def variants(rows: int, cols: int, sms: int) -> list[tuple]:
    """(block, blocks an SM, pieces a row, grid, lag, lagged bytes) of every variant: per layout the pieces nearest
    each of PIECE_TARGETS, a step of at most `rows` rows, and lags 0, 1 and every step (the last two where
    lag x grid x piece bytes fits L2_BUDGET)."""
    from launchlab.model.fused_policy import worst_chunks

    chunks = worst_chunks(rows, cols)
    found = []
    for block, per_sm in LAYOUTS:
        grid = per_sm * sms
        sizes = {pieces: 16 * math.ceil(chunks / pieces) for pieces in PIECES
                 if grid % pieces == 0 and grid // pieces <= rows
                 and PIECE_BYTES[0] <= 16 * math.ceil(chunks / pieces) <= PIECE_BYTES[1]}
        chosen = sorted({min(sizes, key=lambda p: abs(math.log(sizes[p] / target))) for target in PIECE_TARGETS}
                        if sizes else set())
        for pieces in chosen:
            steps = math.ceil(rows * pieces / grid)
            for lag in sorted(set(LAGS) | {steps}):
                if lag > steps:
                    continue
                lagged = lag * grid * sizes[pieces]
                if lag and lagged > L2_BUDGET:
                    continue
                found.append((block, per_sm, pieces, grid, lag, lagged))
    return found


def targets(cubins: Path):
    """dev_probe.probe's targets_at: every variant whose grid is resident, its slots zeroed first."""
    import cupy
    import numpy as np

    kernels = {}

    def targets_at(rows, cols, x, y, sms):
        for block, per_sm, pieces, grid, lag, lagged in variants(rows, cols, sms):
            if block not in kernels:
                kernels[block] = cupy.RawModule(path=str(cubins / f"lag_b{block}.cubin")).get_function("lag_softmax")
            kernel = kernels[block]
            entry = {"block": block, "per_sm": per_sm, "pieces": pieces, "grid": grid, "lag": lag,
                     "lagged_bytes": lagged}
            slots = cupy.zeros(4 * rows * pieces, dtype=cupy.uint64)  # epoch 0 everywhere (dev_lag.cu)
            args = (x, y, np.int32(rows), np.int32(cols), np.int32(pieces), np.int32(lag), slots)
            yield resident_launch(entry, kernel, grid, block, per_sm, 0, args, y)

    return targets_at


def label(entry: dict) -> str:
    return f"b{entry['block']} x{entry['per_sm']} pieces {entry['pieces']} lag {entry['lag']}"


def main() -> None:
    command_line(__doc__, lambda args: build(args.build), lambda args: targets(args.cubins), label, SHAPES)


if __name__ == "__main__":
    main()
