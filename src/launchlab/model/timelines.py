"""Instrumented timelines read on the CPU: per block start/end (%globaltimer) and SM (%smid), and the
task traces of the megakernels. Collection lives in launchlab.gpu.probes."""
from __future__ import annotations

import numpy as np

WORDS_PER_BLOCK = 3  # start ns, end ns, SM id


def timeline_arrays(table: np.ndarray) -> dict:
    """Start and end in ns from the earliest block start, and the SM of every block."""
    if not (table[:, :, 1] >= table[:, :, 0]).all() or (table[:, :, 0] == 0).any():
        raise ValueError("trace has blocks that never wrote a record or ended before they started")
    origin = table[:, :, 0].min()
    return {
        "start_ns": (table[:, :, 0] - origin).astype(np.int64),
        "end_ns": (table[:, :, 1] - origin).astype(np.int64),
        "sm": table[:, :, 2].astype(np.int16),
    }


def kernel_spans(start_ns: np.ndarray, end_ns: np.ndarray, names) -> list[dict]:
    """Per kernel: first block start, last block end, and the idle gap before it."""
    spans = []
    for index, name in enumerate(names):
        first, last = int(start_ns[index].min()), int(end_ns[index].max())
        gap = None if index == 0 else first - spans[-1]["last_end_ns"]
        spans.append({"kernel": name, "first_start_ns": first, "last_end_ns": last,
                      "span_ns": last - first, "gap_before_ns": gap})
    return spans


def timer_resolution_ns(start_ns: np.ndarray, end_ns: np.ndarray) -> int:
    """The smallest step between distinct timestamps: how coarsely %globaltimer ticked."""
    stamps = np.unique(np.concatenate([start_ns.ravel(), end_ns.ravel()]))
    steps = np.diff(stamps)
    return int(steps[steps > 0].min()) if steps.size else 0


# ---------------------------------------------------------------- chapter 4: task traces
# A task trace holds one record per queue slot (schedules.TRACE_FIELDS): task, taken, start and
# end ns, worker (block) and SM. kernels/megakernel.cu writes TASK_WORDS words per slot
# {taken, start, end, worker, SM, task}; the three-kernel path's per-block records are
# renumbered into the same tasks (A tile t -> t, B row r -> tiles + r, C tile t -> tiles + rows + t).
TASK_WORDS = 6


def task_trace_arrays(table: np.ndarray) -> dict:
    """Megakernel records (slots x TASK_WORDS) -> trace arrays, times in ns from the first take."""
    table = np.asarray(table, dtype=np.uint64).reshape(-1, TASK_WORDS)
    taken, start, end = (table[:, i] for i in range(3))
    if (end == 0).any():
        missing = np.flatnonzero(end == 0)
        raise ValueError(f"{missing.size} task records were never written (first slot {int(missing[0])})")
    if not ((taken <= start) & (start <= end)).all():
        raise ValueError("a task record ends before it starts or starts before it was taken")
    origin = taken.min()
    return {"task": table[:, 5].astype(np.int64), "taken_ns": (taken - origin).astype(np.int64),
            "start_ns": (start - origin).astype(np.int64), "end_ns": (end - origin).astype(np.int64),
            "worker": table[:, 3].astype(np.int64), "sm": table[:, 4].astype(np.int64)}


def stage_blocks_as_tasks(table: np.ndarray, tiles: int, rows: int) -> dict:
    """Three-kernel block records (3 kernels x stride >= tiles blocks x WORDS_PER_BLOCK; A and C use
    `tiles` slots, B `rows`) -> trace arrays in task numbering; a block is its task's worker, taken
    when it starts."""
    table = np.asarray(table, dtype=np.uint64).reshape(3, -1, WORDS_PER_BLOCK)
    blocks = np.concatenate([table[0, :tiles], table[1, :rows], table[2, :tiles]])
    timeline = timeline_arrays(blocks[None])  # refuses unwritten records
    start, end = timeline["start_ns"][0].astype(np.int64), timeline["end_ns"][0].astype(np.int64)
    return {"task": np.arange(blocks.shape[0], dtype=np.int64), "taken_ns": start.copy(), "start_ns": start,
            "end_ns": end, "worker": np.concatenate([np.arange(tiles), np.arange(rows), np.arange(tiles)]).astype(np.int64),
            "sm": timeline["sm"][0].astype(np.int64)}
