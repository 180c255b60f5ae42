"""Chapter 4, megakernels: the tiled path as three kernels, as one cooperative persistent kernel with
grid barriers, and as one persistent kernel fed by an atomic task queue; and the persistent kernels
swept over the number of worker blocks per SM.

Every variant runs the same A, B and C device functions (kernels/tiled.cuh) on the same buffers of
one `TiledPath` per case; only the way the work reaches the SMs differs. A design is one row of
DESIGNS; `variants` crosses designs with cases and submissions, and adds the worker sweep.

VariantIds: `<design>.<case>.<submission>`, e.g. `tiled3.balanced.graph`, `coop.ragged.stream`,
`queue.ragged.graph`; a sweep point is `<design>_wps<k>.<case>.graph` (k worker blocks per SM),
e.g. `queue_wps1.ragged.graph`.
"""
from __future__ import annotations

import dataclasses
import re
import typing

from launchlab.chapters.declaration import Chapter, VariantSpec
from launchlab.measure.variant import VariantId
from launchlab.model import schedules, workloads

STAGE_KERNELS = ("tile_producer", "row_combiner", "tile_consumer")  # gpu/targets.py's, without importing CuPy
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
    stream_submissions: int     # host submissions of one stream invocation (launches, memsets)
    swept: bool = False         # run over sweep_workers_per_sm too
    persistent: bool = False    # worker blocks loop over tasks (a worker count of its own)


DESIGNS = (
    Design("tiled3", "3 kernels", "TiledPath", "tiled_softmax", STAGE_KERNELS, "three_kernel", 3),
    Design("coop", "cooperative", "CooperativePhases", "megakernel", ("coop_phases",), "cooperative", 1,
           swept=True, persistent=True),
    Design("queue", "task queue", "TaskQueue", "megakernel", ("queue_persistent",), "queue", 2,
           swept=True, persistent=True),
)
DESIGN = {d.target: d for d in DESIGNS}


@dataclasses.dataclass(frozen=True)
class TraceModel:
    """What a schedule's traces are held to (`check`: {"passed", "checks"}) and summarised by (`summary`:
    checks, overlap counts, waits, the model's replay), both called as f(trace, graph, workers)."""
    check: typing.Callable
    summary: typing.Callable


def _schedules_model(schedule: str) -> TraceModel:
    return TraceModel(lambda trace, graph, workers: schedules.check_trace(trace, graph, schedule, workers),
                      lambda trace, graph, workers: schedules.trace_summary(trace, graph, schedule, workers))


# schedule -> its model; a design with a schedule of its own adds an entry (model/schedules.py has these three)
TRACE_MODELS = {schedule: _schedules_model(schedule) for schedule in schedules.SCHEDULES}
SWEEP_TARGET = re.compile(r"^(?P<design>[A-Za-z0-9_-]+?)_wps(?P<per_sm>[0-9]+)$")

# Logical bytes of one invocation, the same in every design (they differ in how work reaches the SMs,
# not in what it must move): A reads x, C reads x and writes y (12 B per element); A writes 12 B of
# statistics per tile, B reads them and writes 12 B per row, C reads its row's 12 B per tile. The
# int32 tile table and the queue's counters (under 5 KiB per invocation) are not counted.
X_BYTES_READ_PER_ELEMENT, Y_BYTES_WRITTEN_PER_ELEMENT, STATS_BYTES = 8, 4, 12


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


def logical_bytes(lengths) -> tuple[int, int]:
    """(bytes read, bytes written) of one invocation on rows of these lengths."""
    table = workloads.tile_table(lengths)
    elements, tiles, rows = int(table["row_offsets"][-1]), len(table["tile_row"]), len(lengths)
    read = X_BYTES_READ_PER_ELEMENT * elements + 2 * STATS_BYTES * tiles
    written = Y_BYTES_WRITTEN_PER_ELEMENT * elements + STATS_BYTES * (tiles + rows)
    return read, written


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
    return [VariantId(d.target, case, s) for case in parse_cases(parameters.tiled_cases) for d in DESIGNS
            for s in SUBMISSIONS]


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
        table.append(VariantSpec(vid, _builder(vid), check, *logical_bytes(workloads.tiled_row_lengths(vid.case))))
    return table


HOST_PATH = ("CuPy from CPython on one non-blocking stream: RawKernel launches for the three kernels; "
             "cuLaunchCooperativeKernel through CuPy (which queries the occupancy API on every call) for the "
             "cooperative kernel; cudaMemsetAsync of the queue counters then a launch for the queue; Graph.launch "
             "for every graph")

CHAPTER = Chapter(stem="megakernels", tag="ch04", title="Megakernels", host_path=HOST_PATH,
                  parameters=Parameters, variants=variants)
