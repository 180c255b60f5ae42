"""Chapter 4 on the GPU: build every design's kernels, read back the captured graphs' edge types, validate
every variant, time them warm in one measurement and their graphs cold in another, validate again, trace
each design in an instrumented build and hold the traces to its schedule model's rules (and time each persistent
design's traced graph against its timed one: the trace writes' cost), and finally run compute-sanitizer's tools
over every kernel in a child process. A chain variant's output is every stage's, checked against the float64
chain.

Every declared variant is made by its row (targets.py); what it enters (`table`, `sweep`, `trace`,
`sanitizer`) and its L2 states say how it is measured. A design whose requirement this GPU lacks is skipped,
with the reason, in every variant."""
from __future__ import annotations

import numpy as np

from launchlab.chapters.megakernels import CHAPTER, DESIGN, design_of, schedules, stages_of
from launchlab.chapters.megakernels.targets import TASK_RECORD_FAMILIES, Context, load_modules, make_variants, rows_of
from launchlab.chapters.megakernels.trace_models import TRACE_MODELS, context_arrays, trace_context
from launchlab.measure.protocol import Measured
from launchlab.model import workloads

SANITIZER_TIMEOUT_S = 120        # per tool; a tool that runs longer is recorded as not finished
# A chain variant's output is every stage's (up to 16 x 1M elements): it is checked on the first fixture before
# timing and on the held-out one after, in rows of CHECK_WIDTH elements compared in threads (the tolerance is
# relative, with no row-scaled term, so how the elements are cut into rows does not change the verdict).
CHAIN_FIXTURES_BEFORE = 1
CHECK_WIDTH = 1024


def run(session) -> None:
    from launchlab.chapters.megakernels import persistent
    from launchlab.gpu.instruments import KERNELS as INSTRUMENT_KERNELS, ColdL2

    parameters, stream, identity = session.parameters, session.backend.stream, session.record.device
    declared = runnable(session, CHAPTER.variants(parameters))
    designs = list({v.row.name: v.row for v in declared}.values())
    session.note("designs", [d.name for d in designs])
    shared_limit = identity["shared_bytes_per_block_optin"]
    context = Context(load_modules(designs, shared_limit, build=session.build), parameters.workers_per_sm, shared_limit)
    cold = ColdL2(session.build("instruments", "instruments", INSTRUMENT_KERNELS), identity["l2_bytes"],
                  identity["sm_count"], session.protocol.cold_wait_ns)
    session.note("cold_l2", cold.describe())
    fixtures = Fixtures(parameters.fixture_seed)
    timed = make_variants(context, declared, stream, skip=session.skip)
    declared = [v for v in declared if v.id in timed]
    note_grids(session, context.modules, timed)
    note_designs(session, timed)
    session.note("wait_limit_ns", persistent.WAIT_LIMIT_NS)
    write_graph_edges(session, timed)
    session.require_passed("graph edges")
    session.phase("build, capture and graph edges")

    for index in range(workloads.FIXTURES_BEFORE_TIMING):
        for variant in declared:
            if not variant.row.chain or index < CHAIN_FIXTURES_BEFORE:
                validate(session, variant, timed[variant.id], fixtures, index, "before")
    session.require_passed("before timing")
    session.phase("validation before timing")

    session.measure("warm", [Measured(v.id, timed[v.id].invoke, launches=timed[v.id].submissions) for v in declared])
    session.phase("warm timing")
    session.measure("cold", [Measured(v.id, timed[v.id].invoke, launches=timed[v.id].submissions)
                             for v in declared if "cold" in v.l2_states], flush=cold.flush)
    session.phase("cold timing")
    check_words_after_timing(session, declared, timed)  # the error words are sticky: a worker that gave up shows here
    for variant in declared:
        validate(session, variant, timed[variant.id], fixtures, workloads.HELD_OUT_FIXTURE, "after")
    session.require_passed("after timing")
    write_graphs(session, timed)

    trace_all(session, [v for v in declared if "trace" in v.enters], fixtures, timed)
    session.require_passed("traces")
    session.phase("validation after timing and traces")
    sanitize(session, [d for d in designs if "sanitizer" in d.outputs])
    session.phase("compute-sanitizer")


def runnable(session, variants) -> list:
    """The variants whose design this GPU can run; the others skipped, with the missing requirement."""
    kept = []
    for variant in variants:
        missing = variant.row.requires.missing(session.record.device)
        if missing:
            session.skip(variant.id, f"{variant.row.label}: {missing}")
        else:
            kept.append(variant)
    return kept


# --------------------------------------------------------------------------- what the run notes
def note_grids(session, modules, variants) -> None:
    """Worker grids of the persistent variants, and how many three-kernel blocks an SM holds."""
    from launchlab.chapters.megakernels import persistent
    from launchlab.gpu import device

    grids = {str(vid): persistent.underlying(v).describe() for vid, v in variants.items()
             if isinstance(persistent.underlying(v), persistent.PersistentTarget)}
    session.note("persistent_grids", grids)
    session.note("three_kernel_resident_blocks_per_sm", {
        name: persistent.resident_blocks_per_sm(modules["tiled_softmax"].kernel(name)) for name in DESIGN["tiled3"].kernels})
    session.note("sm_count", device.sm_count())


def note_designs(session, variants) -> None:
    """What each added design launched with: the dependency kernel's workers and cached tiles, the cluster
    classes, the fused kernel's block, shared memory and rows per tier, the PDL launcher's driver."""
    from launchlab.chapters.megakernels import persistent
    from launchlab.gpu import device

    facts = {}
    for vid, variant in variants.items():
        if vid.submission != "stream" or design_of(vid)[0].group is None:
            continue
        target = persistent.underlying(variant)
        fact = {"launches": len(target.launches)}
        if getattr(target, "lists", None) is not None:  # the dependency kernel
            fact.update(workers=int(target.workers), capacity=int(target.capacity),
                        resident_blocks_per_sm=int(target.capacity) // device.sm_count(),
                        cached_tiles=int((target.lists.slot >= 0).sum() // 2),  # A and C of a tile share its slot
                        tiles=int(target.tiles), shared_bytes=int(target.shared_bytes),
                        list_check=target.list_check["passed"])
        if getattr(target, "plan", None) is not None:  # the cluster design
            fact.update(classes=[[int(k), int(len(rows))] for k, rows in target.plan.classes],
                        cache_elements=[int(c) for c in target.plan.cache_elements], max_cluster=target.max_cluster)
        if getattr(target, "layout", None) is not None:  # the varlen design: its plan
            fact.update(target.describe())
        if hasattr(target, "tiers"):  # the fused row kernel
            fact.update(block=int(target.block), shared_bytes=int(target.shared_bytes), tiers=target.tiers())
        if hasattr(target, "prepared"):
            fact["driver"] = target.prepared[0].driver if target.prepared else None
        facts[str(vid)] = fact
    session.note("design_launches", facts)


def expected_programmatic_edges(target) -> int:
    """Programmatic edges a design's captured graph must hold: one per PDL launch after the first (the first
    launch's attribute points at whatever preceded it in the stream, which a capture does not hold)."""
    return sum(1 for launch in getattr(target, "prepared", ())[1:] if launch.programmatic)


def write_graph_edges(session, variants) -> None:
    """Nodes and typed edges of every captured design graph, read back from the driver (graphs/<vid>.edges.json);
    where a design launches through cuLaunchKernelEx, its count of programmatic edges is checked: a PDL graph
    without them would time something else."""
    from launchlab.chapters.megakernels import megakernel_designs as designs
    from launchlab.chapters.megakernels import persistent

    for vid, variant in variants.items():
        if vid.submission != "graph" or design_of(vid)[1] is not None:
            continue
        try:
            record = designs.graph_edge_record(variant)
        except Exception as error:  # noqa: BLE001 - the driver's reason is what the run must keep
            record = {"error": f"{type(error).__name__}: {error}", "edge_types": None}
        session.writer.write_json(f"graphs/{vid}.edges.json", record)
        if design_of(vid)[0].extended:
            expected = expected_programmatic_edges(persistent.underlying(variant))
            found = (record["edge_types"] or {}).get("programmatic", -1)
            session.check({"variant": str(vid), "fixture": None, "phase": "graph edges",
                           "what": "programmatic edges of the captured graph", "error": record.get("error")},
                          np.array([found]), np.array([expected]))


def write_graphs(session, variants) -> None:
    """Each graph's DOT text (what the summary counts nodes from) and its capture costs."""
    setup = {}
    for vid, variant in variants.items():
        if vid.submission == "graph":
            session.writer.write_text(f"graphs/{vid}.dot", variant.dot)
            setup[str(vid)] = variant.setup
    session.writer.write_json("graphs/setup.json", setup)


# --------------------------------------------------------------------------- validation
class Fixtures:
    """Packed fixtures and their oracle's result, computed once per (rows, index, oracle, chain stages)."""

    def __init__(self, seed: int):
        self.seed, self.cache = seed, {}

    def get(self, path, index: int, oracle, stages: int | None = None):
        """(values, reference); `stages`: a chain's, whose oracle returns every stage's output end to end."""
        key = (path.lengths.tobytes(), index, oracle.function, stages)
        if key not in self.cache:
            values = workloads.packed_fixture(self.seed, index, path.lengths)
            extra = () if stages is None else (stages,)
            self.cache[key] = values, oracle.function(values, path.row_offsets, *extra)
        return self.cache[key]


def validate(session, variant, made, fixtures: Fixtures, index: int, phase: str) -> None:
    """Output against the row's oracle (a chain: every stage's output); a design with error words (the queue,
    the dependency and flow kernels) also has them checked exactly."""
    from launchlab.chapters.megakernels import chain_model, persistent

    design, target = variant.row, persistent.underlying(made)
    path = rows_of(target)
    stages = stages_of(variant.id) if design.chain else None
    values, reference = fixtures.get(path, index, design.oracle, stages)
    if design.words:
        design.words.clear(target)
    labels = {"variant": str(variant.id), "fixture": index, "phase": phase}
    output, offsets = made.compute(values), path.row_offsets
    if stages is not None:  # every stage's output: relative tolerance only, checked in rows of CHECK_WIDTH
        offsets = None if reference.size % CHECK_WIDTH == 0 else chain_model.stacked_offsets(path.row_offsets, stages)
        if offsets is None:
            output, reference = output.reshape(-1, CHECK_WIDTH), reference.reshape(-1, CHECK_WIDTH)
    session.check(labels, output, reference, design.oracle.tolerance, row_offsets=offsets, inputs=values)
    if design.words:
        check_words(session, labels, design, target)


def check_words(session, labels: dict, design, target) -> dict:
    """A design's error words and counters after a run, exactly against what a complete run leaves."""
    found, expected, named = design.words.read(target)
    return session.check({**labels, "what": design.words.what, **named}, found, expected)


def check_words_after_timing(session, variants, made: dict) -> None:
    """Every target with error words once (stream and graph variants share it), after all timed invocations."""
    from launchlab.chapters.megakernels import persistent

    seen = set()
    for variant in variants:
        target = persistent.underlying(made[variant.id])
        if variant.row.words and id(target) not in seen:
            seen.add(id(target))
            check_words(session, {"variant": str(variant.id), "fixture": None, "phase": "after timing"},
                        variant.row, target)


# --------------------------------------------------------------------------- traces
def trace_all(session, variants, fixtures: Fixtures, timed: dict) -> None:
    """Instrumented builds, separate from timing: every traced variant once, one record per task, checked."""
    from launchlab.gpu import probes

    designs = list({v.row.name: v.row for v in variants}.values())
    shared_limit = session.record.device["shared_bytes_per_block_optin"]
    modules = load_modules(designs, shared_limit, traced=True, build=session.build)
    graphs = {case: schedules.TaskGraph.from_lengths(workloads.tiled_row_lengths(case))
              for case in dict.fromkeys(v.id.case for v in variants)}
    most = max(g.total for g in graphs.values())
    # the probes write through these pointers: attach before any traced launch (a graph capture replays once)
    records = {"stage": probes.attach_buffer(modules["tiled_softmax"], 3, max(g.tiles for g in graphs.values()))}
    if "megakernel" in modules:
        records["task"] = probes.attach_task_buffer(modules["megakernel"], most)
    for family in TASK_RECORD_FAMILIES:  # a cluster plan has no more chunks than the case has tiles
        if family in modules:
            records[family] = probes.attach_task_buffer(modules[family], most)
    slots = three_kernel_slots(session)
    traced = make_variants(Context(modules, session.parameters.workers_per_sm, shared_limit), variants,
                           session.backend.stream)
    for variant in variants:
        trace_variant(session, variant, traced[variant.id], timed[variant.id], fixtures, graphs[variant.id.case],
                      records, slots, modules)
    trace_costs(session, [v for v in variants if v.row.persistent and v.id.submission == "graph"
                          and design_of(v.id)[1] is None], traced, timed)


def three_kernel_slots(session) -> int:
    """The three-kernel model's resident places: blocks of the tile kernel per SM x SMs."""
    details = session.record.details
    return details["three_kernel_resident_blocks_per_sm"]["tile_producer"] * details["sm_count"]


def design_slots(target) -> int:
    """Resident places of a design's model: the dependency kernel's workers; otherwise blocks of its first
    kernel per SM (with its dynamic shared memory) x SMs."""
    from launchlab.chapters.megakernels import persistent
    from launchlab.gpu import device
    from launchlab.gpu.targets import BLOCK

    if getattr(target, "lists", None) is not None:
        return int(target.workers)
    shared = max((launch.shared_bytes for launch in getattr(target, "prepared", ())), default=0)
    return persistent.resident_blocks_per_sm(target.launches[0][0], BLOCK, shared) * device.sm_count()


def workers_of(design, target, slots: int) -> int:
    return design_slots(target) if design.family in TASK_RECORD_FAMILIES else getattr(target, "workers", slots)


def trace_variant(session, variant, made, timed_variant, fixtures, graph, records: dict, slots: int, modules) -> None:
    from launchlab.chapters.megakernels import persistent

    vid, design = variant.id, variant.row
    target = persistent.underlying(made)
    workers = workers_of(design, target, slots)
    timed_workers = workers_of(design, persistent.underlying(timed_variant), slots)
    if workers != timed_workers:
        raise RuntimeError(f"the traced {vid} runs {workers} workers, the timed one {timed_workers}: "
                           "its trace would not show the timed schedule")
    validate(session, variant, made, fixtures, 0, "traced build")
    if design.words:
        design.words.clear(target)
    labels = {"variant": str(vid), "fixture": 0, "phase": "trace"}
    arrays, problem = collect_trace(made, target, records, modules, design.family)
    if design.words:
        check_words(session, labels, design, target)
    if arrays is None:
        session.check({**labels, "what": "every task record written", "problem": problem},
                      np.array([False]), np.array([True]))
        return
    task_graph = target.task_graph() if design.family in TASK_RECORD_FAMILIES else graph
    context = context_arrays(target)
    session.writer.write_arrays(f"traces/{vid}.npz", tile_row=task_graph.tile_row, workers=np.int64(workers),
                                **arrays, **context)
    result = TRACE_MODELS[design.schedule].check(schedules.Trace.from_arrays(arrays), task_graph, int(workers),
                                                 trace_context(context))
    session.check({**labels, "what": f"trace against the {design.schedule} schedule's rules",
                   "checks": result["checks"]},
                  np.array(list(result["checks"].values()), dtype=bool), np.ones(len(result["checks"]), dtype=bool))


def collect_trace(made, target, records: dict, modules, family: str):
    """(trace arrays, None) of one traced invocation, or (None, why) where a task record was never written
    (a task never ran) or a dependency or flow worker gave up."""
    from launchlab.chapters.megakernels import flow
    from launchlab.chapters.megakernels import megakernel_designs as designs
    from launchlab.chapters.megakernels import persistent

    try:
        if family in TASK_RECORD_FAMILIES:
            return designs.trace(target, modules[family], made.invoke, records[family]).arrays(), None
        return persistent.trace(made, records.get("task"), records["stage"]), None
    except (ValueError, designs.DesignError, flow.FlowError) as error:
        return None, str(error)


TRACE_COST_REPLAYS = 200  # graph replays of each build, interleaved, for the cost of the trace writes


def trace_costs(session, variants, traced: dict, timed: dict) -> None:
    """The trace writes' own cost: each persistent design's traced and untraced graphs replayed in turn, every
    replay timed with events (traces/trace_cost.json: {VariantId: {"traced_us": [...], "untraced_us": [...]}});
    the summary reads their medians."""
    backend, costs = session.backend, {}
    for variant in variants:
        pair = {"traced_us": [], "untraced_us": []}
        for _ in range(TRACE_COST_REPLAYS):
            for key, made in (("traced_us", traced[variant.id]), ("untraced_us", timed[variant.id])):
                begin = backend.record_event()
                made.invoke()
                end = backend.record_event()
                backend.synchronize()
                pair[key].append(backend.elapsed_ms(begin, end) * 1e3)
        costs[str(variant.id)] = pair
    session.writer.write_json("traces/trace_cost.json", costs)


# --------------------------------------------------------------------------- compute-sanitizer
def sanitize(session, designs) -> None:
    """memcheck, racecheck and synccheck (the `sanitizer_tools` parameter) over every kernel of the chapter:
    a child process runs each design small, from the stream and as a graph (sanitize.py); each tool's result is
    kept under sanitizer/. A finding is recorded and shown, not a failed run."""
    from launchlab.gpu import sanitizer

    tools = list(session.parameters.sanitizer_tools)
    if not tools:
        session.note("sanitizer", {"tools": [], "skipped": "sanitizer_tools is empty"})
        return
    from launchlab.chapters.megakernels import sanitize as child

    sanitizer.record(session, child.__name__, child.PROBLEM, tools=tools, timeout_s=SANITIZER_TIMEOUT_S,
                     environment={child.DESIGNS_ENVIRONMENT: ",".join(d.name for d in designs)})
