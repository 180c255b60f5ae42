"""Instrumented builds: wire a trace buffer to a module built with -DLAUNCHLAB_TRACE, run once, read back.

Traces come from separate runs and never enter timing tables. Imports CuPy when called."""
from __future__ import annotations

from launchlab.model.timelines import TASK_WORDS, WORDS_PER_BLOCK, timeline_arrays


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


def attach_task_buffer(traced_module, slots: int):
    """Zeroed device records for `slots` task records, wired to the traced megakernel module.

    Must precede any launch of a traced megakernel: its probe writes through this pointer."""
    import cupy

    records = cupy.zeros(slots * TASK_WORDS, dtype=cupy.uint64)
    module = traced_module.module
    cupy.ndarray((1,), cupy.uint64, memptr=module.get_global("trace_records")).fill(records.data.ptr)
    cupy.cuda.get_current_stream().synchronize()
    return records


def collect_raw(records, invoke):
    """One traced invocation: clear the records, run, return them as a NumPy array."""
    import cupy

    records.fill(0)
    invoke()
    cupy.cuda.get_current_stream().synchronize()
    return records.get()
