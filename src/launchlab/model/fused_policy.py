"""The fused softmax designs' launch policy and compile-time configurations (plain arithmetic on the
device identity: no CuPy), shared by the GPU targets (launchlab.gpu.fused_designs), the development sweep
(tools/sweep_fused_designs.py) and the CPU tests. The thresholds are first estimates, to be confirmed by
the sweep."""
from __future__ import annotations

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


def split_pieces(rows: int, capacity: int) -> int:
    """Pieces per row: as many as let every row's pieces be resident at once (1 when rows fill the grid)."""
    return max(1, capacity // rows)
