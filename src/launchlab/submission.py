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


# ---------------------------------------------------------------- chapter 3: the fused row kernel, the copy, cold L2
def module_define(built: BuiltModule, name: str, default: int) -> int:
    """The integer value of -D<name>=... among a module's compile options, else `default`."""
    for option in built.options:
        key, _, value = option[2:].partition("=") if option.startswith("-D") else ("", "", "")
        if key == name and value:
            return int(value)
    return default


def allow_dynamic_shared(kernel, nbytes: int) -> None:
    """Raise a kernel's dynamic shared-memory limit (needed above 48 KiB)."""
    attribute = getattr(cupy.cuda.driver, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8)
    cupy.cuda.driver.funcSetAttribute(kernel.kernel.ptr, attribute, int(nbytes))


class FusedRow:
    """The fused row kernel (kernels/fused_softmax.cu) on fixed buffers: one launch, one block per row.

    mode "rms" launches fused_rms_softmax, "plain" fused_softmax (rho = 1). The block size is
    the module's compile-time BLOCK; `shared_bytes` is the launch's dynamic shared memory,
    from which, with the row length, the kernel itself chooses where a row lives. `x` may be
    another path's input buffer, so that several variants read the same matrix."""

    KERNELS = {"rms": "fused_rms_softmax", "plain": "fused_softmax"}

    def __init__(self, built: BuiltModule, rows: int, cols: int, mode: str = "rms", shared_bytes: int = 0, x=None):
        if mode not in self.KERNELS:
            raise ValueError(f"mode {mode!r} is not one of {sorted(self.KERNELS)}")
        self.rows, self.cols, self.mode = rows, cols, mode
        self.block = module_define(built, "BLOCK", BLOCK)
        self.shared_bytes = int(shared_bytes)
        self.x = cupy.empty((rows, cols), dtype=cupy.float32) if x is None else x
        if self.x.shape != (rows, cols) or self.x.dtype != cupy.float32 or not self.x.flags.c_contiguous:
            raise ValueError(f"x must be a C-contiguous float32 {rows}x{cols} array")
        self.y = cupy.empty_like(self.x)
        if self.x.data.ptr % 16 or self.y.data.ptr % 16:
            raise ValueError("x and y must start on 16-byte boundaries (the kernel walks rows in aligned chunks)")
        self.kernel = built.kernel(self.KERNELS[mode])
        if self.shared_bytes > 48 * 1024:
            allow_dynamic_shared(self.kernel, self.shared_bytes)
        self.args = (self.x, self.y, np.int32(cols))
        self.launches = ((self.kernel, (rows,), (self.block,), self.args),)

    def invoke(self) -> None:
        self.kernel((self.rows,), (self.block,), self.args, shared_mem=self.shared_bytes)

    def poison(self) -> None:
        self.y.fill(np.nan)

    def compute(self, x: np.ndarray, invoke=None) -> np.ndarray:
        """Run once on `x` (validation, not timing) with `invoke` (default: the launch) and return y."""
        self.x.set(np.ascontiguousarray(x, dtype=np.float32))
        self.poison()
        (invoke or self.invoke)()
        cupy.cuda.get_current_stream().synchronize()
        return self.y.get()


class DeviceCopy:
    """The ceiling: cudaMemcpyAsync of x into a second buffer, device to device, on the current
    stream — the same bytes a fused kernel must move at least (read X once, write Y once)."""

    def __init__(self, x):
        self.x = x
        self.y = cupy.empty_like(x)
        self.nbytes = int(x.nbytes)
        self.stream_ptr = cupy.cuda.get_current_stream().ptr

    def invoke(self) -> None:
        cupy.cuda.runtime.memcpyAsync(self.y.data.ptr, self.x.data.ptr, self.nbytes,
                                      cupy.cuda.runtime.memcpyDeviceToDevice, self.stream_ptr)

    def poison(self) -> None:
        self.y.fill(np.nan)


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
