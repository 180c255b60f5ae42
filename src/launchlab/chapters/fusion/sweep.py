"""Chapter 3's sweep on the GPU: at every sweep shape (4096 rows x 128 i, 128 rows x N), the copy, both fused
modes and the libraries on one input buffer, validated, then timed with the frozen protocol, warm L2 from a graph
of sweep_calls(rows, cols) calls and cold L2 from single stream calls after the flush, then validated again.

The sweep moves about 1.4 G elements per fixture, too many to generate and check on the host in a run of a few
minutes. Its fixtures are drawn on the GPU (CuPy's RandomState seeded with the fixture's seed, the same recipe as
workloads.rms_softmax_fixture) and checked there against the same float64 oracles (oracles.softmax and
rms_softmax with xp=cupy). Its checks record the generator and seed instead of array hashes.
"""
from __future__ import annotations

from launchlab.chapters.fusion import (CONTENDERS, FUSED_MODES, large, sweep_calls, sweep_contenders,
                                       sweep_shapes)
from launchlab.measure.protocol import Measured
from launchlab.measure.variant import VariantId
from launchlab.model import oracles, workloads

GENERATOR = "cupy.random.RandomState"
SWEEP_GROUP = 8  # sweep shapes set up, timed (in shared shuffled rounds) and checked together


def device_fixture(base_seed: int, index: int, rows: int, cols: int):
    """The RMS-softmax fixture's recipe on the GPU: per-row scales in [0.25, 4), normal values, one +12 spike
    per row. Same seed, same matrix (for a given CuPy)."""
    import cupy

    generator = cupy.random.RandomState(workloads.fixture_seed(base_seed, index))
    scale = generator.uniform(0.25, 4.0, size=(rows, 1), dtype=cupy.float32)
    x = generator.standard_normal((rows, cols), dtype=cupy.float32) * scale
    spikes = generator.randint(0, cols, size=rows)
    x[cupy.arange(rows), spikes] += cupy.float32(12.0)
    return x


def compute_on_device(variant, x, stream):
    """One poisoned invocation of a variant on a device fixture; its y, on the device."""
    variant.load(x)
    variant.poison()
    variant.invoke()
    stream.synchronize()
    return variant.device_output()


def validate_on_device(session, variants: dict, rows: int, cols: int, index: int, phase: str) -> None:
    """Every variant's output on one device fixture against its oracle (the copy: exactly x)."""
    import cupy

    x = device_fixture(session.parameters.fixture_seed, index, rows, cols)
    references = {}
    stream = session.backend.stream
    for vid, variant in variants.items():
        y = compute_on_device(variant, x, stream)
        labels = {"variant": str(vid), "fixture": index, "phase": phase, "on_device": True,
                  "input": {"generator": GENERATOR, "seed": workloads.fixture_seed(session.parameters.fixture_seed, index)}}
        oracle = CONTENDERS[vid.target].oracle
        if oracle == "x itself (exact)":
            differing = int(cupy.count_nonzero(y.view(cupy.uint32) != x.view(cupy.uint32)))
            result = {"passed": differing == 0, "elements": int(y.size), "failing_elements": differing, "exact": True}
        else:
            if oracle not in references:
                function = oracles.rms_softmax if oracle.startswith("rms_softmax") else oracles.softmax
                references[oracle] = function(x, xp=cupy)
            tolerance = oracles.RMS_SOFTMAX_TOLERANCE if oracle.startswith("rms_softmax") else oracles.SOFTMAX_TOLERANCE
            result = oracles.compare(y, references[oracle], tolerance, xp=cupy)
        session.add_check(labels, result)
    del references
    cupy.get_default_memory_pool().free_all_blocks()


def make_sweep_targets(session, modules, plan, rows, cols, libraries) -> dict:
    """{contender: Target} for a sweep point, on one input buffer; a library that cannot be set up is noted."""
    import cupy

    from launchlab.chapters.fusion.run import add_libraries, make_fused
    from launchlab.gpu.targets import DeviceCopy

    copy = DeviceCopy(cupy.empty((rows, cols), dtype=cupy.float32))
    targets = {"copy": copy}
    for name, mode in FUSED_MODES.items():
        targets[name] = make_fused(modules, plan, rows, cols, mode, copy.x)
    add_libraries(session, targets, copy.x, workloads.shape_name(rows, cols), libraries)
    declared = sweep_contenders(session.parameters)
    return {name: targets[name] for name in declared if name in targets}


def screen_on_device(session, targets: dict, rows: int, cols: int, libraries: dict) -> None:
    """A library that fails the plain-softmax oracle on fixture 0 is recorded and dropped, never timed."""
    import cupy

    shape = workloads.shape_name(rows, cols)
    x = device_fixture(session.parameters.fixture_seed, 0, rows, cols)
    reference = None
    for name in [n for n in targets if CONTENDERS[n].library]:
        reference = oracles.softmax(x, xp=cupy) if reference is None else reference
        output = compute_on_device(targets[name], x, session.backend.stream)
        result = oracles.compare(output, reference, oracles.SOFTMAX_TOLERANCE, xp=cupy)
        if not result["passed"]:
            reason = (f"failed the float64 softmax oracle before timing ({result['failing_elements']} of "
                      f"{result['elements']} elements outside the tolerance); not timed")
            libraries[name]["unavailable"][shape] = reason
            session.skip_all(reason, name, shape)
            del targets[name]


def run_sweep(session, modules: dict, plans: dict, libraries: dict, cold, setup: dict) -> None:
    """The sweep shapes SWEEP_GROUP at a time: targets, validation, graphs, then warm and cold timing of the
    group's variants together (shuffled rounds over the group), validation after; the buffers are freed before
    the next group."""
    shapes = sweep_shapes(session.parameters)
    if not shapes:
        return
    import cupy

    for start in range(0, len(shapes), SWEEP_GROUP):
        graphs, streamed = {}, {}
        for rows, cols in shapes[start:start + SWEEP_GROUP]:
            point_graphs, point_streamed = prepare_point(session, modules, plans, libraries, setup, rows, cols)
            graphs.update(point_graphs)
            streamed.update(point_streamed)
        session.require_passed("before timing (sweep)")
        session.measure("warm", [Measured(vid, g.invoke, launches=g.submissions, large=large(vid))
                                 for vid, g in graphs.items()])
        session.measure("cold", [Measured(vid, t.invoke, launches=t.submissions, large=large(vid))
                                 for vid, t in streamed.items()], flush=cold.flush)
        for rows, cols in shapes[start:start + SWEEP_GROUP]:
            shape = workloads.shape_name(rows, cols)
            validate_on_device(session, {vid: g for vid, g in graphs.items() if vid.case == shape}, rows, cols,
                               workloads.HELD_OUT_FIXTURE, "after")
        session.require_passed("after timing (sweep)")
        del graphs, streamed
        cupy.get_default_memory_pool().free_all_blocks()


def prepare_point(session, modules, plans, libraries, setup, rows, cols) -> tuple[dict, dict]:
    """One sweep point's graphs and stream targets, validated on fixture 0."""
    from launchlab.chapters.fusion.run import graph_nodes, graph_of_calls

    shape = workloads.shape_name(rows, cols)
    targets = make_sweep_targets(session, modules, plans[shape], rows, cols, libraries)
    screen_on_device(session, targets, rows, cols, libraries)
    calls = sweep_calls(rows, cols)
    streamed = {VariantId(name, shape, "stream"): target for name, target in targets.items()}
    graphs = {}
    for name, target in targets.items():
        vid = VariantId(name, shape, f"graph{calls}")
        graphs[vid] = graph_of_calls(target, session.backend.stream, calls)
        setup[str(vid)] = {**graphs[vid].setup, "calls": calls, "nodes": graph_nodes(graphs[vid])}
    validate_on_device(session, {**streamed, **graphs}, rows, cols, 0, "before")
    return graphs, streamed
