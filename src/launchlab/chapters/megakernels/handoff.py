"""Hand-off as SM-idle time (NumPy only): on each SM, the time between two consecutive tasks of a design during
which the SM runs none of them (busy = the union of the tasks' [start, end] on that SM; waiting for an input is
not running a task). One value per task after an SM's first, zero where the next task started before the SM
went idle. The same measure on a schedule model's replay, with each task on the SM the trace saw it on, is the
model's prediction: what it leaves out (fetch, poll and fence latency) is the difference.

With several workers on an SM the SM is rarely idle even when each worker waits long between its tasks, so the
same gaps per worker (a persistent worker, or a block of a kernel) are kept beside them."""
from __future__ import annotations

import numpy as np


def sm_idle_ns(sm, start, end) -> np.ndarray:
    """The idle gap before every task but each SM's (or worker's) first, in start order on its SM."""
    sm, start, end = (np.asarray(a, dtype=np.int64) for a in (sm, start, end))
    if not (sm.shape == start.shape == end.shape):
        raise ValueError("sm, start and end need one value per task")
    gaps = []
    for unit in np.unique(sm):
        mine = np.flatnonzero(sm == unit)
        order = mine[np.lexsort((end[mine], start[mine]))]
        busy_until = np.maximum.accumulate(end[order])
        gaps.append(np.maximum(0, start[order[1:]] - busy_until[:-1]))
    return np.concatenate(gaps) if gaps else np.zeros(0, np.int64)


def of_trace(trace) -> dict:
    """{"sm": quantiles of the SM-idle gaps, "worker": of the gaps per worker} of a trace."""
    return {"sm": quantiles(sm_idle_ns(trace.sm, trace.start_ns, trace.end_ns)),
            "worker": quantiles(sm_idle_ns(trace.worker, trace.start_ns, trace.end_ns))}


def of_model(model, trace) -> dict:
    """The same of a model's replay, with every task on the SM and worker the measured trace ran it on."""
    size = int(max(trace.task.max(), model.task.max())) + 1
    sm_of_task, worker_of_task = np.zeros(size, np.int64), np.zeros(size, np.int64)
    sm_of_task[trace.task], worker_of_task[trace.task] = trace.sm, trace.worker
    return {"sm": quantiles(sm_idle_ns(sm_of_task[model.task], model.start_ns, model.end_ns)),
            "worker": quantiles(sm_idle_ns(worker_of_task[model.task], model.start_ns, model.end_ns))}


def quantiles(values) -> dict:
    """p10, p25, median, p75, p90, mean and count of the gaps (ns); an empty set (one task per SM) is all zeros."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return {"p10": 0.0, "p25": 0.0, "median": 0.0, "p75": 0.0, "p90": 0.0, "mean": 0.0, "count": 0}
    p10, p25, median, p75, p90 = (float(v) for v in np.percentile(values, [10, 25, 50, 75, 90]))
    return {"p10": p10, "p25": p25, "median": median, "p75": p75, "p90": p90, "mean": float(values.mean()),
            "count": int(values.size)}
