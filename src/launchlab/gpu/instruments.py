"""Instruments that are not kernels under study: the L2 flush and the GPU wait before a cold invocation
(kernels/instruments.cu). The cold timing itself is the protocol's (`measure.protocol.measure_cold`,
through `session.measure("cold", variants, flush=cold.flush)`).

Imports CuPy; only GPU mode reaches this module."""
from __future__ import annotations

import cupy
import numpy as np

from launchlab.gpu.build import BuiltModule
from launchlab.measure.protocol import FROZEN

KERNELS = ("l2_flush_read", "gpu_wait")
FLUSH_BLOCK = 256
FLUSH_BLOCKS_PER_SM = 8


class ColdL2:
    """`flush()` before a cold invocation: read a buffer twice the L2 size (the L2 then holds only
    clean lines of it), then keep the GPU waiting `wait_ns` so that the host has enqueued the timed
    invocation before its start event runs. Both kernels go on the current stream, never waited for."""

    def __init__(self, built: BuiltModule, l2_bytes: int, sm_count: int, wait_ns: int = FROZEN.cold_wait_ns):
        self.words = 2 * int(l2_bytes) // 16  # 16-byte words in twice the L2
        self.flush_bytes = 16 * self.words
        self.buffer = cupy.zeros(4 * self.words, dtype=cupy.float32)
        self.sink = cupy.zeros(1, dtype=cupy.float32)
        self.flush_kernel, self.wait_kernel = (built.kernel(name) for name in KERNELS)
        self.grid = (FLUSH_BLOCKS_PER_SM * int(sm_count),)
        self.wait_ns = int(wait_ns)

    def flush(self) -> None:
        self.flush_kernel(self.grid, (FLUSH_BLOCK,), (self.buffer, np.uint64(self.words), self.sink))
        self.wait_kernel((1,), (1,), (np.uint64(self.wait_ns),))

    def describe(self) -> dict:
        return {"flush": f"read of a buffer of 2 x L2 = {self.flush_bytes} bytes", "flush_bytes": self.flush_bytes,
                "wait_ns": self.wait_ns, "kernels": list(KERNELS)}
