"""Chapter 4 on the GPU: validate every variant, time them warm in one measurement, validate again,
then trace each one in an instrumented build and hold the traces to the schedule models' rules."""
from __future__ import annotations

import numpy as np

from launchlab.chapters.megakernels import (DESIGN, DESIGNS, TRACE_MODELS, design_of, parse_cases, parse_sweep,
                                            sweep_variant)
from launchlab.measure.protocol import Measured
from launchlab.measure.variant import VariantId
from launchlab.model import oracles, schedules, workloads


def run(session) -> None:
    from launchlab.gpu import persistent

    parameters, stream = session.parameters, session.backend.stream
    cases, sweep = parse_cases(parameters.tiled_cases), parse_sweep(parameters.sweep_workers_per_sm)
    modules = build_modules(session, traced=False)
    fixtures = Fixtures(parameters.fixture_seed)
    timed = {}
    for case in cases:
        timed.update(case_variants(modules, case, parameters.workers_per_sm, sweep, stream))
    note_grids(session, modules, timed)
    session.note("wait_limit_ns", persistent.WAIT_LIMIT_NS)

    for index in range(workloads.FIXTURES_BEFORE_TIMING):
        for vid, variant in timed.items():
            validate(session, vid, variant, fixtures, index, "before")
    session.require_passed("before timing")

    session.measure("warm", [Measured(vid, v.invoke, launches=v.submissions) for vid, v in timed.items()])
    check_queues_after_timing(session, timed)  # the error words are sticky: a worker that gave up shows here
    for vid, variant in timed.items():
        validate(session, vid, variant, fixtures, workloads.HELD_OUT_FIXTURE, "after")
    session.require_passed("after timing")
    write_graphs(session, timed)

    trace_all(session, cases, sweep, fixtures, timed)
    session.require_passed("traces")


# --------------------------------------------------------------------------- targets
def build_modules(session, traced: bool) -> dict:
    """{family: BuiltModule} for every design's kernels (the traced builds with -DLAUNCHLAB_TRACE)."""
    modules = {}
    for family in dict.fromkeys(d.family for d in DESIGNS):
        kernels = tuple(k for d in DESIGNS if d.family == family for k in d.kernels)
        label = f"{family}_traced" if traced else family
        modules[family] = session.build(label, family, kernels, {"LAUNCHLAB_TRACE": None} if traced else None)
    return modules


def _target_factories():
    """design target -> (modules, the case's TiledPath, blocks per SM) -> Target on the path's buffers."""
    from launchlab.gpu import persistent

    return {
        "tiled3": lambda modules, path, per_sm: path,
        "coop": lambda modules, path, per_sm: persistent.CooperativePhases(modules["megakernel"], path, per_sm),
        "queue": lambda modules, path, per_sm: persistent.TaskQueue(modules["megakernel"], path, per_sm),
    }


def case_variants(modules, case: str, workers_per_sm: int, sweep, stream, lengths=None) -> dict:
    """{VariantId: Target or GraphReplay} of one case, all on one TiledPath's buffers: each design from
    the stream and replayed as a graph, and each swept design at every swept blocks-per-SM, as a graph.
    `lengths` replaces the case's rows (tests)."""
    from launchlab.gpu.capture import GraphReplay
    from launchlab.gpu.targets import TiledPath

    path = TiledPath(modules["tiled_softmax"], workloads.tiled_row_lengths(case) if lengths is None else lengths)
    make = _target_factories()
    variants = {}
    for design in DESIGNS:
        target = make[design.target](modules, path, workers_per_sm)
        variants[VariantId(design.target, case, "stream")] = target
        variants[VariantId(design.target, case, "graph")] = GraphReplay(target, stream)
    for design in (d for d in DESIGNS if d.swept):
        for per_sm in sweep:
            target = make[design.target](modules, path, per_sm)
            variants[sweep_variant(design.target, case, per_sm)] = GraphReplay(target, stream)
    return variants


def note_grids(session, modules, variants) -> None:
    """Worker grids of the persistent variants, and how many three-kernel blocks an SM holds."""
    from launchlab.gpu import persistent

    grids = {str(vid): persistent.underlying(v).describe() for vid, v in variants.items()
             if isinstance(persistent.underlying(v), persistent.PersistentTarget)}
    session.note("persistent_grids", grids)
    session.note("three_kernel_resident_blocks_per_sm", {
        name: persistent.resident_blocks_per_sm(modules["tiled_softmax"].kernel(name)) for name in DESIGN["tiled3"].kernels})
    session.note("sm_count", persistent.sm_count())


# --------------------------------------------------------------------------- validation
class Fixtures:
    """Packed fixtures and their float64 oracle, computed once per (rows, index)."""

    def __init__(self, seed: int):
        self.seed, self.cache = seed, {}

    def get(self, path, index: int):
        key = (path.lengths.tobytes(), index)
        if key not in self.cache:
            values = workloads.packed_fixture(self.seed, index, path.lengths)
            self.cache[key] = values, oracles.rms_softmax_packed(values, path.row_offsets)
        return self.cache[key]


def validate(session, vid: VariantId, variant, fixtures: Fixtures, index: int, phase: str) -> None:
    """Output against the oracle; for the queue also its error word and final counters against the model."""
    from launchlab.gpu import persistent

    target = persistent.underlying(variant)
    path = getattr(target, "path", target)
    values, reference = fixtures.get(path, index)
    is_queue = isinstance(target, persistent.TaskQueue)
    if is_queue:
        target.clear_error()
    labels = {"variant": str(vid), "fixture": index, "phase": phase}
    session.check(labels, variant.compute(values), reference, oracles.RMS_SOFTMAX_TOLERANCE,
                  row_offsets=path.row_offsets, inputs=values)
    if is_queue:
        check_queue_words(session, labels, target)


def check_queue_words(session, labels: dict, queue) -> dict:
    """Error words and counters after a run, exactly against the model's (a worker that gave up is named)."""
    return session.check({**labels, "what": "queue error words and counters", "queue_error": queue.error_message()},
                         queue.words_after(), queue.expected_words())


def check_queues_after_timing(session, variants) -> None:
    """Every task queue once (its stream and graph variants share it), after all timed invocations."""
    from launchlab.gpu import persistent

    seen = set()
    for vid, variant in variants.items():
        target = persistent.underlying(variant)
        if isinstance(target, persistent.TaskQueue) and id(target) not in seen:
            seen.add(id(target))
            check_queue_words(session, {"variant": str(vid), "fixture": None, "phase": "after timing"}, target)


def write_graphs(session, variants) -> None:
    """Each graph's DOT text (what the summary counts nodes from) and its capture costs."""
    setup = {}
    for vid, variant in variants.items():
        if vid.submission == "graph":
            session.writer.write_text(f"graphs/{vid}.dot", variant.dot)
            setup[str(vid)] = variant.setup
    session.writer.write_json("graphs/setup.json", setup)


# --------------------------------------------------------------------------- traces
def trace_all(session, cases, sweep, fixtures: Fixtures, timed: dict) -> None:
    """Instrumented builds, separate from timing: every variant once, one record per task, checked."""
    from launchlab.gpu import probes

    modules = build_modules(session, traced=True)
    graphs = {case: schedules.TaskGraph.from_lengths(workloads.tiled_row_lengths(case)) for case in cases}
    # the probes write through these pointers: attach before any traced launch (a graph capture replays once)
    stage_records = probes.attach_buffer(modules["tiled_softmax"], 3, max(g.tiles for g in graphs.values()))
    task_records = probes.attach_task_buffer(modules["megakernel"], max(g.total for g in graphs.values()))
    slots = three_kernel_slots(session)
    for case in cases:
        traced = case_variants(modules, case, session.parameters.workers_per_sm, sweep, session.backend.stream)
        for vid, variant in traced.items():
            trace_variant(session, vid, variant, timed[vid], fixtures, graphs[case], (task_records, stage_records), slots)


def three_kernel_slots(session) -> int:
    """The three-kernel model's resident places: blocks of the tile kernel per SM x SMs."""
    details = session.record.details
    return details["three_kernel_resident_blocks_per_sm"]["tile_producer"] * details["sm_count"]


def trace_variant(session, vid, variant, timed_variant, fixtures, graph, records, slots: int) -> None:
    from launchlab.gpu import persistent

    target = persistent.underlying(variant)
    workers = getattr(target, "workers", slots)
    if workers != getattr(persistent.underlying(timed_variant), "workers", slots):
        raise RuntimeError(f"the traced {vid} runs {workers} workers, the timed one a different number: "
                           "its trace would not show the timed schedule")
    validate(session, vid, variant, fixtures, 0, "traced build")
    is_queue = isinstance(target, persistent.TaskQueue)
    if is_queue:
        target.clear_error()
    labels = {"variant": str(vid), "fixture": 0, "phase": "trace"}
    try:
        arrays, problem = persistent.trace(variant, *records), None
    except ValueError as error:  # a record never written: a task never ran (a queue's error words say why)
        arrays, problem = None, str(error)
    if is_queue:
        check_queue_words(session, labels, target)
    if arrays is None:
        session.check({**labels, "what": "every task record written", "problem": problem},
                      np.array([False]), np.array([True]))
        return
    session.writer.write_arrays(f"traces/{vid}.npz", tile_row=graph.tile_row, workers=np.int64(workers), **arrays)
    design, _ = design_of(vid)
    result = TRACE_MODELS[design.schedule].check(schedules.Trace.from_arrays(arrays), graph, int(workers))
    session.check({**labels, "what": f"trace against the {design.schedule} schedule's rules",
                   "checks": result["checks"]},
                  np.array(list(result["checks"].values()), dtype=bool), np.ones(len(result["checks"]), dtype=bool))
