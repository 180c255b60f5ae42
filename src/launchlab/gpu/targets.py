"""The things a chapter launches and validates, on fixed buffers: the row path, the fused row kernel,
the device copy and the tiled path.

Imports CuPy; only GPU mode reaches this module."""
from __future__ import annotations

import cupy
import numpy as np

from launchlab.gpu.build import BuiltModule
from launchlab.model import workloads
from launchlab.model.workloads import STAGE_KERNELS

BLOCK = 256


class Target:
    """A thing we launch and validate, on buffers allocated once (graphs capture their pointers).

    A subclass sets `name` (the VariantId target), `launches` (the (kernel, grid, block, args) records
    one invocation makes, where it makes kernel launches) and implements `invoke` (enqueue one
    invocation on the current stream, never wait), `poison` (NaN or a sentinel in every output and
    intermediate, so an unwritten element fails validation), `load` (copy a fixture into the input
    buffers) and `output` (read the result back)."""

    name = "target"
    launches: tuple = ()

    @property
    def submissions(self) -> int:
        """Host submissions per invocation (kernel launches, copies, memsets)."""
        return max(1, len(self.launches))

    def invoke(self) -> None:
        raise NotImplementedError

    def native_launches(self) -> list[tuple[int, int, int, tuple]]:
        """(CUfunction, grid, block, args) for the native launch loop."""
        return [(kernel.kernel.ptr, grid[0], block[0], args) for kernel, grid, block, args in self.launches]

    def poison(self) -> None:
        raise NotImplementedError

    def load(self, x: np.ndarray) -> None:
        raise NotImplementedError

    def output(self) -> np.ndarray:
        raise NotImplementedError

    def compute(self, x: np.ndarray, invoke=None) -> np.ndarray:
        """Run once on `x` (validation, never timing) with `invoke` (default: this target's own
        submission; a graph replay reads the same buffers) and return the output."""
        self.load(x)
        self.poison()
        (invoke or self.invoke)()
        cupy.cuda.get_current_stream().synchronize()
        return self.output()


class Wrapped(Target):
    """Another target's work submitted another way (replay of a captured graph, several calls in a row), on
    that target's buffers: loading, poisoning and reading back are the wrapped target's own."""

    def __init__(self, target):
        self.target, self.name = target, target.name

    def poison(self) -> None:
        self.target.poison()

    def load(self, x) -> None:
        self.target.load(x)

    def output(self):
        return self.target.output()

    def device_output(self):
        return self.target.device_output()

    def compute(self, x, invoke=None):
        return self.target.compute(x, invoke or self.invoke)


class Repeated(Wrapped):
    """`calls` back-to-back calls of a target as ONE invocation, on the target's buffers: what a graph of
    many calls captures. Each call reads x and rewrites y whole, so the output is that of one call."""

    def __init__(self, target, calls: int):
        super().__init__(target)
        self.calls = int(calls)

    def invoke(self) -> None:
        for _ in range(self.calls):
            self.target.invoke()


class EmptyKernel(Target):
    """One launch of a kernel that does nothing: what a launch costs with no work behind it. It has no output."""

    name = "empty"

    def __init__(self, built: BuiltModule):
        self.launches = ((built.kernel("empty_kernel"), (1,), (1,), ()),)

    def invoke(self) -> None:
        enqueue_launches(self.launches)


def enqueue_launches(launches) -> None:
    for kernel, grid, block, args in launches:
        kernel(grid, block, args)


class ArrayTarget(Target):
    """A target that reads the float32 array `self.x` (a matrix, or packed rows) and writes `self.y` of the same
    shape. Its `poison` covers y alone; a target with intermediates poisons them too."""

    def poison(self) -> None:
        self.y.fill(np.nan)

    def load(self, x) -> None:
        """A fixture into x: a NumPy array (copied from the host) or a CuPy array (copied on the device)."""
        if isinstance(x, cupy.ndarray):
            if x.shape != self.x.shape or x.dtype != self.x.dtype:
                raise ValueError(f"fixture {x.dtype}{x.shape} does not match x {self.x.dtype}{self.x.shape}")
            self.x[...] = x
        else:
            self.x.set(np.ascontiguousarray(x, dtype=np.float32))

    def output(self) -> np.ndarray:
        return self.y.get()

    def device_output(self):
        """y itself, on the device (valid until the next invocation)."""
        return self.y


class RowPath(ArrayTarget):
    """The four-kernel row path on fixed buffers: K1 rho, K2 m, K3 e and z, K4 y.

    Each launch is (kernel, grid, block, args); `invoke` enqueues the four on the
    current stream and returns without waiting. `x`, where given, is an input matrix shared with other
    targets (rows x cols float32); else the path allocates its own.
    """

    name = "row4"
    KERNELS = ("row_rms", "row_max", "row_exp_sum", "row_scale")

    def __init__(self, built: BuiltModule, rows: int, cols: int, x=None):
        self.rows, self.cols = rows, cols
        self.x = cupy.empty((rows, cols), dtype=cupy.float32) if x is None else x
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
        enqueue_launches(self.launches)

    def poison(self) -> None:
        for array in (self.e, self.y, self.rho, self.m, self.z):
            array.fill(np.nan)


# ---------------------------------------------------------------- chapter 3: the fused row kernel, the copy, cold L2
def module_define(built: BuiltModule, name: str, default: int) -> int:
    """The integer value of -D<name>=... among a module's compile options, else `default`."""
    for option in built.options:
        key, _, value = option[2:].partition("=") if option.startswith("-D") else ("", "", "")
        if key == name and value:
            return int(value)
    return default


def resident_blocks_per_sm(kernel, block: int = BLOCK, shared_bytes: int = 0) -> int:
    """Blocks of `kernel` (a RawKernel) that one SM holds at once, from CUDA's occupancy API."""
    return int(cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, block, shared_bytes))


def allow_dynamic_shared(kernel, nbytes: int) -> None:
    """Raise a kernel's dynamic shared-memory limit (needed above 48 KiB), never lower it: targets of several
    shapes share one kernel function, and a later target with a smaller slice must not make an earlier target's
    launch invalid (the driver refuses a launch above the limit)."""
    if int(nbytes) <= int(kernel.attributes["max_dynamic_shared_size_bytes"]):
        return
    attribute = getattr(cupy.cuda.driver, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8)
    cupy.cuda.driver.funcSetAttribute(kernel.kernel.ptr, attribute, int(nbytes))


class FusedRow(ArrayTarget):
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
        self.name = f"fused_{mode}"
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


class RegistersRow(FusedRow):
    """The row kernel's registers tier alone (kernels/fused_row_registers.cu): as FusedRow, for rows that the
    module's REG_CHUNKS chunks a thread hold; a longer row is refused (the kernel would leave it partly unwritten)."""

    KERNELS = {"rms": "registers_rms_softmax", "plain": "registers_softmax"}

    def __init__(self, built: BuiltModule, rows: int, cols: int, mode: str = "rms", shared_bytes: int = 0, x=None):
        from launchlab.model.fused_policy import worst_chunks

        capacity = module_define(built, "REG_CHUNKS", 4) * module_define(built, "BLOCK", BLOCK)
        if worst_chunks(rows, cols) > capacity:
            raise ValueError(f"a row of {cols} floats ({worst_chunks(rows, cols)} chunks) does not fit the "
                             f"registers-only build's {capacity} chunks")
        super().__init__(built, rows, cols, mode, shared_bytes, x)


class DeviceCopy(ArrayTarget):
    """The ceiling: cudaMemcpyAsync of x into a second buffer, device to device, on the current
    stream — the same bytes a fused kernel must move at least (read X once, write Y once)."""

    name = "copy"

    def __init__(self, x):
        self.x = x
        self.y = cupy.empty_like(x)
        self.nbytes = int(x.nbytes)
        self.stream_ptr = cupy.cuda.get_current_stream().ptr

    def invoke(self) -> None:
        cupy.cuda.runtime.memcpyAsync(self.y.data.ptr, self.x.data.ptr, self.nbytes,
                                      cupy.cuda.runtime.memcpyDeviceToDevice, self.stream_ptr)


class TiledPath(ArrayTarget):
    """Buffers of one tiled case and the three launches (A: a block per tile, B: per row, C: per tile)."""

    name = "tiled3"
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
        enqueue_launches(self.launches)

    def poison(self) -> None:
        for array in (self.y, self.tile_stats, self.row_stats):
            array.fill(np.nan)

