"""The schedule models of chapter 4 on the CPU: task numbering, dependencies, counters, simulated runs;
trace checks on saved traces (and broken ones they must reject); the raw-record conversions."""
import numpy as np
import pytest

from launchlab.chapters.megakernels import schedules
from launchlab.chapters.megakernels.schedules import TaskGraph, Trace
from launchlab.model import timelines, workloads

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


WORKERS = 1056
RESIDENT = 8  # blocks per SM of the simulated schedules


def simulated(case: str, schedule: str, seed: int = 0, workers: int = WORKERS) -> tuple[Trace, TaskGraph]:
    lengths = workloads.tiled_row_lengths(case)
    graph = TaskGraph.from_lengths(lengths)
    generator = np.random.default_rng(seed)
    durations = schedules.nominal_durations(graph, lengths) * generator.uniform(0.7, 1.3, graph.total)
    arrivals = None if schedule == "three_kernel" else generator.uniform(0, 2000, workers)
    return schedules.simulate(schedule, graph, durations, workers, 0 if schedule == "queue" else 1500,
                              blocks_per_sm=RESIDENT, arrivals=arrivals), graph


# --------------------------------------------------------------------------- saved traces and broken ones
@pytest.mark.parametrize("schedule", schedules.SCHEDULES)
def test_saved_traces_load_and_pass(tmp_path, schedule):
    trace, graph = simulated("ragged", schedule)
    schedules.save_trace(tmp_path / "t.npz", trace, graph, workers=np.int64(WORKERS))
    loaded, loaded_graph = schedules.load_trace(tmp_path / "t.npz")
    assert np.array_equal(loaded_graph.tile_row, graph.tile_row)
    assert all(np.array_equal(a, b) for a, b in zip(loaded.arrays().values(), trace.arrays().values()))
    assert schedules.check_trace(loaded, loaded_graph, schedule, WORKERS)["passed"]


def broken(trace: Trace, graph: TaskGraph, how: str) -> Trace:
    arrays = {k: v.copy() for k, v in trace.arrays().items()}
    slot_of = {int(t): i for i, t in enumerate(arrays["task"])}
    tiles, rows = graph.tiles, graph.rows
    if how == "b_before_its_a":  # B of row 0 starts just before its last A tile ends
        last_a_end = max(arrays["end_ns"][slot_of[t]] for t in range(int(graph.row_first_tile[1])))
        b = slot_of[tiles]
        arrays["start_ns"][b] = arrays["taken_ns"][b] = last_a_end - 1
    elif how == "c_before_its_b":
        c, b = slot_of[tiles + rows], slot_of[tiles]
        arrays["start_ns"][c] = arrays["taken_ns"][c] = arrays["end_ns"][b] - 1
    elif how == "task_twice":
        arrays["task"][slot_of[5]] = 6
    elif how == "task_missing":
        arrays = {k: np.delete(v, slot_of[7]) for k, v in arrays.items()}
    elif how == "ends_before_start":
        arrays["end_ns"][0] = arrays["start_ns"][0] - 1
    elif how == "worker_outside_grid":
        arrays["worker"][3] = WORKERS
    elif how == "wrong_stride":
        arrays["worker"][slot_of[1]] = 0
    return Trace(**arrays)


@pytest.mark.parametrize("schedule,how,failing", [
    ("queue", "b_before_its_a", "b_after_its_row_a"),
    ("queue", "c_before_its_b", "c_after_its_row_b"),
    ("queue", "task_twice", "every_task_once"),
    ("queue", "task_missing", "every_task_once"),
    ("queue", "ends_before_start", "records_in_time_order"),
    ("queue", "worker_outside_grid", "workers_within_grid"),
    ("cooperative", "wrong_stride", "grid_stride_assignment"),
    ("three_kernel", "wrong_stride", "block_per_task"),
])
def test_a_broken_trace_is_rejected_by_the_named_check(schedule, how, failing):
    trace, graph = simulated("ragged", schedule, seed=4)
    assert schedules.check_trace(trace, graph, schedule, WORKERS)["passed"]
    result = schedules.check_trace(broken(trace, graph, how), graph, schedule, WORKERS)
    assert not result["passed"] and not result["checks"][failing], result


def test_b_before_last_a_counts():
    graph = TaskGraph.from_lengths([2048, 1024])  # A tasks 0-2, B tasks 3-4, C 5-7
    start = np.array([0, 0, 0, 5, 12, 20, 20, 20])
    end = np.array([5, 10, 4, 8, 14, 22, 22, 22])
    trace = Trace(np.arange(8), start.copy(), start, end, np.zeros(8, np.int64), np.zeros(8, np.int64))
    assert schedules.b_before_last_a(trace, graph) == 1   # B of row 0 starts at 5 < 10
    assert schedules.c_before_last_b(trace, graph) == 0
    assert schedules.phase_gaps_ns(trace, graph) == [-5, 6]
    b_handoff, c_handoff = schedules.handoffs_ns(trace, graph)
    assert b_handoff.tolist() == [5 - 10, 12 - 4]           # row 0's A tiles end at 5 and 10; row 1's at 4
    assert c_handoff.tolist() == [20 - 8, 20 - 8, 20 - 14]  # tiles 0, 1 in row 0 (B ends 8), tile 2 in row 1
    assert not schedules.check_trace(trace, graph, "queue")["checks"]["b_after_its_row_a"]  # row 0's A ends at 10


# --------------------------------------------------------------------------- raw records
def test_megakernel_records_become_a_trace():
    table = np.zeros((3, timelines.TASK_WORDS), np.uint64)
    base = 1_700_000_000_000
    table[:, 0] = [base + 10, base, base + 5]          # taken
    table[:, 1] = [base + 12, base + 1, base + 6]      # start
    table[:, 2] = [base + 20, base + 3, base + 9]      # end
    table[:, 3] = [4, 0, 1]                             # worker
    table[:, 4] = [2, 0, 0]                             # SM
    table[:, 5] = [2, 0, 1]                             # task
    arrays = timelines.task_trace_arrays(table.ravel())
    assert arrays["taken_ns"].tolist() == [10, 0, 5] and arrays["end_ns"].tolist() == [20, 3, 9]
    assert arrays["task"].tolist() == [2, 0, 1] and arrays["worker"].tolist() == [4, 0, 1]
    table[1, 2] = 0
    with pytest.raises(ValueError, match="1 task records were never written"):
        timelines.task_trace_arrays(table)


def test_three_kernel_block_records_are_renumbered_as_tasks():
    tiles, rows, stride = 3, 2, 4
    table = np.zeros((3, stride, timelines.WORDS_PER_BLOCK), np.uint64)
    for kernel in range(3):
        for block in range(tiles if kernel != 1 else rows):
            start = 1000 * (kernel + 1) + 10 * block
            table[kernel, block] = [start, start + 5, 7 + block]
    arrays = timelines.stage_blocks_as_tasks(table, tiles, rows)
    assert arrays["task"].tolist() == list(range(8))
    assert arrays["worker"].tolist() == [0, 1, 2, 0, 1, 0, 1, 2]
    assert arrays["start_ns"].tolist() == [0, 10, 20, 1000, 1010, 2000, 2010, 2020]
    assert arrays["sm"].tolist() == [7, 8, 9, 7, 8, 7, 8, 9]
    trace = Trace.from_arrays(arrays)
    assert schedules.check_trace(trace, TaskGraph.from_lengths([2048, 1024]), "three_kernel")["passed"]
    table[1, 1, 0] = 0
    with pytest.raises(ValueError, match="never wrote a record"):
        timelines.stage_blocks_as_tasks(table, tiles, rows)
