"""Pure-Python models of the megakernel designs of kernels/megakernel_designs.cu, the host-side plans
they launch with (static task lists, cluster plans), and the checks every trace of them must pass.

The task graph and trace format are those of schedules.py (A tile t -> t, B row r ->
tiles + r, C tile t -> tiles + rows + t; one record per task: taken, start, end, worker, SM). Four
designs:

* pdl: kernels A, B, C (or A and C with B folded into C: `kernels=2`) launched with programmatic
  dependent launch. A kernel's blocks may become resident once every block of the previous kernel
  has started (each calls griddepcontrol.launch_dependents first) plus a launch latency; a block
  runs what needs no producer (C: load x), then waits for the whole previous grid to finish
  (griddepcontrol.wait), then runs the rest. `programmatic=False`: ordinary stream order.
* dependency: a co-resident grid of workers with static task lists; the last A tile of a row to
  finish runs B right after it on the same worker; a C task waits for its row's B.
* cluster: one thread-block cluster per row (per row class, one launch per class), all blocks of a
  cluster start together; A = a block's statistics, a cluster barrier, B = the combine, C = the
  output pass; the cluster's blocks leave together.

NumPy only: runs on CPU test machines and in the analysis of saved runs.
"""
from __future__ import annotations

import dataclasses
import heapq

import numpy as np

from launchlab.chapters.megakernels import handoff as idle
from launchlab.chapters.megakernels.schedules import Deadlock, TaskGraph, Trace, _trace
from launchlab.model.workloads import TILE

DESIGNS = ("pdl3", "pdl2", "dependency", "flow", "cluster")
B_IN_C = ("pdl2", "flow")  # B recorded inside the C of its row's first tile: a C waits for its row's A tiles
SMEM_CACHE_LIMIT_BYTES = 96 * 1024  # above this a cluster block reads x twice instead of keeping it


# --------------------------------------------------------------------------- static task lists
@dataclasses.dataclass(frozen=True)
class WorkerLists:
    """CSR task lists: worker w runs tasks[first[w]:first[w + 1]] in order; slot[i] >= 0 is the
    shared-memory tile slot an A task fills and the C task of the same tile reads back."""
    first: np.ndarray
    tasks: np.ndarray
    slot: np.ndarray

    @property
    def workers(self) -> int:
        return int(self.first.size - 1)

    def of(self, worker: int) -> np.ndarray:
        return self.tasks[self.first[worker]:self.first[worker + 1]]

    @property
    def slots_needed(self) -> int:
        return int(self.slot.max()) + 1 if self.slot.size and self.slot.max() >= 0 else 0


def owner_task_lists(graph: TaskGraph, workers: int, cache_slots: int = 1) -> WorkerLists:
    """Tile t belongs to worker t % workers; a worker runs A of its tiles in tile order, then C of
    the same tiles in the same order. Its first `cache_slots` tiles stay in shared memory between
    A and C. Workers beyond the tile count get empty lists."""
    if workers < 1:
        raise ValueError("need at least one worker")
    tiles, rows = graph.tiles, graph.rows
    first, tasks, slots = [0], [], []
    for worker in range(workers):
        mine = np.arange(worker, tiles, workers)
        slot = np.where(np.arange(mine.size) < cache_slots, np.arange(mine.size), -1)
        tasks += list(mine) + list(tiles + rows + mine)
        slots += list(slot) + list(slot)
        first.append(len(tasks))
    return WorkerLists(np.asarray(first, np.int32), np.asarray(tasks, np.int32), np.asarray(slots, np.int32))


def check_lists(graph: TaskGraph, lists: WorkerLists) -> dict:
    """Whether static lists can run to completion on a co-resident grid: every A and C task exactly
    once, no B task (the last A of a row runs it), every C preceded on its worker by some A (the
    worker learns the round from it), slots consistent, and no deadlock: A tasks never wait, a C
    task waits for all A tiles of its row, so repeatedly running every runnable head of list must
    empty every list. {"passed", "checks", "stuck": worker -> blocked task}."""
    tiles, rows = graph.tiles, graph.rows
    kinds = graph.kinds()
    expected = list(range(tiles)) + list(range(tiles + rows, graph.total))
    checks = {"every_a_and_c_once": sorted(lists.tasks.tolist()) == expected}
    checks["round_known_before_every_c"] = all(
        not (kinds[t] == 2) or (kinds[lists.of(w)[:i]] == 0).any()
        for w in range(lists.workers) for i, t in enumerate(lists.of(w)))
    checks["slots_pair_a_with_its_c"] = _slots_consistent(graph, lists)
    stuck = _progress(graph, lists) if checks["every_a_and_c_once"] else {}
    checks["deadlock_free"] = checks["every_a_and_c_once"] and not stuck
    return {"passed": all(checks.values()), "checks": checks, "stuck": stuck}


def _slots_consistent(graph: TaskGraph, lists: WorkerLists) -> bool:
    """A C task that reads a slot finds there the x tile of its own tile, filled earlier by an A."""
    tiles, rows = graph.tiles, graph.rows
    for worker in range(lists.workers):
        held = {}
        for i in range(lists.first[worker], lists.first[worker + 1]):
            task, slot = int(lists.tasks[i]), int(lists.slot[i])
            if slot < 0:
                continue
            if task < tiles:
                held[slot] = task
            elif held.get(slot) != task - tiles - rows:
                return False
    return True


def _progress(graph: TaskGraph, lists: WorkerLists) -> dict:
    """Run every runnable list head until nothing moves; {worker: task} of the lists left blocked."""
    remaining = np.bincount(graph.tile_row, minlength=graph.rows).astype(np.int64)
    position = [int(lists.first[w]) for w in range(lists.workers)]
    moved = True
    while moved:
        moved = False
        for w in range(lists.workers):
            while position[w] < lists.first[w + 1]:
                task = int(lists.tasks[position[w]])
                if task < graph.tiles:
                    remaining[graph.tile_row[task]] -= 1
                elif remaining[graph.tile_row[task - graph.tiles - graph.rows]] > 0:
                    break
                position[w] += 1
                moved = True
    return {w: int(lists.tasks[position[w]]) for w in range(lists.workers) if position[w] < lists.first[w + 1]}


# --------------------------------------------------------------------------- cluster plans
@dataclasses.dataclass(frozen=True)
class ClusterPlan:
    """Per row its cluster size; rows grouped into classes of one cluster size (a launch each,
    the largest clusters first); chunk c = block `rank` of row chunk_row[c]'s cluster."""
    lengths: np.ndarray
    cluster: np.ndarray          # blocks per cluster, per row
    classes: tuple               # ((cluster size, rows array), ...) in launch order
    row_first_chunk: np.ndarray
    chunk_row: np.ndarray
    chunk_len: np.ndarray
    cache_elements: tuple        # per class: floats of x a block keeps in shared memory (0: none)

    @property
    def chunks(self) -> int:
        return int(self.chunk_row.size)

    def graph(self) -> TaskGraph:
        return TaskGraph.from_tile_row(self.chunk_row)


def cluster_plan(lengths, max_cluster: int = 8, tile: int = TILE,
                 cache_limit_bytes: int = SMEM_CACHE_LIMIT_BYTES) -> ClusterPlan:
    """A row of n tiles gets a cluster of min(max_cluster, next power of two >= n) blocks, each
    covering ceil(length / cluster) elements: one tile per block while the row fits a cluster."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.ndim != 1 or lengths.size == 0 or (lengths <= 0).any():
        raise ValueError("every row needs at least one element")
    if not 1 <= max_cluster <= 16:
        raise ValueError("a Hopper cluster holds 1 to 16 blocks")
    tiles = -(-lengths // tile)
    cluster = np.minimum(max_cluster, 2 ** np.ceil(np.log2(tiles)).astype(np.int64))
    row_first_chunk = np.concatenate([[0], np.cumsum(cluster)])
    chunk_row = np.repeat(np.arange(lengths.size), cluster)
    rank = np.arange(chunk_row.size) - row_first_chunk[chunk_row]
    size = -(-lengths // cluster)
    begin = np.minimum(rank * size[chunk_row], lengths[chunk_row])
    chunk_len = np.minimum(size[chunk_row], lengths[chunk_row] - begin)
    classes, cache = [], []
    for k in sorted(set(cluster.tolist()), reverse=True):
        rows = np.flatnonzero(cluster == k).astype(np.int32)
        classes.append((int(k), rows))
        widest = int(size[rows].max())
        cache.append(widest if 4 * widest <= cache_limit_bytes else 0)
    return ClusterPlan(lengths, cluster, tuple(classes), row_first_chunk.astype(np.int32),
                       chunk_row.astype(np.int64), chunk_len.astype(np.int64), tuple(cache))


# --------------------------------------------------------------------------- models
def simulate_pdl(graph: TaskGraph, durations, slots: int, kernels: int = 3, programmatic: bool = True,
                 launch_ns: float = 0.0, wait_ns: float = 0.0, prefetch_ns: float = 0.0,
                 blocks_per_sm: int = 1) -> Trace:
    """Kernels A, B, C (kernels=3) or A, C with B folded into C (kernels=2; the B record of a row is
    the combine at the start of its first tile's C block, `durations` of B its length, included
    in that C block's duration). `slots` resident places; blocks of a kernel take them in block
    order. Programmatic: kernel k+1 is launched `launch_ns` after the last block of kernel k
    started; a block of kernel k+1 runs `prefetch_ns` (C: its x loads), then waits until the last
    block of kernel k ends plus `wait_ns`. Otherwise kernel k+1 starts `launch_ns` after kernel k ends."""
    durations = np.asarray(durations, dtype=np.float64)
    tiles, rows = graph.tiles, graph.rows
    kinds = graph.kinds()
    stages = [np.flatnonzero(kinds == 0), np.flatnonzero(kinds == 1), np.flatnonzero(kinds == 2)]
    if kernels == 2:
        stages = [stages[0], stages[2]]
    elif kernels != 3:
        raise ValueError("kernels is 3 (A, B, C) or 2 (A, C with B folded in)")
    free = [(0.0, place) for place in range(slots)]
    heapq.heapify(free)
    records, launched, previous_end = [], 0.0, None
    for stage, tasks in enumerate(stages):
        starts, ends = [], []
        for block, task in enumerate(tasks):
            at, place = heapq.heappop(free)
            taken = max(at, launched)
            ready = taken if previous_end is None else max(taken + (prefetch_ns if stage == len(stages) - 1 else 0.0),
                                                           previous_end + wait_ns)
            end = ready + durations[task]
            records.append((task, taken, ready, end, block, place // blocks_per_sm))
            if kernels == 2 and stage == 1 and block == graph.row_first_tile[graph.tile_row[task - tiles - rows]]:
                row = int(graph.tile_row[task - tiles - rows])
                records.append((tiles + row, ready, ready, ready + durations[tiles + row], block,
                                place // blocks_per_sm))
            heapq.heappush(free, (end, place))
            starts.append(taken)
            ends.append(end)
        previous_end = max(ends)
        launched = (max(starts) if programmatic else previous_end) + launch_ns
    records.sort(key=lambda r: r[0])
    return _trace(records)


def simulate_dependency(graph: TaskGraph, durations, lists: WorkerLists, handoff_ns: float = 0.0,
                        arrivals=None, blocks_per_sm: int = 1) -> Trace:
    """Workers run their lists from arrivals[w] (default 0), in time order (an event queue): A
    runs at once; the A that ends a row's last runs B right after it on its worker; a C task starts
    `handoff_ns` after its row's B ends, or when its worker reaches it. Raises Deadlock when
    workers wait on rows that can no longer complete."""
    durations = np.asarray(durations, dtype=np.float64)
    tiles, rows = graph.tiles, graph.rows
    remaining = graph.tiles_per_row.astype(np.int64).copy()
    b_end = np.full(rows, np.nan)
    position = [int(lists.first[w]) for w in range(lists.workers)]
    start_at = np.zeros(lists.workers) if arrivals is None else np.asarray(arrivals, dtype=np.float64)
    events = [(float(start_at[w]), w, "free", -1) for w in range(lists.workers)]
    heapq.heapify(events)
    waiting: dict[int, list] = {}  # row -> [(worker, C task, taken)]
    records = []
    sm = lambda w: w // blocks_per_sm  # noqa: E731

    def run_c(worker, task, taken, at):
        begin = max(at, taken)
        end = begin + durations[task]
        records.append((task, taken, begin, end, worker, sm(worker)))
        heapq.heappush(events, (end, worker, "free", -1))

    while events:
        now, worker, what, task = heapq.heappop(events)
        if what == "a_end":
            row = int(graph.tile_row[task])
            remaining[row] -= 1
            if remaining[row] == 0:  # this worker combines the row
                end = now + durations[tiles + row]
                records.append((tiles + row, now, now, end, worker, sm(worker)))
                b_end[row] = end
                for other, held, taken in waiting.pop(row, []):
                    run_c(other, held, taken, end + handoff_ns)
                heapq.heappush(events, (end, worker, "free", -1))
            else:
                heapq.heappush(events, (now, worker, "free", -1))
            continue
        if position[worker] >= lists.first[worker + 1]:
            continue
        task = int(lists.tasks[position[worker]])
        position[worker] += 1
        if task < tiles:
            end = now + durations[task]
            records.append((task, now, now, end, worker, sm(worker)))
            heapq.heappush(events, (end, worker, "a_end", task))
            continue
        row = int(graph.tile_row[task - tiles - rows])
        if np.isnan(b_end[row]):
            waiting.setdefault(row, []).append((worker, task, now))
        else:
            run_c(worker, task, now, b_end[row] + handoff_ns)
    if waiting:
        held = ", ".join(f"worker {w} waits on row {r}" for r, ws in sorted(waiting.items()) for w, _, _ in ws)
        raise Deadlock(f"static lists cannot complete: {held}")
    records.sort(key=lambda r: r[0])
    return _trace(records)


def simulate_cluster(plan: ClusterPlan, durations, slots: int, barrier_ns: float = 0.0, launch_ns: float = 0.0,
                     programmatic: bool = True, blocks_per_sm: int = 1) -> Trace:
    """Clusters of each class in order, a cluster starting when `K` resident places are free (and
    its class launched: `launch_ns` after the previous class's last cluster started, or ended
    without PDL); its blocks run A together; the combine (B, length of the B task) starts
    `barrier_ns` after the cluster's last A ends; each block's C follows; the places free when the
    cluster's last C ends. Durations in the plan's graph numbering (chunks as tiles)."""
    graph = plan.graph()
    durations = np.asarray(durations, dtype=np.float64)
    chunks, rows = graph.tiles, graph.rows
    free = [(0.0, place) for place in range(slots)]
    heapq.heapify(free)
    records, launched, block = [], 0.0, 0
    for k, class_rows in plan.classes:
        if k > slots:
            raise ValueError(f"a cluster of {k} blocks needs {k} resident places, the model has {slots}")
        starts, ends = [], []
        for row in class_rows:
            places = [heapq.heappop(free) for _ in range(k)]
            begin = max(launched, max(at for at, _ in places))
            first = int(plan.row_first_chunk[row])
            a_end = [begin + durations[first + rank] for rank in range(k)]
            barrier = max(a_end) + barrier_ns
            combined = barrier + durations[chunks + row]
            records.append((chunks + row, barrier, barrier, combined, block, places[0][1] // blocks_per_sm))
            finish = []
            for rank, (_, place) in enumerate(places):
                c = first + rank
                records.append((c, begin, begin, a_end[rank], block + rank, place // blocks_per_sm))
                end = combined + durations[chunks + rows + c]
                records.append((chunks + rows + c, barrier, combined, end, block + rank, place // blocks_per_sm))
                finish.append(end)
            for _, place in places:
                heapq.heappush(free, (max(finish), place))
            block += k
            starts.append(begin)
            ends.append(max(finish))
        launched = (max(starts) if programmatic else max(ends)) + launch_ns
    records.sort(key=lambda r: r[0])
    return _trace(records)


# --------------------------------------------------------------------------- checks
def _row_a_end(graph: TaskGraph, end: np.ndarray) -> np.ndarray:
    last = np.full(graph.rows, np.iinfo(np.int64).min)
    np.maximum.at(last, graph.tile_row, end[:graph.tiles])
    return last


def check_design_trace(trace: Trace, graph: TaskGraph, design: str, lists: WorkerLists | None = None) -> dict:
    """Named checks of a design's trace (`graph`: the plan's graph for "cluster"); `passed` = all.

    Every design: every task once; taken <= start <= end; B starts after its row's A tiles end; C
    starts after its row's A tiles end. pdl3: no B before every A ended, no C before every B ended
    (griddepcontrol.wait waits for the whole previous grid). pdl2: no C before every A ended; each
    row's B recorded by the block of its first tile. dependency: C after its row's B; A and C on
    the workers `lists` gives them; B on a worker that ran one of its row's A tiles. cluster: A and
    C of a chunk on the same block; B on the block of the row's first chunk (every block combines
    the partials itself, so a C may start before rank 0's B record does)."""
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}; expected one of {DESIGNS}")
    checks = {"every_task_once": sorted(trace.task.tolist()) == list(range(graph.total)),
              "records_in_time_order": bool(((trace.taken_ns <= trace.start_ns)
                                             & (trace.start_ns <= trace.end_ns)).all())}
    if not checks["every_task_once"]:
        return {"passed": False, "checks": checks}
    by = trace.by_task(graph.total)
    start, end, worker = by["start_ns"], by["end_ns"], by["worker"]
    tiles, rows = graph.tiles, graph.rows
    a_end = _row_a_end(graph, end)
    b_start, b_end = start[tiles:tiles + rows], end[tiles:tiles + rows]
    c_start, c_row = start[tiles + rows:], graph.tile_row
    checks["b_after_its_row_a"] = bool((b_start >= a_end).all())
    checks["c_after_its_row_a"] = bool((c_start >= a_end[c_row]).all())
    if design == "pdl3":
        checks["no_b_before_all_a"] = bool(b_start.min() >= end[:tiles].max())
        checks["no_c_before_all_b"] = bool(c_start.min() >= b_end.max())
    if design == "pdl2":
        checks["no_c_before_all_a"] = bool(c_start.min() >= end[:tiles].max())
        first_c = worker[tiles + rows + graph.row_first_tile[:-1]]
        checks["b_in_first_tile_block"] = bool((worker[tiles:tiles + rows] == first_c).all())
    if design in ("dependency", "flow"):
        if design == "dependency":
            checks["c_after_its_row_b"] = bool((c_start >= b_end[c_row]).all())
        else:
            first_c = worker[tiles + rows + graph.row_first_tile[:-1]]
            checks["b_in_first_tile_c"] = bool((worker[tiles:tiles + rows] == first_c).all())
        if lists is not None:
            owner = np.repeat(np.arange(lists.workers), np.diff(lists.first))
            listed = np.empty(graph.total, np.int64)
            listed[lists.tasks] = owner
            ac = np.concatenate([np.arange(tiles), np.arange(tiles + rows, graph.total)])
            checks["tasks_on_listed_workers"] = bool((worker[ac] == listed[ac]).all())
    if design == "dependency":
        row_workers = {(int(r), int(w)) for r, w in zip(graph.tile_row, worker[:tiles])}
        checks["b_on_a_worker_of_its_row"] = all((r, int(worker[tiles + r])) in row_workers for r in range(rows))
    if design == "cluster":
        checks["a_and_c_on_one_block"] = bool((worker[:tiles] == worker[tiles + rows:]).all())
        checks["b_on_first_chunk_block"] = bool((worker[tiles:tiles + rows] == worker[graph.row_first_tile[:-1]]).all())
    return {"passed": all(checks.values()), "checks": checks}


def replay_design(trace: Trace, graph: TaskGraph, design: str, slots: int, lists: WorkerLists | None = None,
                  plan: ClusterPlan | None = None) -> dict:
    """The design's model run with the trace's own task durations (end - start) and the trace's
    median hand-off costs (dependency: over the C tasks that had to wait); predicted against measured span (first take to last end). What the model
    leaves out (launch and wait latencies it only sees as medians, polling, memory contention) is
    the difference."""
    by = trace.by_task(graph.total)
    durations = (by["end_ns"] - by["start_ns"]).astype(np.float64)
    tiles, rows = graph.tiles, graph.rows
    a_end = _row_a_end(graph, by["end_ns"])
    b_start, b_end = by["start_ns"][tiles:tiles + rows], by["end_ns"][tiles:tiles + rows]
    c_start = by["start_ns"][tiles + rows:]
    if design in ("pdl3", "pdl2"):
        stage_start = [by["taken_ns"][kind].min() for kind in _kinds(graph, design)]
        launch = float(np.median(np.diff(stage_start))) if len(stage_start) > 1 else 0.0
        wait = max(0.0, float(np.median(c_start - (b_end.max() if design == "pdl3" else by["end_ns"][:tiles].max()))))
        model = simulate_pdl(graph, durations, slots, kernels=3 if design == "pdl3" else 2, launch_ns=max(0.0, launch),
                             wait_ns=wait)
    elif design in ("dependency", "flow"):
        waited = by["taken_ns"][tiles + rows:] < c_start  # C tasks that found their row unfinished
        ready = b_end if design == "dependency" else a_end  # flow: B inside every C, no B task to wait for
        gaps = (c_start - ready[graph.tile_row])[waited]
        handoff = max(0.0, float(np.median(gaps))) if gaps.size else 0.0
        if design == "flow":
            durations[tiles:tiles + rows] = 0.0
        seen = np.full(lists.workers, np.inf)
        np.minimum.at(seen, trace.worker[trace.worker < lists.workers], trace.taken_ns[trace.worker < lists.workers])
        arrivals = np.where(np.isfinite(seen), seen - trace.taken_ns.min(), 0.0)
        model = simulate_dependency(graph, durations, lists, handoff, arrivals)
    else:
        barrier = max(0.0, float(np.median(b_start - a_end)))
        model = simulate_cluster(plan, durations, slots, barrier_ns=barrier)
    measured = int(trace.end_ns.max() - trace.taken_ns.min())
    predicted = int(model.end_ns.max() - model.taken_ns.min())
    return {"measured_span_ns": measured, "model_span_ns": predicted, "model_minus_measured_ns": predicted - measured,
            "idle_ns": idle.of_model(model, trace)}


def _kinds(graph: TaskGraph, design: str) -> list[np.ndarray]:
    kinds = graph.kinds()
    stages = [kinds == 0, kinds == 1, kinds == 2]
    return stages if design == "pdl3" else [stages[0], stages[2]]


def trace_summary(trace: Trace, graph: TaskGraph, design: str, slots: int, lists: WorkerLists | None = None,
                  plan: ClusterPlan | None = None) -> dict:
    """Checks, span, hand-offs (B start - its row's last A end; C start - its row's B end, or where B runs inside
    every C, B_IN_C, its row's last A end: a C there waits for nothing else, and its row's B record ends inside
    the first tile's C, after the other C tasks of the row started), SM-idle gaps and the replay."""
    result = check_design_trace(trace, graph, design, lists)
    summary = {"passed": result["passed"], "checks": result["checks"], "tasks": int(trace.task.size)}
    if not result["checks"]["every_task_once"]:
        return summary
    by = trace.by_task(graph.total)
    tiles, rows = graph.tiles, graph.rows
    a_end = _row_a_end(graph, by["end_ns"])
    b_handoff = by["start_ns"][tiles:tiles + rows] - a_end
    ready = a_end if design in B_IN_C else by["end_ns"][tiles:tiles + rows]
    c_handoff = by["start_ns"][tiles + rows:] - ready[graph.tile_row]
    summary.update({"span_ns": int(trace.end_ns.max() - trace.taken_ns.min()),
                    "workers_used": int(np.unique(trace.worker).size), "sms_used": int(np.unique(trace.sm).size),
                    "handoff_ns.B": _quantiles(b_handoff), "handoff_ns.C": _quantiles(c_handoff),
                    "idle_ns": idle.of_trace(trace),
                    "model": replay_design(trace, graph, design, slots, lists, plan)})
    return summary


def _quantiles(values: np.ndarray) -> dict:
    return {"median": float(np.median(values)), "min": int(values.min()), "max": int(values.max())}
