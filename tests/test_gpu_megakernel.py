"""GPU: every chapter 4 variant against the float64 oracle on fresh seeds and irregular rows; the queue's
error word and counters against the model; its bounded wait; co-residency of the cooperative grid; the
worker sweep; traced builds and their traces against the schedule models."""
import time

import numpy as np
import pytest

from launchlab.chapters.megakernels import design_of, schedules
from launchlab.gpu import device
from launchlab.model import dot, oracles, workloads

pytestmark = pytest.mark.gpu
FRESH_SEED = int(np.random.SeedSequence().entropy % 2**31)  # new every session; printed on failure
IRREGULAR = [1, 1023, 1025, 5000, 3, 2048, 70001, 4096, 777]
LENGTH_SETS = {"irregular": IRREGULAR, "ragged16": list(workloads.tiled_row_lengths("ragged")[:16]),
               "ragged": list(workloads.tiled_row_lengths("ragged"))}
SWEEP = [1, 3]  # blocks per SM: one, and one that is neither a power of two nor the chapter's


@pytest.fixture(scope="module")
def backend():
    from launchlab.gpu.backend import CupyBackend

    return CupyBackend()  # a non-blocking stream made current, as in the chapter


def load(traced: bool) -> dict:
    from launchlab.gpu import build

    defines = {"LAUNCHLAB_TRACE": None} if traced else None
    return {family: build.load_module(family, defines) for family in ("tiled_softmax", "megakernel")}


@pytest.fixture(scope="module")
def modules():
    return load(traced=False)


@pytest.fixture(scope="module")
def traced_modules():
    return load(traced=True)


def variants(modules, lengths, stream, name="rows", sweep=SWEEP) -> dict:
    from launchlab.chapters.megakernels import targets

    return targets.case_variants(modules, name, 0, sweep, stream, lengths=lengths)


def check(variant, values, label):
    from launchlab.chapters.megakernels import persistent

    target = persistent.underlying(variant)
    path = getattr(target, "path", target)
    if isinstance(target, persistent.TaskQueue):
        target.clear_error()
    reference = oracles.rms_softmax_packed(values, path.row_offsets)
    result = oracles.compare(variant.compute(values), reference, oracles.RMS_SOFTMAX_TOLERANCE, path.row_offsets)
    assert result["passed"], f"seed {FRESH_SEED}, {label}: {result}"
    if isinstance(target, persistent.TaskQueue):
        target.check_error()
        assert np.array_equal(target.words_after(), target.expected_words()), (label, target.words_after())


@pytest.mark.parametrize("rows", sorted(LENGTH_SETS))
def test_every_variant_matches_the_oracle_and_the_queue_words_match_the_model(modules, backend, rows):
    lengths = LENGTH_SETS[rows]
    made = variants(modules, lengths, backend.stream)
    assert {str(v) for v in made} == {f"{t}.rows.{s}" for t in ("tiled3", "coop", "queue") for s in ("stream", "graph")} | {
        f"{t}_wps{k}.rows.graph" for t in ("coop", "queue") for k in SWEEP}
    for index in range(2):
        values = workloads.packed_fixture(FRESH_SEED, index, lengths)
        for vid, variant in made.items():
            check(variant, values, f"{rows} {vid} fixture {index}")
    for vid, variant in made.items():
        if vid.submission == "graph":  # the counter reset is a memset node of the queue's graph
            counts = dot.node_counts(dot.parse_dot(variant.dot), design_of(vid)[0].kernels)
            assert counts == {"kernel": 3 if vid.target == "tiled3" else 1,
                              "other": 1 if vid.target.startswith("queue") else 0}, (vid, counts)


def test_sweep_grids_have_the_asked_workers(modules, backend):
    from launchlab.chapters.megakernels import persistent

    made = variants(modules, IRREGULAR, backend.stream)
    for vid, variant in made.items():
        target = persistent.underlying(variant)
        per_sm = design_of(vid)[1]
        if per_sm is not None:
            assert target.workers == per_sm * device.sm_count() and target.workers_per_sm == per_sm
        elif isinstance(target, persistent.PersistentTarget):
            assert target.workers == target.capacity  # 0 blocks per SM: all the occupancy API allows
    assert made[next(v for v in made if v.target == "queue" and v.submission == "stream")].submissions == 2


@pytest.mark.parametrize("workers", [1, 7, "over"])
def test_queue_needs_no_co_residency(modules, backend, workers):
    """One worker, a few, or four times the resident capacity: the A-B-C order always completes."""
    from launchlab.chapters.megakernels import persistent
    from launchlab.gpu.targets import TiledPath

    path = TiledPath(modules["tiled_softmax"], IRREGULAR)
    probe = persistent.TaskQueue(modules["megakernel"], path)
    count = 4 * probe.capacity if workers == "over" else workers
    queue = persistent.TaskQueue(modules["megakernel"], path, workers=count)
    check(queue, workloads.packed_fixture(FRESH_SEED, 5, IRREGULAR), f"queue with {count} workers")


def test_bounded_wait_reports_an_impossible_order_instead_of_hanging(modules, backend):
    """One worker, B tasks first: B of row 0 waits for A tiles nobody will run. The worker gives up after the
    bound, the host sees the flag and names the task; a later run in the natural order is unaffected."""
    from launchlab.chapters.megakernels import persistent
    from launchlab.gpu.targets import TiledPath

    lengths = [3000, 1024, 5000]
    path = TiledPath(modules["tiled_softmax"], lengths)
    graph = schedules.TaskGraph.from_lengths(lengths)
    b_first = np.concatenate([np.arange(graph.tiles, graph.tiles + graph.rows), np.arange(graph.tiles),
                              np.arange(graph.tiles + graph.rows, graph.total)])
    assert not graph.is_safe_order(b_first)
    with pytest.raises(schedules.Deadlock):
        schedules.simulate_queue(graph, np.ones(graph.total), 1, b_first)  # the model agrees: no progress
    queue = persistent.TaskQueue(modules["megakernel"], path, workers=1, order=b_first, wait_limit_ns=200_000_000)
    queue.clear_error()
    started = time.perf_counter()
    queue.invoke()
    with pytest.raises(persistent.MegakernelError, match=rf"B task {graph.tiles} \(row 0\) saw 0 of 3"):
        queue.check_error()
    assert time.perf_counter() - started < 30
    assert not np.array_equal(queue.words_after(), queue.expected_words())  # what the chapter's check records
    healthy = persistent.TaskQueue(modules["megakernel"], path, workers=1)
    check(healthy, workloads.packed_fixture(FRESH_SEED, 6, lengths), "queue after an error")


def test_cooperative_grid_is_checked_against_co_residency(modules, backend):
    from launchlab.chapters.megakernels import persistent
    from launchlab.gpu.targets import TiledPath

    path = TiledPath(modules["tiled_softmax"], IRREGULAR)
    coop = persistent.CooperativePhases(modules["megakernel"], path)
    assert coop.workers == coop.capacity == coop.resident_per_sm * device.sm_count()
    with pytest.raises(ValueError, match="co-resident"):
        persistent.CooperativePhases(modules["megakernel"], path, workers_per_sm=coop.resident_per_sm + 1)
    small = persistent.CooperativePhases(modules["megakernel"], path, workers_per_sm=1)
    check(small, workloads.packed_fixture(FRESH_SEED, 7, IRREGULAR), "cooperative, 1 block per SM")


def test_traced_builds_keep_the_timed_worker_counts_and_their_traces_pass_the_checks(modules, traced_modules, backend):
    from launchlab.gpu import probes
    from launchlab.chapters.megakernels import persistent

    lengths = list(workloads.tiled_row_lengths("ragged")[:24]) + [1, 5000]
    graph = schedules.TaskGraph.from_lengths(lengths)
    # the probes write through these pointers: attach before any traced launch (graph capture replays once)
    stage_records = probes.attach_buffer(traced_modules["tiled_softmax"], 3, graph.tiles)
    task_records = probes.attach_task_buffer(traced_modules["megakernel"], graph.total)
    traced = variants(traced_modules, lengths, backend.stream)
    timed = variants(modules, lengths, backend.stream)
    slots = persistent.resident_blocks_per_sm(modules["tiled_softmax"].kernel("tile_producer")) * device.sm_count()
    values = workloads.packed_fixture(FRESH_SEED, 8, lengths)
    for vid, variant in traced.items():
        target = persistent.underlying(variant)
        workers = getattr(target, "workers", slots)
        assert workers == getattr(persistent.underlying(timed[vid]), "workers", slots), vid
        check(variant, values, f"traced {vid}")
        trace = schedules.Trace.from_arrays(persistent.trace(variant, task_records, stage_records))
        schedule = design_of(vid)[0].schedule
        result = schedules.check_trace(trace, graph, schedule, workers)
        assert result["passed"], (str(vid), result)
        if schedule != "queue":
            assert schedules.b_before_last_a(trace, graph) == 0
        summary = schedules.trace_summary(trace, graph, schedule, workers)
        assert summary["model"]["b_before_last_a"] <= graph.rows


def all_design_modules() -> dict:
    from launchlab.chapters.megakernels import DESIGN_FAMILY
    from launchlab.chapters.megakernels.targets import fused_defines
    from launchlab.gpu import build

    return {**load(traced=False), DESIGN_FAMILY: build.load_module(DESIGN_FAMILY),
            "fused_softmax": build.load_module("fused_softmax", fused_defines(device.shared_limit()))}


@pytest.mark.parametrize("rows", ["irregular", "ragged"])
def test_every_chapter_design_matches_the_oracle_and_its_graph_edges(backend, rows):
    """The chapter's own rows for all ten designs (targets.case_variants), stream and graph, two fixtures; the
    PDL graphs' programmatic edges as run.write_graph_edges checks them; the dependency kernel's words."""
    from launchlab.chapters.megakernels import DESIGN, run, targets
    from launchlab.chapters.megakernels import megakernel_designs as designs
    from launchlab.chapters.megakernels import persistent

    from launchlab.gpu.device import identity

    lengths = LENGTH_SETS[rows]
    runnable = [d for d in DESIGN.values() if d.requires.missing(identity()) is None]  # as the run skips the others
    made = targets.case_variants(all_design_modules(), "rows", 0, [], backend.stream, lengths=lengths,
                                 designs=runnable)
    assert {v.target for v in made} == {d.name for d in runnable}
    for index in range(2):
        values = workloads.packed_fixture(FRESH_SEED, 10 + index, lengths)
        for vid, variant in made.items():
            check(variant, values, f"{rows} {vid} fixture {index}")
            target = persistent.underlying(variant)
            words = design_of(vid)[0].words
            if words:  # check() has read the queue's; the dependency kernel's here
                found, expected, _ = words.read(target)
                assert np.array_equal(found, expected), (vid, found)
    for vid, variant in made.items():
        if vid.submission == "graph" and design_of(vid)[0].extended:
            record = designs.graph_edge_record(variant)
            expected = run.expected_programmatic_edges(persistent.underlying(variant))
            assert record["edge_types"]["programmatic"] == expected, (vid, record["edge_types"])


def test_fused_packed_rows_cover_every_tier(backend):
    """Rows in registers (4,096), in shared memory (36,864) and streamed (70,001: past the shared limit)."""
    from launchlab.chapters.megakernels import megakernel_designs as designs
    from launchlab.gpu.targets import TiledPath

    modules = all_design_modules()
    lengths = [4096, 36864, 1, 70001, 8192, 3]
    path = TiledPath(modules["tiled_softmax"], lengths)
    probe = designs.FusedPackedRows(modules["fused_softmax"], path)
    shared = designs.packed_shared_bytes([0, 36864], probe.block, probe.reg_chunks, device.shared_limit())
    target = designs.FusedPackedRows(modules["fused_softmax"], path, shared)
    # the 8,192-element row starts 2 elements past a 16-byte boundary: 2,049 chunks, one past the registers
    assert target.tiers() == {"registers": 3, "shared": 2, "streamed": 1}
    check(target, workloads.packed_fixture(FRESH_SEED, 12, lengths), "fused packed rows, every tier")


def test_sanitizer_child_checks_pass_without_the_sanitizer(backend):
    """What the compute-sanitizer child runs (small cases, every design) passes on its own first."""
    from launchlab.chapters.megakernels.sanitize import inner_checks

    checks = inner_checks(backend)
    assert checks and all(checks.values()), {k: v for k, v in checks.items() if not v}
