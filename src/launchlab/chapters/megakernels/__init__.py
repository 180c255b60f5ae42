"""Chapter 4, megakernels: the tiled path as three kernels, as one cooperative persistent kernel with
grid barriers, and as one persistent kernel fed by an atomic task queue; the persistent kernels
swept over the number of worker blocks per SM; and the designs that try to win (kernels/
megakernel_designs.cu): the three kernels with programmatic dependent launch (and the same kernels
without the attribute, the control), two kernels with B folded into C (with and without PDL), a
dependency-driven persistent kernel, a thread-block cluster per row; and chapter 3's fused row kernel
on the same packed rows, the reference a reader asks about first.

Every variant runs the same A, B and C device functions (kernels/tiled.cuh) on the same buffers of
one `TiledPath` per case; only the way the work reaches the SMs differs. A design is one row (`Design`,
a declaration `Row` with the facts the chapter's tables need); `expand` crosses the designs with cases and
submissions, and adds the worker sweep.

The flow kernel (kernels/megakernel_flow.cu) is the tiled persistent design built to beat the graph: static
claims prefetched per worker, acquire/release hand-offs, B inside every C (`flow`) or by a row's last A
arrival (`flow_last`). The chain repeats the tiled step as k dependent stages (plain softmax, every stage's
output in global memory): the graph of 3 kernels a stage, the same with PDL, the flow kernel over all k stages in one
launch and the fused row kernel chained k times.

VariantIds: `<design>.<case>.<submission>`, e.g. `tiled3.balanced.graph`, `coop.ragged.stream`,
`queue.ragged.graph`, `pdl3.ragged.graph`, `pdl3_off.ragged.graph`, `tiled2_pdl.balanced.stream`,
`depend.ragged.graph`, `cluster.ragged.stream`, `fused_row.ragged.graph`; a sweep point is
`<design>_wps<k>.<case>.graph` (k worker blocks per SM), e.g. `queue_wps1.ragged.graph`; a chain variant
`<contender>_k<k>.<case>.graph` (k stages), e.g. `chain_pdl3_k16.ragged.graph`.

Outputs a variant enters: `table` (the main tables and figures: timing, speed-ups, costs, graphs), `sweep`
(the worker sweep of a persistent design), `trace` (an instrumented build traced once and held to the design's
schedule model), `sanitizer` (compute-sanitizer's child run of the design), `chain` (the chain's figures).
Graph variants of the main table are
timed with a warm and with a cold L2, stream variants and sweep points warm only.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable

import numpy as np

from launchlab.chapters.declaration import Chapter, Counts, Names, Oracle, Requires, Row, Variant
from launchlab.chapters.megakernels import chain_model, design_schedules, targets
from launchlab.chapters.megakernels.targets import CLUSTER_MAX, DESIGN_FAMILY, FLOW_FAMILY
from launchlab.measure.variant import VariantId
from launchlab.model import oracles, workloads
from launchlab.model.workloads import STAGE_KERNELS

SUBMISSIONS = ("stream", "graph")
SWEEP_SUBMISSION = "graph"        # the sweep is compared with the three-kernel graph, so it is replayed too
BASELINE_TARGET = "tiled3"        # speed-ups are the three-kernel graph's time over a variant's
BASELINE_SUBMISSION = "graph"
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck")
MAIN_OUTPUTS = frozenset({"table", "trace", "sanitizer"})
SWEEP_OUTPUTS = frozenset({"sweep", "trace"})
CHAIN_OUTPUTS = frozenset({"chain", "sanitizer"})
CHAIN_CASES = ("balanced", "ragged")  # the chain's cases, where `tiled_cases` names them
# The ragged distributions beyond the chapter's two (model/workloads.py names them where it has them): the
# three-kernel graph and the one-launch designs run on them too.
VARLEN_CASES = ("loguniform", "giant")


def known_cases(names) -> tuple[str, ...]:
    """The names model/workloads.py has a tiled case for, in order."""
    known = []
    for case in names:
        try:
            workloads.tiled_row_lengths(case)
        except ValueError:
            continue
        known.append(case)
    return tuple(known)


@dataclasses.dataclass(frozen=True)
class Parameters:
    tiled_cases: Names = Names.parse("balanced,ragged")
    varlen_cases: Names = Names.parse(",".join(VARLEN_CASES))  # cases of the varlen designs only (where workloads has them)
    fixture_seed: int = 2026
    workers_per_sm: int = 0  # persistent blocks per SM of the main variants; 0: all the occupancy API allows
    sweep_workers_per_sm: Counts = Counts.parse("1,2,4,8")  # worker blocks per SM of the sweep ("" for none)
    designs: Names = Names.parse("pdl3,tiled2,depend,cluster,fused_row,varlen,flow,chain")  # added design groups ("" for none)
    chain_stages: Counts = Counts.parse("1,4,16")  # the chain's stage counts k (needs the `chain` design group)
    sanitizer_tools: Names = Names.parse("memcheck,racecheck,synccheck")  # over every kernel ("" for none)

    def __post_init__(self):
        if not self.tiled_cases:
            raise ValueError("no tiled cases given")
        for case in self.tiled_cases + tuple(c for c in self.varlen_cases if c not in VARLEN_CASES):
            workloads.tiled_row_lengths(case)  # names an unknown case
        if any(k > chain_model.MAX_STAGES for k in self.chain_stages):
            raise ValueError(f"chain_stages above {chain_model.MAX_STAGES}: the chain's tolerance is declared for at most "
                             f"{chain_model.MAX_STAGES} stages")
        if self.workers_per_sm < 0:
            raise ValueError(f"workers_per_sm must be 0 (all resident) or positive, not {self.workers_per_sm}")
        unknown = sorted(set(self.designs) - set(design_groups()))
        if unknown:
            raise ValueError(f"unknown designs {unknown}; known: {', '.join(design_groups())}")
        unknown = sorted(set(self.sanitizer_tools) - set(SANITIZER_TOOLS))
        if unknown:
            raise ValueError(f"unknown sanitizer tools {unknown}; known: {', '.join(SANITIZER_TOOLS)}")


# --------------------------------------------------------------------------- logical bytes
# Logical bytes of one invocation: each array read and written as often as the design's algorithm says, global
# memory only. The int32 tile table, row offsets and the counters (under 5 KiB per invocation) are not counted.
X_BYTES_READ_PER_ELEMENT, Y_BYTES_WRITTEN_PER_ELEMENT, STATS_BYTES = 8, 4, 12


def _sizes(case: str):
    table = workloads.tile_table(workloads.tiled_row_lengths(case))
    return table, int(table["row_offsets"][-1]), len(table["tile_row"]), len(table["row_offsets"]) - 1


def task_bytes(case: str) -> tuple[int, int]:
    """Three kernels, coop, queue, PDL: A reads x, C reads x and writes y (12 B per element); A writes 12 B of
    statistics per tile, B reads them and writes 12 B per row, C reads its row's 12 B per tile."""
    _, elements, tiles, rows = _sizes(case)
    return (X_BYTES_READ_PER_ELEMENT * elements + 2 * STATS_BYTES * tiles,
            Y_BYTES_WRITTEN_PER_ELEMENT * elements + STATS_BYTES * (tiles + rows))


def b_in_c_bytes(case: str) -> tuple[int, int]:
    """Two kernels: no row statistics; each C tile reads all of its row's tile statistics."""
    table, elements, tiles, _ = _sizes(case)
    tiles_per_row = np.diff(table["row_first_tile"]).astype(np.int64)
    return (X_BYTES_READ_PER_ELEMENT * elements + STATS_BYTES * int((tiles_per_row ** 2).sum()),
            Y_BYTES_WRITTEN_PER_ELEMENT * elements + STATS_BYTES * tiles)


def x_on_chip_bytes(case: str) -> tuple[int, int]:
    """The dependency kernel: as task_bytes, but C reads x from the shared-memory slot its worker filled in A
    (run.py notes how many tiles had a slot)."""
    _, elements, tiles, rows = _sizes(case)
    return (X_BYTES_READ_PER_ELEMENT // 2 * elements + 2 * STATS_BYTES * tiles,
            Y_BYTES_WRITTEN_PER_ELEMENT * elements + STATS_BYTES * (tiles + rows))


def x_once_bytes(case: str) -> tuple[int, int]:
    """A cluster per row (partials through distributed shared memory) and the fused row kernel: x read once,
    y written."""
    _, elements, _, _ = _sizes(case)
    return X_BYTES_READ_PER_ELEMENT // 2 * elements, Y_BYTES_WRITTEN_PER_ELEMENT * elements


# --------------------------------------------------------------------------- error words
@dataclasses.dataclass(frozen=True)
class Words:
    """Error words (and counters) a design leaves after a run, checked exactly: `clear(target)` before a
    checked run, `read(target)` -> (found, expected, labels naming a problem) after it."""
    what: str
    read: Callable
    clear: Callable = lambda target: None


QUEUE_WORDS = Words("queue error words and counters",
                    lambda queue: (queue.words_after(), queue.expected_words(), {"queue_error": queue.error_message()}),
                    lambda queue: queue.clear_error())
# the dependency kernel's error words are zero and its self-resetting counters agree (every row at the same round,
# its arrivals that round times its tiles)
DEPENDENCY_WORDS = Words("dependency error words and counter consistency",
                         lambda target: (np.concatenate([target.error.get().astype(np.int64),
                                                         [int(target.counters_consistent())]]),
                                         np.array([0, 0, 0, 0, 1], dtype=np.int64), {}),
                         lambda target: target.reset())
# the varlen kernel's error words are zero (no piece's wait ran out) and its stamps agree with its counters
VARLEN_WORDS = Words("varlen error words and counter consistency", lambda target: (*target.words(), {}),
                     lambda target: target.reset())


# --------------------------------------------------------------------------- the designs
@dataclasses.dataclass(frozen=True, kw_only=True)
class Design(Row):
    """One way of running the task graph: a declaration Row (name, label, make, oracle, submissions, bytes,
    L2 states, outputs, requirements) with what the chapter's tables and traces need."""
    family: str                      # kernels/<family>.cu
    kernels: tuple[str, ...]         # the kernels its graph nodes name
    schedule: str | None             # the TRACE_MODELS entry whose rules its traces must meet (None: not traced)
    stream_submissions: int | None   # host submissions of one stream invocation (launches, memsets); None: per case
    grid_syncs: int                  # grid-wide synchronisations inside one invocation (boundaries, grid barriers)
    persistent: bool = False         # worker blocks loop over tasks (a worker count of its own)
    group: str | None = None         # the `designs` parameter entry that enables it (None: always run)
    one_launch: bool = False         # one kernel launch per invocation (a memset beside it allowed)
    extended: bool = False           # launched through cuLaunchKernelEx (pdl.py): its graph's edge types matter
    words: Words | None = None       # error words checked beside the output
    varlen: bool = False             # runs on the `varlen_cases` too (the baseline and the one-launch designs)
    chain: bool = False              # a chain contender: crossed with `chain_stages`, not with the worker sweep

    def __post_init__(self):
        if ("trace" in self.outputs) != (self.schedule is not None):
            raise ValueError(f"design {self.name}: a traced design needs a schedule model, and only a traced one")

    @property
    def swept(self) -> bool:
        return "sweep" in self.outputs


PACKED_ROWS = Oracle("rms_softmax_packed (float64)", oracles.rms_softmax_packed, oracles.RMS_SOFTMAX_TOLERANCE)
QUEUE_ORACLE = dataclasses.replace(PACKED_ROWS, name=PACKED_ROWS.name + ", and error word and counters = the model's (exact)")
DEPENDENCY_ORACLE = dataclasses.replace(PACKED_ROWS, name=PACKED_ROWS.name + ", and its error word (no worker gave up)")
CHAIN_ORACLE = Oracle("softmax_chain every stage (float64)", chain_model.every_stage, chain_model.CHAIN_TOLERANCE)
FLOW_KERNELS = ("flow_persistent",)
CHAIN_KERNELS = {"chain_graph3": ("tile_producer", "chain_row_combiner", "tile_consumer"), "chain_pdl3": ("chain_pdl_producer", "chain_pdl_combiner",
                                                                "chain_pdl_consumer")}
PDL3_KERNELS = ("pdl_tile_producer", "pdl_row_combiner", "pdl_tile_consumer")
TILED2_KERNELS = ("pdl_tile_producer", "combining_tile_consumer")
GRAPH_L2 = ("warm", "cold")
VARLEN_ORACLE = dataclasses.replace(PACKED_ROWS, name=PACKED_ROWS.name + ", and its error words (no piece gave up)")
VARLEN_KERNELS = ("varlen_rows_256", "varlen_rows_512")
TRACED_MAIN, UNTRACED_MAIN = MAIN_OUTPUTS, MAIN_OUTPUTS - {"trace"}
SWEPT_MAIN = MAIN_OUTPUTS | {"sweep"}


def _design(name, label, make, family, kernels, schedule, stream_submissions, grid_syncs, bytes=task_bytes,
            oracle=PACKED_ROWS, outputs=TRACED_MAIN, requires=Requires(), submissions=SUBMISSIONS, **facts) -> Design:
    return Design(name=name, label=label, make=make, oracle=oracle, submissions=submissions, bytes=bytes,
                  l2=GRAPH_L2, outputs=outputs, requires=requires, family=family, kernels=kernels,
                  schedule=schedule, stream_submissions=stream_submissions, grid_syncs=grid_syncs, **facts)


def _chain(name, label, make, family, kernels, stage_submissions, bytes=task_bytes, **facts) -> Design:
    """A chain contender: graph replays only (the chain compares device time), every stage validated."""
    return _design(name, label, make, family, kernels, None, stage_submissions, 0, bytes=bytes, oracle=CHAIN_ORACLE,
                   outputs=CHAIN_OUTPUTS, submissions=("graph",), group="chain", chain=True, **facts)


# The rows by name, in table order. A new design is one entry here (and, where its schedule is new, a
# trace_models.TRACE_MODELS entry). Only the PDL launches and the clusters need compute capability 9.0: below
# it DESIGN_FAMILY's griddepcontrol instructions compile to nothing (kernels/arch.cuh), so its kernels launched
# without the PDL attribute (pdl3_off, tiled2, depend) run there as they do on 9.0.
DESIGN: dict[str, Design] = {d.name: d for d in (
    _design("tiled3", "3 kernels", targets.make_tiled3, "tiled_softmax", STAGE_KERNELS, "three_kernel", 3, 2,
            varlen=True),
    _design("coop", "cooperative", targets.make_coop, "megakernel", ("coop_phases",), "cooperative", 1, 2,
            outputs=SWEPT_MAIN, persistent=True, one_launch=True),
    # coop and queue stay on the tiled cases: on loguniform and giant their traced builds left task records
    # unwritten (failed run 20261201T193731Z-ch04, evidence/failed/NOTES.md), not yet explained
    _design("queue", "task queue", targets.make_queue, "megakernel", ("queue_persistent",), "queue", 2, 0,
            oracle=QUEUE_ORACLE, outputs=SWEPT_MAIN, persistent=True, one_launch=True, words=QUEUE_WORDS),
    _design("pdl3", "3 kernels, PDL", targets.make_pdl3, DESIGN_FAMILY, PDL3_KERNELS, "pdl3", 3, 2,
            requires=Requires(pdl=True), group="pdl3", extended=True),
    _design("pdl3_off", "3 kernels, PDL kernels without the attribute", targets.make_pdl3_off, DESIGN_FAMILY,
            PDL3_KERNELS, "pdl3", 3, 2, group="pdl3", extended=True),
    _design("tiled2", "2 kernels (B in C)", targets.make_tiled2, DESIGN_FAMILY, TILED2_KERNELS, "pdl2", 2, 1,
            bytes=b_in_c_bytes, group="tiled2", extended=True),
    _design("tiled2_pdl", "2 kernels (B in C), PDL", targets.make_tiled2_pdl, DESIGN_FAMILY, TILED2_KERNELS, "pdl2",
            2, 1, bytes=b_in_c_bytes, requires=Requires(pdl=True), group="tiled2", extended=True),
    _design("depend", "dependency-driven kernel", targets.make_depend, DESIGN_FAMILY, ("dependency_persistent",),
            "dependency", 1, 0, bytes=x_on_chip_bytes, oracle=DEPENDENCY_ORACLE, persistent=True,
            group="depend", one_launch=True, words=DEPENDENCY_WORDS, varlen=True),
    _design("cluster", "cluster per row", targets.make_cluster, DESIGN_FAMILY, ("cluster_rows",), "cluster", None, 0,
            bytes=x_once_bytes, requires=Requires(clusters=True), group="cluster", extended=True, varlen=True),
    _design("fused_row", "fused row kernel (chapter 3)", targets.make_fused_row, "fused_softmax",
            ("fused_rms_softmax_packed",), None, 1, 0, bytes=x_once_bytes, outputs=UNTRACED_MAIN, group="fused_row",
            one_launch=True, varlen=True),
    _design("varlen", "varlen pieces (one launch)", targets.make_varlen, "varlen_softmax", VARLEN_KERNELS, None, 1, 0,
            bytes=x_once_bytes, oracle=VARLEN_ORACLE, outputs=UNTRACED_MAIN, group="varlen", one_launch=True,
            words=VARLEN_WORDS, varlen=True),
    _design("flow", "flow kernel (B in C)", targets.make_flow, FLOW_FAMILY, FLOW_KERNELS, "flow", 1, 0,
            bytes=x_on_chip_bytes, oracle=DEPENDENCY_ORACLE, persistent=True, group="flow", one_launch=True,
            words=DEPENDENCY_WORDS, varlen=True),
    _design("flow_last", "flow kernel (B by the last A)", targets.make_flow_last, FLOW_FAMILY, FLOW_KERNELS,
            "dependency", 1, 0, bytes=x_on_chip_bytes, oracle=DEPENDENCY_ORACLE, persistent=True, group="flow",
            one_launch=True, words=DEPENDENCY_WORDS, varlen=True),
    _chain("chain_graph3", "graph of 3 kernels a stage", targets.make_chain_graph3, "chain_tiled", CHAIN_KERNELS["chain_graph3"],
           3),
    _chain("chain_pdl3", "graph of 3 kernels a stage, PDL", targets.make_chain_pdl3, "chain_flow", CHAIN_KERNELS["chain_pdl3"], 3,
           requires=Requires(pdl=True), extended=True),
    _chain("chain_flow", "flow kernel, whole chain", targets.make_chain_flow, "chain_flow", FLOW_KERNELS, 1,
           persistent=True, one_launch=True, words=DEPENDENCY_WORDS),
    _chain("chain_fused", "fused row kernel chained", targets.make_chain_fused, "fused_softmax_chain",
           ("fused_softmax_packed",), 1, bytes=x_once_bytes),
)}
SWEEP_TARGET = re.compile(r"^(?P<design>[A-Za-z0-9_-]+?)_wps(?P<workers_per_sm>[0-9]+)$")
CHAIN_TARGET = re.compile(r"^(?P<design>chain_[A-Za-z0-9]+)_k(?P<stages>[0-9]+)$")
PDL_BOUNDARIES = 2  # A->B and B->C


def design_groups() -> tuple[str, ...]:
    """What the `designs` parameter may name."""
    return tuple(dict.fromkeys(d.group for d in DESIGN.values() if d.group))


def active_designs(parameters: Parameters) -> list[Design]:
    """The designs of a run: those always run, then those `designs` names."""
    return [d for d in DESIGN.values() if d.group is None or d.group in parameters.designs]


def sweep_points(parameters: Parameters) -> list[int]:
    """Worker blocks per SM of the sweep: distinct, in increasing order."""
    return sorted(set(parameters.sweep_workers_per_sm))


def sweep_variant(target: str, case: str, workers_per_sm: int) -> VariantId:
    return VariantId(f"{target}_wps{workers_per_sm}", case, SWEEP_SUBMISSION)


def chain_variant(target: str, case: str, stages: int) -> VariantId:
    return VariantId(f"{target}_k{stages}", case, BASELINE_SUBMISSION)


def expand(parameters: Parameters) -> list[Variant]:
    designs = active_designs(parameters)
    stages = sorted(set(parameters.chain_stages)) if any(d.chain for d in designs) else []
    return variants_of(designs, parameters.tiled_cases, sweep_points(parameters), known_cases(parameters.varlen_cases),
                       stages)


def variants_of(designs, cases, sweep, varlen_cases=(), chain_stages=()) -> list[Variant]:
    """Every design on every case, from the stream (warm) and as a graph (warm and cold), the varlen designs on
    `varlen_cases` too; then every swept design at every worker count per SM of `sweep`, as a graph (warm), on
    `cases`; then every chain contender at every stage count of `chain_stages` on the chain's cases, as a graph
    (warm and cold)."""
    tables = [d for d in designs if not d.chain]
    main = [Variant(VariantId(d.name, case, submission), d, outputs=d.outputs - {"sweep"},
                    l2=None if submission == BASELINE_SUBMISSION else ("warm",))
            for case in tuple(cases) + tuple(c for c in varlen_cases if c not in cases)
            for d in tables if case in cases or d.varlen for submission in d.submissions]
    swept = [Variant(sweep_variant(d.name, case, k), d, outputs=SWEEP_OUTPUTS, l2=("warm",))
             for case in cases for d in tables if d.swept for k in sweep]
    chained = [Variant(chain_variant(d.name, case, k), d, calls=k)
               for case in cases if case in CHAIN_CASES for k in chain_stages for d in designs if d.chain]
    return main + swept + chained


def design_of(vid: VariantId | str) -> tuple[Design, int | None]:
    """The design of a variant and its swept worker blocks per SM (None: a main or chain variant)."""
    target = VariantId.parse(str(vid)).target
    if match := SWEEP_TARGET.match(target):
        return DESIGN[match["design"]], int(match["workers_per_sm"])
    if match := CHAIN_TARGET.match(target):
        return DESIGN[match["design"]], None
    return DESIGN[target], None


def stages_of(vid: VariantId | str) -> int:
    """The chain stages of a variant (1 for every variant outside the chain)."""
    match = CHAIN_TARGET.match(VariantId.parse(str(vid)).target)
    return int(match["stages"]) if match else 1


def label(vid: VariantId | str) -> str:
    """'task queue, graph', 'task queue, graph, 2 blocks/SM' or 'graph of 3 kernels a stage, PDL, k = 16'."""
    vid = VariantId.parse(str(vid))
    design, workers_per_sm = design_of(vid)
    if design.chain:
        return f"{design.label}, k = {stages_of(vid)}"
    text = f"{design.label}, {vid.submission}"
    return text if workers_per_sm is None else f"{text}, {workers_per_sm} blocks/SM"


def cluster_plan(case: str):
    return design_schedules.cluster_plan(workloads.tiled_row_lengths(case), CLUSTER_MAX)


def stream_submissions(design: Design, case: str) -> int:
    """Host submissions of one stream invocation; the cluster design makes a launch per cluster-size class."""
    if design.stream_submissions is None:
        return len(cluster_plan(case).classes)
    return design.stream_submissions


def is_one_launch(design: Design, case: str) -> bool:
    """Counted among the one-launch designs on this case (the cluster design only where it is one launch)."""
    return design.one_launch or (design.name == "cluster" and stream_submissions(design, case) == 1)


def pdl_pair(case: str) -> tuple[VariantId, VariantId]:
    """(control, PDL) graph variants whose difference / 2 boundaries is the PDL saving per boundary."""
    return VariantId("pdl3_off", case, "graph"), VariantId("pdl3", case, "graph")


def baseline(case: str) -> VariantId:
    return VariantId(BASELINE_TARGET, case, BASELINE_SUBMISSION)


HOST_PATH = ("CuPy from CPython on one non-blocking stream: RawKernel launches for the three kernels and the fused "
             "row kernel, and for the varlen kernel after its own occupancy check; cuLaunchCooperativeKernel through CuPy (which queries the occupancy API on every call) for "
             "the cooperative and the dependency-driven kernels; an ordinary launch after the occupancy API's check for the "
             "flow kernel; cudaMemsetAsync of the queue counters then a launch "
             "for the queue; cuLaunchKernelEx (ctypes or cuda-bindings, chapters/megakernels/pdl.py) with the "
             "programmatic-stream-serialization and cluster-dimension attributes for the PDL, two-kernel and cluster "
             "designs; Graph.launch for every graph")

CHAPTER = Chapter(stem="megakernels", tag="ch04", title="Megakernels", host_path=HOST_PATH,
                  parameters=Parameters, expand=expand)
