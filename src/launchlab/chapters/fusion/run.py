"""Chapter 3 on the GPU: build, validate every contender, capture its graphs, time warm and cold through
the protocol, validate again on the held-out fixture; then the sweep (sweep.py); then DRAM bytes with Nsight
Compute and compute-sanitizer over every fused design, each in a separate process."""
from __future__ import annotations

from launchlab.chapters.fusion import (CALLS_PER_GRAPH, CONTENDERS, DEVICE, FUSED_KERNELS, ROW_KERNELS, contenders,
                                       fused_plan, fused_plans, large, requested_libraries)
from launchlab.measure.protocol import Measured
from launchlab.measure.variant import VariantId
from launchlab.model import dot, fused_policy, oracles, workloads

# The declared oracle of each contender (chapters/fusion/__init__.py) -> the reference and its tolerance;
# "x itself (exact)" is checked bit for bit against the input.
ORACLES = {"rms_softmax (float64)": (oracles.rms_softmax, oracles.RMS_SOFTMAX_TOLERANCE),
           "softmax (float64)": (oracles.softmax, oracles.SOFTMAX_TOLERANCE)}


def graph_of_calls(target, stream, calls: int = CALLS_PER_GRAPH):
    """A GraphReplay whose one replay is `calls` captured calls of `target` (the graph32 variants)."""
    from launchlab.gpu.capture import GraphReplay
    from launchlab.gpu.targets import Repeated

    return GraphReplay(Repeated(target, calls), stream)


def plan_kernels(plan: dict) -> tuple[str, ...]:
    return FUSED_KERNELS if plan["design"] == "row" else tuple(fused_policy.KERNELS[plan["design"]].values())


def make_fused(modules: dict, plan: dict, rows: int, cols: int, mode: str, x):
    """The fused kernel the plan names, in `mode` (rms or plain), reading x."""
    from launchlab.gpu import fused_designs
    from launchlab.gpu.targets import FusedRow

    module = modules[plan["module"]]
    if plan["design"] == "row":
        return FusedRow(module, rows, cols, mode, plan["shared_bytes"], x=x)
    return fused_designs.make_target(plan["design"], module, rows, cols, mode, x)


def graph_nodes(replay) -> int | None:
    """Nodes of a captured graph, from CUDA's DOT description (None where it does not parse)."""
    try:
        return len(dot.parse_dot(replay.dot)["nodes"])
    except ValueError:
        return None



def run(session) -> None:
    from launchlab.gpu.instruments import KERNELS as INSTRUMENT_KERNELS, ColdL2

    from launchlab.chapters.fusion.sweep import run_sweep

    parameters, identity = session.parameters, session.record.device
    plans = fused_plans(parameters, identity)
    session.note("fused_plans", plans)
    session.note("calls_per_graph", CALLS_PER_GRAPH)
    modules = {"row_softmax": session.build("row_softmax", "row_softmax", ROW_KERNELS)}
    for plan in plans.values():
        if plan["module"] not in modules:
            modules[plan["module"]] = session.build(plan["module"], plan["family"], plan_kernels(plan), plan["defines"])
    cold = ColdL2(session.build("instruments", "instruments", INSTRUMENT_KERNELS), identity["l2_bytes"],
                  identity["sm_count"], session.protocol.cold_wait_ns)
    session.note("cold_l2", cold.describe())
    session.phase("build")

    libraries = {name: {"requested": True, "unavailable": {}, "setup": {}} for name in requested_libraries(parameters)}
    session.note("baselines", libraries)  # filled in below; noted first so that a failed run keeps it too
    by_shape, setup = {}, {}
    for rows, cols in workloads.parse_shapes(parameters.shapes):
        shape = workloads.shape_name(rows, cols)
        targets = make_targets(session, modules, plans[shape], rows, cols, libraries)
        screen_libraries(session, targets, rows, cols, libraries)
        streamed = {VariantId(name, shape, "stream"): target for name, target in targets.items()}
        for index in range(workloads.FIXTURES_BEFORE_TIMING):
            validate(session, streamed, rows, cols, index, "before")
        graphs = capture_graphs(session, targets, shape, setup)
        validate(session, graphs, rows, cols, 0, "before")
        by_shape[shape] = {**streamed, **graphs}
    session.require_passed("before timing")
    session.phase("setup and validation before timing")

    for shape, variants in by_shape.items():
        session.measure("warm", [measured(vid, target) for vid, target in variants.items()])
        session.measure("cold", [measured(vid, target) for vid, target in variants.items()
                                 if vid.submission in ("stream", "graph")], flush=cold.flush)
    session.phase("timing")

    for shape, variants in by_shape.items():
        validate(session, variants, *workloads.parse_shapes(shape)[0], workloads.HELD_OUT_FIXTURE, "after")
    session.require_passed("after timing")
    session.phase("validation after timing")

    run_sweep(session, modules, plans, libraries, cold, setup)
    session.writer.write_json("graphs/setup.json", setup)
    session.phase("sweep")

    profile(session, plans)
    session.phase("profile")
    sanitize(session)
    session.phase("compute-sanitizer")


def make_targets(session, modules, plan, rows, cols, libraries) -> dict:
    """{contender: Target} on one shared input matrix; a library that cannot be set up is noted, not made."""
    from launchlab.gpu.targets import DeviceCopy, RowPath

    row = RowPath(modules["row_softmax"], rows, cols)
    targets = {"copy": DeviceCopy(row.x), "row4": row,
               "fused_rms": make_fused(modules, plan, rows, cols, "rms", row.x),
               "fused_plain": make_fused(modules, plan, rows, cols, "plain", row.x)}
    add_libraries(session, targets, row.x, workloads.shape_name(rows, cols), libraries)
    declared = contenders(session.parameters)
    return {name: targets[name] for name in declared if name in targets}


def add_libraries(session, targets: dict, x, shape: str, libraries: dict) -> None:
    """Each requested library's Target on x into `targets`; one that cannot be set up is noted, not made."""
    from launchlab.gpu import baselines

    for name in libraries:
        target, reason = baselines.make_baseline(name, x, session.backend.stream)
        if target is None:
            libraries[name]["unavailable"][shape] = reason
            session.skip_all(reason, name, shape)
            continue
        libraries[name]["setup"][shape] = target.describe()
        session.library(name, target.version())
        targets[name] = target


def screen_libraries(session, targets: dict, rows: int, cols: int, libraries: dict) -> None:
    """A library that fails the plain-softmax oracle on fixture 0 is recorded and dropped, never timed;
    our own kernels are never screened (their failures fail the run)."""
    x = workloads.rms_softmax_fixture(session.parameters.fixture_seed, 0, rows, cols)
    reference = None
    for name in [n for n in targets if CONTENDERS[n].library]:
        reference = reference if reference is not None else oracles.by_row_blocks(oracles.softmax, x)
        result = oracles.compare_by_row_blocks(targets[name].compute(x), reference, oracles.SOFTMAX_TOLERANCE)
        if not result["passed"]:
            reason = (f"failed the float64 softmax oracle before timing ({result['failing_elements']} of "
                      f"{result['elements']} elements outside the tolerance); not timed")
            libraries[name]["unavailable"][workloads.shape_name(rows, cols)] = reason
            session.skip_all(reason, name, workloads.shape_name(rows, cols))
            del targets[name]


def capture_graphs(session, targets: dict, shape: str, setup: dict) -> dict:
    """{VariantId: GraphReplay}: a graph of CALLS_PER_GRAPH calls for every contender, and of one call for
    those declared with the `graph` submission. Capture costs and node counts go into `setup`."""
    from launchlab.gpu.capture import GraphReplay

    stream = session.backend.stream
    graphs = {}
    for name, target in targets.items():
        for submission in CONTENDERS[name].submissions:
            if submission == "stream":
                continue
            replay = graph_of_calls(target, stream) if submission == DEVICE else GraphReplay(target, stream)
            vid = VariantId(name, shape, submission)
            calls = CALLS_PER_GRAPH if submission == DEVICE else 1
            setup[str(vid)] = {**replay.setup, "calls": calls, "nodes": graph_nodes(replay)}
            graphs[vid] = replay
    return graphs


def validate(session, variants: dict, rows: int, cols: int, index: int, phase: str) -> None:
    """Every variant's output on one fixture against its declared oracle (the copy: exactly x)."""
    x = workloads.rms_softmax_fixture(session.parameters.fixture_seed, index, rows, cols)
    references = {}
    for vid, target in variants.items():
        labels = {"variant": str(vid), "fixture": index, "phase": phase}
        oracle = CONTENDERS[vid.target].oracle
        output = target.compute(x)
        if oracle not in ORACLES:
            session.check(labels, output, x, inputs=x)
            continue
        function, tolerance = ORACLES[oracle]
        if oracle not in references:
            references[oracle] = oracles.by_row_blocks(function, x)
        session.check(labels, output, references[oracle], tolerance, inputs=x)


def measured(vid: VariantId, target) -> Measured:
    return Measured(vid, target.invoke, launches=target.submissions, large=large(vid))


def profile(session, plans: dict) -> None:
    """Nsight Compute's DRAM bytes of one call of the copy kernel, the row path, both fused modes and cuDNN at
    each profile shape, after timing, in a separate process."""
    from launchlab.chapters.fusion.profile import dram_bytes

    text = session.parameters.profile_shapes.strip()
    for rows, cols in (workloads.parse_shapes(text) if text else []):
        shape = workloads.shape_name(rows, cols)
        plan = plans.get(shape) or fused_plan(rows, cols, session.record.device)
        result = dram_bytes(rows, cols, plan, cudnn="cudnn" in requested_libraries(session.parameters))
        session.writer.write_text(f"profiles/ncu_{shape}.csv", result["csv"])
        session.writer.write_json(f"profiles/ncu_{shape}.json", {k: v for k, v in result.items() if k != "csv"})


def sanitize(session) -> None:
    """compute-sanitizer's tools (the `sanitizer_tools` parameter) over every fused design, small, in a child
    process (chapters/fusion/sanitize.py); kept under sanitizer/. A finding is recorded and shown, not a failed run."""
    from launchlab.chapters.fusion import sanitize as child
    from launchlab.gpu import sanitizer

    tools = tuple(t.strip() for t in session.parameters.sanitizer_tools.split(",") if t.strip())
    if tools:
        sanitizer.record(session, child.__name__, child.PROBLEM, tools=tools)
