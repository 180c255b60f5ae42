"""Chapter 3, fusion: a fused RMS-scaled softmax against the four-kernel row path, library softmax and a
device copy of the same bytes, with a warm and a cold L2.

Every contender is a `Row` of ROWS and runs on the same input matrix and the same stream. At the fixed shapes
(`shapes`) each is measured as its row's submissions say:

  * `<row>.<shape>.graph32`: a CUDA graph that captured CALLS_PER_GRAPH back-to-back calls,
    replayed in the protocol's warm batches. The host submits one replay per 32 calls, far faster than
    the GPU runs them, so the event interval is device time with a warm L2 (summary.py checks, per
    round, that the host's enqueue time per replay stayed below the event time per replay). Its
    samples are per replay; the summaries divide by `calls_per_invocation` to report time per CALL.
  * `<row>.<shape>.stream`: one call submitted from Python. In the cold measurement (L2 flushed,
    then a GPU wait while the host enqueues) its event interval is device time with a cold L2; in the
    warm measurement its batches are the host-path view (stream launches as a caller makes them).
  * `<row>.<shape>.graph`: a graph of ONE call (rows declaring it: the row path and the fused kernels): what
    capturing a single invocation changes against its stream launch, warm and cold.

At the sweep's points (128 rows x N, and 4096 rows x 128 i where asked) the rows entering the sweep have a
`graph<k>` variant (warm L2, k = sweep_calls) and a `stream` variant (cold L2); so do the rows entering the plane
at each of its random points (plane.draw: `plane_points` shapes from `plane_seed`), timed with the frozen protocol
cut to `plane_rounds` rounds. There the copy ceiling has two contenders, cudaMemcpyAsync and the float4 copy
kernel (kernels/copy.cu); the summary takes the faster at each point and L2 state.

Comparisons (ratios, bandwidth, targets) use the device-time figures: graph replays warm, stream cold.

What a variant enters (OUTPUTS): `table` (the fixed-shape tables), `submission` (a one-call graph against its
stream launch), `sweep` (the sweep's points, the fixed shapes on its grid standing in), `plane` (the random
plane's points), `profile` (Nsight
Compute's DRAM bytes of one call at a profile shape) and, for a row, `sanitizer` (compute-sanitizer over every
fused design).
"""
from __future__ import annotations

import dataclasses
import re

from launchlab.chapters.declaration import Chapter, Counts, Names, Oracle, Requires, Row, Shapes, Variant
from launchlab.measure.variant import VariantId
from launchlab.chapters.fusion import plane
from launchlab.chapters.fusion.plane import PLANE_MIN_POINTS, PLANE_SEED
from launchlab.model import fused_policy, oracles, workloads

CALLS_PER_GRAPH = 32                      # calls of a contender captured in one graph32 replay
DEVICE = f"graph{CALLS_PER_GRAPH}"        # the submission of the warm device-time variants at fixed shapes
LARGE_ELEMENTS = 1 << 24                  # stream and one-call graph variants this big use the smaller batch
ROW_KERNELS = ("row_rms", "row_max", "row_exp_sum", "row_scale")
LIBRARIES = ("cudnn", "torch", "triton")
L2_STATES = ("warm", "cold")
OUTPUTS = ("table", "submission", "sweep", "plane", "profile", "sanitizer")
SWEEP_BYTES_PER_REPLAY = 1 << 28             # a sweep graph holds enough calls to move this many logical bytes ...
SWEEP_MAX_CALLS = CALLS_PER_GRAPH            # ... up to this many calls (a power of two)
PLANE_ROUNDS = 7                             # the plane's points: the frozen protocol with this many rounds
COPIES = ("copy", "copy4")                   # the copy ceiling's contenders: the faster at a point and L2 state


# ---------------------------------------------------------------- parameters
class Steps(str):
    """`first:last:step` (the 4096-row sweep's multiples of 128 floats), or "" for none; kept as its text so that
    run.json and the notebook's parameters cell write it as they always did."""

    def __new__(cls, value=""):
        text = str(value).strip()
        if text:
            try:
                first, last, step = (int(v) for v in text.split(":"))
            except ValueError:
                raise ValueError(f"{text!r} is not first:last:step") from None
            if first < 1 or last < first or step < 1:
                raise ValueError(f"{text!r} needs 1 <= first <= last and step >= 1")
        return super().__new__(cls, text)

    @property
    def values(self) -> range:
        if not self:
            return range(0)
        first, last, step = (int(v) for v in self.split(":"))
        return range(first, last + 1, step)


@dataclasses.dataclass(frozen=True)
class Parameters:
    shapes: Shapes = Shapes.parse("4096x128,4096x512,4096x1024,4096x4096,4096x16384,128x65536")
    fixture_seed: int = 2026
    baselines: Names = Names.parse("cudnn,torch,triton")  # libraries to time where installed (skipped with a note where not)
    profile_shapes: Shapes = Shapes.parse("4096x4096,128x65536")  # Nsight Compute's DRAM bytes at these shapes
    sweep_4096: Steps = Steps("")  # 4096 rows x N = 128 i for i = first:last:step ("" for none: the plane covers it)
    sweep_128: Counts = Counts.parse("4096,5000,8192,12345,16384,32768,50000,65536,100003,131072,200000,262144")  # 128 rows x N
    sanitizer_tools: Names = Names.parse("memcheck,racecheck,synccheck")  # compute-sanitizer tools over every fused design
    plane_points: int = PLANE_MIN_POINTS  # random (rows, row length) points of the plane (plane.draw)
    plane_seed: int = PLANE_SEED          # the plane's seed: fixed with the chapter, never retuned
    plane_rounds: int = PLANE_ROUNDS      # rounds of the shorter protocol the plane's points are timed with

    def __post_init__(self):
        if self.plane_points < 0 or self.plane_rounds < 1:
            raise ValueError(f"plane_points must be >= 0 and plane_rounds >= 1, not {self.plane_points} and "
                             f"{self.plane_rounds}")


# ---------------------------------------------------------------- rows: what makes each contender, its oracle and bytes
def per_element(read: int, written: int):
    """Logical bytes per CALL from bytes per matrix element (4-byte floats: each array touched as often as the
    algorithm says)."""
    def logical_bytes(case: str) -> tuple[int, int]:
        rows, cols = dims(case)
        return read * rows * cols, written * rows * cols
    return logical_bytes


def dims(case: str) -> tuple[int, int]:
    """(rows, cols) of a variant's case, e.g. 4096x128."""
    return workloads.parse_shapes(case)[0]


def make_copy(context, case: str):
    from launchlab.gpu.targets import DeviceCopy

    return DeviceCopy(context.input(case))


def make_copy_kernel(context, case: str):
    from launchlab.chapters.fusion import copy_kernel

    return copy_kernel.make(context.modules[copy_kernel.MODULE], context.input(case))


def make_row_path(context, case: str):
    from launchlab.gpu.targets import RowPath

    return RowPath(context.modules["row_softmax"], *dims(case), x=context.input(case))


def fused(mode: str):
    """The maker of the fused kernel the shape's plan names (fused_plan), in `mode` (rms or plain)."""
    def make_fused(context, case: str):
        from launchlab.chapters.fusion.targets import make_fused

        return make_fused(context.modules, context.plans[case], *dims(case), mode, context.input(case))
    return make_fused


def library(name: str):
    """The maker of a library's softmax on the shared input (chapters/fusion/baselines.py); where the library
    cannot be set up it raises Unavailable with the reason."""
    def make_library(context, case: str):
        from launchlab.chapters.fusion import baselines
        from launchlab.chapters.fusion.targets import Unavailable

        target, reason = baselines.make_baseline(name, context.input(case), context.stream)
        if target is None:
            raise Unavailable(reason)
        return target
    return make_library


def itself(x, xp=None):
    return x


EXACT = Oracle("x itself (exact)", itself, None)
RMS_SOFTMAX = Oracle("rms_softmax (float64)", oracles.rms_softmax, oracles.RMS_SOFTMAX_TOLERANCE)
SOFTMAX = Oracle("softmax (float64)", oracles.softmax, oracles.SOFTMAX_TOLERANCE)
EVERY_OUTPUT = frozenset(OUTPUTS)
ONE_CALL_GRAPH = ("stream", "graph", DEVICE)

# The contenders in the order tables and figures show them; every summary, ratio over the copy and table
# follows this order. "fused RMS" and "fused plain" are the kernel the launch policy picks for the shape
# (fused_plan): the one-block-per-row kernel, or a design of kernels/softmax_designs.cu.
ROWS = (
    Row("copy", "copy (cudaMemcpyAsync)", make_copy, EXACT, ("stream", DEVICE), per_element(4, 4),
        l2=L2_STATES, outputs=frozenset({"table", "sweep", "plane", "profile"})),
    Row("copy4", "copy (float4 kernel)", make_copy_kernel, EXACT, ("stream", DEVICE), per_element(4, 4), l2=L2_STATES,
        outputs=frozenset({"sweep", "plane", "profile"})),
    Row("row4", "row path (4 kernels)", make_row_path, RMS_SOFTMAX, ONE_CALL_GRAPH,
        per_element(16, 8), l2=L2_STATES, outputs=frozenset({"table", "submission", "profile"})),  # x 3x, e 1x; e, y
    Row("fused_rms", "fused RMS", fused("rms"), RMS_SOFTMAX, ONE_CALL_GRAPH, per_element(4, 4), l2=L2_STATES,
        outputs=EVERY_OUTPUT),
    Row("fused_plain", "fused plain", fused("plain"), SOFTMAX, ONE_CALL_GRAPH, per_element(4, 4), l2=L2_STATES,
        outputs=EVERY_OUTPUT),
    Row("cudnn", "cuDNN softmax", library("cudnn"), SOFTMAX, ("stream", DEVICE), per_element(4, 4), l2=L2_STATES,
        outputs=frozenset({"table", "sweep", "plane", "profile"}), requires=Requires(library="cudnn")),
    Row("torch", "torch.softmax", library("torch"), SOFTMAX, ("stream", DEVICE), per_element(4, 4), l2=L2_STATES,
        outputs=frozenset({"table", "sweep", "plane"}), requires=Requires(library="torch")),
    Row("triton", "Triton softmax", library("triton"), SOFTMAX, ("stream", DEVICE), per_element(4, 4), l2=L2_STATES,
        outputs=frozenset({"table", "sweep", "plane"}), requires=Requires(library="triton")),
)


def row(name: str) -> Row:
    """The declared row of a name (ROWS read at call time: a test may add one)."""
    for declared in ROWS:
        if declared.name == name:
            return declared
    raise KeyError(f"fusion declares no row {name!r} (rows: {', '.join(r.name for r in ROWS)})")


def is_library(name: str) -> bool:
    return row(name).requires.library is not None


def rows_entering(output: str) -> list[str]:
    """The rows that enter an output, in declaration order (whether a run requested them or not)."""
    return [declared.name for declared in ROWS if output in declared.outputs]


def submission_paths() -> list[str]:
    """The rows also captured as a graph of one call (their stream launch over its replay)."""
    return [declared.name for declared in ROWS if "graph" in declared.submissions]


def label(name: str) -> str:
    return row(name).label


def logical_bytes_per_call(name: str, rows: int, cols: int) -> int:
    return sum(row(name).bytes(workloads.shape_name(rows, cols)))


# ---------------------------------------------------------------- the shapes and variants of a run
def sweep_grid(parameters: Parameters) -> dict[str, list[tuple[int, int]]]:
    """The sweep's two series of shapes, fixed shapes included where they fall on them:
    {"4096": 4096 x 128 i over the `sweep_4096` range, "128": 128 x N over `sweep_128` (each N once)}."""
    return {"4096": [(4096, 128 * i) for i in Steps(parameters.sweep_4096).values],
            "128": list(dict.fromkeys((128, n) for n in parameters.sweep_128))}


def sweep_shapes(parameters: Parameters) -> list[tuple[int, int]]:
    """The shapes the sweep itself measures: its grid without the fixed shapes (whose graph32 and cold figures
    stand in the sweep at those points)."""
    fixed = set(parameters.shapes)
    grid = sweep_grid(parameters)
    return [shape for shape in dict.fromkeys(grid["4096"] + grid["128"]) if shape not in fixed]


def plane_shapes(parameters: Parameters) -> list[tuple[int, int]]:
    """The plane's random points (plane.draw with the run's point count and seed). A point that is also a fixed
    shape or a sweep shape would declare its variants twice: an error naming it (the plane's seed never changes,
    so this fails at once or never)."""
    drawn = plane.draw(parameters.plane_points, parameters.plane_seed) if parameters.plane_points else []
    taken = set(parameters.shapes) | set(sweep_shapes(parameters))
    clashing = [workloads.shape_name(*shape) for shape in drawn if shape in taken]
    if clashing:
        raise ValueError(f"plane points {', '.join(clashing)} are also fixed or sweep shapes; drop them from those")
    return drawn


def device_submission(parameters: Parameters, rows: int, cols: int) -> str:
    """The submission whose warm batches give a shape's warm device time: graph32 at a fixed shape, else the
    sweep's graph of sweep_calls(rows, cols) calls."""
    return DEVICE if (rows, cols) in set(parameters.shapes) else f"graph{sweep_calls(rows, cols)}"


def all_shapes(parameters: Parameters) -> list[tuple[int, int]]:
    """The fixed shapes, then the sweep's, then the plane's."""
    return list(parameters.shapes) + sweep_shapes(parameters) + plane_shapes(parameters)


def sweep_calls(rows: int, cols: int) -> int:
    """Calls in one replay of a sweep graph: the power of two that moves about SWEEP_BYTES_PER_REPLAY of the copy's
    logical bytes, 1 to SWEEP_MAX_CALLS: every replay then keeps the GPU busy for tens of microseconds or more."""
    calls = max(1, SWEEP_BYTES_PER_REPLAY // (8 * rows * cols))
    return min(SWEEP_MAX_CALLS, 1 << (calls.bit_length() - 1))


def requested_libraries(parameters: Parameters) -> list[str]:
    known = [declared.requires.library for declared in ROWS if declared.requires.library]
    unknown = sorted(set(parameters.baselines) - set(known))
    if unknown:
        raise ValueError(f"unknown baselines {unknown}; known: {', '.join(known)}")
    return list(parameters.baselines)


def contenders(parameters: Parameters) -> list[str]:
    """The rows this run declares: ours, and the requested libraries."""
    wanted = requested_libraries(parameters)
    return [r.name for r in ROWS if r.requires.library is None or r.requires.library in wanted]


def sweep_contenders(parameters: Parameters, output: str = "sweep") -> list[str]:
    """The requested rows entering the sweep (or the plane, with output="plane")."""
    return [name for name in contenders(parameters) if output in row(name).outputs]


def calls_per_invocation(variant) -> int:
    """Calls of the contender in one invocation: a `graph<N>` replay holds N, every other submission one."""
    match = re.fullmatch(r"graph(\d+)", VariantId.parse(str(variant)).submission)
    return int(match.group(1)) if match else 1


def large(variant: VariantId) -> bool:
    """The protocol's smaller batch: a graph of many calls, or one call on a large matrix."""
    rows, cols = dims(variant.case)
    return calls_per_invocation(variant) > 1 or rows * cols >= LARGE_ELEMENTS


def fixed_outputs(declared: Row, shape: tuple[int, int], submission: str, parameters: Parameters) -> frozenset:
    """What a fixed-shape variant enters: the tables; a one-call graph the submission table; graph32 and the
    cold stream call the sweep where the shape is on its grid; the stream call the profile at a profile shape."""
    grid = sweep_grid(parameters)
    wanted = {"table"}
    wanted |= {"submission"} if submission == "graph" else set()
    wanted |= {"sweep"} if submission in (DEVICE, "stream") and shape in grid["4096"] + grid["128"] else set()
    wanted |= {"profile"} if submission == "stream" and shape in parameters.profile_shapes else set()
    return frozenset(wanted & declared.outputs)


def expand(parameters: Parameters) -> list[Variant]:
    """Every variant, with logical bytes per INVOCATION (a graph32 replay moves 32 calls' bytes): at each fixed
    shape each declared row under each of its submissions (a stream call warm and cold, a one-call graph warm and
    cold, graph32 warm); at each sweep point a graph<k> variant (warm) and a stream variant (cold) per sweep row."""
    table = []
    for rows, cols in parameters.shapes:
        for name in (n for n in contenders(parameters) if "table" in row(n).outputs):
            declared = row(name)
            for submission in declared.submissions:
                vid = VariantId(name, workloads.shape_name(rows, cols), submission)
                table.append(Variant(vid, declared, calls=calls_per_invocation(vid),
                                     outputs=fixed_outputs(declared, (rows, cols), submission, parameters),
                                     l2=("warm",) if calls_per_invocation(vid) > 1 else L2_STATES))
    for output, shapes in (("sweep", sweep_shapes(parameters)), ("plane", plane_shapes(parameters))):
        for rows, cols in shapes:
            for name in sweep_contenders(parameters, output):
                for submission, l2 in ((f"graph{sweep_calls(rows, cols)}", "warm"), ("stream", "cold")):
                    vid = VariantId(name, workloads.shape_name(rows, cols), submission)
                    table.append(Variant(vid, row(name), calls=calls_per_invocation(vid), outputs=frozenset({output}),
                                         l2=(l2,)))
    return table


# ---------------------------------------------------------------- performance targets, declared before any run
# (fixed with the chapter, before its first run): verdicts on the paired device-time medians, never asserted by tests.
COPY_RATIO_TARGET = 1.15                              # fused RMS time / copy time at most this ...
COPY_RATIO_SHAPES = ("4096x4096", "4096x16384")       # ... at these shapes
CUDNN_SPEEDUP_TARGET = 1.3                            # cuDNN time / fused plain time at least this ...
CUDNN_SPEEDUP_SHAPE = "4096x4096"                     # ... at this shape; fused plain faster than cuDNN and torch everywhere
# The sweep: each fused mode at most this many times the copy's device time at every sweep point with N >= 1024,
# and below N = 1024; fused plain faster than every library at every point (issue targets, declared before the run).
SWEEP_COPY_TARGETS = {"max_n_ge_1024": 1.10, "max_n_lt_1024": 1.25}
# The random plane, warm and cold, over its random points (declared before its first run; benchmark figures in
# headline.json, never asserted by tests): (statistic key in the plane summary, which value, at most / at least).
# Bandwidth regime: fused ÷ copy; latency regime: fused plain − copy in µs; the floor class its own worst ratio;
# libraries: the share of points where fused plain is faster (interval above 1) and the smallest library ÷ fused
# plain; the model: its median error.
PLANE_TARGETS = (
    ("fused_plain_over_copy", "geomean", "at most", 1.05), ("fused_plain_over_copy", "p90", "at most", 1.10),
    ("fused_plain_over_copy", "max", "at most", 1.25), ("fused_rms_over_copy", "geomean", "at most", 1.08),
    ("fused_rms_over_copy", "max", "at most", 1.30), ("fused_plain_minus_copy_us", "median", "at most", 0.5),
    ("fused_plain_minus_copy_us", "p90", "at most", 1.0), ("floor", "max", "at most", 1.35),
    *((f"faster_than.{lib}", "share", "at least", 0.95) for lib in LIBRARIES),
    *((f"worst_library_ratio.{lib}", "min", "at least", 0.95) for lib in LIBRARIES),
    ("model", "median", "at most", 0.10),
)

# ---------------------------------------------------------------- the fused kernel's build policy per shape
# The fused kernel's build per shape and the launch policy (the candidate of least predicted time under the
# cost model fitted on a calibration plane) live in plans.py; these names are the chapter's.
from launchlab.chapters.fusion.plans import (FEW_ROWS_REG_CHUNKS, REG_CHUNKS, REGISTER_BUDGET, UNROLL,  # noqa: E402,F401
                                             design_plan, fused_config, fused_plan, fused_tier, min_blocks, plan_kernels,
                                             row_kernel_module)
from launchlab.chapters.fusion import plans as _plans  # noqa: E402


def fused_plans(parameters: Parameters, device: dict) -> dict:
    """{shape: fused_plan} for every shape of a run: fixed, swept and the plane's."""
    return _plans.fused_plans(all_shapes(parameters), device)


CHAPTER = Chapter(
    stem="fusion", tag="ch03", title="Fusion",
    host_path=("CuPy from CPython on one non-blocking stream: RawKernel launches (row path, fused kernel), "
               "cudaMemcpyAsync (copy), cuDNN through ctypes, torch.softmax and Triton through PyTorch on the same "
               "stream (torch.cuda.ExternalStream) and memory (DLPack); device time from CUDA graphs of 32 captured "
               "calls replayed by Graph.launch (warm L2) and from single stream calls after an L2 flush and a GPU "
               "wait (cold L2)"),
    parameters=Parameters, expand=expand)
