"""The compile-time configurations of kernels/softmax_designs.cu and the launch-time choices they leave (lanes
per row, split pieces), as plain arithmetic on the device identity (no CuPy), shared by the fusion chapter's
plans (chapters/fusion/plans.py, whose policy is the cost model's least prediction), the GPU targets
(launchlab.gpu.fused_designs) and the CPU tests."""
from __future__ import annotations

FAMILY = "softmax_designs"
KERNELS = {design: {"rms": f"{design}_rms_softmax", "plain": f"{design}_softmax"}
           for design in ("narrow", "cluster", "split")}
DESIGN_DEFINE = {"narrow": 1, "cluster": 2, "split": 3}  # -DDESIGN=n: a module holds that design's two kernels
MODES = ("rms", "plain")

# ---------------------------------------------------------------- the designs' default configurations (why each value)
# From a development sweep on an H200: per shape, the fastest configuration of each design; its figures are in
# evidence/development/fused_policy_sweep.md. Which design serves a shape is plans.py's choice.
# Narrow: 32 lanes a row (fewer only for rows of fewer than 32 chunks) holding the row in registers; 128-thread
# blocks up to 64 chunks a row, 256 above.
NARROW_MAX_ROW_CHUNKS = 8       # the most chunks per lane any narrow build holds (compile-time bound)
NARROW_SMALL_ROW_CHUNKS = 64
NARROW_BLOCKS = {"small": 128, "large": 256}

# Cluster: for few long rows, where one block per row leaves most of each SM idle; 16 blocks of 256 threads per
# row, each slice in registers (up to CLUSTER_MAX_SLICE_REGS chunks per thread), in shared memory beyond that (up
# to CLUSTER_SLICE_BYTES).
CLUSTER_BLOCK = 256
CLUSTER_UNROLL = 4
CLUSTER_MAX_SLICE_REGS = 16
CLUSTER_SLICE_REGS = 8  # chunks per thread a cluster build can hold in registers (longer slices: shared memory)
CLUSTER_SLICE_BYTES = 112 * 1024
PORTABLE_CLUSTER = 8    # the portable limit
MAX_CLUSTER = 16        # Hopper's non-portable limit (cudaFuncAttributeNonPortableClusterSizeAllowed)
CLUSTER_CAPABILITY = (9, 0)  # thread-block clusters: below it plans.py considers no cluster design

# Split: rows too long for a 16-block cluster's shared memory (and few of them): pieces of the row over a
# cooperative grid, 512 threads x 4 chunks in flight, two resident blocks per SM, slices of up to 112 KiB
# in shared memory, longer pieces streamed (x read twice).
SPLIT_BLOCK = 512
SPLIT_UNROLL = 4
SPLIT_BLOCKS_PER_SM = 2
SPLIT_SLICE_BYTES = 112 * 1024

SHARED_RESERVED_PER_BLOCK = 1024  # bytes the hardware reserves per resident block (sm_80 to sm_100)

def worst_chunks(rows: int, cols: int) -> int:
    """16-byte chunks of the worst-aligned row (rows start at r*cols floats from an aligned base)."""
    lead = 0 if cols % 4 == 0 else (3 if rows > 1 else 0)
    return (lead + cols + 3) // 4


def next_power_of_two(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def module_label(design: str, defines: dict) -> str:
    """The build of one of kernels/softmax_designs.cu's designs: softmax_designs_<design>_<define><value>..."""
    return f"{FAMILY}_{design}_" + "_".join(f"{k.lower()}{v}" for k, v in sorted(defines.items()))


def narrow_lanes(rows: int, cols: int, row_chunks: int) -> int:
    """Lanes per row of a narrow build holding `row_chunks` chunks a lane: the fewest (a power of two) that hold
    the worst-aligned row; chosen at launch, so one build serves every row length up to 32 x row_chunks chunks."""
    chunks = worst_chunks(rows, cols)
    lanes = next_power_of_two(-(-chunks // int(row_chunks)))
    if lanes > 32:
        raise ValueError(f"a row of {cols} floats ({chunks} chunks) does not fit 32 lanes of {row_chunks} chunks")
    return lanes


def narrow_config(rows: int, cols: int, sm_count: int, lanes: int | None = None, row_chunks: int | None = None) -> dict:
    """The narrow build for a shape: ROW_CHUNKS chunks a lane (given, or from `lanes`, or one chunk a lane for rows
    of up to 32 chunks and 32 lanes beyond), in blocks of 128 threads up to 64 chunks a row, 256 above."""
    chunks = worst_chunks(rows, cols)
    if row_chunks is None:
        lanes = lanes or min(32, next_power_of_two(chunks))
        row_chunks = next_power_of_two(-(-chunks // lanes))
    if row_chunks > NARROW_MAX_ROW_CHUNKS or chunks > 32 * row_chunks:
        raise ValueError(f"a row of {cols} floats ({chunks} chunks) does not fit 32 lanes of "
                         f"{min(row_chunks, NARROW_MAX_ROW_CHUNKS)} chunks")
    block = NARROW_BLOCKS["small" if chunks <= NARROW_SMALL_ROW_CHUNKS else "large"]
    return {"BLOCK": block, "DESIGN": DESIGN_DEFINE["narrow"], "ROW_CHUNKS": row_chunks}


def cluster_config(rows: int, cols: int, sm_count: int, width: int = MAX_CLUSTER, block: int = CLUSTER_BLOCK,
                   slice_regs: int | None = None) -> dict:
    """A cluster of `width` blocks per row; a block's slice stays in registers where SLICE_REGS chunks per thread
    hold it (the kernel decides at run time), else in shared memory (up to CLUSTER_SLICE_BYTES)."""
    slice_chunks = -(-worst_chunks(rows, cols) // width)
    regs = CLUSTER_SLICE_REGS if slice_regs is None else int(slice_regs)
    if slice_chunks > regs * block and 16 * slice_chunks > CLUSTER_SLICE_BYTES:
        raise ValueError(f"a row of {cols} floats does not fit a cluster of {width} x {CLUSTER_SLICE_BYTES} bytes")
    return {"BLOCK": block, "CLUSTER": width, "DESIGN": DESIGN_DEFINE["cluster"], "SLICE_REGS": regs,
            "UNROLL": CLUSTER_UNROLL}


def split_config(rows: int, cols: int, sm_count: int) -> dict:
    return {"BLOCK": SPLIT_BLOCK, "DESIGN": DESIGN_DEFINE["split"], "UNROLL": SPLIT_UNROLL}


def capability(value) -> tuple[int, int]:
    """A compute capability as (major, minor), from (9, 0) or the text "9.0" a run's device identity holds."""
    major, minor = (int(v) for v in (value.split(".") if isinstance(value, str) else value))
    return major, minor


def design_defines(design: str, rows: int, cols: int, sm_count: int, **choices) -> dict:
    """The defines of one of this module's designs for a shape, with `choices` (e.g. lanes=16, cluster=4,
    block=128) overriding the policy's picks: how tests and the sweep force a design or a configuration."""
    choices = {key.upper(): int(value) for key, value in choices.items()}
    if design == "narrow":
        defines = narrow_config(rows, cols, sm_count, choices.pop("LANES", None), choices.get("ROW_CHUNKS"))
    elif design == "cluster":
        defines = cluster_config(rows, cols, sm_count, choices.get("CLUSTER", MAX_CLUSTER),
                                 choices.get("BLOCK", CLUSTER_BLOCK), choices.get("SLICE_REGS"))
    elif design == "split":
        defines = split_config(rows, cols, sm_count)
    else:
        raise ValueError(f"unknown design {design!r}; expected one of narrow, cluster, split")
    defines.update(choices)
    return defines


def split_pieces(rows: int, capacity: int) -> int:
    """Pieces per row: as many as let every row's pieces be resident at once (1 when rows fill the grid)."""
    return max(1, capacity // rows)


def split_blocks_per_sm(block: int) -> int:
    """Resident blocks per SM of a split build: SPLIT_BLOCKS_PER_SM, one for blocks of more than 512 threads."""
    return SPLIT_BLOCKS_PER_SM if block <= 512 else 1


def split_kept_pieces(rows: int, cols: int, sm_count: int, block: int = SPLIT_BLOCK) -> int | None:
    """Pieces per row that keep every piece in shared memory (x read once), where split_pieces' would not and a
    row's pieces can still all be resident; None elsewhere. The grid then walks the rows a group at a time."""
    capacity = split_blocks_per_sm(block) * sm_count
    chunks = worst_chunks(rows, cols)
    if 16 * -(-chunks // split_pieces(rows, capacity)) <= SPLIT_SLICE_BYTES:
        return None
    pieces = -(-16 * chunks // SPLIT_SLICE_BYTES)
    return pieces if pieces <= capacity else None
