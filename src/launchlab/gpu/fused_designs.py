"""Fused softmax designs by row length (kernels/softmax_designs.cu): targets and the launch policy.

Three designs, each one launch that reads x once and writes y once (the split design's streamed
case reads x twice):
  * `NarrowRows`: part of a warp per row (lanes per row chosen at launch), several rows per block,
    the row in registers, the grid sized to the GPU;
  * `ClusterRow`: a thread-block cluster per row, each block's slice in registers or shared memory,
    the partial statistics combined through distributed shared memory;
  * `SplitRow`: a row split over many resident blocks, each block's piece on chip where it fits, the
    partial statistics exchanged as epoch-stamped words in global memory (one round trip).

Every target takes `(built, rows, cols, mode="rms"|"plain", x=None)`; `x` may be another
variant's input buffer. The module's compile-time defines (`design_defines`) fix the block size,
chunks per lane, cluster width and unrolling; the target derives its grid, lanes and shared memory.

The launch policy and the configurations live in launchlab.model.fused_policy (no CuPy there).
"""
from __future__ import annotations

import cupy
import numpy as np

from launchlab.gpu import device
from launchlab.gpu.build import BuiltModule
from launchlab.gpu.targets import ArrayTarget, allow_dynamic_shared, module_define, resident_blocks_per_sm
from launchlab.model.fused_policy import (KERNELS, MODES, PORTABLE_CLUSTER, SLOT_WORDS, SPLIT_COOPERATIVE, SPLIT_REGS,
                                          narrow_lanes, split_blocks_per_sm, split_pieces, split_slice_bytes,
                                          worst_chunks)

# ---------------------------------------------------------------- targets (GPU)
class _DesignTarget(ArrayTarget):
    """What the three designs share: the mode, the x and y buffers, the kernel of the mode."""

    design = ""

    def __init__(self, built: BuiltModule, rows: int, cols: int, mode: str, x):
        if mode not in MODES:
            raise ValueError(f"mode {mode!r} is not one of {list(MODES)}")
        if rows <= 0 or cols <= 0:
            raise ValueError(f"shape {rows}x{cols} is empty")
        if rows >= 2**31 or cols >= 2**31 - 8:
            raise ValueError("the kernels take rows and cols as int and index chunks within a row with int")
        self.rows, self.cols, self.mode = rows, cols, mode
        self.name = f"{self.design}_{mode}"
        self.block = module_define(built, "BLOCK", 256)
        self.x = cupy.empty((rows, cols), dtype=cupy.float32) if x is None else x
        if self.x.shape != (rows, cols) or self.x.dtype != cupy.float32 or not self.x.flags.c_contiguous:
            raise ValueError(f"x must be a C-contiguous float32 {rows}x{cols} array")
        self.y = cupy.empty_like(self.x)
        if self.x.data.ptr % 16 or self.y.data.ptr % 16:
            raise ValueError("x and y must start on 16-byte boundaries (the kernels walk rows in aligned chunks)")
        self.kernel = built.kernel(KERNELS[self.design][mode])
        self.shared_bytes = 0

    def invoke(self) -> None:
        (kernel, grid, block, args), = self.launches
        kernel(grid, block, args, shared_mem=self.shared_bytes)

    def describe(self) -> dict:
        """The launch as recorded beside a measurement: grid, block, shared bytes and the design's own."""
        (_, grid, block, _), = self.launches
        return {"design": self.design, "grid": grid[0], "block": block[0], "shared_bytes": self.shared_bytes}


class NarrowRows(_DesignTarget):
    """narrow_*: `lanes` lanes per row (a launch argument: by default the fewest that hold the row at the
    module's ROW_CHUNKS chunks a lane), BLOCK / lanes rows per block, the row in registers; the grid is the blocks
    the rows need, at most SMs x resident blocks per SM (the warps stride over the rest). A scalar build (SCALAR=1)
    holds ROW_CHUNKS floats a lane, and its grid is every block the rows need (each warp takes one group of rows)."""

    design = "narrow"

    def __init__(self, built: BuiltModule, rows: int, cols: int, mode: str = "rms", x=None, lanes: int | None = None):
        super().__init__(built, rows, cols, mode, x)
        self.row_chunks = module_define(built, "ROW_CHUNKS", 4)
        self.scalar = bool(module_define(built, "SCALAR", 0))
        self.lanes = int(lanes) if lanes else narrow_lanes(rows, cols, self.row_chunks, self.scalar)
        if self.lanes not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"lanes per row must be a power of two up to 32, not {self.lanes}")
        units, what = (cols, "floats") if self.scalar else (worst_chunks(rows, cols), "chunks")
        if units > self.lanes * self.row_chunks:
            raise ValueError(f"a row of {cols} floats needs {units} {what}; the module holds "
                             f"{self.lanes} lanes x {self.row_chunks}")
        rows_per_block = max(1, self.block // self.lanes)
        self.resident_per_sm = resident_blocks_per_sm(self.kernel, self.block, 0)
        grid = -(-rows // rows_per_block)
        if not self.scalar:
            grid = min(grid, self.resident_per_sm * device.sm_count())
        self.launches = ((self.kernel, (grid,), (self.block,),
                          (self.x, self.y, np.int32(rows), np.int32(cols), np.int32(self.lanes))),)

    def describe(self) -> dict:
        return super().describe() | {"lanes": self.lanes, "row_chunks": self.row_chunks, "scalar": self.scalar,
                                     "resident_per_sm": self.resident_per_sm}


class ClusterRow(_DesignTarget):
    """cluster_*: a cluster of CLUSTER blocks per row (grid = rows x CLUSTER), each block's slice of
    ceil(chunks / CLUSTER) chunks in registers where SLICE_REGS chunks per thread hold it (the kernel decides the
    same way), else in dynamic shared memory."""

    design = "cluster"

    def __init__(self, built: BuiltModule, rows: int, cols: int, mode: str = "rms", x=None):
        super().__init__(built, rows, cols, mode, x)
        self.cluster = module_define(built, "CLUSTER", 8)
        self.slice_regs = module_define(built, "SLICE_REGS", 0)
        slice_chunks = -(-worst_chunks(rows, cols) // self.cluster)
        self.in_registers = slice_chunks <= self.slice_regs * self.block
        self.shared_bytes = 0 if self.in_registers else 16 * slice_chunks
        if self.shared_bytes > device.shared_limit():
            raise ValueError(f"a slice of {self.shared_bytes} bytes exceeds the {device.shared_limit()} a block may have")
        if self.shared_bytes > 48 * 1024:
            allow_dynamic_shared(self.kernel, self.shared_bytes)
        if self.cluster > PORTABLE_CLUSTER:
            attribute = getattr(cupy.cuda.driver, "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 14)
            cupy.cuda.driver.funcSetAttribute(self.kernel.kernel.ptr, attribute, 1)
        self.launches = ((self.kernel, (rows * self.cluster,), (self.block,), (self.x, self.y, np.int32(cols))),)

    def describe(self) -> dict:
        return super().describe() | {"cluster": self.cluster, "slice_regs": self.slice_regs,
                                     "in_registers": self.in_registers}


class SplitRow(_DesignTarget):
    """split_*: rows x pieces pieces over a grid of pieces x min(rows, capacity // pieces) blocks (capacity = SMs x
    resident blocks per SM from the occupancy API, at most `blocks_per_sm`, by default 1024 threads' worth), so
    that every block is resident at once. A piece keeps its first SPLIT_REGS x BLOCK chunks in registers and the
    next ones in dynamic shared memory (up to `slice_bytes`, by default fused_policy.split_slice_bytes); the rest is
    streamed (x read twice). Pieces per row: fused_policy.split_pieces.

    `slots` (SLOT_WORDS epoch-stamped words per piece, kernels/grid_flags.cuh) start at zero and every invocation
    leaves them consistent: never poisoned. `cooperative` launches the grid cooperatively (the driver then
    refuses a grid that cannot be resident); without it the occupancy check here is what guarantees it, and a
    block whose row's pieces never arrive traps after two seconds rather than hang."""

    design = "split"

    def __init__(self, built: BuiltModule, rows: int, cols: int, mode: str = "rms", x=None,
                 blocks_per_sm: int | None = None, pieces: int | None = None, slice_bytes: int | None = None,
                 cooperative: bool = SPLIT_COOPERATIVE):
        super().__init__(built, rows, cols, mode, x)
        self.split_regs = module_define(built, "SPLIT_REGS", SPLIT_REGS)
        blocks_per_sm = split_blocks_per_sm(self.block) if blocks_per_sm is None else int(blocks_per_sm)
        slice_bytes = split_slice_bytes(self.block) if slice_bytes is None else int(slice_bytes)
        budget = min(slice_bytes, device.shared_limit())
        if budget > 48 * 1024:
            allow_dynamic_shared(self.kernel, budget)
        self.resident_per_sm = resident_blocks_per_sm(self.kernel, self.block, budget)
        if self.resident_per_sm < 1:
            raise ValueError(f"no block of {self.block} threads with {budget} shared bytes fits an SM")
        self.capacity = min(self.resident_per_sm, blocks_per_sm) * device.sm_count()
        chunks = worst_chunks(rows, cols)
        on_chip = self.split_regs * self.block + budget // 16
        self.pieces = int(pieces) if pieces else split_pieces(rows, self.capacity, chunks, on_chip, device.sm_count())
        if not 1 <= self.pieces <= self.capacity:
            raise ValueError(f"{self.pieces} pieces per row cannot all be resident ({self.capacity} blocks)")
        grid = self.pieces * min(rows, self.capacity // self.pieces)
        per_piece = -(-chunks // self.pieces)
        self.kept_on_chip = per_piece <= on_chip  # x read once; else the rest of a piece is streamed (read twice)
        self.shared_bytes = min(budget, 16 * max(0, per_piece - self.split_regs * self.block))  # within the limit set
        self.cooperative = bool(cooperative)
        self.slots = cupy.zeros(SLOT_WORDS * rows * self.pieces, dtype=cupy.uint64)
        args = (self.x, self.y, np.int32(rows), np.int32(cols), np.int32(self.pieces), self.slots)
        self.launches = ((self.kernel, (grid,), (self.block,), args),)

    def invoke(self) -> None:
        (kernel, grid, block, args), = self.launches
        kernel.kernel(grid, block, args, shared_mem=self.shared_bytes, enable_cooperative_groups=self.cooperative)

    def describe(self) -> dict:
        return super().describe() | {"pieces": self.pieces, "capacity": self.capacity, "split_regs": self.split_regs,
                                     "cooperative": self.cooperative, "kept_on_chip": self.kept_on_chip}


DESIGNS = {"narrow": NarrowRows, "cluster": ClusterRow, "split": SplitRow}


def make_target(design: str, built: BuiltModule, rows: int, cols: int, mode: str = "rms", x=None, **options) -> ArrayTarget:
    return DESIGNS[design](built, rows, cols, mode, x, **options)
