"""Chapter 2 on the GPU: capture every workload once, validate its stream and graph versions, time them
paired within rounds, and time the graph-length series beside launches from Python and from C++."""
from __future__ import annotations

from launchlab.chapters.graphs import (EMPTY_KERNELS, LARGE_ELEMENTS, LARGE_LAUNCHES, TILED_KERNELS, copies_variant,
                                       counts, empty_variant, graph_twin, is_graph_length, kernel_names, launches_of,
                                       row_variant, tiled_cases, tiled_variant)
from launchlab.chapters.ordinary_launches import ROW_KERNELS
from launchlab.measure.protocol import Measured
from launchlab.model import oracles, workloads

DOT_PLAIN_MAX_NODES = 64  # larger graphs' DOT text is saved gzip-compressed


def run(session) -> None:
    from launchlab.gpu import native
    from launchlab.gpu.capture import GraphReplay

    if session.parameters.setup_repeats < 1:
        raise ValueError("setup_repeats must be at least 1")
    modules = {"row": session.build("row_softmax", "row_softmax", ROW_KERNELS),
               "tiled": session.build("tiled_softmax", "tiled_softmax", TILED_KERNELS),
               "empty": session.build("empty", "empty", EMPTY_KERNELS)}
    targets = make_targets(session.parameters, modules)
    graphs = {graph_twin(vid): GraphReplay(target, session.backend.stream) for vid, target in targets.items()}
    save_graphs(session, targets, graphs)

    for index in range(workloads.FIXTURES_BEFORE_TIMING):
        validate(session, targets, graphs, index, "before")
    session.require_passed("before timing")

    # Stream against graph of the two paths, paired within rounds; the graph-length series in rounds of
    # their own, so the paths' single calls never follow a 1024-launch batch or the C++ loop.
    session.measure("warm", [measured(vid, runner) for vid, runner in runners(targets, graphs)
                             if not is_graph_length(vid)])
    length_series = [measured(vid, runner) for vid, runner in runners(targets, graphs) if is_graph_length(vid)]
    session.measure("warm", length_series + native_variants(session, modules["empty"], native))

    validate(session, targets, graphs, workloads.HELD_OUT_FIXTURE, "after")
    session.require_passed("after timing")


def make_targets(parameters, modules: dict) -> dict:
    """{stream VariantId: the Target its graph is captured from}, on buffers allocated once."""
    from launchlab.chapters.graphs.targets import EmptyKernels, RowCopies
    from launchlab.gpu.targets import RowPath, TiledPath

    targets = {}
    for shape in workloads.parse_shapes(parameters.row_shapes):
        targets[row_variant(*shape, "stream")] = RowPath(modules["row"], *shape)
    for case in tiled_cases(parameters.tiled_cases):
        targets[tiled_variant(case, "stream")] = TiledPath(modules["tiled"], workloads.tiled_row_lengths(case))
    for count in counts(parameters.empty_lengths):
        targets[empty_variant(count, "stream")] = EmptyKernels(modules["empty"], count)
    copies_path = RowPath(modules["row"], *workloads.parse_shapes(parameters.copies_shape)[0])
    for copies in counts(parameters.row_copies):
        targets[copies_variant(copies, "stream")] = RowCopies(copies_path, copies)
    return targets


def runners(targets: dict, graphs: dict):
    """(VariantId, what invokes it) for every stream version and its graph, stream first."""
    for vid, target in targets.items():
        yield vid, target
        yield graph_twin(vid), graphs[graph_twin(vid)]


def measured(vid, runner) -> Measured:
    """Stream versions submit one launch per kernel, a replay one graph launch; a pair shares its batch size."""
    path = getattr(runner, "target", runner)
    if vid.target == "row4":
        large = path.rows * path.cols >= LARGE_ELEMENTS
    else:
        large = launches_of(vid) >= LARGE_LAUNCHES
    launches = 1 if vid.submission == "graph" else len(runner.launches)
    return Measured(vid, runner.invoke, launches=launches, large=large)


def native_variants(session, empty_module, native) -> list[Measured]:
    """N empty kernels from the C++ loop (cuLaunchKernel) on the same stream, where the loop builds."""
    library, how = native.build_library()
    session.note("native_loop", {"built": library is not None, "how": how})
    if library is None:
        return []
    launcher = native.NativeLauncher(library)
    packed = launcher.prepare([(empty_module.kernel("empty_kernel").kernel.ptr, 1, 1, ())])
    stream_ptr = session.backend.stream.ptr
    return [Measured(empty_variant(count, "native"), lambda count=count: launcher.enqueue(packed, stream_ptr, count),
                     launches=count, large=count >= LARGE_LAUNCHES)
            for count in counts(session.parameters.empty_lengths)]


def save_graphs(session, targets: dict, graphs: dict) -> None:
    """Each graph's DOT text as CUDA printed it, what its stream version launches, and its set-up steps:
    the capture behind the replay and `setup_repeats - 1` more captures of the same work, discarded."""
    from launchlab.gpu.capture import capture

    index, setups = {}, {}
    for vid, target in targets.items():
        graph_id = graph_twin(vid)
        replay = graphs[graph_id]
        name = f"graphs/{graph_id}.dot" + (".gz" if len(target.launches) > DOT_PLAIN_MAX_NODES else "")
        session.writer.write_text(name, replay.dot)
        index[str(graph_id)] = {"dot": name, "kernel_names": list(kernel_names(vid)),
                                "stream_launches": len(target.launches)}
        repeats = [capture(target.invoke, replay.stream)[1] for _ in range(session.parameters.setup_repeats - 1)]
        setups[str(graph_id)] = [replay.setup, *repeats]
    session.writer.write_json("graphs/index.json", index)
    session.writer.write_json("graphs/setup.json", setups)


def validate(session, targets: dict, graphs: dict, index: int, phase: str) -> None:
    """Stream version and graph replay of every workload with an output, on one fixture. A replay reads the
    buffers captured in its graph: the fixture is written into them and every output is poisoned first."""
    seed = session.parameters.fixture_seed
    for vid, target in targets.items():
        if vid.target == "empty":
            continue
        x, reference, row_offsets = fixture(seed, index, target)
        for variant, runner in ((vid, target), (graph_twin(vid), graphs[graph_twin(vid)])):
            session.check({"variant": str(variant), "fixture": index, "phase": phase}, runner.compute(x), reference,
                          oracles.RMS_SOFTMAX_TOLERANCE, row_offsets=row_offsets, inputs=x)


def fixture(seed: int, index: int, target):
    """(input, oracle output, row offsets or None) for one validation of a target."""
    if hasattr(target, "row_offsets"):  # the tiled path: rows of different lengths, packed
        x = workloads.packed_fixture(seed, index, target.lengths)
        return x, oracles.rms_softmax_packed(x, target.row_offsets), target.row_offsets
    path = getattr(target, "path", target)  # k copies of the row path write what one writes
    x = workloads.rms_softmax_fixture(seed, index, path.rows, path.cols)
    return x, oracles.rms_softmax(x), None
