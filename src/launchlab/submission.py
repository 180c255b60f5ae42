"""Putting work on the GPU from Python: the stream, events, and the row path's launches.

Imports CuPy; only GPU mode reaches this module.
"""
from __future__ import annotations

import time

import cupy
import numpy as np

from .build import BuiltModule

BLOCK = 256


class CupyBackend:
    """The protocol's TimingBackend over one non-blocking CuPy stream made current."""

    def __init__(self):
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.stream.use()

    def host_ns(self) -> int:
        return time.perf_counter_ns()

    def synchronize(self) -> None:
        self.stream.synchronize()

    def record_event(self):
        event = cupy.cuda.Event()
        event.record(self.stream)
        return event

    def wait_event(self, event) -> None:
        event.synchronize()

    def elapsed_ms(self, start, end) -> float:
        return float(cupy.cuda.get_elapsed_time(start, end))


class RowPath:
    """The four-kernel row path on fixed buffers: K1 rho, K2 m, K3 e and z, K4 y.

    Each launch is (kernel, grid, block, args); `invoke` enqueues the four on the
    current stream and returns without waiting.
    """

    KERNELS = ("row_rms", "row_max", "row_exp_sum", "row_scale")

    def __init__(self, built: BuiltModule, rows: int, cols: int):
        self.rows, self.cols = rows, cols
        self.x = cupy.empty((rows, cols), dtype=cupy.float32)
        self.e = cupy.empty_like(self.x)
        self.y = cupy.empty_like(self.x)
        self.rho, self.m, self.z = (cupy.empty(rows, dtype=cupy.float32) for _ in range(3))
        width = np.int32(cols)
        rms, maximum, exp_sum, scale = (built.kernel(name) for name in self.KERNELS)
        grid, block = (rows,), (BLOCK,)
        self.launches = (
            (rms, grid, block, (self.x, self.rho, width)),
            (maximum, grid, block, (self.x, self.m, width)),
            (exp_sum, grid, block, (self.x, self.m, self.e, self.z, width)),
            (scale, grid, block, (self.e, self.rho, self.z, self.y, width)),
        )

    def invoke(self) -> None:
        for kernel, grid, block, args in self.launches:
            kernel(grid, block, args)

    def poison(self) -> None:
        """NaN in every output and intermediate, so an unwritten element fails validation."""
        for array in (self.e, self.y, self.rho, self.m, self.z):
            array.fill(np.nan)

    def compute(self, x: np.ndarray, invoke=None) -> np.ndarray:
        """Run once on `x` (validation, not timing) with `invoke` (default: the stream launches; a graph
        replay reads the same buffers) and return y."""
        self.x.set(np.ascontiguousarray(x, dtype=np.float32))
        self.poison()
        (invoke or self.invoke)()
        cupy.cuda.get_current_stream().synchronize()
        return self.y.get()

    def native_launches(self) -> list[tuple[int, int, int, tuple]]:
        """(CUfunction, grid, block, args) for the native launch loop."""
        return [(kernel.kernel.ptr, grid[0], block[0], args) for kernel, grid, block, args in self.launches]
