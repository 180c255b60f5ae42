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
# The scalar narrow build (SCALAR=1): ROW_CHUNKS single floats a lane, blocks of 128 threads, a warp for every group
# of rows. From a development sweep at small shapes on an H200 (evidence/development/kshort_batch2/): 4-byte loads
# with no lane-by-lane row ends and no grid-stride loop took 0.1-0.3 us less than the 16-byte walk at rows of up
# to a few hundred floats in matrices of a few hundred KiB.
SCALAR_BLOCK = 128

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

# Split: few rows too long for a cluster, or rows too long for one block's chip: pieces of the row over resident
# blocks; a piece's first SPLIT_REGS chunks a thread in registers, the next in shared memory, the rest streamed
# (x read twice). The pieces exchange epoch-stamped words of SLOT_WORDS a piece (kernels/grid_flags.cuh): one round
# trip through L2, no counter to reset. From the development bench on an H200: blocks of 256 threads, four an SM
# with 52 KiB slices each, are the fastest split build from about 8 MB of x up (more independent blocks keep more
# loads in flight); below that, where a call is mostly latency, one block of 512 threads an SM (more blocks
# gather more slots each, in a round trip that grows with the square of the blocks).
SPLIT_BLOCK = 512
SPLIT_UNROLL = 4
SPLIT_WIDE_UNROLL = 6  # blocks of 256 threads above SPLIT_SMALL_BYTES: 2-5 % faster there, 3-6 % slower below
SPLIT_REGS = 4
SPLIT_BLOCKS_PER_SM = 2  # of SPLIT_BLOCK threads (split_blocks_per_sm: 1024 threads an SM in every build)
SPLIT_SLICE_BYTES = 112 * 1024
SPLIT_SLICE_BYTES_BY_BLOCK = {256: 52 * 1024, 512: SPLIT_SLICE_BYTES, 1024: 200 * 1024}
SPLIT_SMALL_BYTES = 8 << 20  # x below this: one block an SM at most (latency); above: every resident block
SPLIT_COOPERATIVE = False  # the occupancy check of the target guarantees residency; a cooperative launch of 264
                           # blocks of 512 threads costs about 0.3 us more per call in a graph
SLOT_WORDS = 4
SPLIT_BYTES_PER_US = 4.0e6  # the GPU's DRAM bandwidth, shared by the resident blocks
SPLIT_STEP_US = 2.0         # a grid step's fixed time: its statistics round trip and the pipeline's fill and drain

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


def narrow_lanes(rows: int, cols: int, row_chunks: int, scalar: bool = False) -> int:
    """Lanes per row of a narrow build holding `row_chunks` chunks a lane (single floats in a scalar build): the
    fewest (a power of two) that hold the worst-aligned row; chosen at launch, so one build serves every row length
    up to 32 x row_chunks chunks (floats)."""
    units = int(cols) if scalar else worst_chunks(rows, cols)
    lanes = next_power_of_two(-(-units // int(row_chunks)))
    if lanes > 32:
        what = "floats" if scalar else "chunks"
        raise ValueError(f"a row of {cols} floats ({units} {what}) does not fit 32 lanes of {row_chunks} {what}")
    return lanes


def narrow_config(rows: int, cols: int, sm_count: int, lanes: int | None = None, row_chunks: int | None = None,
                  scalar: bool = False) -> dict:
    """The narrow build for a shape: ROW_CHUNKS chunks a lane (given, or from `lanes`, or one chunk a lane for rows
    of up to 32 chunks and 32 lanes beyond), in blocks of 128 threads up to 64 chunks a row, 256 above. `scalar`:
    ROW_CHUNKS single floats a lane (the fewest that hold the row in 32 lanes unless given) in blocks of
    SCALAR_BLOCK."""
    if scalar:
        row_chunks = int(row_chunks or next_power_of_two(-(-int(cols) // (lanes or 32))))
        if row_chunks > NARROW_MAX_ROW_CHUNKS or cols > 32 * row_chunks:
            raise ValueError(f"a row of {cols} floats does not fit 32 lanes of "
                             f"{min(row_chunks, NARROW_MAX_ROW_CHUNKS)} floats")
        return {"BLOCK": SCALAR_BLOCK, "DESIGN": DESIGN_DEFINE["narrow"], "ROW_CHUNKS": row_chunks, "SCALAR": 1}
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


def split_config(rows: int, cols: int, sm_count: int, block: int = SPLIT_BLOCK) -> dict:
    """The split build: BLOCK threads (the kernel's own defaults give SPLIT_REGS chunks a thread in registers and
    __launch_bounds__ for 1024 threads an SM); blocks of 256 threads keep 6 chunks a thread in flight from
    SPLIT_SMALL_BYTES of x up, where bandwidth rather than latency sets the time."""
    unroll = SPLIT_WIDE_UNROLL if block == 256 and 4 * rows * cols >= SPLIT_SMALL_BYTES else SPLIT_UNROLL
    return {"BLOCK": block, "DESIGN": DESIGN_DEFINE["split"], "UNROLL": unroll}


def capability(value) -> tuple[int, int]:
    """A compute capability as (major, minor), from (9, 0) or the text "9.0" a run's device identity holds."""
    major, minor = (int(v) for v in (value.split(".") if isinstance(value, str) else value))
    return major, minor


def design_defines(design: str, rows: int, cols: int, sm_count: int, **choices) -> dict:
    """The defines of one of this module's designs for a shape, with `choices` (e.g. lanes=16, cluster=4,
    block=128) overriding the policy's picks: how tests and the sweep force a design or a configuration."""
    choices = {key.upper(): int(value) for key, value in choices.items()}
    if design == "narrow":
        defines = narrow_config(rows, cols, sm_count, choices.pop("LANES", None), choices.get("ROW_CHUNKS"),
                                bool(choices.get("SCALAR")))
    elif design == "cluster":
        defines = cluster_config(rows, cols, sm_count, choices.get("CLUSTER", MAX_CLUSTER),
                                 choices.get("BLOCK", CLUSTER_BLOCK), choices.get("SLICE_REGS"))
    elif design == "split":
        defines = split_config(rows, cols, sm_count, choices.get("BLOCK", SPLIT_BLOCK))
    else:
        raise ValueError(f"unknown design {design!r}; expected one of narrow, cluster, split")
    defines.update(choices)
    return defines


def split_pieces(rows: int, capacity: int, chunks: int | None = None, on_chip: int | None = None,
                 sm_count: int | None = None) -> int:
    """Pieces per row over `capacity` resident blocks: every row's pieces at once where the rows leave room (as
    many pieces as the blocks give each row, or as `sm_count` blocks give it where x is under SPLIT_SMALL_BYTES);
    where they do not, pieces that keep a row on chip (`on_chip` chunks a block) in the grid steps of least
    estimated time (`split_steps_us`), at most `capacity` (beyond, streamed)."""
    blocks = capacity
    if sm_count is not None and chunks is not None and 16 * int(chunks) * rows < SPLIT_SMALL_BYTES:
        blocks = min(capacity, int(sm_count))
    spread = max(1, blocks // rows)
    if chunks is None or on_chip is None:
        return spread
    needed = -(-int(chunks) // int(on_chip))
    if spread >= needed:
        return spread
    if needed >= capacity:
        return capacity
    return min(range(needed, min(capacity, 4 * needed) + 1),
               key=lambda p: (split_steps_us(rows, chunks, p, capacity), p))


def split_steps_us(rows: int, chunks: int, pieces: int, capacity: int) -> float:
    """About how long the grid takes to walk the rows capacity // pieces at a time: per step a piece's bytes (x in,
    y out) at the block's share of the GPU's bandwidth, plus the step's round trip. Only the ranking matters."""
    steps = -(-rows // (capacity // pieces))
    return steps * (32.0 * chunks / pieces / (SPLIT_BYTES_PER_US / capacity) + SPLIT_STEP_US)


def split_blocks_per_sm(block: int) -> int:
    """Resident blocks per SM of a split build: 1024 threads' worth (two blocks of 512), at least one."""
    return max(1, SPLIT_BLOCKS_PER_SM * SPLIT_BLOCK // block)


def split_slice_bytes(block: int) -> int:
    """Shared memory a split block of `block` threads keeps a piece in (its SM holds split_blocks_per_sm of them)."""
    return SPLIT_SLICE_BYTES_BY_BLOCK.get(block, SPLIT_SLICE_BYTES * SPLIT_BLOCK // block)


def split_on_chip_chunks(block: int = SPLIT_BLOCK, slice_bytes: int | None = None) -> int:
    """Chunks a split block keeps on chip: SPLIT_REGS a thread in registers, then its shared memory."""
    return SPLIT_REGS * block + (split_slice_bytes(block) if slice_bytes is None else slice_bytes) // 16
