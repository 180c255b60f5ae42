"""The persistent megakernels on the GPU (kernels/megakernel.cu): launchers, the error flag, traces.

Both kernels take the buffers of a `TiledPath` (x, y, tile and row statistics, tile table), so
every variant of a case reads and writes the same arrays. Imports CuPy; only GPU mode reaches
this module.
"""
from __future__ import annotations

import cupy
import numpy as np

from launchlab.gpu import build
from launchlab.model import schedules
from launchlab.gpu import probes
from launchlab.model import timelines
from launchlab.gpu.targets import BLOCK

FAMILY = "megakernel"
KERNELS = ("coop_phases", "queue_persistent")
WAIT_LIMIT_NS = 1_000_000_000  # a worker gives up after waiting 1 s for one task's inputs
ERROR_WORDS = 4                # {flag, task, counter seen, counter needed}


class MegakernelError(RuntimeError):
    """A queue worker gave up waiting for a task's inputs (the kernel's bounded wait)."""


def load(traced: bool = False):
    """Compile kernels/megakernel.cu (the traced build with -DLAUNCHLAB_TRACE)."""
    return build.load_module(FAMILY, {"LAUNCHLAB_TRACE": None} if traced else None)


def sm_count() -> int:
    return int(cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())["multiProcessorCount"])


def resident_blocks_per_sm(kernel, block: int = BLOCK, shared_bytes: int = 0) -> int:
    """Blocks of `kernel` (a RawKernel) that one SM holds at once, from CUDA's occupancy API."""
    return int(cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, block, shared_bytes))


def _workers(kernel, workers_per_sm: int) -> tuple[int, int]:
    """(blocks per SM the occupancy API allows, blocks per SM asked for: 0 means all of them)."""
    resident = resident_blocks_per_sm(kernel)
    if resident < 1:
        raise ValueError(f"the occupancy API reports no resident block of {BLOCK} threads for this kernel")
    return resident, (workers_per_sm or resident)


class CooperativePhases:
    """coop_phases: one cooperative launch, a grid-wide barrier between phases A, B and C.

    The grid may not exceed the blocks that can be resident at once (SMs x blocks per SM from the
    occupancy API): a grid barrier with a block still waiting to start would never complete.
    CUDA's cooperative launch refuses such a grid; CuPy would shrink it with a warning, so the
    size is checked here first."""

    KERNELS = ("coop_phases",)
    schedule = "cooperative"

    def __init__(self, built, path, workers_per_sm: int = 0):
        self.path = path
        kernel = built.kernel("coop_phases")
        self.resident_per_sm, per_sm = _workers(kernel, workers_per_sm)
        self.capacity = self.resident_per_sm * sm_count()
        self.workers = per_sm * sm_count()
        if self.workers > self.capacity:
            raise ValueError(f"a cooperative grid of {self.workers} blocks exceeds the {self.capacity} that can be "
                             f"co-resident ({self.resident_per_sm} per SM x {sm_count()} SMs)")
        self.blocks_per_sm = per_sm
        self.function = kernel.kernel  # cupy.cuda.function.Function: takes enable_cooperative_groups
        self.args = path.problem_args() + (np.int32(path.rows), np.int32(path.tiles))

    def invoke(self) -> None:
        self.function((self.workers,), (BLOCK,), self.args, enable_cooperative_groups=True)

    def check_error(self) -> None:
        """Nothing to read: a grid barrier is CUDA's, and the launch itself guarantees co-residency."""


class TaskQueue:
    """queue_persistent: `workers` blocks take tasks from an atomic counter, per-row counters carry
    the dependencies. Every invocation zeroes head and counters with a device memset first (a real
    cost, inside every timed region and, in a graph, a memset node). The error words are sticky:
    cleared by `clear_error`, read by `check_error`.

    `order` (slot -> task) is for tests only; None is the natural order, A then B then C."""

    KERNELS = ("queue_persistent",)
    schedule = "queue"

    def __init__(self, built, path, workers_per_sm: int = 0, workers: int | None = None, order=None,
                 wait_limit_ns: int = WAIT_LIMIT_NS):
        self.path = path
        kernel = built.kernel("queue_persistent")
        self.resident_per_sm, per_sm = _workers(kernel, workers_per_sm)
        self.capacity = self.resident_per_sm * sm_count()
        # the queue needs no co-residency (see megakernel.cu), so more workers than fit are allowed
        self.workers = int(workers) if workers else per_sm * sm_count()
        self.blocks_per_sm = per_sm
        self.graph = schedules.TaskGraph.from_tile_row(path.table["tile_row"].get())
        self.wait_limit_ns = int(wait_limit_ns)
        self.counters = cupy.zeros(1 + 2 * path.rows, dtype=cupy.uint32)
        self.error = cupy.zeros(ERROR_WORDS, dtype=cupy.int32)
        self.order = None
        if order is not None:
            order = np.asarray(order, dtype=np.int32)
            if sorted(order.tolist()) != list(range(self.graph.total)):
                raise ValueError("a task order must list every task exactly once")
            self.order = cupy.asarray(order)
        self.function = kernel.kernel
        self.args = path.problem_args() + (np.int32(path.rows), np.int32(path.tiles), self.counters, self.error,
                                           self.order if self.order is not None else np.uint64(0),
                                           np.uint64(self.wait_limit_ns))
        self.stream_ptr = cupy.cuda.get_current_stream().ptr

    def invoke(self) -> None:
        cupy.cuda.runtime.memsetAsync(self.counters.data.ptr, 0, self.counters.nbytes, self.stream_ptr)
        self.function((self.workers,), (BLOCK,), self.args)

    def clear_error(self) -> None:
        self.error.fill(0)
        cupy.cuda.get_current_stream().synchronize()

    def check_error(self) -> None:
        """Raise MegakernelError naming the task whose wait ran out, if a worker gave up."""
        cupy.cuda.get_current_stream().synchronize()
        flag, task, seen, need = (int(v) for v in self.error.get())
        if flag:
            kind = self.graph.kind(task)
            what = f"row {self.graph.index(task)}" if kind == "B" else f"tile {self.graph.index(task)}"
            waited_for = "A tiles of its row finished" if kind == "B" else "B of its row finished"
            raise MegakernelError(f"queue worker gave up after {self.wait_limit_ns / 1e9:g} s: {kind} task {task} "
                                  f"({what}) saw {seen} of {need} {waited_for}; the queue order cannot complete")

    def counters_after(self) -> np.ndarray:
        cupy.cuda.get_current_stream().synchronize()
        return self.counters.get().astype(np.int64)

    def counters_match(self) -> bool:
        """After a complete run: head = tasks + workers, a_done = tiles per row, b_done = 1 (schedules' model)."""
        return bool((self.counters_after() == self.graph.expected_counters(self.workers)).all())


# --------------------------------------------------------------------------- traces
def trace_persistent(traced_runner, invoke, records) -> dict:
    """One traced invocation of a persistent kernel (stream launch or graph replay) -> trace arrays."""
    table = probes.collect_raw(records, invoke)
    if isinstance(traced_runner, TaskQueue):
        traced_runner.check_error()
    return timelines.task_trace_arrays(table)


def trace_three_kernel(path, invoke, records) -> dict:
    """One traced invocation of the three-kernel path (stream or graph) -> trace arrays in task numbers."""
    table = probes.collect_raw(records, invoke)
    return timelines.stage_blocks_as_tasks(table, path.tiles, path.rows)
