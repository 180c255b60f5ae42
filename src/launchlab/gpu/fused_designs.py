"""Fused softmax designs by row length (kernels/softmax_designs.cu): targets and the launch policy.

Three designs, each one launch that reads x once and writes y once (the split design's streamed
case reads x twice):
  * `NarrowRows`: part of a warp per row, several rows per block, the row in registers, the grid
    sized to the GPU;
  * `ClusterRow`: a thread-block cluster per row, each block's slice in shared memory, the
    partial statistics combined through distributed shared memory;
  * `SplitRow`: a row split over many blocks of a cooperative grid, the partial statistics
    combined by the row's last block through a small global array.

Every target takes `(built, rows, cols, mode="rms"|"plain", x=None)`; `x` may be another
variant's input buffer. The module's compile-time defines (`design_defines`) fix the block size,
lanes per row, cluster width and unrolling; the target derives its grid and shared memory.

`launch_policy(rows, cols, device)` is plain arithmetic on the device identity (no CuPy call).
The thresholds below are first estimates, to be confirmed by `tools/sweep_fused_designs.py`.
"""
from __future__ import annotations

import cupy
import numpy as np

from launchlab.gpu.build import BuiltModule
from launchlab.gpu.targets import Target, allow_dynamic_shared, module_define

FAMILY = "softmax_designs"
KERNELS = {design: {"rms": f"{design}_rms_softmax", "plain": f"{design}_softmax"}
           for design in ("narrow", "cluster", "split")}
DESIGN_DEFINE = {"narrow": 1, "cluster": 2, "split": 3}  # -DDESIGN=n: a module holds that design's two kernels
MODES = ("rms", "plain")

# ---------------------------------------------------------------- policy constants (why each value)
# Narrow: a row fits the registers of one warp at 8 chunks (32 floats) per lane: 32 data registers
# per thread keep the kernel near 64 registers, so 4 blocks of 256 threads stay resident per SM.
NARROW_MAX_ROW_CHUNKS = 8
NARROW_MAX_CHUNKS = 32 * NARROW_MAX_ROW_CHUNKS  # 256 chunks: rows up to 1024 floats (1021 when cols % 4 != 0)
# Lanes per row: enough that each lane holds about 4 chunks (64 bytes in flight per lane, the
# figure the one-block-per-row kernel holds in registers), fewer lanes for short rows so that the
# shuffle reductions stay short and a warp serves several rows.
NARROW_CHUNKS_PER_LANE = 4
# Block size: the largest of these that still gives at least NARROW_MIN_BLOCKS_PER_SM blocks per SM,
# so every SM has work and a second block to overlap with (4096 rows of 128 get 64-thread blocks).
NARROW_BLOCKS = (256, 128, 64, 32)
NARROW_MIN_BLOCKS_PER_SM = 2

# Cluster: 256 threads with 4 chunks each in flight; a slice of at most 112 KiB lets two blocks share
# an SM's 228 KiB (less 1 KiB reserved per block), so a block's load phase overlaps another's stores.
CLUSTER_BLOCK = 256
CLUSTER_UNROLL = 4
CLUSTER_SLICE_BYTES = 112 * 1024
PORTABLE_CLUSTER = 8    # the portable limit
MAX_CLUSTER = 16        # Hopper's non-portable limit (cudaFuncAttributeNonPortableClusterSizeAllowed)
# The cluster is widened (up to MAX_CLUSTER) until rows x cluster gives this many blocks per SM:
# 128 rows of 65,536 then run as 1024 blocks of 32 KiB rather than 128 blocks for 132 SMs.
CLUSTER_TARGET_BLOCKS_PER_SM = 4

# Split: 512 threads x 4 chunks in flight (32 KiB per block), two resident blocks per SM, each with
# a slice of up to 112 KiB kept in shared memory; longer pieces stream and read x a second time.
SPLIT_BLOCK = 512
SPLIT_UNROLL = 4
SPLIT_BLOCKS_PER_SM = 2
SPLIT_SLICE_BYTES = 112 * 1024
# Few long rows: where even the widest clusters leave SMs idle (rows x MAX_CLUSTER < SMs) and a row
# is at least this long (256 KiB), the split design's global combine (a few microseconds) costs less
# than the idle SMs; shorter rows are latency-bound either way and stay with the cluster.
SPLIT_FEW_ROWS_MIN_COLS = 65536

SHARED_RESERVED_PER_BLOCK = 1024  # bytes the hardware reserves per resident block on sm_90


def worst_chunks(rows: int, cols: int) -> int:
    """16-byte chunks of the worst-aligned row (rows start at r*cols floats from an aligned base)."""
    lead = 0 if cols % 4 == 0 else (3 if rows > 1 else 0)
    return (lead + cols + 3) // 4


def next_power_of_two(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def module_label(design: str, defines: dict) -> str:
    return f"{FAMILY}_{design}_" + "_".join(f"{k.lower()}{v}" for k, v in sorted(defines.items()))


def narrow_config(rows: int, cols: int, sm_count: int) -> dict:
    chunks = worst_chunks(rows, cols)
    if chunks > NARROW_MAX_CHUNKS:
        raise ValueError(f"a row of {cols} floats ({chunks} chunks) exceeds the narrow design's {NARROW_MAX_CHUNKS}")
    lanes = min(32, next_power_of_two(-(-chunks // NARROW_CHUNKS_PER_LANE)))
    row_chunks = next_power_of_two(-(-chunks // lanes))
    return {"defines": {"BLOCK": narrow_block(rows, lanes, sm_count), "DESIGN": DESIGN_DEFINE["narrow"],
                        "LANES": lanes, "ROW_CHUNKS": row_chunks}}


def narrow_block(rows: int, lanes: int, sm_count: int) -> int:
    """The largest of NARROW_BLOCKS whose grid (BLOCK / lanes rows per block) still gives every SM
    NARROW_MIN_BLOCKS_PER_SM blocks; the smallest where none does."""
    for block in NARROW_BLOCKS:
        if -(-rows // (block // lanes)) >= NARROW_MIN_BLOCKS_PER_SM * sm_count:
            return block
    return NARROW_BLOCKS[-1]


def cluster_width(rows: int, cols: int, sm_count: int, max_cluster: int = MAX_CLUSTER) -> int | None:
    """The smallest power-of-two cluster whose slices fit CLUSTER_SLICE_BYTES and that gives
    CLUSTER_TARGET_BLOCKS_PER_SM blocks per SM (or max_cluster); None if no cluster holds the row."""
    chunks = worst_chunks(rows, cols)
    width = 1
    while width <= max_cluster:
        fits = 16 * -(-chunks // width) <= CLUSTER_SLICE_BYTES
        if fits and (rows * width >= CLUSTER_TARGET_BLOCKS_PER_SM * sm_count or width == max_cluster):
            return width
        width *= 2
    return None


def cluster_config(rows: int, cols: int, sm_count: int, max_cluster: int = MAX_CLUSTER) -> dict:
    width = cluster_width(rows, cols, sm_count, max_cluster)
    if width is None:
        raise ValueError(f"a row of {cols} floats does not fit a cluster of {max_cluster} x {CLUSTER_SLICE_BYTES} bytes")
    return {"defines": {"BLOCK": CLUSTER_BLOCK, "CLUSTER": width, "DESIGN": DESIGN_DEFINE["cluster"],
                        "UNROLL": CLUSTER_UNROLL}}


def split_config(rows: int, cols: int, sm_count: int) -> dict:
    return {"defines": {"BLOCK": SPLIT_BLOCK, "DESIGN": DESIGN_DEFINE["split"], "UNROLL": SPLIT_UNROLL}}


def launch_policy(rows: int, cols: int, device: dict) -> tuple[str, dict]:
    """(design, config) for a shape; `device` is `gpu.device.identity()` (sm_count is what is read).

    narrow  where a row fits a warp's registers (at most NARROW_MAX_CHUNKS chunks);
    split   where no cluster holds the row, or where rows are so few that even MAX_CLUSTER-wide
            clusters leave SMs idle and the row is long (SPLIT_FEW_ROWS_MIN_COLS);
    cluster otherwise. config: {"defines", "module"} (the module label to build it under)."""
    if rows <= 0 or cols <= 0:
        raise ValueError(f"shape {rows}x{cols} is empty")
    sm_count = int(device["sm_count"])
    if worst_chunks(rows, cols) <= NARROW_MAX_CHUNKS:
        design, config = "narrow", narrow_config(rows, cols, sm_count)
    elif cluster_width(rows, cols, sm_count) is None or (
            rows * MAX_CLUSTER < sm_count and cols >= SPLIT_FEW_ROWS_MIN_COLS):
        design, config = "split", split_config(rows, cols, sm_count)
    else:
        design, config = "cluster", cluster_config(rows, cols, sm_count)
    config["module"] = module_label(design, config["defines"])
    return design, config


def design_defines(design: str, rows: int, cols: int, sm_count: int, **choices) -> dict:
    """The defines of one design for a shape, with `choices` (e.g. lanes=16, cluster=4, block=128)
    overriding the policy's picks: how tests and the sweep force a design or a configuration."""
    choices = {key.upper(): int(value) for key, value in choices.items()}
    if design == "narrow":
        lanes = choices.get("LANES") or narrow_config(rows, cols, sm_count)["defines"]["LANES"]
        defines = {"BLOCK": narrow_block(rows, lanes, sm_count), "DESIGN": DESIGN_DEFINE["narrow"], "LANES": lanes,
                   "ROW_CHUNKS": next_power_of_two(-(-worst_chunks(rows, cols) // lanes))}
    elif design == "cluster":
        defines = {"BLOCK": CLUSTER_BLOCK, "DESIGN": DESIGN_DEFINE["cluster"], "UNROLL": CLUSTER_UNROLL,
                   "CLUSTER": choices.get("CLUSTER") or cluster_config(rows, cols, sm_count)["defines"]["CLUSTER"]}
    elif design == "split":
        defines = split_config(rows, cols, sm_count)["defines"]
    else:
        raise ValueError(f"unknown design {design!r}; expected one of narrow, cluster, split")
    defines.update(choices)
    return defines


# ---------------------------------------------------------------- targets (GPU)
def _sm_count() -> int:
    return int(cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())["multiProcessorCount"])


def _resident_per_sm(kernel, block: int, shared_bytes: int) -> int:
    return int(cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, block, shared_bytes))


def _shared_limit() -> int:
    return int(cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())["sharedMemPerBlockOptin"])


class _DesignTarget(Target):
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

    def poison(self) -> None:
        self.y.fill(np.nan)

    def load(self, x: np.ndarray) -> None:
        self.x.set(np.ascontiguousarray(x, dtype=np.float32))

    def output(self) -> np.ndarray:
        return self.y.get()

    def describe(self) -> dict:
        """The launch as recorded beside a measurement: grid, block, shared bytes and the design's own."""
        (_, grid, block, _), = self.launches
        return {"design": self.design, "grid": grid[0], "block": block[0], "shared_bytes": self.shared_bytes}


class NarrowRows(_DesignTarget):
    """narrow_*: LANES lanes per row, BLOCK / LANES rows per block, the row in registers; the grid is
    the blocks the rows need, at most SMs x resident blocks per SM (the warps stride over the rest)."""

    design = "narrow"

    def __init__(self, built: BuiltModule, rows: int, cols: int, mode: str = "rms", x=None):
        super().__init__(built, rows, cols, mode, x)
        self.lanes = module_define(built, "LANES", 32)
        self.row_chunks = module_define(built, "ROW_CHUNKS", 4)
        if worst_chunks(rows, cols) > self.lanes * self.row_chunks:
            raise ValueError(f"a row of {cols} floats needs {worst_chunks(rows, cols)} chunks; the module holds "
                             f"{self.lanes} lanes x {self.row_chunks}")
        rows_per_block = max(1, self.block // self.lanes)
        self.resident_per_sm = _resident_per_sm(self.kernel, self.block, 0)
        grid = min(-(-rows // rows_per_block), self.resident_per_sm * _sm_count())
        self.launches = ((self.kernel, (grid,), (self.block,), (self.x, self.y, np.int32(rows), np.int32(cols))),)

    def describe(self) -> dict:
        return super().describe() | {"lanes": self.lanes, "row_chunks": self.row_chunks,
                                     "resident_per_sm": self.resident_per_sm}


class ClusterRow(_DesignTarget):
    """cluster_*: a cluster of CLUSTER blocks per row (grid = rows x CLUSTER), each block's slice of
    ceil(chunks / CLUSTER) chunks in dynamic shared memory."""

    design = "cluster"

    def __init__(self, built: BuiltModule, rows: int, cols: int, mode: str = "rms", x=None):
        super().__init__(built, rows, cols, mode, x)
        self.cluster = module_define(built, "CLUSTER", 8)
        self.shared_bytes = 16 * -(-worst_chunks(rows, cols) // self.cluster)
        if self.shared_bytes > _shared_limit():
            raise ValueError(f"a slice of {self.shared_bytes} bytes exceeds the {_shared_limit()} a block may have")
        if self.shared_bytes > 48 * 1024:
            allow_dynamic_shared(self.kernel, self.shared_bytes)
        if self.cluster > PORTABLE_CLUSTER:
            attribute = getattr(cupy.cuda.driver, "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 14)
            cupy.cuda.driver.funcSetAttribute(self.kernel.kernel.ptr, attribute, 1)
        self.launches = ((self.kernel, (rows * self.cluster,), (self.block,), (self.x, self.y, np.int32(cols))),)

    def describe(self) -> dict:
        return super().describe() | {"cluster": self.cluster}


def split_pieces(rows: int, capacity: int) -> int:
    """Pieces per row: as many as let every row's pieces be resident at once (1 when rows fill the grid)."""
    return max(1, capacity // rows)


class SplitRow(_DesignTarget):
    """split_*: rows x pieces pieces over a cooperative grid of pieces x min(rows, capacity // pieces)
    blocks (capacity = SMs x resident blocks per SM, at most `blocks_per_sm`). A piece is kept in
    dynamic shared memory where ceil(chunks / pieces) chunks fit SPLIT_SLICE_BYTES, else streamed.

    `arrivals` and `generations` (per row) start at zero and are left at a consistent state by
    every invocation: never poisoned. `partials` (3 per piece) and `totals` (3 per row) are."""

    design = "split"

    def __init__(self, built: BuiltModule, rows: int, cols: int, mode: str = "rms", x=None,
                 blocks_per_sm: int = SPLIT_BLOCKS_PER_SM, pieces: int | None = None):
        super().__init__(built, rows, cols, mode, x)
        budget = min(SPLIT_SLICE_BYTES, _shared_limit())
        if budget > 48 * 1024:
            allow_dynamic_shared(self.kernel, budget)
        self.resident_per_sm = _resident_per_sm(self.kernel, self.block, budget)
        if self.resident_per_sm < 1:
            raise ValueError(f"no block of {self.block} threads with {budget} shared bytes fits an SM")
        self.capacity = min(self.resident_per_sm, blocks_per_sm) * _sm_count()
        self.pieces = int(pieces) if pieces else split_pieces(rows, self.capacity)
        if self.pieces > self.capacity:
            raise ValueError(f"{self.pieces} pieces per row cannot all be resident ({self.capacity} blocks)")
        grid = self.pieces * min(rows, self.capacity // self.pieces)
        per_piece = -(-worst_chunks(rows, cols) // self.pieces)
        self.shared_bytes = 16 * per_piece if 16 * per_piece <= budget else 0
        self.partials = cupy.empty(3 * rows * self.pieces, dtype=cupy.float32)
        self.totals = cupy.empty(3 * rows, dtype=cupy.float32)
        self.arrivals = cupy.zeros(rows, dtype=cupy.uint32)
        self.generations = cupy.zeros(rows, dtype=cupy.uint32)
        args = (self.x, self.y, np.int32(rows), np.int32(cols), np.int32(self.pieces), self.partials, self.totals,
                self.arrivals, self.generations)
        self.launches = ((self.kernel, (grid,), (self.block,), args),)

    def invoke(self) -> None:
        # cooperative: the launch fails rather than start a grid whose blocks cannot all be resident
        (kernel, grid, block, args), = self.launches
        kernel.kernel(grid, block, args, shared_mem=self.shared_bytes, enable_cooperative_groups=True)

    def poison(self) -> None:
        for array in (self.y, self.partials, self.totals):
            array.fill(np.nan)

    def describe(self) -> dict:
        return super().describe() | {"pieces": self.pieces, "capacity": self.capacity,
                                     "kept_in_shared": self.shared_bytes > 0}


DESIGNS = {"narrow": NarrowRows, "cluster": ClusterRow, "split": SplitRow}


def make_target(design: str, built: BuiltModule, rows: int, cols: int, mode: str = "rms", x=None, **options) -> Target:
    return DESIGNS[design](built, rows, cols, mode, x, **options)
