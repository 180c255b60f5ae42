"""The persistent megakernels on the GPU (kernels/megakernel.cu) as Targets: the cooperative phases
kernel (`coop`) and the atomic task queue (`queue`), their worker counts, the queue's error flag,
and one traced invocation of any chapter 4 variant.

Both kernels take the buffers of a `TiledPath` (x, y, tile and row statistics, tile table): load,
poison and output are the path's, so every variant of a case reads and writes the same arrays, and
a `GraphReplay` of either captures the same pointers. Imports CuPy; only GPU mode reaches this module.
"""
from __future__ import annotations

import cupy
import numpy as np

from launchlab.chapters.megakernels import schedules
from launchlab.gpu import device, probes
from launchlab.gpu.targets import BLOCK, Target, resident_blocks_per_sm
from launchlab.model import timelines

FAMILY = "megakernel"
KERNELS = ("coop_phases", "queue_persistent")
WAIT_LIMIT_NS = 1_000_000_000  # a worker gives up after waiting 1 s for one task's inputs
ERROR_WORDS = 4                # {flag, task, counter seen, counter needed}


class MegakernelError(RuntimeError):
    """A queue worker gave up waiting for a task's inputs (the kernel's bounded wait)."""


class NotCoResident(ValueError):
    """More persistent workers than the GPU can hold at once: the design would wait on a worker that never starts."""


class PersistentTarget(Target):
    """Worker blocks that loop over the tasks of a TiledPath's case, on that path's buffers.

    `workers_per_sm` (worker blocks per SM) 0 asks for as many as the occupancy API allows (`resident_per_sm`)."""

    kernel_name = ""
    schedule = ""

    def __init__(self, built, path, workers_per_sm: int = 0):
        self.path = path
        kernel = built.kernel(self.kernel_name)
        self.resident_per_sm = resident_blocks_per_sm(kernel)
        if self.resident_per_sm < 1:
            raise ValueError(f"the occupancy API reports no resident block of {BLOCK} threads for {self.kernel_name}")
        self.workers_per_sm = int(workers_per_sm) or self.resident_per_sm
        self.capacity = self.resident_per_sm * device.sm_count()
        self.workers = self.workers_per_sm * device.sm_count()
        if self.workers > self.capacity:  # a worker waiting for one that cannot start would wait for ever
            raise NotCoResident(f"{self.workers} worker blocks of {self.kernel_name} exceed the {self.capacity} that "
                                f"can be co-resident ({self.resident_per_sm} per SM x {device.sm_count()} SMs)")
        self.function = kernel.kernel  # cupy.cuda.function.Function: takes enable_cooperative_groups
        self.args = path.problem_args() + (np.int32(path.rows), np.int32(path.tiles))

    def poison(self) -> None:
        self.path.poison()

    def load(self, values: np.ndarray) -> None:
        self.path.load(values)

    def output(self) -> np.ndarray:
        return self.path.output()

    def describe(self) -> dict:
        """What run.json records of this target's grid."""
        return {"workers": self.workers, "blocks_per_sm": self.workers_per_sm,  # the name run.json has always used
                "resident_blocks_per_sm": self.resident_per_sm, "co_resident_capacity": self.capacity}


class CooperativePhases(PersistentTarget):
    """coop_phases: one cooperative launch, a grid-wide barrier between phases A, B and C.

    The grid may not exceed the blocks that can be resident at once (SMs x blocks per SM from the
    occupancy API): a grid barrier with a block still waiting to start would never complete.
    CUDA's cooperative launch refuses such a grid; CuPy would shrink it with a warning, so the
    size is checked here first."""

    name = "coop"
    kernel_name = "coop_phases"
    schedule = "cooperative"

    @property
    def submissions(self) -> int:
        return 1

    def invoke(self) -> None:
        self.function((self.workers,), (BLOCK,), self.args, enable_cooperative_groups=True)


class TaskQueue(PersistentTarget):
    """queue_persistent: `workers` blocks take tasks from an atomic counter, per-row counters carry
    the dependencies. Every invocation zeroes head and counters with a device memset first (a real
    cost, inside every timed region and, in a graph, a memset node). The error words are sticky:
    cleared by `clear_error`, read by `error_message` / `check_error`.

    `workers` overrides the grid (the queue needs no co-residency, see megakernel.cu); `order`
    (slot -> task) is for tests only; None is the natural order, A then B then C."""

    name = "queue"
    kernel_name = "queue_persistent"
    schedule = "queue"

    def __init__(self, built, path, workers_per_sm: int = 0, workers: int | None = None, order=None,
                 wait_limit_ns: int = WAIT_LIMIT_NS):
        super().__init__(built, path, workers_per_sm)
        if workers:
            self.workers = int(workers)
        self.graph = schedules.TaskGraph.from_tile_row(path.table["tile_row"].get())
        self.wait_limit_ns = int(wait_limit_ns)
        self.counters = cupy.zeros(1 + 2 * path.rows, dtype=cupy.uint32)
        self.error = cupy.zeros(ERROR_WORDS, dtype=cupy.int32)
        self.order = None if order is None else cupy.asarray(self._checked_order(order))
        self.args = self.args + (self.counters, self.error, self.order if self.order is not None else np.uint64(0),
                                 np.uint64(self.wait_limit_ns))
        self.stream_ptr = cupy.cuda.get_current_stream().ptr

    def _checked_order(self, order) -> np.ndarray:
        order = np.asarray(order, dtype=np.int32)
        if sorted(order.tolist()) != list(range(self.graph.total)):
            raise ValueError("a task order must list every task exactly once")
        return order

    @property
    def submissions(self) -> int:
        return 2  # the counter memset and the launch

    def invoke(self) -> None:
        cupy.cuda.runtime.memsetAsync(self.counters.data.ptr, 0, self.counters.nbytes, self.stream_ptr)
        self.function((self.workers,), (BLOCK,), self.args)

    def clear_error(self) -> None:
        self.error.fill(0)
        cupy.cuda.get_current_stream().synchronize()

    def error_message(self) -> str | None:
        """None, or which task's wait ran out and what it saw."""
        cupy.cuda.get_current_stream().synchronize()
        flag, task, seen, need = (int(v) for v in self.error.get())
        if not flag:
            return None
        kind = self.graph.kind(task)
        what = f"row {self.graph.index(task)}" if kind == "B" else f"tile {self.graph.index(task)}"
        waited_for = "A tiles of its row finished" if kind == "B" else "B of its row finished"
        return (f"queue worker gave up after {self.wait_limit_ns / 1e9:g} s: {kind} task {task} ({what}) saw {seen} "
                f"of {need} {waited_for}; the queue order cannot complete")

    def check_error(self) -> None:
        """Raise MegakernelError naming the task whose wait ran out, if a worker gave up."""
        message = self.error_message()
        if message:
            raise MegakernelError(message)

    def words_after(self) -> np.ndarray:
        """The error words, then head, a_done per row and b_done per row (int64)."""
        cupy.cuda.get_current_stream().synchronize()
        return np.concatenate([self.error.get(), self.counters.get()]).astype(np.int64)

    def expected_words(self) -> np.ndarray:
        """After a complete run: no error; head = tasks + workers, a_done = tiles per row, b_done = 1 (the model)."""
        return np.concatenate([np.zeros(ERROR_WORDS, np.int64), self.graph.expected_counters(self.workers)])

    def counters_match(self) -> bool:
        words = self.words_after()
        return bool((words[ERROR_WORDS:] == self.expected_words()[ERROR_WORDS:]).all())


# --------------------------------------------------------------------------- traces
def underlying(variant):
    """The Target behind a variant (a GraphReplay's captured target, else the variant itself)."""
    return getattr(variant, "target", variant)


def trace(variant, task_records, stage_records) -> dict:
    """One traced invocation of a chapter 4 variant (traced build, stream or graph) -> trace arrays in
    task numbering. Persistent kernels write task records; the three kernels write block records."""
    target = underlying(variant)
    if isinstance(target, PersistentTarget):
        return timelines.task_trace_arrays(probes.collect_raw(task_records, variant.invoke))
    table = probes.collect_raw(stage_records, variant.invoke)
    return timelines.stage_blocks_as_tasks(table, target.tiles, target.rows)
