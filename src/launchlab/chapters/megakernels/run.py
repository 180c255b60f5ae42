"""Chapter 4 on the GPU: build every design's kernels, read back the captured graphs' edge types, validate
every variant, time them warm in one measurement and their graphs cold in another, validate again, trace
each design in an instrumented build and hold the traces to its schedule model's rules, and finally run
compute-sanitizer's tools over every kernel in a child process."""
from __future__ import annotations

import os

import numpy as np

from launchlab.chapters.megakernels import (CLUSTER_MAX, DESIGN, DESIGN_FAMILY, DESIGNS, FUSED_ROW_CLASS,
                                            TRACE_MODELS, active_designs, cold_variants, context_arrays, design_of,
                                            parse_cases, parse_sweep, parse_tools, sweep_variant, trace_context)
from launchlab.measure.protocol import Measured
from launchlab.measure.variant import VariantId
from launchlab.model import oracles, workloads
from launchlab.chapters.megakernels import schedules

SANITIZER_TIMEOUT_S = 120        # per tool; a tool that runs longer is recorded as not finished
DESIGNS_ENVIRONMENT = "LAUNCHLAB_MEGAKERNEL_DESIGNS"  # the designs the sanitizer's child process runs



def run(session) -> None:
    from launchlab.chapters.megakernels import persistent
    from launchlab.gpu.instruments import KERNELS as INSTRUMENT_KERNELS, ColdL2

    parameters, stream = session.parameters, session.backend.stream
    cases, sweep = parse_cases(parameters.tiled_cases), parse_sweep(parameters.sweep_workers_per_sm)
    designs = active_designs(parameters)
    session.note("designs", [d.target for d in designs])
    identity = session.record.device
    modules = build_modules(session, designs, traced=False)
    cold = ColdL2(session.build("instruments", "instruments", INSTRUMENT_KERNELS), identity["l2_bytes"],
                  identity["sm_count"], session.protocol.cold_wait_ns)
    session.note("cold_l2", cold.describe())
    fixtures = Fixtures(parameters.fixture_seed)
    shared_limit = identity["shared_bytes_per_block_optin"]
    timed = {}
    for case in cases:
        timed.update(case_variants(modules, case, parameters.workers_per_sm, sweep, stream, designs=designs,
                                   shared_limit=shared_limit))
    note_grids(session, modules, timed)
    note_designs(session, timed)
    session.note("wait_limit_ns", persistent.WAIT_LIMIT_NS)
    write_graph_edges(session, timed)
    session.require_passed("graph edges")
    session.phase("build, capture and graph edges")

    for index in range(workloads.FIXTURES_BEFORE_TIMING):
        for vid, variant in timed.items():
            validate(session, vid, variant, fixtures, index, "before")
    session.require_passed("before timing")
    session.phase("validation before timing")

    session.measure("warm", [Measured(vid, v.invoke, launches=v.submissions) for vid, v in timed.items()])
    session.phase("warm timing")
    session.measure("cold", [Measured(vid, timed[vid].invoke, launches=timed[vid].submissions)
                             for vid in cold_variants(parameters)], flush=cold.flush)
    session.phase("cold timing")
    check_persistent_after_timing(session, timed)  # the error words are sticky: a worker that gave up shows here
    for vid, variant in timed.items():
        validate(session, vid, variant, fixtures, workloads.HELD_OUT_FIXTURE, "after")
    session.require_passed("after timing")
    write_graphs(session, timed)

    trace_all(session, cases, sweep, fixtures, timed, designs)
    session.require_passed("traces")
    session.phase("validation after timing and traces")
    sanitize(session, designs)
    session.phase("compute-sanitizer")


# --------------------------------------------------------------------------- targets
def fused_defines(shared_limit: int) -> dict:
    """Chapter 3's fused build for its 4096x16384 class (BLOCK, REG_CHUNKS, UNROLL), with MIN_BLOCKS 1: the
    128 rows of a case fill one wave at one block per SM, and the packed entry point spills at the class's
    64-register budget (two blocks of 512 threads per SM). FUSED_PACKED compiles the packed entry point."""
    from launchlab.chapters.fusion import fused_config

    return {**fused_config(*FUSED_ROW_CLASS, shared_limit)["defines"], "MIN_BLOCKS": 1, "FUSED_PACKED": None}


def build_modules(session, designs=DESIGNS, traced: bool = False) -> dict:
    """{family: BuiltModule} for the designs' kernels (the traced builds, with -DLAUNCHLAB_TRACE, only for
    designs with a schedule model; the fused row kernel has none)."""
    modules = {}
    for family in dict.fromkeys(d.family for d in designs if d.schedule or not traced):
        kernels = tuple(dict.fromkeys(k for d in designs if d.family == family for k in d.kernels))
        if family == "fused_softmax":
            defines = fused_defines(session.record.device["shared_bytes_per_block_optin"])
            modules[family] = session.build("fused_softmax_packed", family, kernels, defines)
            continue
        label = f"{family}_traced" if traced else family
        modules[family] = session.build(label, family, kernels, {"LAUNCHLAB_TRACE": None} if traced else None)
    return modules


def _target_factories(shared_limit: int | None):
    """design target -> (modules, the case's TiledPath, blocks per SM) -> Target on the path's buffers."""
    from launchlab.chapters.megakernels import megakernel_designs as designs
    from launchlab.chapters.megakernels import persistent

    def fused(modules, path, per_sm):
        built = modules["fused_softmax"]
        limit = shared_limit if shared_limit is not None else device_shared_limit()
        probe = designs.FusedPackedRows(built, path)  # the module's BLOCK and REG_CHUNKS
        return designs.FusedPackedRows(built, path, designs.packed_shared_bytes(path.row_offsets, probe.block,
                                                                                 probe.reg_chunks, limit))

    def workers(path, per_sm):  # blocks per SM -> a worker count (0: all that can be co-resident)
        return per_sm * persistent.sm_count() if per_sm else None

    return {
        "tiled3": lambda modules, path, per_sm: path,
        "coop": lambda modules, path, per_sm: persistent.CooperativePhases(modules["megakernel"], path, per_sm),
        "queue": lambda modules, path, per_sm: persistent.TaskQueue(modules["megakernel"], path, per_sm),
        "pdl3": lambda modules, path, per_sm: designs.PdlThreeKernels(modules[DESIGN_FAMILY], path, True),
        "pdl3_off": lambda modules, path, per_sm: designs.PdlThreeKernels(modules[DESIGN_FAMILY], path, False),
        "tiled2": lambda modules, path, per_sm: designs.TwoKernels(modules[DESIGN_FAMILY], path, False),
        "tiled2_pdl": lambda modules, path, per_sm: designs.TwoKernels(modules[DESIGN_FAMILY], path, True),
        "depend": lambda modules, path, per_sm: designs.DependencyPersistent(modules[DESIGN_FAMILY], path,
                                                                             workers(path, per_sm)),
        "cluster": lambda modules, path, per_sm: designs.ClusterRows(modules[DESIGN_FAMILY], path,
                                                                     max_cluster=CLUSTER_MAX),
        "fused_row": fused,
    }


def device_shared_limit() -> int:
    import cupy

    return int(cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())["sharedMemPerBlockOptin"])


def case_variants(modules, case: str, workers_per_sm: int, sweep, stream, lengths=None, designs=None,
                  shared_limit: int | None = None) -> dict:
    """{VariantId: Target or GraphReplay} of one case, all on one TiledPath's buffers: each design from
    the stream and replayed as a graph, and each swept design at every swept blocks-per-SM, as a graph.
    `designs` defaults to those whose kernels `modules` holds; `lengths` replaces the case's rows (tests)."""
    from launchlab.gpu.capture import GraphReplay
    from launchlab.gpu.targets import TiledPath

    designs = [d for d in DESIGNS if d.family in modules] if designs is None else designs
    path = TiledPath(modules["tiled_softmax"], workloads.tiled_row_lengths(case) if lengths is None else lengths)
    make = _target_factories(shared_limit)
    variants = {}
    for design in designs:
        target = make[design.target](modules, path, workers_per_sm)
        variants[VariantId(design.target, case, "stream")] = target
        variants[VariantId(design.target, case, "graph")] = GraphReplay(target, stream)
    for design in (d for d in designs if d.swept):
        for per_sm in sweep:
            target = make[design.target](modules, path, per_sm)
            variants[sweep_variant(design.target, case, per_sm)] = GraphReplay(target, stream)
    return variants


def note_grids(session, modules, variants) -> None:
    """Worker grids of the persistent variants, and how many three-kernel blocks an SM holds."""
    from launchlab.chapters.megakernels import persistent

    grids = {str(vid): persistent.underlying(v).describe() for vid, v in variants.items()
             if isinstance(persistent.underlying(v), persistent.PersistentTarget)}
    session.note("persistent_grids", grids)
    session.note("three_kernel_resident_blocks_per_sm", {
        name: persistent.resident_blocks_per_sm(modules["tiled_softmax"].kernel(name)) for name in DESIGN["tiled3"].kernels})
    session.note("sm_count", persistent.sm_count())


def note_designs(session, variants) -> None:
    """What each added design launched with: the dependency kernel's workers and cached tiles, the cluster
    classes, the fused kernel's block, shared memory and rows per tier, the PDL launcher's driver."""
    from launchlab.chapters.megakernels import persistent

    facts = {}
    for vid, variant in variants.items():
        if vid.submission != "stream" or design_of(vid)[0].group is None:
            continue
        target = persistent.underlying(variant)
        fact = {"launches": len(target.launches)}
        if vid.target == "depend":
            fact.update(workers=int(target.workers), capacity=int(target.capacity),
                        cached_tiles=int((target.lists.slot >= 0).sum() // 2),  # A and C of a tile share its slot
                        tiles=int(target.tiles), shared_bytes=int(target.shared_bytes),
                        list_check=target.list_check["passed"])
        if vid.target == "cluster":
            fact.update(classes=[[int(k), int(len(rows))] for k, rows in target.plan.classes],
                        cache_elements=[int(c) for c in target.plan.cache_elements], max_cluster=target.max_cluster)
        if vid.target == "fused_row":
            fact.update(block=int(target.block), shared_bytes=int(target.shared_bytes), tiers=target.tiers())
        if hasattr(target, "prepared"):
            fact["driver"] = target.prepared[0].driver if target.prepared else None
        facts[str(vid)] = fact
    session.note("design_launches", facts)


def expected_programmatic_edges(vid: VariantId, target) -> int:
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
            expected = expected_programmatic_edges(vid, persistent.underlying(variant))
            found = (record["edge_types"] or {}).get("programmatic", -1)
            session.check({"variant": str(vid), "fixture": None, "phase": "graph edges",
                           "what": "programmatic edges of the captured graph", "error": record.get("error")},
                          np.array([found]), np.array([expected]))


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


def is_dependency(target) -> bool:
    return getattr(target, "name", None) == "depend"


def validate(session, vid: VariantId, variant, fixtures: Fixtures, index: int, phase: str) -> None:
    """Output against the oracle; for the queue also its error word and final counters against the model,
    for the dependency kernel its error words (no worker gave up)."""
    from launchlab.chapters.megakernels import persistent

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
    if is_dependency(target):
        check_dependency_words(session, labels, target)


def check_queue_words(session, labels: dict, queue) -> dict:
    """Error words and counters after a run, exactly against the model's (a worker that gave up is named)."""
    return session.check({**labels, "what": "queue error words and counters", "queue_error": queue.error_message()},
                         queue.words_after(), queue.expected_words())


def check_dependency_words(session, labels: dict, target) -> dict:
    """The dependency kernel's error words are zero and its self-resetting counters agree (every row at the
    same round, its arrivals that round times its tiles)."""
    words = np.concatenate([target.error.get().astype(np.int64), [int(target.counters_consistent())]])
    return session.check({**labels, "what": "dependency error words and counter consistency"},
                         words, np.array([0, 0, 0, 0, 1], dtype=np.int64))


def check_persistent_after_timing(session, variants) -> None:
    """Every task queue and dependency kernel once (stream and graph variants share it), after all timed
    invocations."""
    from launchlab.chapters.megakernels import persistent

    seen = set()
    for vid, variant in variants.items():
        target = persistent.underlying(variant)
        if id(target) in seen:
            continue
        labels = {"variant": str(vid), "fixture": None, "phase": "after timing"}
        if isinstance(target, persistent.TaskQueue):
            seen.add(id(target))
            check_queue_words(session, labels, target)
        elif is_dependency(target):
            seen.add(id(target))
            check_dependency_words(session, labels, target)


def write_graphs(session, variants) -> None:
    """Each graph's DOT text (what the summary counts nodes from) and its capture costs."""
    setup = {}
    for vid, variant in variants.items():
        if vid.submission == "graph":
            session.writer.write_text(f"graphs/{vid}.dot", variant.dot)
            setup[str(vid)] = variant.setup
    session.writer.write_json("graphs/setup.json", setup)


# --------------------------------------------------------------------------- traces
def trace_all(session, cases, sweep, fixtures: Fixtures, timed: dict, designs=DESIGNS) -> None:
    """Instrumented builds, separate from timing: every traced variant once, one record per task, checked."""
    from launchlab.gpu import probes

    traced_designs = [d for d in designs if d.schedule]
    modules = build_modules(session, traced_designs, traced=True)
    graphs = {case: schedules.TaskGraph.from_lengths(workloads.tiled_row_lengths(case)) for case in cases}
    most = max(g.total for g in graphs.values())
    # the probes write through these pointers: attach before any traced launch (a graph capture replays once)
    records = {"stage": probes.attach_buffer(modules["tiled_softmax"], 3, max(g.tiles for g in graphs.values()))}
    if "megakernel" in modules:
        records["task"] = probes.attach_task_buffer(modules["megakernel"], most)
    if DESIGN_FAMILY in modules:  # a cluster plan has no more chunks than the case has tiles
        records["design"] = probes.attach_task_buffer(modules[DESIGN_FAMILY], most)
    slots = three_kernel_slots(session)
    for case in cases:
        traced = case_variants(modules, case, session.parameters.workers_per_sm, sweep, session.backend.stream,
                               designs=traced_designs)
        for vid, variant in traced.items():
            trace_variant(session, vid, variant, timed[vid], fixtures, graphs[case], records, slots, modules)


def three_kernel_slots(session) -> int:
    """The three-kernel model's resident places: blocks of the tile kernel per SM x SMs."""
    details = session.record.details
    return details["three_kernel_resident_blocks_per_sm"]["tile_producer"] * details["sm_count"]


def design_slots(target) -> int:
    """Resident places of a design's model: the dependency kernel's workers; otherwise blocks of its first
    kernel per SM (with its dynamic shared memory) x SMs."""
    from launchlab.chapters.megakernels import persistent
    from launchlab.gpu.targets import BLOCK

    if is_dependency(target):
        return int(target.workers)
    shared = max((launch.shared_bytes for launch in getattr(target, "prepared", ())), default=0)
    return persistent.resident_blocks_per_sm(target.launches[0][0], BLOCK, shared) * persistent.sm_count()


def trace_variant(session, vid, variant, timed_variant, fixtures, graph, records: dict, slots: int, modules) -> None:
    from launchlab.chapters.megakernels import persistent

    design, _ = design_of(vid)
    target = persistent.underlying(variant)
    is_design = design.family == DESIGN_FAMILY
    workers = design_slots(target) if is_design else getattr(target, "workers", slots)
    timed_workers = design_slots(persistent.underlying(timed_variant)) if is_design else \
        getattr(persistent.underlying(timed_variant), "workers", slots)
    if workers != timed_workers:
        raise RuntimeError(f"the traced {vid} runs {workers} workers, the timed one {timed_workers}: "
                           "its trace would not show the timed schedule")
    validate(session, vid, variant, fixtures, 0, "traced build")
    is_queue = isinstance(target, persistent.TaskQueue)
    if is_queue:
        target.clear_error()
    labels = {"variant": str(vid), "fixture": 0, "phase": "trace"}
    arrays, problem = collect_trace(vid, variant, target, records, modules, is_design)
    if is_queue:
        check_queue_words(session, labels, target)
    if arrays is None:
        session.check({**labels, "what": "every task record written", "problem": problem},
                      np.array([False]), np.array([True]))
        return
    task_graph = target.task_graph() if is_design else graph
    context = context_arrays(target)
    session.writer.write_arrays(f"traces/{vid}.npz", tile_row=task_graph.tile_row, workers=np.int64(workers),
                                **arrays, **context)
    result = TRACE_MODELS[design.schedule].check(schedules.Trace.from_arrays(arrays), task_graph, int(workers),
                                                 trace_context(context))
    session.check({**labels, "what": f"trace against the {design.schedule} schedule's rules",
                   "checks": result["checks"]},
                  np.array(list(result["checks"].values()), dtype=bool), np.ones(len(result["checks"]), dtype=bool))


def collect_trace(vid, variant, target, records: dict, modules, is_design: bool):
    """(trace arrays, None) of one traced invocation, or (None, why) where a task record was never written
    (a task never ran) or a dependency worker gave up."""
    from launchlab.chapters.megakernels import megakernel_designs as designs
    from launchlab.chapters.megakernels import persistent

    try:
        if is_design:
            return designs.trace(target, modules[DESIGN_FAMILY], variant.invoke, records["design"]).arrays(), None
        return persistent.trace(variant, records.get("task"), records["stage"]), None
    except (ValueError, designs.DesignError) as error:
        if is_dependency(target):
            target.reset()  # its counters are inconsistent after a worker gave up
        return None, str(error)


# --------------------------------------------------------------------------- compute-sanitizer
def sanitize(session, designs) -> None:
    """memcheck, racecheck and synccheck (the `sanitizer_tools` parameter) over every kernel of the chapter:
    a child process runs each design small, from the stream and as a graph (chapters/megakernels/sanitize.py);
    each tool's result is kept under sanitizer/. A finding is recorded and shown, not a failed run."""
    from launchlab.gpu import sanitizer

    tools = parse_tools(session.parameters.sanitizer_tools)
    if not tools:
        session.note("sanitizer", {"tools": [], "skipped": "sanitizer_tools is empty"})
        return
    previous = os.environ.get(DESIGNS_ENVIRONMENT)
    os.environ[DESIGNS_ENVIRONMENT] = ",".join(d.target for d in designs)
    try:
        result = sanitizer.sanitize("megakernels", tools=tools, timeout_s=SANITIZER_TIMEOUT_S)
    finally:
        if previous is None:
            os.environ.pop(DESIGNS_ENVIRONMENT, None)
        else:
            os.environ[DESIGNS_ENVIRONMENT] = previous
    for tool in result["tools"]:
        session.writer.write_json(f"sanitizer/{tool['tool']}.json", tool)
    session.note("sanitizer", {"executable": result["sanitizer"], "clean": result["clean"], "error": result["error"],
                               "tools": tools, "problem": sanitizer.PROBLEMS["megakernels"]})
