"""Chapter 2 on the GPU: make every declared variant from its row (a graph variant is a replay of its stream
twin's target, captured once), validate the stream and graph versions, time the two paths paired within rounds,
and time the graph-length series beside launches from Python and from C++ (skipped, with the reason, where the
C++ loop does not build)."""
from __future__ import annotations

import dataclasses

from launchlab.chapters.graphs import CHAPTER, EMPTY_KERNELS, TILED_KERNELS, is_large, kernels_of, launches_of
from launchlab.chapters.ordinary_launches import ROW_KERNELS
from launchlab.measure.protocol import Measured
from launchlab.model import workloads

DOT_PLAIN_MAX_NODES = 64  # larger graphs' DOT text is saved gzip-compressed


@dataclasses.dataclass
class Context:
    """What the rows' `make` reads: the built modules, and the one row path every copy of it runs on."""
    modules: dict
    copies_path: object


def run(session) -> None:
    from launchlab.gpu.capture import stream_and_graph
    from launchlab.gpu.targets import RowPath

    parameters = session.parameters
    if parameters.setup_repeats < 1:
        raise ValueError("setup_repeats must be at least 1")
    declared = CHAPTER.variants(parameters)
    modules = {"row": session.build("row_softmax", "row_softmax", ROW_KERNELS),
               "tiled": session.build("tiled_softmax", "tiled_softmax", TILED_KERNELS),
               "empty": session.build("empty", "empty", EMPTY_KERNELS)}
    context = Context(modules, RowPath(modules["row"], *parameters.copies_shape[0]))
    runners = stream_and_graph(declared, lambda v: v.row.make(context, v.id.case), session.backend.stream)
    save_graphs(session, runners)

    validated = [v for v in declared if v.id in runners and v.row.oracle.function is not None]
    for index in range(workloads.FIXTURES_BEFORE_TIMING):
        validate(session, validated, runners, index, "before")
    session.require_passed("before timing")

    # Stream against graph of the two paths, paired within rounds; the graph-length series in rounds of
    # their own, so the paths' single calls never follow a 1024-launch batch or the C++ loop.
    session.measure("warm", [measured(v.id, runners[v.id]) for v in declared if "paths" in v.enters])
    series = [v for v in declared if "per_node" in v.enters]
    session.measure("warm", [measured(v.id, runners[v.id]) for v in series if v.id in runners]
                    + native_variants(session, [v for v in series if v.id.submission == "native"], runners))

    validate(session, validated, runners, workloads.HELD_OUT_FIXTURE, "after")
    session.require_passed("after timing")


def measured(vid, runner) -> Measured:
    """Stream versions submit one launch per kernel, a replay one graph launch; a pair shares its batch size."""
    return Measured(vid, runner.invoke, launches=runner.submissions, large=is_large(vid))


def native_variants(session, variants, runners: dict) -> list[Measured]:
    """The stream twin's launches from the C++ loop (cuLaunchKernel) on the same stream, where the loop builds;
    otherwise every native variant is skipped with the reason."""
    from launchlab.gpu import native

    library, how = native.build_library()
    session.note("native_loop", {"built": library is not None, "how": how})
    if library is None:
        for variant in variants:
            session.skip(variant.id, f"the native C++ loop was not built: {how}")
        return []
    launcher, stream_ptr = native.NativeLauncher(library), session.backend.stream.ptr
    result = []
    for variant in variants:
        packed = launcher.prepare(runners[variant.id.with_submission("stream")].native_launches())
        result.append(Measured(variant.id, lambda packed=packed: launcher.enqueue(packed, stream_ptr, 1),
                               launches=launches_of(variant.id), large=is_large(variant.id)))
    return result


def save_graphs(session, runners: dict) -> None:
    """Each graph's DOT text as CUDA printed it, what its stream version launches, and its set-up steps:
    the capture behind the replay and `setup_repeats - 1` more captures of the same work, discarded."""
    from launchlab.gpu.capture import capture

    index, setups = {}, {}
    for graph_id, replay in runners.items():
        if graph_id.submission != "graph":
            continue
        target = replay.target
        name = f"graphs/{graph_id}.dot" + (".gz" if len(target.launches) > DOT_PLAIN_MAX_NODES else "")
        session.writer.write_text(name, replay.dot)
        index[str(graph_id)] = {"dot": name, "kernel_names": list(kernels_of(graph_id.target)),
                                "stream_launches": len(target.launches)}
        repeats = [capture(target.invoke, replay.stream)[1] for _ in range(session.parameters.setup_repeats - 1)]
        setups[str(graph_id)] = [replay.setup, *repeats]
    session.writer.write_json("graphs/index.json", index)
    session.writer.write_json("graphs/setup.json", setups)


def validate(session, variants, runners: dict, index: int, phase: str) -> None:
    """Every variant with an output on one fixture. A replay reads the buffers captured in its graph: the
    fixture is written into them and every output is poisoned first."""
    seed, fixtures = session.parameters.fixture_seed, {}
    for variant in variants:
        runner, twin = runners[variant.id], variant.id.with_submission("stream")
        if twin not in fixtures:  # a stream version and its graph share the fixture
            fixtures[twin] = fixture(seed, index, runners[twin], variant.row.oracle)
        x, reference, row_offsets = fixtures[twin]
        session.check({"variant": str(variant.id), "fixture": index, "phase": phase}, runner.compute(x), reference,
                      variant.row.oracle.tolerance, row_offsets=row_offsets, inputs=x)


def fixture(seed: int, index: int, target, oracle):
    """(input, the oracle's output, row offsets or None) for one validation of a stream target."""
    if hasattr(target, "row_offsets"):  # the tiled path: rows of different lengths, packed
        x = workloads.packed_fixture(seed, index, target.lengths)
        return x, oracle.function(x, target.row_offsets), target.row_offsets
    path = getattr(target, "path", target)  # k copies of the row path write what one writes
    x = workloads.rms_softmax_fixture(seed, index, path.rows, path.cols)
    return x, oracle.function(x), None
