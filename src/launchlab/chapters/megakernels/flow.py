"""The flow kernel (kernels/megakernel_flow.cu) as a Target: a tiled persistent kernel with static claims
prefetched per worker, acquire/release hand-offs, and B by a row's last A arrival or folded into C; and the
chain's buffers (k + 1 arrays: stage s reads array s and writes array s + 1).

Imports CuPy; only GPU mode reaches this module.
"""
from __future__ import annotations

import cupy
import numpy as np

from launchlab.chapters.megakernels import design_schedules, schedules
from launchlab.chapters.megakernels.persistent import NotCoResident
from launchlab.gpu import device
from launchlab.gpu.targets import BLOCK, Target, module_define
from launchlab.model import workloads

FAMILY = "megakernel_flow"
WAIT_LIMIT_NS = 1_000_000_000  # a worker gives up after waiting 1 s for one row
FLOW_SLOTS = 1                 # kernels/megakernel_flow.cu's default: tiles a worker holds in registers
RELAXED_POLL = False           # spin with relaxed loads, acquire once (True), or acquire every poll (False)
# An ordinary launch after the occupancy check: the cooperative attribute cost 0.3-0.6 µs per invocation in the
# development sweep, and the flow kernel needs its grid co-resident, not grid-wide barriers.
COOPERATIVE = False
ERROR_CODES = {1: "its wait ran out"}


class FlowError(RuntimeError):
    """A flow worker gave up waiting (the kernel's bounded wait)."""


class StageBuffers:
    """The tile table, the statistics and k + 1 arrays of one case's chain (k = 1: x and y)."""

    def __init__(self, lengths, stages: int = 1, tile_table=None, arrays=None):
        if stages < 1:
            raise ValueError(f"a chain needs at least one stage, not {stages}")
        table = workloads.tile_table(lengths) if tile_table is None else tile_table
        self.lengths = np.asarray(lengths)
        self.stages = int(stages)
        self.row_offsets = np.asarray(table["row_offsets"] if tile_table is None else cupy.asnumpy(table["row_offsets"]))
        self.rows, self.tiles = len(self.lengths), len(table["tile_row"])
        self.table = {name: cupy.asarray(array) for name, array in table.items()}
        total = int(self.row_offsets[-1])
        self.arrays = list(arrays) if arrays is not None else [cupy.empty(total, dtype=cupy.float32)
                                                               for _ in range(stages + 1)]
        if len(self.arrays) != stages + 1:
            raise ValueError(f"{stages} stages need {stages + 1} arrays, not {len(self.arrays)}")
        self.tile_stats = cupy.empty(6 * self.tiles, dtype=cupy.float32)  # two halves: flow's fold_b parity
        self.row_stats = cupy.empty(3 * self.rows, dtype=cupy.float32)
        self.pointers = cupy.asarray(np.array([a.data.ptr for a in self.arrays], dtype=np.uint64))

    def stage_args(self, stage: int) -> tuple:
        """TILED_PROBLEM_PARAMS of stage `stage` (0-based): x = array s, y = array s + 1."""
        t = self.table
        return (self.arrays[stage], self.arrays[stage + 1], t["row_offsets"], t["row_first_tile"], t["tile_row"],
                t["tile_start"], t["tile_len"], self.tile_stats, self.row_stats)

    def poison(self) -> None:
        for array in self.arrays[1:] + [self.tile_stats, self.row_stats]:
            array.fill(np.nan)

    def load(self, values) -> None:
        self.arrays[0].set(np.ascontiguousarray(values, dtype=np.float32))

    def outputs(self) -> list[np.ndarray]:
        """Every stage's output, stage 1 first."""
        return [a.get() for a in self.arrays[1:]]

    def output(self) -> np.ndarray:
        """Every stage's output end to end (the one output of a single stage)."""
        return np.concatenate(self.outputs())


class FlowPersistent(Target):
    """flow_persistent on `buffers` (a StageBuffers, or a tiled path whose x and y become a one-stage chain).

    `workers_per_sm` 0: as many as the occupancy API allows; the grid never exceeds the tiles. Every worker
    spins on others, so the grid must be co-resident: checked here with the occupancy API (NotCoResident), and
    with `cooperative` by the cooperative launch too (without it, work the GPU runs beside the kernel could still
    keep a worker from starting: the wait limit then ends the invocation with an error). `fold_b`: B inside every C; `sleep_ns`: back-off between
    polls; `relaxed`: relaxed polling loads.
    Whether C reads x from registers or from global memory is the build's (FLOW_KEEP_X: chain_flow.cu reads
    it again, as every chain contender does)."""

    name = "flow"

    def __init__(self, built, buffers, workers_per_sm: int = 0, fold_b: bool = True, sleep_ns: int = 0,
                 relaxed: bool = RELAXED_POLL, wait_limit_ns: int = WAIT_LIMIT_NS, cooperative: bool = COOPERATIVE):
        if not isinstance(buffers, StageBuffers):  # a TiledPath: its x and y, its tile table
            path = buffers
            buffers = StageBuffers(path.lengths, 1, tile_table=path.table, arrays=[path.x, path.y])
        self.buffers = buffers
        self.rows, self.tiles = buffers.rows, buffers.tiles
        self.graph = schedules.TaskGraph.from_tile_row(buffers.table["tile_row"].get())
        self.kernel = built.kernel("flow_persistent")
        self.function = self.kernel.kernel
        self.resident_per_sm = int(cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(self.function.ptr,
                                                                                               BLOCK, 0))
        self.capacity = self.resident_per_sm * device.sm_count()
        asked = int(workers_per_sm) * device.sm_count() if workers_per_sm else self.capacity
        if asked > self.capacity:
            raise NotCoResident(f"{asked} workers of the flow kernel exceed the {self.capacity} blocks that can be "
                                f"co-resident ({self.resident_per_sm} per SM x {device.sm_count()} SMs)")
        self.workers = min(asked, self.tiles)
        self.workers_per_sm = int(workers_per_sm) or self.resident_per_sm
        self.lists = design_schedules.owner_task_lists(self.graph, self.workers, module_define(built, "FLOW_SLOTS",
                                                                                              FLOW_SLOTS))
        self.list_check = design_schedules.check_lists(self.graph, self.lists)
        self.shared_bytes = 0  # the tiles a worker keeps stay in registers
        self.fold_b, self.sleep_ns, self.relaxed = bool(fold_b), int(sleep_ns), bool(relaxed)
        self.cooperative = bool(cooperative)
        self.wait_limit_ns = int(wait_limit_ns)
        self.arrivals = cupy.zeros(self.rows, dtype=cupy.uint32)
        self.row_round = cupy.zeros(self.rows, dtype=cupy.uint32)
        self.error = cupy.zeros(4, dtype=cupy.int32)
        t = buffers.table
        self.args = (buffers.pointers, np.int32(buffers.stages), t["row_offsets"], t["row_first_tile"], t["tile_row"],
                     t["tile_start"], t["tile_len"], buffers.tile_stats, buffers.row_stats, np.int32(self.rows),
                     np.int32(self.tiles), self.arrivals, self.row_round, self.error, np.uint64(self.wait_limit_ns),
                     np.uint32(self.sleep_ns), np.int32(self.fold_b), np.int32(self.relaxed))
        self.launches = ((self.kernel, (self.workers,), (BLOCK,), self.args),)

    @property
    def submissions(self) -> int:
        return 1

    def invoke(self) -> None:
        self.function((self.workers,), (BLOCK,), self.args, enable_cooperative_groups=self.cooperative)

    def poison(self) -> None:
        self.buffers.poison()

    def load(self, values) -> None:
        self.buffers.load(values)

    def output(self) -> np.ndarray:
        return self.buffers.output()

    def task_graph(self) -> schedules.TaskGraph:
        return self.graph

    def reset(self) -> None:
        for array in (self.arrivals, self.row_round, self.error):
            array.fill(0)
        cupy.cuda.get_current_stream().synchronize()

    def error_words(self) -> np.ndarray:
        cupy.cuda.get_current_stream().synchronize()
        return self.error.get().astype(np.int64)

    def counters_consistent(self) -> bool:
        """After complete invocations: every row's arrivals a whole number n of rounds of its tiles, n the same
        for every row; with B by the last arrival, every row's published round is n."""
        cupy.cuda.get_current_stream().synchronize()
        arrivals = self.arrivals.get().astype(np.int64)
        per_row = self.graph.tiles_per_row
        rounds = arrivals // per_row
        whole = bool((arrivals == rounds * per_row).all() and (rounds == rounds[0]).all())
        if self.fold_b:
            return whole
        return whole and bool((self.row_round.get().astype(np.int64) == rounds).all())

    def check_error(self) -> None:
        code, task, seen, needed = (int(v) for v in self.error_words())
        if code:
            raise FlowError(f"flow worker gave up on task {task}: {ERROR_CODES.get(code, code)}; saw {seen}, "
                            f"needed {needed}")

    def describe(self) -> dict:
        return {"workers": self.workers, "blocks_per_sm": self.workers_per_sm,
                "resident_blocks_per_sm": self.resident_per_sm, "co_resident_capacity": self.capacity,
                "fold_b": self.fold_b, "sleep_ns": self.sleep_ns, "relaxed": self.relaxed, "cooperative": self.cooperative}
