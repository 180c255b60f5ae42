"""Instrumented timelines: per block start/end (%globaltimer) and SM (%smid).

Collection (`attach_buffer`, `collect`) needs the GPU and a module built with
-DLAUNCHLAB_TRACE; everything else here reads saved arrays on the CPU. Traces
come from separate runs and never enter timing tables.
"""
from __future__ import annotations

import numpy as np

WORDS_PER_BLOCK = 3  # start ns, end ns, SM id


def attach_buffer(traced_module, kernels: int, blocks: int):
    """Zeroed device records for `kernels` x `blocks`, wired to the traced module's globals.

    Must precede any launch of a traced kernel: its probe writes through this pointer."""
    import cupy

    records = cupy.zeros(kernels * blocks * WORDS_PER_BLOCK, dtype=cupy.uint64)
    module = traced_module.module
    cupy.ndarray((1,), cupy.uint64, memptr=module.get_global("trace_records")).fill(records.data.ptr)
    cupy.ndarray((1,), cupy.uint32, memptr=module.get_global("trace_stride")).fill(blocks)
    cupy.cuda.get_current_stream().synchronize()
    return records


def collect(records, invoke, kernels: int, blocks: int) -> dict:
    """One traced invocation: clear the records, run, read them back as timeline arrays."""
    import cupy

    records.fill(0)
    invoke()
    cupy.cuda.get_current_stream().synchronize()
    return timeline_arrays(records.get().reshape(kernels, blocks, WORDS_PER_BLOCK))


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
