"""GPU: every megakernel design (kernels/megakernel_designs.cu) against the float64 oracle on fresh seeds
for balanced, ragged and irregular rows, on a stream and as a graph replay, back to back; poisoned outputs
fail; captured PDL graphs carry programmatic edges; the persistent kernel's bounded wait and self-resetting
counters; traced builds whose traces pass their design's checks."""
import time

import numpy as np
import pytest

from launchlab.chapters.megakernels import design_schedules as ds
from launchlab.model import oracles, workloads

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure
IRREGULAR = [1, 1023, 1025, 5000, 3, 2048, 70001, 4096, 777]
LENGTH_SETS = {"balanced": list(workloads.tiled_row_lengths("balanced")),
               "ragged": list(workloads.tiled_row_lengths("ragged")), "irregular": IRREGULAR}


@pytest.fixture(scope="module")
def backend():
    from launchlab.gpu.backend import CupyBackend

    return CupyBackend()  # a non-blocking stream made current, as in the chapter


@pytest.fixture(scope="module")
def modules():
    from launchlab.gpu import build, device
    from launchlab.chapters.megakernels import megakernel_designs as designs

    if device.compute_capability() < (9, 0):  # most tests here launch with PDL or clusters
        pytest.skip(f"PDL and clusters need compute capability 9.0; this GPU has {device.compute_capability()} "
                    "(the chapter's run covers the designs that run there)")
    return {"tiled": build.load_module("tiled_softmax"), "designs": designs.load(),
            "designs_traced": designs.load(traced=True)}


def design_targets(module, path, driver=None) -> list:
    from launchlab.chapters.megakernels import megakernel_designs as designs

    return [designs.PdlThreeKernels(module, path, programmatic=True, driver=driver),
            designs.PdlThreeKernels(module, path, programmatic=False, driver=driver),
            designs.TwoKernels(module, path, programmatic=False, driver=driver),
            designs.TwoKernels(module, path, programmatic=True, driver=driver),
            designs.DependencyPersistent(module, path),
            designs.ClusterRows(module, path, driver=driver)]


def check(target, values, invoke, label):
    ref = oracles.rms_softmax_packed(values, target.row_offsets)
    result = oracles.compare(target.compute(values, invoke), ref, oracles.RMS_SOFTMAX_TOLERANCE, target.row_offsets)
    assert result["passed"], f"seed {FRESH_SEED}, {label}: {result}"


def after_run(target):
    if hasattr(target, "check_error"):
        target.check_error()
        assert target.counters_consistent()


@pytest.mark.parametrize("rows", sorted(LENGTH_SETS))
def test_every_design_matches_the_oracle_on_stream_and_graph(modules, backend, rows):
    from launchlab.gpu.capture import GraphReplay
    from launchlab.gpu.targets import TiledPath

    lengths = LENGTH_SETS[rows]
    path = TiledPath(modules["tiled"], lengths)
    for target in design_targets(modules["designs"], path):
        assert target.list_check["passed"] if hasattr(target, "list_check") else True
        replay = GraphReplay(target, backend.stream)
        for index in range(2):
            values = workloads.packed_fixture(FRESH_SEED, index, lengths)
            check(target, values, target.invoke, f"{rows} {target.name} stream fixture {index}")
            after_run(target)
            check(target, values, replay.invoke, f"{rows} {target.name} graph fixture {index}")
            after_run(target)


@pytest.mark.parametrize("rows", ["ragged", "irregular"])
def test_back_to_back_invocations_stay_correct(modules, backend, rows):
    """PDL lets an invocation's A start while the previous C runs, and the persistent counters go one
    round per invocation: 200 invocations back to back (stream, then graph), then the output is checked."""
    from launchlab.gpu.capture import GraphReplay
    from launchlab.gpu.targets import TiledPath

    lengths = LENGTH_SETS[rows]
    path = TiledPath(modules["tiled"], lengths)
    values = workloads.packed_fixture(FRESH_SEED, 2, lengths)
    for target in design_targets(modules["designs"], path):
        replay = GraphReplay(target, backend.stream)
        for invoke, how in ((target.invoke, "stream"), (replay.invoke, "graph")):
            def many():
                for _ in range(200):
                    invoke()
            check(target, values, many, f"{rows} {target.name} 200 x {how}")
            after_run(target)


def test_poisoned_outputs_fail(modules, backend):
    from launchlab.gpu.targets import TiledPath

    lengths = IRREGULAR
    path = TiledPath(modules["tiled"], lengths)
    values = workloads.packed_fixture(FRESH_SEED, 3, lengths)
    ref = oracles.rms_softmax_packed(values, path.row_offsets)
    for target in design_targets(modules["designs"], path):
        check(target, values, target.invoke, f"{target.name} before poisoning")
        target.poison()  # no invocation after it: every element must fail
        result = oracles.compare(target.output(), ref, oracles.RMS_SOFTMAX_TOLERANCE, path.row_offsets)
        assert not result["passed"] and result["non_finite_elements"] == ref.size, target.name


def test_pdl_graphs_have_programmatic_edges(modules, backend):
    from launchlab.chapters.megakernels import megakernel_designs as designs
    from launchlab.gpu.capture import GraphReplay
    from launchlab.gpu.targets import TiledPath

    path = TiledPath(modules["tiled"], LENGTH_SETS["ragged"])
    module = modules["designs"]
    expected = [(designs.PdlThreeKernels(module, path, True), 2, 0), (designs.PdlThreeKernels(module, path, False), 0, 2),
                (designs.TwoKernels(module, path, False), 0, 1), (designs.TwoKernels(module, path, True), 1, 0),
                (designs.ClusterRows(module, path), 1, 0)]  # ragged: two cluster classes, two launches
    for target, programmatic, default in expected:
        record = designs.graph_edge_record(GraphReplay(target, backend.stream))
        assert record["edge_types"] == {"programmatic": programmatic, "default": default}, (target.name, record)
        kernels = [node.get("kernel") for node in record["nodes"]]
        assert all(node["type"] == "kernel" for node in record["nodes"]), record["nodes"]
        if target.name.startswith("pdl3"):
            chain = [(e["from_kernel"], e["to_kernel"]) for e in record["edges"]]
            assert sorted(chain) == sorted([("pdl_tile_producer", "pdl_row_combiner"),
                                            ("pdl_row_combiner", "pdl_tile_consumer")]), (chain, kernels)
        for edge in record["edges"]:
            if edge["type"] == "programmatic":
                assert edge["from_port"] in ("programmatic", "launch_order"), edge


def test_cuda_bindings_driver_launches_like_ctypes(modules, backend):
    from launchlab.chapters.megakernels import pdl
    from launchlab.gpu.targets import TiledPath

    if pdl._bindings() is None:
        pytest.skip("cuda-bindings is not installed: the ctypes driver is the one in use")
    path = TiledPath(modules["tiled"], IRREGULAR)
    values = workloads.packed_fixture(FRESH_SEED, 4, IRREGULAR)
    for target in design_targets(modules["designs"], path, driver="cuda-bindings"):
        check(target, values, target.invoke, f"{target.name} through cuda-bindings")


@pytest.mark.parametrize("workers", [1, 7, 64])
def test_persistent_with_few_workers(modules, backend, workers):
    from launchlab.chapters.megakernels import megakernel_designs as designs
    from launchlab.gpu.targets import TiledPath

    path = TiledPath(modules["tiled"], IRREGULAR)
    target = designs.DependencyPersistent(modules["designs"], path, workers=workers)
    assert target.workers == workers and target.list_check["passed"]
    check(target, workloads.packed_fixture(FRESH_SEED, 5, IRREGULAR), target.invoke, f"{workers} workers")
    after_run(target)


def test_persistent_refuses_more_workers_than_co_reside(modules, backend):
    from launchlab.chapters.megakernels import megakernel_designs as designs
    from launchlab.gpu.targets import TiledPath

    path = TiledPath(modules["tiled"], [1024] * 4000)
    with pytest.raises(ValueError, match="co-resident"):
        designs.DependencyPersistent(modules["designs"], path, workers=4000)


def test_persistent_bounded_wait_reports_a_deadlocked_list_instead_of_hanging(modules, backend):
    """Worker 0 waits on row 1 whose tile 2 it holds further down its own list: it gives up after the
    bound, worker 1 sees the flag and leaves; the host names the task; after reset a healthy run passes."""
    from launchlab.chapters.megakernels import megakernel_designs as designs

    lengths = [2048, 2048]
    module = modules["designs"]
    probe = designs.DependencyPersistent(module, lengths)
    graph = probe.graph
    c = lambda t: graph.tiles + graph.rows + t  # noqa: E731
    stuck = ds.WorkerLists(np.array([0, 4, 8], np.int32), np.array([0, c(2), 2, c(0), 1, 3, c(1), c(3)], np.int32),
                           np.full(8, -1, np.int32))
    assert not ds.check_lists(graph, stuck)["passed"]
    target = designs.DependencyPersistent(module, lengths, lists=stuck, wait_limit_ns=200_000_000)
    target.reset()
    started = time.perf_counter()
    target.load(workloads.packed_fixture(FRESH_SEED, 6, lengths))
    target.invoke()
    with pytest.raises(designs.DesignError, match=rf"C task ({c(2)}|{c(3)}) .*wait ran out"):
        target.check_error()
    assert time.perf_counter() - started < 30
    no_round = ds.WorkerLists(np.array([0, 1, 8], np.int32), np.array([c(0), 0, 1, c(1), 2, 3, c(2), c(3)], np.int32),
                              np.full(8, -1, np.int32))
    orphan = designs.DependencyPersistent(module, lengths, lists=no_round, wait_limit_ns=200_000_000)
    orphan.reset()
    orphan.invoke()
    with pytest.raises(designs.DesignError, match="knew no round"):
        orphan.check_error()
    target.reset()
    healthy = designs.DependencyPersistent(module, lengths)
    check(healthy, workloads.packed_fixture(FRESH_SEED, 7, lengths), healthy.invoke, "persistent after an error")
    after_run(healthy)


def test_sixteen_block_clusters(modules, backend):
    from launchlab.chapters.megakernels import megakernel_designs as designs
    from launchlab.gpu.targets import TiledPath

    lengths = LENGTH_SETS["ragged"]
    path = TiledPath(modules["tiled"], lengths)
    target = designs.ClusterRows(modules["designs"], path, max_cluster=16)
    assert target.plan.classes[0][0] == 16
    check(target, workloads.packed_fixture(FRESH_SEED, 8, lengths), target.invoke, "clusters of 16")


@pytest.mark.parametrize("rows", ["ragged", "irregular"])
def test_traced_designs_pass_their_checks(modules, backend, rows):
    from launchlab.chapters.megakernels import megakernel_designs as designs
    from launchlab.gpu.capture import GraphReplay
    from launchlab.gpu.targets import TiledPath

    lengths = LENGTH_SETS[rows] if rows == "irregular" else list(LENGTH_SETS[rows][:24]) + [1, 5000]
    traced = modules["designs_traced"]
    path = TiledPath(modules["tiled"], lengths)
    values = workloads.packed_fixture(FRESH_SEED, 9, lengths)
    for target in design_targets(traced, path):
        if isinstance(target, designs.DependencyPersistent):  # the trace shows the timed kernel's grid
            assert target.workers == designs.DependencyPersistent(modules["designs"], path).workers
        records = designs.attach_trace_buffer(target, traced)  # before the capture's first replay
        replay = GraphReplay(target, backend.stream)
        for invoke, how in ((target.invoke, "stream"), (replay.invoke, "graph")):
            target.load(values)
            trace = designs.trace(target, traced, invoke, records)
            graph = target.task_graph()
            lists = getattr(target, "lists", None)
            result = ds.check_design_trace(trace, graph, target.design, lists)
            assert result["passed"], (target.name, how, result)
            summary = ds.trace_summary(trace, graph, target.design, 1056, lists=lists,
                                       plan=getattr(target, "plan", None))
            assert summary["span_ns"] > 0 and summary["model"]["model_span_ns"] > 0
        check(target, values, target.invoke, f"traced {target.name}")  # tracing leaves the results right
        after_run(target)
