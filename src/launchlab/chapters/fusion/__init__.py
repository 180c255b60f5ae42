"""Chapter 3, fusion: a fused RMS-scaled softmax against the four-kernel row path, library softmax and a
device copy of the same bytes, with a warm and a cold L2.

Every contender runs on the same input matrix and the same stream, and is measured three ways:

  * `<contender>.<shape>.graph32`: a CUDA graph that captured CALLS_PER_GRAPH back-to-back calls,
    replayed in the protocol's warm batches. The host submits one replay per 32 calls, far faster than
    the GPU runs them, so the event interval is device time with a warm L2 (summary.py checks, per
    round, that the host's enqueue time per replay stayed below the event time per replay). Its
    samples are per replay; the summaries divide by `calls_per_invocation` to report time per CALL.
  * `<contender>.<shape>.stream`: one call submitted from Python. In the cold measurement (L2 flushed,
    then a GPU wait while the host enqueues) its event interval is device time with a cold L2; in the
    warm measurement its batches are the host-path view (stream launches as a caller makes them).
  * `<path>.<shape>.graph`: a graph of ONE call (row path and the fused kernel only): what capturing a
    single invocation changes against its stream launch, warm and cold.

Comparisons (ratios, bandwidth, targets) use the device-time figures: graph32 warm, stream cold.
"""
from __future__ import annotations

import dataclasses
import re

from launchlab.chapters.declaration import Chapter, VariantSpec
from launchlab.measure.variant import VariantId
from launchlab.model import fused_policy, workloads

CALLS_PER_GRAPH = 32                      # calls of a contender captured in one graph32 replay
DEVICE = f"graph{CALLS_PER_GRAPH}"        # the submission of the warm device-time variants
LARGE_ELEMENTS = 1 << 24                  # stream and one-call graph variants this big use the smaller batch
ROW_KERNELS = ("row_rms", "row_max", "row_exp_sum", "row_scale")
FUSED_KERNELS = ("fused_rms_softmax", "fused_softmax")
LIBRARIES = ("cudnn", "torch", "triton")
L2_STATES = ("warm", "cold")


@dataclasses.dataclass(frozen=True)
class Contender:
    """One thing compared on the same matrix: what makes it, its oracle, its logical bytes per CALL per
    matrix element (4-byte floats: each array touched as often as the algorithm says), its submissions."""
    label: str
    target: str
    oracle: str
    read_per_element: int
    written_per_element: int
    submissions: tuple[str, ...]
    library: bool = False

    @property
    def bytes_per_element(self) -> int:
        return self.read_per_element + self.written_per_element


# The contenders in the order tables and figures show them; every summary, ratio over the copy and table
# follows this table. "fused RMS" and "fused plain" are the kernel the launch policy picks for the shape
# (fused_plan): the one-block-per-row kernel, or a design of kernels/softmax_designs.cu.
CONTENDERS = {
    "copy": Contender("copy (cudaMemcpyAsync)", "DeviceCopy", "x itself (exact)", 4, 4, ("stream", DEVICE)),
    "row4": Contender("row path (4 kernels)", "RowPath", "rms_softmax (float64)", 16, 8,  # x 3x, e 1x; e, y
                      ("stream", "graph", DEVICE)),
    "fused_rms": Contender("fused RMS", "fused_plan(mode='rms')", "rms_softmax (float64)", 4, 4,
                           ("stream", "graph", DEVICE)),
    "fused_plain": Contender("fused plain", "fused_plan(mode='plain')", "softmax (float64)", 4, 4,
                             ("stream", "graph", DEVICE)),
    "cudnn": Contender("cuDNN softmax", "CudnnSoftmax", "softmax (float64)", 4, 4, ("stream", DEVICE), True),
    "torch": Contender("torch.softmax", "TorchSoftmax", "softmax (float64)", 4, 4, ("stream", DEVICE), True),
    "triton": Contender("Triton softmax", "TritonSoftmax", "softmax (float64)", 4, 4, ("stream", DEVICE), True),
}


@dataclasses.dataclass(frozen=True)
class Parameters:
    shapes: str = "4096x128,4096x512,4096x1024,4096x4096,4096x16384,128x65536"
    fixture_seed: int = 2026
    baselines: str = "cudnn,torch,triton"  # libraries to time where installed (skipped with a note where not)
    profile_shapes: str = "4096x4096,128x65536"  # Nsight Compute's DRAM bytes at these shapes ("" for none)
    sweep_4096: str = "2:98:2"            # 4096 rows x N = 128 i for i = first:last:step ("" for none)
    sweep_128: str = "4096,5000,8192,12345,16384,32768,50000,65536,100003,131072,200000,262144"  # 128 rows x N
    sanitizer_tools: str = "memcheck,racecheck"  # compute-sanitizer tools over every fused design ("" for none)


FUSED_MODES = {"fused_rms": "rms", "fused_plain": "plain"}  # with the copy and the libraries: a sweep point's contenders
SWEEP_BYTES_PER_REPLAY = 1 << 28             # a sweep graph holds enough calls to move this many logical bytes ...
SWEEP_MAX_CALLS = CALLS_PER_GRAPH            # ... up to this many calls (a power of two)


def sweep_grid(parameters: Parameters) -> dict[str, list[tuple[int, int]]]:
    """The sweep's two series of shapes, fixed shapes included where they fall on them:
    {"4096": 4096 x 128 i over the `sweep_4096` range, "128": 128 x N over `sweep_128`}."""
    grid = {"4096": [], "128": []}
    if parameters.sweep_4096.strip():
        try:
            first, last, step = (int(v) for v in parameters.sweep_4096.split(":"))
        except ValueError:
            raise ValueError(f"sweep_4096 {parameters.sweep_4096!r} is not first:last:step") from None
        if first < 1 or last < first or step < 1:
            raise ValueError(f"sweep_4096 {parameters.sweep_4096!r} needs 1 <= first <= last and step >= 1")
        grid["4096"] = [(4096, 128 * i) for i in range(first, last + 1, step)]
    if parameters.sweep_128.strip():
        try:
            grid["128"] = list(dict.fromkeys((128, int(n)) for n in parameters.sweep_128.split(",") if n.strip()))
        except ValueError:
            raise ValueError(f"sweep_128 {parameters.sweep_128!r} is not a comma-separated list of row lengths") from None
    if any(cols < 1 for series in grid.values() for _, cols in series):
        raise ValueError("every sweep row length must be at least 1")
    return grid


def sweep_shapes(parameters: Parameters) -> list[tuple[int, int]]:
    """The shapes the sweep itself measures: its grid without the fixed shapes (whose graph32 and cold figures
    stand in the sweep at those points)."""
    fixed = set(workloads.parse_shapes(parameters.shapes))
    grid = sweep_grid(parameters)
    return [shape for shape in dict.fromkeys(grid["4096"] + grid["128"]) if shape not in fixed]


def device_submission(parameters: Parameters, rows: int, cols: int) -> str:
    """The submission whose warm batches give a shape's warm device time: graph32 at a fixed shape, else the
    sweep's graph of sweep_calls(rows, cols) calls."""
    return DEVICE if (rows, cols) in set(workloads.parse_shapes(parameters.shapes)) else f"graph{sweep_calls(rows, cols)}"


def all_shapes(parameters: Parameters) -> list[tuple[int, int]]:
    """The fixed shapes, then the sweep's."""
    return workloads.parse_shapes(parameters.shapes) + sweep_shapes(parameters)


def sweep_calls(rows: int, cols: int) -> int:
    """Calls in one replay of a sweep graph: the power of two that moves about SWEEP_BYTES_PER_REPLAY of the copy's
    logical bytes, 1 to SWEEP_MAX_CALLS: every replay then keeps the GPU busy for tens of microseconds or more."""
    calls = max(1, SWEEP_BYTES_PER_REPLAY // (8 * rows * cols))
    return min(SWEEP_MAX_CALLS, 1 << (calls.bit_length() - 1))


def requested_libraries(parameters: Parameters) -> list[str]:
    wanted = [name.strip() for name in parameters.baselines.split(",") if name.strip()]
    unknown = sorted(set(wanted) - set(LIBRARIES))
    if unknown:
        raise ValueError(f"unknown baselines {unknown}; known: {', '.join(LIBRARIES)}")
    return wanted


def contenders(parameters: Parameters) -> list[str]:
    """The contenders this run declares: ours, and the requested libraries."""
    wanted = requested_libraries(parameters)
    return [name for name, c in CONTENDERS.items() if not c.library or name in wanted]


def calls_per_invocation(variant) -> int:
    """Calls of the contender in one invocation: a `graph<N>` replay holds N, every other submission one."""
    match = re.fullmatch(r"graph(\d+)", VariantId.parse(str(variant)).submission)
    return int(match.group(1)) if match else 1


def large(variant: VariantId) -> bool:
    """The protocol's smaller batch: a graph of many calls, or one call on a large matrix."""
    rows, cols = workloads.parse_shapes(variant.case)[0]
    return calls_per_invocation(variant) > 1 or rows * cols >= LARGE_ELEMENTS


def sweep_contenders(parameters: Parameters) -> list[str]:
    return [name for name in contenders(parameters) if name == "copy" or name in FUSED_MODES or CONTENDERS[name].library]


def variants(parameters: Parameters) -> list[VariantSpec]:
    """Every variant, with logical bytes per INVOCATION (a graph32 replay moves 32 calls' bytes). A sweep point
    has a graph<k> variant (warm L2, k = sweep_calls) and a stream variant (cold L2) per sweep contender."""
    table = []

    def add(name, rows, cols, submission):
        contender = CONTENDERS[name]
        vid = VariantId(name, workloads.shape_name(rows, cols), submission)
        calls = calls_per_invocation(vid)
        how = f"{contender.target}, {calls} calls per graph" if calls > 1 else contender.target
        table.append(VariantSpec(vid, how, contender.oracle, calls * contender.read_per_element * rows * cols,
                                 calls * contender.written_per_element * rows * cols))

    for rows, cols in workloads.parse_shapes(parameters.shapes):
        for name in contenders(parameters):
            for submission in CONTENDERS[name].submissions:
                add(name, rows, cols, submission)
    for rows, cols in sweep_shapes(parameters):
        for name in sweep_contenders(parameters):
            for submission in (f"graph{sweep_calls(rows, cols)}", "stream"):
                add(name, rows, cols, submission)
    return table


def logical_bytes_per_call(name: str, rows: int, cols: int) -> int:
    return CONTENDERS[name].bytes_per_element * rows * cols


# ---------------------------------------------------------------- performance targets, declared before any run
# (fixed with the chapter, before its first run): verdicts on the paired device-time medians, never asserted by tests.
COPY_RATIO_TARGET = 1.15                              # fused RMS time / copy time at most this ...
COPY_RATIO_SHAPES = ("4096x4096", "4096x16384")       # ... at these shapes
CUDNN_SPEEDUP_TARGET = 1.3                            # cuDNN time / fused plain time at least this ...
CUDNN_SPEEDUP_SHAPE = "4096x4096"                     # ... at this shape; fused plain faster than cuDNN and torch everywhere
# The sweep: each fused mode at most this many times the copy's device time at every sweep point with N >= 1024,
# and below N = 1024; fused plain faster than every library at every point (issue targets, declared before the run).
SWEEP_COPY_TARGETS = {"max_n_ge_1024": 1.10, "max_n_lt_1024": 1.25}

# ---------------------------------------------------------------- the fused kernel's build policy per shape
# Declared before any run. A row walks in 16-byte chunks; a block holds up to REG_CHUNKS chunks per
# thread in registers, else the row in dynamic shared memory, else it streams the row twice
# (kernels/fused_softmax.cu decides, from these). The numbers come from a development sweep on an H200
# (tools/gpu_fusion_check.py --sweep): one warp per row for rows up to 256 chunks, a register budget that
# lets several rows share an SM, and deeper unrolling where a row is cached in shared memory or streamed.
# Fewer rows than SMs (one row per SM at most) keep rows of up to 8 x 1024 chunks in registers, 8 chunks a
# thread: device time of graphs, warm L2, plain mode, against the shared tier's 512 threads x 4 chunks:
#   128 x 5000:  256 threads x 8 chunks 2.83 us, shared tier 3.07 us (Triton 2.76, copy 1.60)
#   128 x 8192:  256 x 8 3.39 us, shared tier 3.81 us (Triton 3.30, copy 2.13)
#   128 x 16384: 512 x 8 5.26 us, shared tier 5.69 us (Triton 5.19, copy 3.22)
#   128 x 32768: 1024 x 8 8.83 us, shared tier 9.33 us (Triton 10.45, copy 5.51)
REG_CHUNKS = 4
WARP_ROW_CHUNKS = 8           # chunks per thread a one-warp block may hold (rows up to 1024 floats)
FEW_ROWS_REG_CHUNKS = 8       # chunks per thread in registers when rows are fewer than SMs
WIDE_REGISTER_BUDGET = 64     # per thread, for 8 chunks a thread (ptxas fits them in 60 without spills)
REGISTER_TIER_MAX_BLOCK = 256
SHARED_TIER_BLOCK = 512
STREAMED_TIER_BLOCK = 1024
UNROLL = {"registers": 4, "shared": 8, "streamed": 8}
REGISTER_BUDGET = {"registers": 48, "shared": 64, "streamed": 64}  # per thread; ptxas fits these without spills


def max_chunks(rows: int, cols: int) -> int:
    """16-byte chunks of the worst-aligned row: rows start at r*cols floats from an aligned base."""
    lead = 0 if cols % 4 == 0 else (3 if rows > 1 else 0)
    return (lead + cols + 3) // 4


def fused_tier(rows: int, cols: int, block: int, shared_bytes: int, reg_chunks: int = REG_CHUNKS) -> str:
    """Where the kernel keeps a row (the worst-aligned one), mirroring fused_row() in the .cu file."""
    chunks = max_chunks(rows, cols)
    if chunks <= reg_chunks * block:
        return "registers"
    if 16 * chunks <= shared_bytes:
        return "shared"
    return "streamed"


def fused_config(rows: int, cols: int, shared_limit: int, sm_count: int | None = None) -> dict:
    """Block size, compile-time defines and dynamic shared memory of the fused kernel for a shape;
    `module` names the build (shapes with equal defines share one). With the GPU's `sm_count`, fewer rows
    than SMs keep longer rows in registers; without it (callers whose rows outnumber any GPU's SMs) they do not."""
    chunks = max_chunks(rows, cols)
    few_rows = sm_count is not None and rows < sm_count
    if chunks <= WARP_ROW_CHUNKS * 32:
        tier, block, reg_chunks, shared = "registers", 32, (REG_CHUNKS if chunks <= REG_CHUNKS * 32 else WARP_ROW_CHUNKS), 0
    elif chunks <= REG_CHUNKS * REGISTER_TIER_MAX_BLOCK:
        tier, block, reg_chunks, shared = "registers", fused_policy.next_power_of_two(-(-chunks // REG_CHUNKS)), REG_CHUNKS, 0
    elif few_rows and chunks <= FEW_ROWS_REG_CHUNKS * 1024:
        tier, reg_chunks, shared = "registers", FEW_ROWS_REG_CHUNKS, 0
        block = max(REGISTER_TIER_MAX_BLOCK, fused_policy.next_power_of_two(-(-chunks // FEW_ROWS_REG_CHUNKS)))
    elif 16 * chunks <= shared_limit:
        block = SHARED_TIER_BLOCK
        while REG_CHUNKS * block >= chunks:  # the kernel keeps a row in registers when it fits: keep it from fitting
            block //= 2
        tier, reg_chunks, shared = "shared", REG_CHUNKS, 16 * chunks
    else:
        tier, block, reg_chunks, shared = "streamed", STREAMED_TIER_BLOCK, REG_CHUNKS, 0
    budget = REGISTER_BUDGET[tier] if reg_chunks <= REG_CHUNKS else WIDE_REGISTER_BUDGET
    defines = {"BLOCK": block, "REG_CHUNKS": reg_chunks, "UNROLL": UNROLL[tier], "MIN_BLOCKS": min_blocks(block, budget)}
    assert fused_tier(rows, cols, block, shared, reg_chunks) == tier
    return {"defines": defines, "block": block, "shared_bytes": shared, "tier": tier, "module": module_label(defines)}


def fused_configs(shapes: str, shared_limit: int, sm_count: int) -> dict:
    """{shape: fused_config} for every shape of a run."""
    return {workloads.shape_name(r, c): fused_config(r, c, shared_limit, sm_count)
            for r, c in workloads.parse_shapes(shapes)}


def min_blocks(block: int, register_budget: int = REGISTER_BUDGET["registers"]) -> int:
    """Blocks per SM that __launch_bounds__ asks the register allocation to allow: as many as a
    budget of registers per thread gives (4 schedulers of 16384 registers, 32 threads a warp),
    within the SM's 2048 threads and 32 blocks."""
    warps = 4 * (16384 // (32 * register_budget))
    return max(1, min(32, 2048 // block, warps // max(1, block // 32)))


def module_label(defines: dict) -> str:
    return (f"fused_softmax_b{defines['BLOCK']}_r{defines['REG_CHUNKS']}_u{defines['UNROLL']}"
            f"_m{defines.get('MIN_BLOCKS', 1)}")


def fused_plan(rows: int, cols: int, device: dict) -> dict:
    """The fused kernel for a shape under the declared launch policy (model/fused_policy.design_for):
    {"design", "family", "defines", "module", "shared_bytes"} (plus the row kernel's "block" and "tier")."""
    design = fused_policy.design_for(rows, cols, int(device["sm_count"]))
    if design == "row":
        return {"design": "row", "family": "fused_softmax",
                **fused_config(rows, cols, int(device["shared_bytes_per_block_optin"]), int(device["sm_count"]))}
    return design_plan(design, fused_policy.design_defines(design, rows, cols, int(device["sm_count"])))


def design_plan(design: str, defines: dict) -> dict:
    """The plan of one of kernels/softmax_designs.cu's designs built with these defines."""
    return {"design": design, "family": fused_policy.FAMILY, "defines": defines, "shared_bytes": None,
            "module": fused_policy.module_label(design, defines)}


def fused_plans(parameters: Parameters, device: dict) -> dict:
    """{shape: fused_plan} for every shape of a run, fixed and swept."""
    return {workloads.shape_name(r, c): fused_plan(r, c, device) for r, c in all_shapes(parameters)}


CHAPTER = Chapter(
    stem="fusion", tag="ch03", title="Fusion",
    host_path=("CuPy from CPython on one non-blocking stream: RawKernel launches (row path, fused kernel), "
               "cudaMemcpyAsync (copy), cuDNN through ctypes, torch.softmax and Triton through PyTorch on the same "
               "stream (torch.cuda.ExternalStream) and memory (DLPack); device time from CUDA graphs of 32 captured "
               "calls replayed by Graph.launch (warm L2) and from single stream calls after an L2 flush and a GPU "
               "wait (cold L2)"),
    parameters=Parameters, expand=variants)
