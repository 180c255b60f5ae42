"""GPU: every chapter 4 variant against the float64 oracle on fresh seeds and irregular rows; the queue's
counters against the model; its bounded wait; co-residency of the cooperative grid; traced builds."""
import time

import numpy as np
import pytest

from launchlab.model import oracles
from launchlab.model import schedules
from launchlab.model import workloads

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure
IRREGULAR = [1, 1023, 1025, 5000, 3, 2048, 70001, 4096, 777]
LENGTH_SETS = {"irregular": IRREGULAR, "ragged16": list(workloads.tiled_row_lengths("ragged")[:16]),
               "ragged": list(workloads.tiled_row_lengths("ragged"))}


@pytest.fixture(scope="module")
def backend():
    from launchlab.gpu.backend import CupyBackend

    return CupyBackend()  # a non-blocking stream made current, as in the chapter


@pytest.fixture(scope="module")
def modules():
    from launchlab.gpu import build
    from launchlab.gpu import persistent as megakernel

    return {"tiled": build.load_module("tiled_softmax"), "mega": megakernel.load(),
            "tiled_traced": build.load_module("tiled_softmax", {"LAUNCHLAB_TRACE": None}),
            "mega_traced": megakernel.load(traced=True)}


def variants(modules, lengths, stream, traced=False):
    """(path, queue, {variant: invoke}) for one set of rows, graphs captured as in the chapter."""
    from launchlab.gpu import persistent as megakernel
    from launchlab.chapters import megakernels as chapter
    from launchlab.gpu.targets import TiledPath

    suffix = "_traced" if traced else ""
    path = TiledPath(modules["tiled" + suffix], lengths)
    runner = {"path": path, "coop": megakernel.CooperativePhases(modules["mega" + suffix], path),
              "queue": megakernel.TaskQueue(modules["mega" + suffix], path)}
    nodes = {}
    invokes = chapter._capture_variants(runner, stream, "t", {}, nodes, {})
    return runner, invokes, nodes


def check(path, values, invoke, label):
    ref = oracles.rms_softmax_packed(values, path.row_offsets)
    result = oracles.compare(path.compute(values, invoke), ref, oracles.RMS_SOFTMAX_TOLERANCE, path.row_offsets)
    assert result["passed"], f"seed {FRESH_SEED}, {label}: {result}"


@pytest.mark.parametrize("rows", sorted(LENGTH_SETS))
def test_every_variant_matches_oracle_and_the_queue_counters_match_the_model(modules, backend, rows):
    from launchlab.chapters import megakernels as chapter

    lengths = LENGTH_SETS[rows]
    runner, invokes, nodes = variants(modules, lengths, backend.stream)
    assert set(invokes) == set(chapter.VARIANTS)
    for index in range(2):
        values = workloads.packed_fixture(FRESH_SEED, index, lengths)
        for variant, invoke in invokes.items():
            runner["queue"].clear_error()
            check(runner["path"], values, invoke, f"{rows} {variant} fixture {index}")
            if variant.startswith("queue"):
                runner["queue"].check_error()
                assert runner["queue"].counters_match(), runner["queue"].counters_after()
    from launchlab.gpu import capture
    from launchlab.model import dot
    counts = {name: dot.node_counts(n, n["kernel_names"]) for name, n in nodes.items()}
    assert counts == {"graph3.t": {"kernel": 3, "other": 0}, "coop_graph.t": {"kernel": 1, "other": 0},
                      "queue_graph.t": {"kernel": 1, "other": 1}}  # the counter reset is a memset node


@pytest.mark.parametrize("workers", [1, 7, "over"])
def test_queue_needs_no_co_residency(modules, backend, workers):
    """One worker, a few, or four times the resident capacity: the A-B-C order always completes."""
    from launchlab.gpu import persistent as megakernel
    from launchlab.gpu.targets import TiledPath

    path = TiledPath(modules["tiled"], IRREGULAR)
    probe = megakernel.TaskQueue(modules["mega"], path)
    count = 4 * probe.capacity if workers == "over" else workers
    queue = megakernel.TaskQueue(modules["mega"], path, workers=count)
    values = workloads.packed_fixture(FRESH_SEED, 5, IRREGULAR)
    check(path, values, queue.invoke, f"queue with {count} workers")
    queue.check_error()
    assert queue.counters_match()


def test_bounded_wait_reports_an_impossible_order_instead_of_hanging(modules, backend):
    """One worker, B tasks first: B of row 0 waits for A tiles nobody will run. The worker gives up after the
    bound, the host sees the flag and names the task; a later run in the natural order is unaffected."""
    from launchlab.gpu import persistent as megakernel
    from launchlab.gpu.targets import TiledPath

    lengths = [3000, 1024, 5000]
    path = TiledPath(modules["tiled"], lengths)
    graph = schedules.TaskGraph.from_lengths(lengths)
    b_first = np.concatenate([np.arange(graph.tiles, graph.tiles + graph.rows), np.arange(graph.tiles),
                              np.arange(graph.tiles + graph.rows, graph.total)])
    assert not graph.is_safe_order(b_first)
    with pytest.raises(schedules.Deadlock):
        schedules.simulate_queue(graph, np.ones(graph.total), 1, b_first)  # the model agrees: no progress
    queue = megakernel.TaskQueue(modules["mega"], path, workers=1, order=b_first, wait_limit_ns=200_000_000)
    queue.clear_error()
    started = time.perf_counter()
    queue.invoke()
    with pytest.raises(megakernel.MegakernelError, match=rf"B task {graph.tiles} \(row 0\) saw 0 of 3"):
        queue.check_error()
    assert time.perf_counter() - started < 30
    healthy = megakernel.TaskQueue(modules["mega"], path, workers=1)
    check(path, workloads.packed_fixture(FRESH_SEED, 6, lengths), healthy.invoke, "queue after an error")
    healthy.check_error()


def test_cooperative_grid_is_checked_against_co_residency(modules, backend):
    from launchlab.gpu import persistent as megakernel
    from launchlab.gpu.targets import TiledPath

    path = TiledPath(modules["tiled"], IRREGULAR)
    coop = megakernel.CooperativePhases(modules["mega"], path)
    assert coop.workers == coop.capacity == coop.resident_per_sm * megakernel.sm_count()
    with pytest.raises(ValueError, match="co-resident"):
        megakernel.CooperativePhases(modules["mega"], path, workers_per_sm=coop.resident_per_sm + 1)
    small = megakernel.CooperativePhases(modules["mega"], path, workers_per_sm=1)
    check(path, workloads.packed_fixture(FRESH_SEED, 7, IRREGULAR), small.invoke, "cooperative, 1 block per SM")


def test_traced_builds_keep_the_timed_worker_counts_and_their_traces_pass_the_checks(modules, backend):
    from launchlab.gpu import persistent as megakernel
    from launchlab.gpu import probes
    from launchlab.model import timelines
    from launchlab.chapters import megakernels as chapter

    lengths = list(workloads.tiled_row_lengths("ragged")[:24]) + [1, 5000]
    graph = schedules.TaskGraph.from_lengths(lengths)
    # the probes write through these pointers: attach before any traced launch (graph capture replays once)
    stage_records = probes.attach_buffer(modules["tiled_traced"], 3, graph.tiles)
    task_records = probes.attach_task_buffer(modules["mega_traced"], graph.total)
    runner, invokes, _ = variants(modules, lengths, backend.stream, traced=True)
    timed = megakernel.CooperativePhases(modules["mega"], runner["path"])
    assert runner["coop"].workers == timed.workers
    path = runner["path"]
    values = workloads.packed_fixture(FRESH_SEED, 8, lengths)
    for variant, invoke in invokes.items():
        check(path, values, invoke, f"traced {variant}")
        schedule = chapter.SCHEDULE[variant]
        if schedule == "three_kernel":
            arrays, workers = megakernel.trace_three_kernel(path, invoke, stage_records), None
        else:
            runner_of = runner["coop"] if schedule == "cooperative" else runner["queue"]
            arrays, workers = megakernel.trace_persistent(runner_of, invoke, task_records), runner_of.workers
        trace = schedules.Trace.from_arrays(arrays)
        result = schedules.check_trace(trace, graph, schedule, workers)
        assert result["passed"], (variant, result)
        if schedule != "queue":
            assert schedules.b_before_last_a(trace, graph) == 0
