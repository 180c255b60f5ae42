"""Pure-Python models of chapter 4's three schedules, and the checks every trace must pass.

The tiled softmax is a task graph: one A task per tile (its statistics), one B task per row
(combine the row's tiles), one C task per tile (write y). B of row r needs every A tile of
row r; C of tile t needs B of t's row. Tasks carry the numbers kernels/megakernel.cu uses:

    A tile t -> t,   B row r -> tiles + r,   C tile t -> tiles + rows + t

Three schedules run that graph on the GPU, and each has a model here that executes it with
given task durations:

* three_kernel: kernels A, B, C, one block per task; a kernel starts after the previous one's
  last block ends (plus a launch gap); blocks of a kernel fill `slots` resident places.
* cooperative: `workers` blocks; each phase is a grid-stride loop (worker w runs tasks w,
  w + workers, ...); a grid-wide barrier separates the phases.
* queue: `workers` blocks take slots from one counter in order; slot i holds task order[i]
  (the natural order: all A, then all B, then all C). A worker waits until the task's row
  counter says its inputs exist, then runs it. An order in which every task's dependencies
  come before it cannot deadlock: the dependencies of a taken task were taken earlier, by
  running workers, and the earliest unfinished task always has its inputs. Any other order
  can: `simulate_queue` raises Deadlock where every worker waits on a task nobody holds
  (the GPU kernel's bounded wait reports the same situation as an error).

A trace, simulated or read from the GPU, is one record per slot: task, taken, start and end
times (ns), worker, SM. `check_trace` holds it to the dependencies and to its schedule's
rules; `b_before_last_a` counts B tasks that start before the last A task ends, which no
schedule with a boundary between the phases allows.

NumPy only: this module runs on CPU test machines and in the analysis of saved runs.
"""
from __future__ import annotations

import dataclasses
import heapq
from pathlib import Path

import numpy as np

from launchlab.chapters.megakernels import handoff
from launchlab.model.workloads import TILE

KINDS = ("A", "B", "C")
SCHEDULES = ("three_kernel", "cooperative", "queue")
TRACE_FIELDS = ("task", "taken_ns", "start_ns", "end_ns", "worker", "sm")


class Deadlock(RuntimeError):
    """Every worker of a simulated queue waits on a task that no running worker holds."""


# --------------------------------------------------------------------------- the task graph
@dataclasses.dataclass(frozen=True)
class TaskGraph:
    """Tiles and rows of one case; per tile its row."""
    tile_row: np.ndarray

    @classmethod
    def from_lengths(cls, lengths, tile: int = TILE) -> "TaskGraph":
        lengths = np.asarray(lengths, dtype=np.int64)
        if lengths.ndim != 1 or lengths.size == 0 or (lengths <= 0).any():
            raise ValueError("every row needs at least one element")
        return cls(np.repeat(np.arange(lengths.size), -(-lengths // tile)))

    @classmethod
    def from_tile_row(cls, tile_row) -> "TaskGraph":
        tile_row = np.asarray(tile_row, dtype=np.int64)
        if tile_row.size == 0 or (np.diff(tile_row) < 0).any() or tile_row[0] != 0 \
                or (np.diff(tile_row) > 1).any():
            raise ValueError("tile_row must list rows 0, 1, ... in order, every row with a tile")
        return cls(tile_row)

    @property
    def tiles(self) -> int:
        return int(self.tile_row.size)

    @property
    def rows(self) -> int:
        return int(self.tile_row[-1]) + 1

    @property
    def total(self) -> int:
        return 2 * self.tiles + self.rows

    @property
    def tiles_per_row(self) -> np.ndarray:
        return np.bincount(self.tile_row, minlength=self.rows)

    @property
    def row_first_tile(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.tiles_per_row)])

    def kinds(self) -> np.ndarray:
        """0 (A), 1 (B) or 2 (C) for every task number."""
        return np.concatenate([np.zeros(self.tiles, np.int64), np.ones(self.rows, np.int64),
                               np.full(self.tiles, 2, np.int64)])

    def kind(self, task: int) -> str:
        if not 0 <= task < self.total:
            _bad_task(task, self.total)
        return KINDS[0 if task < self.tiles else 1 if task < self.tiles + self.rows else 2]

    def index(self, task: int) -> int:
        """The tile (A, C) or row (B) of a task."""
        if task < self.tiles:
            return task
        if task < self.tiles + self.rows:
            return task - self.tiles
        return task - self.tiles - self.rows

    def task_row(self) -> np.ndarray:
        """The row of every task number."""
        return np.concatenate([self.tile_row, np.arange(self.rows), self.tile_row])

    def dependencies(self, task: int) -> tuple[int, ...]:
        """The tasks whose results `task` reads."""
        if not 0 <= task < self.total:
            _bad_task(task, self.total)
        if task < self.tiles:
            return ()
        if task < self.tiles + self.rows:
            row = task - self.tiles
            first = self.row_first_tile
            return tuple(range(int(first[row]), int(first[row + 1])))
        return (self.tiles + int(self.tile_row[task - self.tiles - self.rows]),)

    def natural_order(self) -> np.ndarray:
        return np.arange(self.total)

    def is_safe_order(self, order) -> bool:
        """True when every task's dependencies come before it: a queue in this order cannot deadlock."""
        order = np.asarray(order)
        if sorted(order.tolist()) != list(range(self.total)):
            return False
        position = np.empty(self.total, np.int64)
        position[order] = np.arange(self.total)
        return all(position[d] < position[t] for t in range(self.total) for d in self.dependencies(t))

    def expected_counters(self, workers: int) -> np.ndarray:
        """The queue's counters after a complete run: head, a_done per row, b_done per row.

        Every worker's last fetch returns a slot past the end, so the head ends at total + workers."""
        return np.concatenate([[self.total + workers], self.tiles_per_row, np.ones(self.rows, np.int64)]).astype(np.int64)


def _bad_task(task, total):
    raise ValueError(f"task {task} is not one of 0..{total - 1}")


def nominal_durations(graph: TaskGraph, lengths, a_ns_per_element: float = 0.01, b_ns_per_tile: float = 20.0,
                      c_ns_per_element: float = 0.01, task_ns: float = 500.0) -> np.ndarray:
    """Illustrative task durations: a fixed cost plus a part proportional to the data a task touches."""
    lengths = np.asarray(lengths, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(-(-lengths // TILE))])
    tile_len = np.concatenate([np.minimum(TILE, length - TILE * np.arange(count))
                               for length, count in zip(lengths, np.diff(starts))])
    a = task_ns + a_ns_per_element * tile_len
    b = task_ns + b_ns_per_tile * graph.tiles_per_row
    c = task_ns + c_ns_per_element * tile_len
    return np.concatenate([a, b, c]).astype(np.float64)


# --------------------------------------------------------------------------- traces
@dataclasses.dataclass
class Trace:
    """One record per slot (the order in which tasks were handed out)."""
    task: np.ndarray
    taken_ns: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    worker: np.ndarray
    sm: np.ndarray

    @classmethod
    def from_arrays(cls, arrays) -> "Trace":
        return cls(**{name: np.asarray(arrays[name], dtype=np.int64) for name in TRACE_FIELDS})

    def arrays(self) -> dict:
        return {name: getattr(self, name) for name in TRACE_FIELDS}

    def by_task(self, total: int) -> dict:
        """Per task number: taken, start, end, worker (a task missing from the trace raises)."""
        if sorted(self.task.tolist()) != list(range(total)):
            raise ValueError("the trace does not hold every task exactly once")
        order = np.argsort(self.task)
        return {name: getattr(self, name)[order] for name in ("taken_ns", "start_ns", "end_ns", "worker", "sm")}


def save_trace(path: Path, trace: Trace, graph: TaskGraph, **extra) -> None:
    """A trace and the tile table it belongs to, as one compressed .npz (what a run keeps)."""
    with open(path, "wb") as handle:
        np.savez_compressed(handle, tile_row=graph.tile_row, **trace.arrays(), **extra)


def load_trace(path: Path) -> tuple[Trace, TaskGraph]:
    with np.load(path) as arrays:
        return Trace.from_arrays(arrays), TaskGraph.from_tile_row(arrays["tile_row"])


# --------------------------------------------------------------------------- simulations
def _trace(records: list[tuple]) -> Trace:
    columns = list(zip(*records))
    return Trace(*(np.rint(np.asarray(c, dtype=np.float64)).astype(np.int64) for c in columns[:5]),
                 np.asarray(columns[5], dtype=np.int64))


def simulate_three_kernel(graph: TaskGraph, durations, slots: int, launch_gap_ns: float = 0.0,
                          blocks_per_sm: int = 1) -> Trace:
    """Kernels A, B, C in sequence; each kernel's blocks go, in block order, to the earliest free
    of `slots` resident places; the next kernel starts `launch_gap_ns` after the last block ends."""
    durations = np.asarray(durations, dtype=np.float64)
    records, begin = [], 0.0
    kind_of = graph.kinds()
    for kind in range(3):
        tasks = np.flatnonzero(kind_of == kind)
        free = [(begin, place) for place in range(slots)]
        heapq.heapify(free)
        last = begin
        for block, task in enumerate(tasks):
            at, place = heapq.heappop(free)
            end = at + durations[task]
            records.append((task, at, at, end, block, place // blocks_per_sm))
            heapq.heappush(free, (end, place))
            last = max(last, end)
        begin = last + launch_gap_ns
    return _trace(records)


def simulate_cooperative(graph: TaskGraph, durations, workers: int, sync_ns: float = 0.0,
                         blocks_per_sm: int = 1, arrivals=None) -> Trace:
    """One grid of `workers` (worker w arrives at arrivals[w], default 0); per phase worker w runs
    tasks w, w + workers, ... back to back; a grid barrier (`sync_ns`) after the slowest worker
    ends each phase."""
    durations = np.asarray(durations, dtype=np.float64)
    records, begin = [], 0.0
    kind_of = graph.kinds()
    arrivals = _arrivals(arrivals, workers)
    for kind in range(3):
        tasks = np.flatnonzero(kind_of == kind)
        clock = arrivals.copy() if kind == 0 else np.full(workers, begin)
        for position, task in enumerate(tasks):
            worker = position % workers
            start = clock[worker]
            clock[worker] = start + durations[task]
            records.append((task, start, start, clock[worker], worker, worker // blocks_per_sm))
        begin = float(max(clock.max(), arrivals.max())) + sync_ns
    records.sort(key=lambda r: r[0])  # slot = task number: a grid-stride loop has no queue
    return _trace(records)


def simulate_queue(graph: TaskGraph, durations, workers: int, order=None, take_ns: float = 0.0,
                   blocks_per_sm: int = 1, arrivals=None) -> Trace:
    """`workers` take slots from one counter, the earliest free worker first (ties: lower id);
    worker w arrives at arrivals[w] (default 0).

    A worker that takes a task whose inputs are not yet known waits; when every worker waits on
    tasks that no worker holds, the queue is deadlocked and Deadlock is raised."""
    durations = np.asarray(durations, dtype=np.float64)
    order = graph.natural_order() if order is None else np.asarray(order)
    if sorted(order.tolist()) != list(range(graph.total)):
        raise ValueError("the order must list every task exactly once")
    end: dict[int, float] = {}
    free = [(float(at), worker) for worker, at in enumerate(_arrivals(arrivals, workers))]
    heapq.heapify(free)
    waiting: dict[int, tuple[int, int, float]] = {}  # worker -> (slot, task, taken)
    records: list[tuple] = [None] * graph.total

    def run(worker, slot, task, taken):
        start = max([taken] + [end[d] for d in graph.dependencies(task)])
        end[task] = start + durations[task]
        records[slot] = (task, taken, start, end[task], worker, worker // blocks_per_sm)
        heapq.heappush(free, (end[task], worker))

    slot = 0
    while slot < graph.total or waiting:
        resolved = True
        while resolved:  # a waiting task may become runnable once another waiting one runs
            resolved = False
            for worker, (held_slot, task, taken) in sorted(waiting.items()):
                if all(d in end for d in graph.dependencies(task)):
                    del waiting[worker]
                    run(worker, held_slot, task, taken)
                    resolved = True
        if slot == graph.total and not waiting:
            break
        if not free or slot == graph.total:
            held = ", ".join(f"worker {w} holds {graph.kind(t)} task {t}" for w, (_, t, _) in sorted(waiting.items()))
            raise Deadlock(f"every worker waits on a task that no worker holds ({held}); "
                           f"{graph.total - slot} slots never taken")
        at, worker = heapq.heappop(free)
        task = int(order[slot])
        taken = at + take_ns
        if all(d in end for d in graph.dependencies(task)):
            run(worker, slot, task, taken)
        else:
            waiting[worker] = (slot, task, taken)
        slot += 1
    return _trace(records)


def _arrivals(arrivals, workers: int) -> np.ndarray:
    if arrivals is None:
        return np.zeros(workers)
    arrivals = np.asarray(arrivals, dtype=np.float64)
    if arrivals.shape != (workers,):
        raise ValueError(f"need one arrival time per worker ({workers}), got shape {arrivals.shape}")
    return arrivals


def simulate(schedule: str, graph: TaskGraph, durations, workers: int, gap_ns: float = 0.0,
             blocks_per_sm: int = 1, arrivals=None) -> Trace:
    """The model of `schedule` (three_kernel: `workers` resident slots; gap_ns: launch gap, barrier
    or queue fetch cost; arrivals: when each persistent worker starts)."""
    if schedule == "three_kernel":
        return simulate_three_kernel(graph, durations, workers, gap_ns, blocks_per_sm)
    if schedule == "cooperative":
        return simulate_cooperative(graph, durations, workers, gap_ns, blocks_per_sm, arrivals)
    if schedule == "queue":
        return simulate_queue(graph, durations, workers, take_ns=gap_ns, blocks_per_sm=blocks_per_sm,
                              arrivals=arrivals)
    raise ValueError(f"unknown schedule {schedule!r}; expected one of {SCHEDULES}")


# --------------------------------------------------------------------------- checks
def b_before_last_a(trace: Trace, graph: TaskGraph) -> int:
    """B tasks that start before the last A task (of any row) ends."""
    kind = graph.kinds()[trace.task]
    last_a = trace.end_ns[kind == 0].max()
    return int((trace.start_ns[kind == 1] < last_a).sum())


def c_before_last_b(trace: Trace, graph: TaskGraph) -> int:
    kind = graph.kinds()[trace.task]
    last_b = trace.end_ns[kind == 1].max()
    return int((trace.start_ns[kind == 2] < last_b).sum())


def check_trace(trace: Trace, graph: TaskGraph, schedule: str, workers: int | None = None) -> dict:
    """Named checks of a trace against the task graph and its schedule's rules; `passed` = all of them.

    Every schedule: every task exactly once; taken <= start <= end; each B starts at or after the
    last end of its row's A tiles; each C at or after its row's B ends. three_kernel and
    cooperative: no B before every A has ended, no C before every B (the kernel boundary or the
    grid barrier); three_kernel: block i of a kernel runs the kernel's i-th task; cooperative:
    worker w runs tasks w, w + workers, ... of each phase; queue: workers below `workers`."""
    if schedule not in SCHEDULES:
        raise ValueError(f"unknown schedule {schedule!r}; expected one of {SCHEDULES}")
    checks = {"every_task_once": sorted(trace.task.tolist()) == list(range(graph.total)),
              "records_in_time_order": bool(((trace.taken_ns <= trace.start_ns) & (trace.start_ns <= trace.end_ns)).all())}
    if not checks["every_task_once"]:
        return {"passed": False, "checks": checks}
    by_task = trace.by_task(graph.total)
    start, end, worker = by_task["start_ns"], by_task["end_ns"], by_task["worker"]
    tiles, rows = graph.tiles, graph.rows
    a_end_of_row = np.full(rows, np.iinfo(np.int64).min)
    np.maximum.at(a_end_of_row, graph.tile_row, end[:tiles])
    b_start, b_end = start[tiles:tiles + rows], end[tiles:tiles + rows]
    c_start = start[tiles + rows:]
    checks["b_after_its_row_a"] = bool((b_start >= a_end_of_row).all())
    checks["c_after_its_row_b"] = bool((c_start >= b_end[graph.tile_row]).all())
    if schedule in ("three_kernel", "cooperative"):
        checks["no_b_before_all_a"] = bool(b_start.min() >= end[:tiles].max())
        checks["no_c_before_all_b"] = bool(c_start.min() >= b_end.max())
    if schedule == "three_kernel":
        index = np.concatenate([np.arange(tiles), np.arange(rows), np.arange(tiles)])
        checks["block_per_task"] = bool((worker == index).all())
    if schedule == "cooperative" and workers:
        index = np.concatenate([np.arange(tiles), np.arange(rows), np.arange(tiles)])
        checks["grid_stride_assignment"] = bool((worker == index % workers).all())
    if schedule == "queue" and workers:
        checks["workers_within_grid"] = bool(((trace.worker >= 0) & (trace.worker < workers)).all())
    return {"passed": all(checks.values()), "checks": checks}


def phase_gaps_ns(trace: Trace, graph: TaskGraph) -> list[int]:
    """First start of B minus last end of A, and first start of C minus last end of B (negative: overlap)."""
    by_task = trace.by_task(graph.total)
    start, end = by_task["start_ns"], by_task["end_ns"]
    tiles, rows = graph.tiles, graph.rows
    return [int(start[tiles:tiles + rows].min() - end[:tiles].max()),
            int(start[tiles + rows:].min() - end[tiles:tiles + rows].max())]


def handoffs_ns(trace: Trace, graph: TaskGraph) -> tuple[np.ndarray, np.ndarray]:
    """Per B task: its start minus the last end of its row's A tiles; per C task: its start minus the
    end of its row's B. The time from a task's last input existing to the task running: a kernel
    boundary, a grid barrier, or a counter's publish, poll and fences."""
    by_task = trace.by_task(graph.total)
    start, end = by_task["start_ns"], by_task["end_ns"]
    tiles, rows = graph.tiles, graph.rows
    a_end_of_row = np.full(rows, np.iinfo(np.int64).min)
    np.maximum.at(a_end_of_row, graph.tile_row, end[:tiles])
    return start[tiles:tiles + rows] - a_end_of_row, start[tiles + rows:] - end[tiles:tiles + rows][graph.tile_row]


def replay(trace: Trace, graph: TaskGraph, schedule: str, workers: int) -> dict:
    """Run the schedule's model with the trace's own task durations (end - start) and worker count.

    The boundary cost of the three-kernel and cooperative models is the trace's mean gap between
    phases. Persistent workers arrive when the trace first saw them take a task: a queue worker
    that took none arrives after the last take; a cooperative worker without an A task is not
    waited for. The queue model adds nothing for a fetch or a wait. The difference between
    predicted and measured times is what the model leaves out (fetch latency, polling)."""
    by_task = trace.by_task(graph.total)
    durations = (by_task["end_ns"] - by_task["start_ns"]).astype(np.float64)
    origin = trace.taken_ns.min()
    gap, arrivals = 0.0, None
    if schedule != "queue":
        gap = max(0.0, float(np.mean(phase_gaps_ns(trace, graph))))
    if schedule != "three_kernel":
        seen = trace.worker < workers
        if schedule == "cooperative":
            seen &= graph.kinds()[trace.task] == 0
            arrivals = np.full(workers, np.inf)
        else:
            arrivals = np.full(workers, float(trace.taken_ns.max() - origin))
        np.minimum.at(arrivals, trace.worker[seen], (trace.taken_ns - origin)[seen].astype(np.float64))
        arrivals[np.isinf(arrivals)] = 0.0
    model = simulate(schedule, graph, durations, workers, gap, arrivals=arrivals)
    return {"makespan_ns": int(model.end_ns.max() - model.taken_ns.min()),
            "b_before_last_a": b_before_last_a(model, graph), "boundary_ns": gap,
            "idle_ns": handoff.of_model(model, trace)}


def trace_summary(trace: Trace, graph: TaskGraph, schedule: str, workers: int) -> dict:
    """What the chapter reports of one trace: checks, overlap counts, waits, span, the model's replay."""
    result = check_trace(trace, graph, schedule, workers)
    summary = {"passed": result["passed"], "checks": result["checks"], "tasks": int(trace.task.size),
               "b_tasks": graph.rows}
    if not result["checks"]["every_task_once"]:
        return summary
    kind = graph.kinds()[trace.task]
    origin = trace.taken_ns.min()
    summary.update({
        "makespan_ns": int(trace.end_ns.max() - origin),
        "b_before_last_a": b_before_last_a(trace, graph),
        "c_before_last_b": c_before_last_b(trace, graph),
        "phase_gaps_ns": phase_gaps_ns(trace, graph),
        "workers_used": int(np.unique(trace.worker).size),
        "sms_used": int(np.unique(trace.sm).size),
        "last_a_end_ns": int(trace.end_ns[kind == 0].max() - origin),
        "first_b_start_ns": int(trace.start_ns[kind == 1].min() - origin),
        "a_end_spread_ns": int(trace.end_ns[kind == 0].max() - trace.end_ns[kind == 0].min()),
    })
    for name, values in zip(("B", "C"), handoffs_ns(trace, graph)):
        summary[f"handoff_ns.{name}"] = {"median": float(np.median(values)), "min": int(values.min()),
                                         "max": int(values.max())}
    for index, name in enumerate(KINDS):
        mine = kind == index
        wait = trace.start_ns[mine] - trace.taken_ns[mine]
        run = trace.end_ns[mine] - trace.start_ns[mine]
        summary[f"wait_ns.{name}"] = {"median": float(np.median(wait)), "max": int(wait.max()),
                                      "total": int(wait.sum())}
        summary[f"run_ns.{name}"] = {"median": float(np.median(run)), "max": int(run.max()), "total": int(run.sum())}
    summary["idle_ns"] = handoff.of_trace(trace)
    summary["model"] = replay(trace, graph, schedule, workers)
    return summary
