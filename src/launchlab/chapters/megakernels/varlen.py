"""The one-launch varlen design (kernels/varlen_softmax.cu) as a Target on a tiled path's buffers.

`VarlenRows` turns a partition plan (model/varlen_partition.py: long rows split into equal-work pieces over
several blocks, short rows packed one warp per row) into device arrays and launches ONE kernel per invocation.
The pieces of a split row wait for each other inside the launch, so before it launches the target checks with
the occupancy API that the whole grid can be co-resident (NotCoResident otherwise). It launches plainly: a
cooperative launch (the driver then refuses a grid that cannot be co-resident) timed slower with the same plan
(evidence/development/varlen_handoff_batch4.txt); `cooperative=True` gives it. A wait that runs out leaves error
words (`check_error`) instead of a hang.

Imports CuPy; only GPU mode reaches this module.
"""
from __future__ import annotations

import cupy
import numpy as np

from launchlab.chapters.megakernels.persistent import NotCoResident
from launchlab.gpu import build, device
from launchlab.gpu.targets import Target, resident_blocks_per_sm
from launchlab.model import varlen_partition as partition
from launchlab.model import workloads

FAMILY = "varlen_softmax"
KERNELS = tuple(f"varlen_rows_{threads}" for threads in partition.BLOCK_SIZES)
WAIT_LIMIT_NS = 1_000_000_000  # a piece gives up after waiting 1 s for the other pieces of its row
ERROR_CODES = {1: "a piece's wait for the other pieces of its row ran out",
               2: "the launch's block size is not the kernel's"}
ERROR_DETAILS = {1: ("slot", "stamp"), 2: ("block size", "expected")}


class VarlenError(RuntimeError):
    """A piece gave up waiting (the kernel's bounded wait), or a block ran with the wrong size."""


def load(traced: bool = False):
    """Compile kernels/varlen_softmax.cu (it has no traced build: `traced` is refused)."""
    if traced:
        raise ValueError("the varlen design has no traced build")
    return build.load_module(FAMILY)


def slots_by_threads(built) -> dict:
    """{threads: blocks of varlen_rows_<threads> the GPU holds at once} from the occupancy API."""
    return {threads: resident_blocks_per_sm(built.kernel(f"varlen_rows_{threads}"), threads) * device.sm_count()
            for threads in partition.BLOCK_SIZES}


class _Buffers:
    """x, y and row offsets of packed rows, for a target given row lengths instead of a TiledPath."""

    def __init__(self, lengths):
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.row_offsets = workloads.tile_table(self.lengths)["row_offsets"]
        self.rows = len(self.lengths)
        self.table = {"row_offsets": cupy.asarray(self.row_offsets)}
        self.x = cupy.empty(int(self.row_offsets[-1]), dtype=cupy.float32)
        self.y = cupy.empty_like(self.x)


class VarlenRows(Target):
    """varlen_rows_<threads> over `plan` (default: partition.choose with this GPU's co-resident blocks), kept as
    `layout`, on a TiledPath's x and y (or its own buffers for row lengths): one launch per invocation."""

    design = "varlen"
    name = "varlen"

    def __init__(self, built, path_or_lengths, plan: partition.Plan | None = None, cooperative: bool = False,
                 cost: partition.PieceCost = partition.PieceCost(), wait_limit_ns: int = WAIT_LIMIT_NS):
        self.path = path_or_lengths if hasattr(path_or_lengths, "table") else _Buffers(path_or_lengths)
        self.row_offsets, self.rows = self.path.row_offsets, self.path.rows
        lengths = np.diff(np.asarray(self.row_offsets, dtype=np.int64))
        if self.path.x.data.ptr % 16 or self.path.y.data.ptr % 16:  # rows then sit alike in x and y
            raise ValueError("x and y must start on 16-byte boundaries")
        self.capacity_by_threads = slots_by_threads(built)
        if plan is None:
            plan = partition.choose(lengths, self.capacity_by_threads, device.sm_count(), cost)
        self.layout = plan
        if not np.array_equal(self.layout.lengths, lengths):
            raise ValueError("the plan was made for other row lengths")
        self.threads = self.layout.threads
        self.capacity = self.capacity_by_threads[self.threads]
        if self.layout.grid > self.capacity:
            raise NotCoResident(f"{self.layout.grid} blocks of varlen_rows_{self.threads} exceed the {self.capacity} "
                                "that can be co-resident: a split row's pieces would wait on blocks that never start")
        self.kernel = built.kernel(f"varlen_rows_{self.threads}")
        self.cooperative = bool(cooperative)
        self.blocks = cupy.asarray(np.ascontiguousarray(self.layout.descriptors()).ravel())
        self.pack_rows = cupy.asarray(np.concatenate([self.layout.pack_rows, [0]]).astype(np.int32))  # never empty
        # three stamped 64-bit words per slot; stamp 0 is never an invocation's
        self.partials = cupy.zeros(3 * max(1, int(self.layout.row_first_slot[-1])), dtype=cupy.uint64)
        self.arrivals = cupy.zeros(self.rows, dtype=cupy.uint64)
        self.error = cupy.zeros(4, dtype=cupy.int32)
        self.args = (self.path.x, self.path.y, self.path.table["row_offsets"], self.blocks, self.pack_rows,
                     self.partials, self.arrivals, self.error, np.uint64(wait_limit_ns))
        self.launches = ((self.kernel, (self.layout.grid,), (self.threads,), self.args),)

    def invoke(self) -> None:
        self.kernel.kernel((self.layout.grid,), (self.threads,), self.args, enable_cooperative_groups=self.cooperative)

    def poison(self) -> None:
        """NaN in y; every partial slot unpublished (stamp 0), so a piece that never publishes fails its row."""
        self.path.y.fill(np.nan)
        self.partials.fill(0)

    def load(self, values: np.ndarray) -> None:
        self.path.x.set(np.ascontiguousarray(values, dtype=np.float32))

    def output(self) -> np.ndarray:
        return self.path.y.get()

    # ------------------------------------------------------------------ error words and counters
    def reset(self) -> None:
        """Zero the counters, the partial slots and the error words (outside timing; after an error the counters
        are inconsistent). The slots go with the counters: restarted counters give the stamps of earlier
        invocations again, which old slots still carry."""
        self.arrivals.fill(0)
        self.partials.fill(0)
        self.error.fill(0)
        cupy.cuda.get_current_stream().synchronize()

    def check_error(self) -> None:
        cupy.cuda.get_current_stream().synchronize()
        code, block, first, second = (int(v) for v in self.error.get())
        if code:
            names = ERROR_DETAILS.get(code, ("word 2", "word 3"))
            raise VarlenError(f"varlen block {block}: {ERROR_CODES.get(code, code)} ({names[0]} {first}, "
                              f"{names[1]} {second})")

    def counters_consistent(self) -> bool:
        """After complete invocations: every split row's counter is the same number of invocations times its
        pieces (rows of one piece never count)."""
        cupy.cuda.get_current_stream().synchronize()
        k = self.layout.pieces_per_row.astype(np.int64)
        arrivals = self.arrivals.get().astype(np.int64)
        split = k > 1
        if not split.any():
            return bool((arrivals == 0).all())
        rounds = arrivals[split] // k[split]
        return bool((arrivals[split] == rounds * k[split]).all() and (rounds == rounds[0]).all()
                    and (arrivals[~split] == 0).all())

    def words(self) -> tuple[np.ndarray, np.ndarray]:
        """(error words and counter consistency, what a complete run leaves): checked exactly."""
        found = np.concatenate([self.error.get().astype(np.int64), [int(self.counters_consistent())]])
        return found, np.array([0, 0, 0, 0, 1], dtype=np.int64)

    def describe(self) -> dict:
        return {**self.layout.describe(), "capacity": int(self.capacity), "cooperative": self.cooperative}

