"""The tiled path on the GPU: kernels A, B, C over packed rows (kernels/tiled_softmax.cu).

Imports CuPy; only GPU mode reaches this module. The persistent kernels of chapter 4
take the same buffers (`problem_args`)."""
from __future__ import annotations

import cupy
import numpy as np

from . import workloads
from .submission import BLOCK

STAGE_KERNELS = ("tile_producer", "row_combiner", "tile_consumer")


class TiledPath:
    """Buffers of one tiled case and the three launches (A: a block per tile, B: per row, C: per tile)."""

    KERNELS = STAGE_KERNELS

    def __init__(self, built, lengths):
        table = workloads.tile_table(lengths)
        self.lengths = np.asarray(lengths)
        self.row_offsets = table["row_offsets"]
        self.rows, self.tiles = len(self.lengths), len(table["tile_row"])
        self.table = {name: cupy.asarray(array) for name, array in table.items()}
        total = int(self.row_offsets[-1])
        self.x = cupy.empty(total, dtype=cupy.float32)
        self.y = cupy.empty_like(self.x)
        self.tile_stats = cupy.empty(3 * self.tiles, dtype=cupy.float32)
        self.row_stats = cupy.empty(3 * self.rows, dtype=cupy.float32)
        args = self.problem_args()
        producer, combiner, consumer = (built.kernel(name) for name in self.KERNELS)
        self.launches = ((producer, (self.tiles,), (BLOCK,), args),
                         (combiner, (self.rows,), (BLOCK,), args),
                         (consumer, (self.tiles,), (BLOCK,), args))

    def problem_args(self) -> tuple:
        """The TILED_PROBLEM_PARAMS of kernels/tiled.cuh, in order."""
        t = self.table
        return (self.x, self.y, t["row_offsets"], t["row_first_tile"], t["tile_row"], t["tile_start"],
                t["tile_len"], self.tile_stats, self.row_stats)

    def invoke(self) -> None:
        for kernel, grid, block, args in self.launches:
            kernel(grid, block, args)

    def poison(self) -> None:
        for array in (self.y, self.tile_stats, self.row_stats):
            array.fill(np.nan)

    def compute(self, values: np.ndarray, invoke=None) -> np.ndarray:
        """Run once on `values` (with `invoke`, e.g. a graph replay, or the stream launches) and return y."""
        self.x.set(np.ascontiguousarray(values, dtype=np.float32))  # the captured buffer: pointers stay fixed
        self.poison()
        (invoke or self.invoke)()
        cupy.cuda.get_current_stream().synchronize()
        return self.y.get()
