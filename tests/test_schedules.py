"""The schedule models of chapter 4 on the CPU: task numbering, dependencies, counters, simulated runs."""
import numpy as np
import pytest

from launchlab.chapters.megakernels import schedules
from launchlab.model import workloads
from launchlab.chapters.megakernels.schedules import TaskGraph

IRREGULAR = [1, 1023, 1025, 5000, 3, 2048]  # tiles per row: 1, 1, 2, 5, 1, 2


@pytest.fixture
def graph():
    return TaskGraph.from_lengths(IRREGULAR)


def test_task_numbering_and_dependencies(graph):
    assert (graph.tiles, graph.rows, graph.total) == (12, 6, 30)
    assert graph.tiles_per_row.tolist() == [1, 1, 2, 5, 1, 2]
    assert graph.row_first_tile.tolist() == [0, 1, 2, 4, 9, 10, 12]
    assert [graph.kind(t) for t in (0, 11, 12, 17, 18, 29)] == ["A", "A", "B", "B", "C", "C"]
    assert graph.dependencies(5) == ()
    assert graph.dependencies(12 + 3) == (4, 5, 6, 7, 8)  # B of row 3 reads its five A tiles
    assert graph.dependencies(18 + 5) == (12 + 3,)        # C of tile 5 (row 3) reads B of row 3
    assert [graph.index(t) for t in (7, 15, 23)] == [7, 3, 5]
    assert graph.task_row().tolist()[:12] == graph.tile_row.tolist()
    with pytest.raises(ValueError, match="task 30 is not one of 0..29"):
        graph.dependencies(30)


@pytest.mark.parametrize("case", ["balanced", "ragged"])
def test_the_chapter_cases_have_the_spec_task_counts(case):
    graph = TaskGraph.from_lengths(workloads.tiled_row_lengths(case))
    assert (graph.tiles, graph.rows) == (1024, 128)
    assert graph.tiles_per_row.max() == (8 if case == "balanced" else 36)
    table = workloads.tile_table(workloads.tiled_row_lengths(case))
    assert np.array_equal(graph.tile_row, table["tile_row"]) and np.array_equal(graph.row_first_tile, table["row_first_tile"])
    assert TaskGraph.from_tile_row(table["tile_row"]).total == graph.total


def test_tile_row_must_describe_rows_in_order():
    with pytest.raises(ValueError, match="in order"):
        TaskGraph.from_tile_row([0, 2, 2])
    with pytest.raises(ValueError, match="at least one element"):
        TaskGraph.from_lengths([4, 0])


def test_orders_that_can_and_cannot_deadlock(graph):
    assert graph.is_safe_order(graph.natural_order())
    row_major = [t for r in range(graph.rows) for t in
                 list(range(graph.row_first_tile[r], graph.row_first_tile[r + 1])) + [graph.tiles + r]]
    row_major += list(range(graph.tiles + graph.rows, graph.total))
    assert graph.is_safe_order(row_major)  # per row A then B: also safe
    b_first = np.r_[graph.tiles:graph.tiles + graph.rows, 0:graph.tiles, graph.tiles + graph.rows:graph.total]
    assert not graph.is_safe_order(b_first)
    assert not graph.is_safe_order(graph.natural_order()[:-1])


def test_expected_counters_after_a_queue_run(graph):
    assert graph.expected_counters(4).tolist() == [34, 1, 1, 2, 5, 1, 2, 1, 1, 1, 1, 1, 1]


def test_one_queue_worker_runs_the_tasks_back_to_back(graph):
    durations = np.arange(1, graph.total + 1) * 10.0
    trace = schedules.simulate_queue(graph, durations, 1)
    assert trace.task.tolist() == list(range(graph.total))
    assert trace.end_ns[-1] == durations.sum()
    assert (trace.start_ns[1:] == trace.end_ns[:-1]).all()
    assert schedules.check_trace(trace, graph, "queue", 1)["passed"]


def test_a_queue_whose_b_tasks_come_first_deadlocks_with_one_worker(graph):
    b_first = np.r_[graph.tiles:graph.tiles + graph.rows, 0:graph.tiles, graph.tiles + graph.rows:graph.total]
    with pytest.raises(schedules.Deadlock, match=f"worker 0 holds B task {graph.tiles}"):
        schedules.simulate_queue(graph, np.ones(graph.total), 1, b_first)
    # with a worker free for every B task and one more, the A tasks still get taken and everything completes
    trace = schedules.simulate_queue(graph, np.ones(graph.total), graph.rows + 1, b_first)
    assert schedules.check_trace(trace, graph, "queue", graph.rows + 1)["passed"]


@pytest.mark.parametrize("seed", range(6))
def test_random_safe_orders_worker_counts_and_durations_never_break_a_dependency(seed):
    generator = np.random.default_rng(seed)
    lengths = generator.integers(1, 9000, size=generator.integers(1, 12))
    graph = TaskGraph.from_lengths(lengths)
    order, done = [], set()
    pending = list(range(graph.total))
    while pending:  # a random topological order
        ready = [t for t in pending if all(d in done for d in graph.dependencies(t))]
        pick = ready[generator.integers(len(ready))]
        order.append(pick)
        done.add(pick)
        pending.remove(pick)
    assert graph.is_safe_order(order)
    workers = int(generator.integers(1, 40))
    durations = generator.uniform(1, 100, graph.total)
    trace = schedules.simulate_queue(graph, durations, workers, order, take_ns=0.5,
                                     arrivals=generator.uniform(0, 50, workers))
    result = schedules.check_trace(trace, graph, "queue", workers)
    assert result["passed"], result
    assert np.array_equal(trace.task, np.asarray(order))  # slot i holds order[i]


@pytest.mark.parametrize("case", ["balanced", "ragged"])
def test_phase_schedules_never_overlap_and_the_queue_does(case):
    lengths = workloads.tiled_row_lengths(case)
    graph = TaskGraph.from_lengths(lengths)
    generator = np.random.default_rng(3)
    durations = schedules.nominal_durations(graph, lengths) * generator.uniform(0.8, 1.2, graph.total)
    workers = 132 * 8
    arrivals = generator.uniform(0, 3000, workers)
    three = schedules.simulate_three_kernel(graph, durations, workers, launch_gap_ns=2000, blocks_per_sm=8)
    coop = schedules.simulate_cooperative(graph, durations, workers, sync_ns=1000, blocks_per_sm=8, arrivals=arrivals)
    queue = schedules.simulate_queue(graph, durations, workers, blocks_per_sm=8, arrivals=arrivals)
    for name, trace in (("three_kernel", three), ("cooperative", coop), ("queue", queue)):
        result = schedules.check_trace(trace, graph, name, workers)
        assert result["passed"], (name, result)
    assert schedules.b_before_last_a(three, graph) == schedules.b_before_last_a(coop, graph) == 0
    assert schedules.phase_gaps_ns(three, graph)[0] >= 2000 and schedules.phase_gaps_ns(coop, graph)[0] >= 1000
    assert schedules.b_before_last_a(queue, graph) > 0  # rows whose A tiles finished early start their B
    assert queue.end_ns.max() < coop.end_ns.max()


def test_cooperative_workers_take_every_s_th_task():
    graph = TaskGraph.from_lengths([5000, 3000])
    trace = schedules.simulate_cooperative(graph, np.ones(graph.total), 3)
    by_task = trace.by_task(graph.total)
    assert by_task["worker"].tolist() == [0, 1, 2, 0, 1, 2, 0, 1] + [0, 1] + [0, 1, 2, 0, 1, 2, 0, 1]
    assert by_task["start_ns"].tolist()[:8] == [0, 0, 0, 1, 1, 1, 2, 2]


def test_three_kernels_fill_resident_slots_in_block_order():
    graph = TaskGraph.from_lengths([4096, 1024])  # 5 tiles, 2 rows
    trace = schedules.simulate_three_kernel(graph, np.full(graph.total, 10.0), slots=2, launch_gap_ns=5)
    by_task = trace.by_task(graph.total)
    assert by_task["start_ns"].tolist()[:5] == [0, 0, 10, 10, 20]   # A: 2 slots, 3 waves
    assert by_task["start_ns"].tolist()[5:7] == [35, 35]            # B after the last A + gap
    assert by_task["worker"].tolist() == [0, 1, 2, 3, 4, 0, 1, 0, 1, 2, 3, 4]


@pytest.mark.parametrize("schedule", schedules.SCHEDULES)
def test_replaying_a_simulated_trace_reproduces_it(schedule):
    lengths = workloads.tiled_row_lengths("ragged")
    graph = TaskGraph.from_lengths(lengths)
    generator = np.random.default_rng(11)
    durations = schedules.nominal_durations(graph, lengths) * generator.uniform(0.5, 1.5, graph.total)
    workers = 300
    arrivals = None if schedule == "three_kernel" else generator.uniform(0, 1000, workers)
    trace = schedules.simulate(schedule, graph, durations, workers, 0 if schedule == "queue" else 700,
                               arrivals=arrivals)
    summary = schedules.trace_summary(trace, graph, schedule, workers)
    assert summary["passed"]
    assert summary["model"]["makespan_ns"] == summary["makespan_ns"]
    assert summary["model"]["b_before_last_a"] == summary["b_before_last_a"]


def test_unknown_schedule_is_named(graph):
    with pytest.raises(ValueError, match="unknown schedule 'stack'"):
        schedules.simulate("stack", graph, np.ones(graph.total), 2)
    with pytest.raises(ValueError, match="unknown schedule"):
        schedules.check_trace(schedules.simulate_queue(graph, np.ones(graph.total), 2), graph, "stack")


@pytest.mark.parametrize("case", ["balanced", "ragged"])
def test_the_queue_overlaps_only_when_the_a_tasks_need_more_than_one_wave(case):
    """Chapter 4's worker sweep in the model: with equal tile durations and 8 blocks per SM (1056 workers) all
    1024 A tasks run in one wave and end together, so no B starts before the last A ends; with fewer workers the
    A tasks run in waves and the B tasks taken during the last wave start early. Replaying each simulated trace
    gives back its count."""
    lengths = workloads.tiled_row_lengths(case)
    graph = TaskGraph.from_lengths(lengths)
    durations = schedules.nominal_durations(graph, lengths)  # every tile of these cases holds 1024 elements
    counts = {}
    for per_sm in (1, 2, 4, 8):
        workers = 132 * per_sm
        trace = schedules.simulate_queue(graph, durations, workers, blocks_per_sm=per_sm)
        summary = schedules.trace_summary(trace, graph, "queue", workers)
        assert summary["passed"] and summary["model"]["b_before_last_a"] == summary["b_before_last_a"]
        counts[per_sm] = summary["b_before_last_a"]
    assert counts[8] == 0
    assert all(counts[k] > 0 for k in (1, 2, 4))
