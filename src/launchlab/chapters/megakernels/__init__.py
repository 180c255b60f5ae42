"""Chapter 4, megakernels: the tiled path as three kernels, as one cooperative persistent kernel with
grid barriers, and as one persistent kernel fed by an atomic task queue; the persistent kernels
swept over the number of worker blocks per SM; and the designs that try to win (kernels/
megakernel_designs.cu): the three kernels with programmatic dependent launch (and the same kernels
without the attribute, the control), two kernels with B folded into C (with and without PDL), a
dependency-driven persistent kernel, a thread-block cluster per row; and chapter 3's fused row kernel
on the same packed rows, the reference a reader asks about first.

Every variant runs the same A, B and C device functions (kernels/tiled.cuh) on the same buffers of
one `TiledPath` per case; only the way the work reaches the SMs differs. A design is one row of
DESIGNS; `variants` crosses designs with cases and submissions, and adds the worker sweep.

VariantIds: `<design>.<case>.<submission>`, e.g. `tiled3.balanced.graph`, `coop.ragged.stream`,
`queue.ragged.graph`, `pdl3.ragged.graph`, `pdl3_off.ragged.graph`, `tiled2_pdl.balanced.stream`,
`depend.ragged.graph`, `cluster.ragged.stream`, `fused_row.ragged.graph`; a sweep point is
`<design>_wps<k>.<case>.graph` (k worker blocks per SM), e.g. `queue_wps1.ragged.graph`.
"""
from __future__ import annotations

import dataclasses
import re
import typing

import numpy as np

from launchlab.chapters.declaration import Chapter, VariantSpec
from launchlab.measure.variant import VariantId
from launchlab.chapters.megakernels import design_schedules, schedules
from launchlab.model import workloads
from launchlab.model.workloads import STAGE_KERNELS


SUBMISSIONS = ("stream", "graph")
SWEEP_SUBMISSION = "graph"        # the sweep is compared with the three-kernel graph, so it is replayed too
BASELINE_TARGET = "tiled3"        # speed-ups are the three-kernel graph's time over a variant's
BASELINE_SUBMISSION = "graph"


@dataclasses.dataclass(frozen=True)
class Parameters:
    tiled_cases: str = "balanced,ragged"
    fixture_seed: int = 2026
    workers_per_sm: int = 0               # persistent blocks per SM of the main variants; 0: all the occupancy API allows
    sweep_workers_per_sm: str = "1,2,4,8"  # blocks per SM of the worker sweep ("" for none)
    designs: str = "pdl3,tiled2,depend,cluster,fused_row"  # the added designs to run (DESIGN_GROUPS; "" for none)
    sanitizer_tools: str = "memcheck,racecheck,synccheck"  # compute-sanitizer tools over every kernel ("" for none)


@dataclasses.dataclass(frozen=True)
class Design:
    """One way of running the task graph. A new design (another persistent kernel, PDL, clusters) is a
    row here, a Target factory in run._target_factories and, where its schedule is new, a TRACE_MODELS entry."""
    target: str                 # VariantId target
    label: str                  # readable name in tables and figures
    builder: str                # the Target class that runs it (gpu/targets.py, gpu/persistent.py)
    family: str                 # kernels/<family>.cu
    kernels: tuple[str, ...]    # the kernels its graph nodes name
    schedule: str               # the TRACE_MODELS entry whose rules its traces must meet
    stream_submissions: int | None  # host submissions of one stream invocation (launches, memsets); None: per case
    grid_syncs: int             # grid-wide synchronisations inside one invocation (kernel boundaries, grid barriers)
    bytes_rule: str = "tasks"   # how logical_bytes counts it (BYTES_RULES)
    swept: bool = False         # run over sweep_workers_per_sm too
    persistent: bool = False    # worker blocks loop over tasks (a worker count of its own)
    group: str | None = None    # the `designs` parameter entry that enables it (None: always run)
    one_launch: bool = False    # one kernel launch per invocation (a memset beside it allowed)
    extended: bool = False      # launched through cuLaunchKernelEx (gpu/pdl.py): its graph's edge types matter


DESIGN_FAMILY = "megakernel_designs"
PDL3_KERNELS = ("pdl_tile_producer", "pdl_row_combiner", "pdl_tile_consumer")
TILED2_KERNELS = ("pdl_tile_producer", "combining_tile_consumer")
DESIGNS = (
    Design("tiled3", "3 kernels", "TiledPath", "tiled_softmax", STAGE_KERNELS, "three_kernel", 3, 2),
    Design("coop", "cooperative", "CooperativePhases", "megakernel", ("coop_phases",), "cooperative", 1, 2,
           swept=True, persistent=True, one_launch=True),
    Design("queue", "task queue", "TaskQueue", "megakernel", ("queue_persistent",), "queue", 2, 0,
           swept=True, persistent=True, one_launch=True),
    Design("pdl3", "3 kernels, PDL", "PdlThreeKernels(programmatic=True)", DESIGN_FAMILY, PDL3_KERNELS, "pdl3", 3, 2,
           group="pdl3", extended=True),
    Design("pdl3_off", "3 kernels, PDL kernels without the attribute", "PdlThreeKernels(programmatic=False)",
           DESIGN_FAMILY, PDL3_KERNELS, "pdl3", 3, 2, group="pdl3", extended=True),
    Design("tiled2", "2 kernels (B in C)", "TwoKernels(programmatic=False)", DESIGN_FAMILY, TILED2_KERNELS, "pdl2",
           2, 1, bytes_rule="b_in_c", group="tiled2", extended=True),
    Design("tiled2_pdl", "2 kernels (B in C), PDL", "TwoKernels(programmatic=True)", DESIGN_FAMILY, TILED2_KERNELS,
           "pdl2", 2, 1, bytes_rule="b_in_c", group="tiled2", extended=True),
    Design("depend", "dependency-driven persistent", "DependencyPersistent", DESIGN_FAMILY, ("dependency_persistent",),
           "dependency", 1, 0, bytes_rule="x_on_chip", persistent=True, group="depend", one_launch=True),
    Design("cluster", "cluster per row", "ClusterRows", DESIGN_FAMILY, ("cluster_rows",), "cluster", None, 0,
           bytes_rule="cluster", group="cluster", extended=True),
    Design("fused_row", "fused row kernel (chapter 3)", "FusedPackedRows", "fused_softmax",
           ("fused_rms_softmax_packed",), None, 1, 0, bytes_rule="fused", group="fused_row", one_launch=True),
)
DESIGN = {d.target: d for d in DESIGNS}
DESIGN_GROUPS = tuple(dict.fromkeys(d.group for d in DESIGNS if d.group))  # what `designs` may name
CLUSTER_MAX = 8  # blocks per cluster (portable); a row of more tiles shares them out
# Chapter 3's build of the fused kernel for the 4096x16384 class (its shared-memory tier, BLOCK 512):
# rows of 4,096 and 8,192 elements stay in registers, a row of 36,864 in dynamic shared memory.
FUSED_ROW_CLASS = (4096, 16384)


@dataclasses.dataclass(frozen=True)
class TraceModel:
    """What a schedule's traces are held to (`check`: {"passed", "checks"}) and summarised by (`summary`:
    checks, overlap counts, waits, the model's replay), both called as f(trace, graph, workers, context);
    `context` holds what a design's model needs beyond the graph (trace_context: its task lists or plan)."""
    check: typing.Callable
    summary: typing.Callable


def _schedules_model(schedule: str) -> TraceModel:
    return TraceModel(lambda trace, graph, workers, context: schedules.check_trace(trace, graph, schedule, workers),
                      lambda trace, graph, workers, context: schedules.trace_summary(trace, graph, schedule, workers))


def _design_summary(trace, graph, design: str, slots: int, context: dict) -> dict:
    """design_schedules' summary, with the overlap count and span under the names the queue's summary uses."""
    summary = design_schedules.trace_summary(trace, graph, design, slots, **context)
    if "span_ns" in summary:
        summary.update({"b_before_last_a": schedules.b_before_last_a(trace, graph), "b_tasks": graph.rows,
                        "makespan_ns": summary["span_ns"]})
    return summary


def _design_model(design: str) -> TraceModel:
    return TraceModel(lambda trace, graph, workers, context: design_schedules.check_design_trace(
                          trace, graph, design, context.get("lists")),
                      lambda trace, graph, workers, context: _design_summary(trace, graph, design, workers, context))


# schedule -> its model; a design with a schedule of its own adds an entry (schedules.py has the first
# three, design_schedules.py the designs of kernels/megakernel_designs.cu)
TRACE_MODELS = {**{schedule: _schedules_model(schedule) for schedule in schedules.SCHEDULES},
                **{design: _design_model(design) for design in design_schedules.DESIGNS}}


def trace_context(arrays) -> dict:
    """A saved trace's model context: the dependency kernel's task lists, the cluster plan (else nothing)."""
    if "lists_first" in arrays:
        return {"lists": design_schedules.WorkerLists(np.asarray(arrays["lists_first"]),
                                                      np.asarray(arrays["lists_tasks"]), np.asarray(arrays["lists_slot"]))}
    if "plan_lengths" in arrays:
        return {"plan": design_schedules.cluster_plan(np.asarray(arrays["plan_lengths"]), int(arrays["plan_max_cluster"]))}
    return {}


def context_arrays(target) -> dict:
    """What trace_context needs, from a design's Target, for the trace file."""
    if getattr(target, "lists", None) is not None:
        return {"lists_first": target.lists.first, "lists_tasks": target.lists.tasks, "lists_slot": target.lists.slot}
    if getattr(target, "plan", None) is not None:
        return {"plan_lengths": np.asarray(target.plan.lengths), "plan_max_cluster": np.int64(target.max_cluster)}
    return {}
SWEEP_TARGET = re.compile(r"^(?P<design>[A-Za-z0-9_-]+?)_wps(?P<per_sm>[0-9]+)$")

# Logical bytes of one invocation (BYTES_RULES): each array read and written as often as the design's
# algorithm says, global memory only. "tasks" (three kernels, coop, queue, PDL): A reads x, C reads x and
# writes y (12 B per element); A writes 12 B of statistics per tile, B reads them and writes 12 B per row,
# C reads its row's 12 B per tile. "b_in_c": no row statistics; each C tile reads all of its row's tile
# statistics. "x_on_chip" (dependency kernel): as "tasks", but C reads x from the shared-memory slot its
# worker filled in A (run.py notes how many tiles had a slot). "cluster": x read once, y written, partials
# through distributed shared memory. "fused": x read once, y written. The int32 tile table, row offsets and
# the counters (under 5 KiB per invocation) are not counted.
X_BYTES_READ_PER_ELEMENT, Y_BYTES_WRITTEN_PER_ELEMENT, STATS_BYTES = 8, 4, 12
BYTES_RULES = ("tasks", "b_in_c", "x_on_chip", "cluster", "fused")


def parse_cases(text: str) -> list[str]:
    cases = [c.strip() for c in str(text).split(",") if c.strip()]
    if not cases:
        raise ValueError("no tiled cases given")
    for case in cases:
        workloads.tiled_row_lengths(case)  # names an unknown case
    return cases


def parse_sweep(text: str) -> list[int]:
    """Blocks per SM of the worker sweep: distinct positive integers, in increasing order."""
    values = sorted({int(v) for v in str(text).split(",") if v.strip()})
    if any(v < 1 for v in values):
        raise ValueError(f"sweep_workers_per_sm needs positive blocks per SM, not {text!r}")
    return values


def logical_bytes(lengths, rule: str = "tasks") -> tuple[int, int]:
    """(bytes read, bytes written) of one invocation on rows of these lengths, counted by `rule`."""
    table = workloads.tile_table(lengths)
    elements, tiles, rows = int(table["row_offsets"][-1]), len(table["tile_row"]), len(lengths)
    x_once = X_BYTES_READ_PER_ELEMENT // 2 * elements
    if rule == "tasks":
        return (X_BYTES_READ_PER_ELEMENT * elements + 2 * STATS_BYTES * tiles,
                Y_BYTES_WRITTEN_PER_ELEMENT * elements + STATS_BYTES * (tiles + rows))
    if rule == "b_in_c":
        tiles_per_row = np.diff(table["row_first_tile"]).astype(np.int64)
        return (X_BYTES_READ_PER_ELEMENT * elements + STATS_BYTES * int((tiles_per_row ** 2).sum()),
                Y_BYTES_WRITTEN_PER_ELEMENT * elements + STATS_BYTES * tiles)
    if rule == "x_on_chip":
        return (x_once + 2 * STATS_BYTES * tiles, Y_BYTES_WRITTEN_PER_ELEMENT * elements + STATS_BYTES * (tiles + rows))
    if rule in ("cluster", "fused"):
        return x_once, Y_BYTES_WRITTEN_PER_ELEMENT * elements
    raise ValueError(f"unknown bytes rule {rule!r}; expected one of {BYTES_RULES}")


def parse_designs(text: str) -> list[str]:
    """The `designs` parameter: added design groups to run, in DESIGN_GROUPS order."""
    wanted = {d.strip() for d in str(text).split(",") if d.strip()}
    unknown = sorted(wanted - set(DESIGN_GROUPS))
    if unknown:
        raise ValueError(f"unknown designs {unknown}; known: {', '.join(DESIGN_GROUPS)}")
    return [g for g in DESIGN_GROUPS if g in wanted]


SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")


def parse_tools(text: str) -> list[str]:
    tools = [t.strip() for t in str(text).split(",") if t.strip()]
    unknown = sorted(set(tools) - set(SANITIZER_TOOLS))
    if unknown:
        raise ValueError(f"unknown sanitizer tools {unknown}; known: {', '.join(SANITIZER_TOOLS)}")
    return tools


def active_designs(parameters: Parameters) -> list[Design]:
    """The designs of a run: the three always, then those `designs` names."""
    groups = set(parse_designs(parameters.designs))
    return [d for d in DESIGNS if d.group is None or d.group in groups]


def cluster_plan(case: str):
    return design_schedules.cluster_plan(workloads.tiled_row_lengths(case), CLUSTER_MAX)


def stream_submissions(design: Design, case: str) -> int:
    """Host submissions of one stream invocation; the cluster design makes a launch per cluster-size class."""
    if design.stream_submissions is None:
        return len(cluster_plan(case).classes)
    return design.stream_submissions


def is_one_launch(design: Design, case: str) -> bool:
    """Counted among the one-launch designs on this case (the cluster design only where it is one launch)."""
    return design.one_launch or (design.target == "cluster" and stream_submissions(design, case) == 1)


def pdl_pair(case: str) -> tuple[VariantId, VariantId]:
    """(control, PDL) graph variants whose difference / 2 boundaries is the PDL saving per boundary."""
    return VariantId("pdl3_off", case, "graph"), VariantId("pdl3", case, "graph")


PDL_BOUNDARIES = 2  # A->B and B->C


def baseline(case: str) -> VariantId:
    return VariantId(BASELINE_TARGET, case, BASELINE_SUBMISSION)


def sweep_variant(target: str, case: str, per_sm: int) -> VariantId:
    return VariantId(f"{target}_wps{per_sm}", case, SWEEP_SUBMISSION)


def design_of(vid: VariantId | str) -> tuple[Design, int | None]:
    """The design of a variant and its swept blocks per SM (None: a main variant)."""
    target = VariantId.parse(str(vid)).target
    if match := SWEEP_TARGET.match(target):
        return DESIGN[match["design"]], int(match["per_sm"])
    return DESIGN[target], None


def label(vid: VariantId | str) -> str:
    """'task queue, graph' or 'task queue, graph, 2 blocks/SM'."""
    vid = VariantId.parse(str(vid))
    design, per_sm = design_of(vid)
    text = f"{design.label}, {vid.submission}"
    return text if per_sm is None else f"{text}, {per_sm} blocks/SM"


def main_variants(parameters: Parameters) -> list[VariantId]:
    return [VariantId(d.target, case, s) for case in parse_cases(parameters.tiled_cases)
            for d in active_designs(parameters) for s in SUBMISSIONS]


def cold_variants(parameters: Parameters) -> list[VariantId]:
    """The cold-L2 measurement: every design's graph variant."""
    return [v for v in main_variants(parameters) if v.submission == BASELINE_SUBMISSION]


def sweep_variants(parameters: Parameters) -> list[VariantId]:
    return [sweep_variant(d.target, case, k) for case in parse_cases(parameters.tiled_cases) for d in DESIGNS
            if d.swept for k in parse_sweep(parameters.sweep_workers_per_sm)]


def _builder(vid: VariantId) -> str:
    design, per_sm = design_of(vid)
    text = design.builder if vid.submission == "stream" else f"GraphReplay({design.builder})"
    return text if per_sm is None else f"{text}, {per_sm} blocks/SM"


def variants(parameters: Parameters) -> list[VariantSpec]:
    oracle = "rms_softmax_packed (float64)"
    table = []
    for vid in main_variants(parameters) + sweep_variants(parameters):
        design, _ = design_of(vid)
        check = oracle + (", and error word and counters = the model's (exact)" if design.target == "queue" else "")
        check += ", and its error word (no worker gave up)" if design.target == "depend" else ""
        table.append(VariantSpec(vid, _builder(vid), check,
                                 *logical_bytes(workloads.tiled_row_lengths(vid.case), design.bytes_rule)))
    return table


HOST_PATH = ("CuPy from CPython on one non-blocking stream: RawKernel launches for the three kernels and the fused "
             "row kernel; cuLaunchCooperativeKernel through CuPy (which queries the occupancy API on every call) for "
             "the cooperative and the dependency-driven kernels; cudaMemsetAsync of the queue counters then a launch "
             "for the queue; cuLaunchKernelEx (ctypes or cuda-bindings, gpu/pdl.py) with the programmatic-stream-"
             "serialization and cluster-dimension attributes for the PDL, two-kernel and cluster designs; "
             "Graph.launch for every graph")

CHAPTER = Chapter(stem="megakernels", tag="ch04", title="Megakernels", host_path=HOST_PATH,
                  parameters=Parameters, expand=variants)
