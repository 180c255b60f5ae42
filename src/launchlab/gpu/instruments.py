"""Instruments that are not kernels under study: the L2 flush and the GPU wait before a cold invocation
(kernels/instruments.cu).

Imports CuPy; only GPU mode reaches this module."""
from __future__ import annotations

import cupy
import numpy as np

from launchlab.gpu.backend import CupyBackend
from launchlab.gpu.build import BuiltModule


class ColdL2:
    """Before a cold invocation: read a buffer twice the L2 size (the L2 then holds only clean
    lines of it), then keep the GPU waiting `wait_ns` so that the host has enqueued the timed
    invocation before its start event runs. Uses fused_softmax.cu's two helper kernels."""

    def __init__(self, built: BuiltModule, l2_bytes: int, sm_count: int, wait_ns: int = 100_000):
        self.words = 2 * int(l2_bytes) // 16
        self.buffer = cupy.zeros(4 * self.words, dtype=cupy.float32)
        self.sink = cupy.zeros(1, dtype=cupy.float32)
        self.flush_kernel, self.wait_kernel = built.kernel("l2_flush_read"), built.kernel("gpu_wait")
        self.grid = (8 * int(sm_count),)
        self.wait_ns = int(wait_ns)

    def enqueue(self) -> None:
        self.flush_kernel(self.grid, (256,), (self.buffer, np.uint64(self.words), self.sink))
        self.wait_kernel((1,), (1,), (np.uint64(self.wait_ns),))


def time_cold(invoke, backend: CupyBackend, cold: ColdL2) -> tuple[float, int]:
    """One invocation after an L2 flush, bracketed by events: (event ms, host enqueue ns)."""
    backend.synchronize()
    cold.enqueue()
    first = backend.record_event()
    start = backend.host_ns()
    invoke()
    issued = backend.host_ns()
    last = backend.record_event()
    backend.wait_event(last)
    return backend.elapsed_ms(first, last), issued - start
