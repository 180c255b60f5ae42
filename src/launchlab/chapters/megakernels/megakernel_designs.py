"""The megakernel designs of kernels/megakernel_designs.cu as Targets on the tiled path's buffers.

Each design takes a `TiledPath` (its x, y, statistics buffers and tile table, so that every variant
of a case reads and writes the same arrays) or row lengths (then it allocates the same buffers
itself), and exposes name, launches, invoke, poison, load, output; traced builds write one task
record per task (`trace`), checked by design_schedules.py.

* PdlThreeKernels: A, B, C with programmatic dependent launch (`programmatic=False`: the same
  kernels and launcher without the attribute, the control).
* TwoKernels: A, and C that combines its row itself; with or without PDL.
* DependencyPersistent: one cooperative grid, static per-worker task lists, per-row arrival
  counters and round flags that reset themselves (one round per invocation), bounded waits.
* ClusterRows: one thread-block cluster per row, a launch per cluster-size class, the classes
  chained with PDL.
* FusedPackedRows: chapter 3's fused row kernel (kernels/fused_softmax.cu, fused_rms_softmax_packed)
  on the same packed rows: one block per row, one launch; the reference the designs are read against.

Imports CuPy; only GPU mode reaches this module.
"""
from __future__ import annotations

import cupy
import numpy as np

from launchlab.chapters.megakernels import design_schedules, pdl, schedules
from launchlab.chapters.megakernels.persistent import NotCoResident
from launchlab.gpu import build, device
from launchlab.gpu.targets import BLOCK, Target, allow_dynamic_shared
from launchlab.model import workloads
from launchlab.model.timelines import TASK_WORDS, task_trace_arrays

FAMILY = "megakernel_designs"
KERNELS = ("pdl_tile_producer", "pdl_row_combiner", "pdl_tile_consumer", "combining_tile_consumer",
           "dependency_persistent", "cluster_rows")
WAIT_LIMIT_NS = 1_000_000_000  # a persistent worker gives up after waiting 1 s for one row
ERROR_CODES = {1: "its wait ran out", 2: "its worker had run no A task, so it knew no round"}
MAX_CACHE_SLOTS = 4            # x tiles a persistent worker keeps in shared memory between A and C


class DesignError(RuntimeError):
    """A persistent worker gave up (the kernel's bounded wait) or met an impossible task list."""


def load(traced: bool = False):
    """Compile kernels/megakernel_designs.cu (the traced build with -DLAUNCHLAB_TRACE)."""
    return build.load_module(FAMILY, {"LAUNCHLAB_TRACE": None} if traced else None)


class TileBuffers:
    """The buffers and tile table of TiledPath, for designs given row lengths instead of a path."""

    def __init__(self, lengths):
        table = workloads.tile_table(lengths)
        self.lengths = np.asarray(lengths)
        self.row_offsets = table["row_offsets"]
        self.rows, self.tiles = len(self.lengths), len(table["tile_row"])
        self.table = {name: cupy.asarray(array) for name, array in table.items()}
        self.x = cupy.empty(int(self.row_offsets[-1]), dtype=cupy.float32)
        self.y = cupy.empty_like(self.x)
        self.tile_stats = cupy.empty(3 * self.tiles, dtype=cupy.float32)
        self.row_stats = cupy.empty(3 * self.rows, dtype=cupy.float32)

    def problem_args(self) -> tuple:
        t = self.table
        return (self.x, self.y, t["row_offsets"], t["row_first_tile"], t["tile_row"], t["tile_start"],
                t["tile_len"], self.tile_stats, self.row_stats)


class _OnTiles(Target):
    """A design on a tiled path's buffers: poison, load, output and the task graph are the path's."""

    design = ""

    def __init__(self, path_or_lengths):
        self.path = path_or_lengths if hasattr(path_or_lengths, "problem_args") else TileBuffers(path_or_lengths)
        self.row_offsets = self.path.row_offsets
        self.rows, self.tiles = self.path.rows, self.path.tiles
        self.graph = schedules.TaskGraph.from_tile_row(self.path.table["tile_row"].get())

    def poison(self) -> None:
        for array in (self.path.y, self.path.tile_stats, self.path.row_stats):
            array.fill(np.nan)

    def load(self, values: np.ndarray) -> None:
        self.path.x.set(np.ascontiguousarray(values, dtype=np.float32))

    def output(self) -> np.ndarray:
        return self.path.y.get()

    def task_graph(self) -> schedules.TaskGraph:
        """The graph whose task numbers the traced build records."""
        return self.graph


class _ExtendedLaunches(_OnTiles):
    """Designs launched through pdl.ExtendedLaunch: `prepared` in order, each on the current stream."""

    prepared: tuple = ()

    def invoke(self) -> None:
        for launch in self.prepared:
            launch.launch()


class PdlThreeKernels(_ExtendedLaunches):
    """A, B, C with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION on every launch (A's
    towards the previous invocation's C: A computes its statistics while that C finishes and
    waits before writing). `programmatic=False`: the same kernels and launcher, no attribute."""

    design = "pdl3"
    KERNELS = ("pdl_tile_producer", "pdl_row_combiner", "pdl_tile_consumer")

    def __init__(self, built, path_or_lengths, programmatic: bool = True, driver: str | None = None):
        super().__init__(path_or_lengths)
        self.programmatic = programmatic
        self.name = "pdl3" if programmatic else "pdl3_off"
        args = self.path.problem_args()
        tiles, rows = np.int32(self.tiles), np.int32(self.rows)
        producer, combiner, consumer = (built.kernel(name) for name in self.KERNELS)
        self.launches = ((producer, (self.tiles,), (BLOCK,), args),
                         (combiner, (self.rows,), (BLOCK,), args + (tiles,)),
                         (consumer, (self.tiles,), (BLOCK,), args + (tiles, rows)))
        self.prepared = tuple(pdl.ExtendedLaunch(kernel, grid[0], block[0], kernel_args, programmatic=programmatic,
                                                 driver=driver) for kernel, grid, block, kernel_args in self.launches)


class TwoKernels(_ExtendedLaunches):
    """A, then C with B folded in (each C block combines its row's tile statistics itself)."""

    design = "pdl2"
    KERNELS = ("pdl_tile_producer", "combining_tile_consumer")

    def __init__(self, built, path_or_lengths, programmatic: bool = False, driver: str | None = None):
        super().__init__(path_or_lengths)
        self.programmatic = programmatic
        self.name = "tiled2_pdl" if programmatic else "tiled2"
        args = self.path.problem_args()
        producer, consumer = (built.kernel(name) for name in self.KERNELS)
        self.launches = ((producer, (self.tiles,), (BLOCK,), args),
                         (consumer, (self.tiles,), (BLOCK,), args + (np.int32(self.tiles), np.int32(self.rows))))
        self.prepared = tuple(pdl.ExtendedLaunch(kernel, grid[0], block[0], kernel_args, programmatic=programmatic,
                                                 driver=driver) for kernel, grid, block, kernel_args in self.launches)


class DependencyPersistent(_OnTiles):
    """dependency_persistent: a cooperative grid (co-residency guaranteed by the launch itself) of
    `workers` blocks running static task lists (default: tile t on worker t % workers, A then C).

    Counters are allocated zeroed once and reset themselves: every invocation is one more round, so
    nothing is cleared inside timing. After an error they are inconsistent: `reset()` zeroes them
    (and the error words) outside timing. `lists` (a design_schedules.WorkerLists) is for tests."""

    design = "dependency"
    KERNELS = ("dependency_persistent",)

    def __init__(self, built, path_or_lengths, workers: int | None = None, lists=None,
                 wait_limit_ns: int = WAIT_LIMIT_NS):
        super().__init__(path_or_lengths)
        self.name = "depend"
        self.kernel = built.kernel("dependency_persistent")
        self.function = self.kernel.kernel  # cupy.cuda.function.Function: takes enable_cooperative_groups
        if lists is None:
            one_slot = self._capacity(1)
            self.workers = min(int(workers or one_slot), self.tiles)
            per_worker = -(-self.tiles // self.workers)
            slots = next((s for s in (min(per_worker, MAX_CACHE_SLOTS), 1, 0) if self.workers <= self._capacity(s)), 0)
            lists = design_schedules.owner_task_lists(self.graph, self.workers, slots)
        self.lists = lists
        self.workers = lists.workers
        self.shared_bytes = lists.slots_needed * workloads.TILE * 4
        self.capacity = self._capacity(lists.slots_needed)
        if self.workers > self.capacity:
            raise NotCoResident(f"{self.workers} workers of the dependency kernel exceed the {self.capacity} blocks "
                                f"that can be co-resident")
        self.list_check = design_schedules.check_lists(self.graph, lists)  # tests pass broken lists on purpose
        self.wait_limit_ns = int(wait_limit_ns)
        self.arrivals = cupy.zeros(self.rows, dtype=cupy.uint32)
        self.row_round = cupy.zeros(self.rows, dtype=cupy.uint32)
        self.error = cupy.zeros(4, dtype=cupy.int32)
        self.lists_device = tuple(cupy.asarray(a) for a in (lists.first, lists.tasks, lists.slot))
        self.args = self.path.problem_args() + (np.int32(self.rows), np.int32(self.tiles)) + self.lists_device + (
            self.arrivals, self.row_round, self.error, np.uint64(self.wait_limit_ns))
        self.launches = ((self.kernel, (self.workers,), (BLOCK,), self.args),)

    def _capacity(self, slots: int) -> int:
        shared = slots * workloads.TILE * 4
        per_sm = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(self.kernel.kernel.ptr, BLOCK, shared)
        return int(per_sm) * device.sm_count()

    def invoke(self) -> None:
        self.function((self.workers,), (BLOCK,), self.args, shared_mem=self.shared_bytes,
                      enable_cooperative_groups=True)

    def reset(self) -> None:
        for array in (self.arrivals, self.row_round, self.error):
            array.fill(0)
        cupy.cuda.get_current_stream().synchronize()

    def check_error(self) -> None:
        """Raise DesignError naming the task of a worker that gave up, if one did."""
        cupy.cuda.get_current_stream().synchronize()
        code, task, seen, needed = (int(v) for v in self.error.get())
        if code:
            kind = self.graph.kind(task)
            raise DesignError(f"persistent worker gave up on {kind} task {task} (tile {self.graph.index(task)}): "
                              f"{ERROR_CODES.get(code, code)}; row round seen {seen}, needed {needed}")

    def counters_consistent(self) -> bool:
        """After complete invocations: every row at the same round n, its arrivals n x its tiles."""
        cupy.cuda.get_current_stream().synchronize()
        rounds, arrivals = self.row_round.get().astype(np.int64), self.arrivals.get().astype(np.int64)
        return bool((rounds == rounds[0]).all() and (arrivals == rounds * self.graph.tiles_per_row).all())


class ClusterRows(_ExtendedLaunches):
    """cluster_rows: a cluster per row; one launch per cluster-size class (design_schedules.cluster_plan),
    the largest clusters first, later classes launched programmatically after the first."""

    design = "cluster"
    KERNELS = ("cluster_rows",)

    def __init__(self, built, path_or_lengths, max_cluster: int = 8, programmatic: bool = True,
                 driver: str | None = None):
        super().__init__(path_or_lengths)
        self.name = "cluster"
        self.max_cluster = int(max_cluster)
        self.plan = design_schedules.cluster_plan(self.path.lengths, max_cluster)
        kernel = built.kernel("cluster_rows")
        if max_cluster > 8:
            pdl.allow_non_portable_clusters(kernel)
        widest = max(self.plan.cache_elements) * 4
        if widest > 48 * 1024:
            allow_dynamic_shared(kernel, widest)
        self.row_first_chunk = cupy.asarray(self.plan.row_first_chunk)
        self.class_rows = [cupy.asarray(rows) for _, rows in self.plan.classes]
        launches, prepared = [], []
        for index, ((k, rows), on_device, cache) in enumerate(zip(self.plan.classes, self.class_rows,
                                                                   self.plan.cache_elements)):
            args = self.path.problem_args() + (on_device, self.row_first_chunk, np.int32(self.rows),
                                               np.int32(self.plan.chunks), np.int32(cache))
            launches.append((kernel, (k * len(rows),), (BLOCK,), args))
            prepared.append(pdl.ExtendedLaunch(kernel, k * len(rows), BLOCK, args, cluster=k, shared_bytes=4 * cache,
                                               programmatic=programmatic and index > 0, driver=driver))
        self.launches, self.prepared = tuple(launches), tuple(prepared)

    def task_graph(self) -> schedules.TaskGraph:
        return self.plan.graph()


PACKED_KERNEL = "fused_rms_softmax_packed"


def packed_shared_bytes(row_offsets, block: int, reg_chunks: int, shared_limit: int) -> int:
    """Dynamic shared memory for the packed fused kernel: enough to keep the widest row (in 16-byte chunks,
    its first chunk counted from the aligned address before it) on chip where it does not fit the registers
    (REG_CHUNKS chunks per thread) and fits the device's limit; else 0 (rows then stay in registers or, too
    long for the limit, are streamed: the kernel decides per row)."""
    offsets = np.asarray(row_offsets, dtype=np.int64)
    chunks = int(((offsets[:-1] % 4 + np.diff(offsets) + 3) // 4).max())
    if chunks <= reg_chunks * block or 16 * chunks > shared_limit:
        return 0
    return 16 * chunks


class FusedPackedRows(_OnTiles):
    """fused_rms_softmax_packed on a tiled path's x and y: block r runs chapter 3's fused row on row r
    (row_offsets[r] .. row_offsets[r + 1]); `shared_bytes` of dynamic shared memory per block decide, with
    the row's length, whether it stays in registers, in shared memory or is streamed (the kernel chooses)."""

    design = "fused_row"
    KERNELS = (PACKED_KERNEL,)

    def __init__(self, built, path_or_lengths, shared_bytes: int = 0):
        from launchlab.gpu.targets import module_define

        super().__init__(path_or_lengths)
        self.name = "fused_row"
        self.block = module_define(built, "BLOCK", BLOCK)
        self.reg_chunks = module_define(built, "REG_CHUNKS", 4)
        self.shared_bytes = int(shared_bytes)
        self.kernel = built.kernel(PACKED_KERNEL)
        if self.path.x.data.ptr % 16 or self.path.y.data.ptr % 16:  # rows then sit alike in x and y (the kernel's rule)
            raise ValueError("x and y must start on 16-byte boundaries")
        if self.shared_bytes > 48 * 1024:
            allow_dynamic_shared(self.kernel, self.shared_bytes)
        self.args = (self.path.x, self.path.y, self.path.table["row_offsets"])
        self.launches = ((self.kernel, (self.rows,), (self.block,), self.args),)

    def invoke(self) -> None:
        self.kernel((self.rows,), (self.block,), self.args, shared_mem=self.shared_bytes)

    def tiers(self) -> dict:
        """Rows per tier, as the kernel decides them (registers, shared, streamed)."""
        offsets = np.asarray(self.row_offsets, dtype=np.int64)
        chunks = (offsets[:-1] % 4 + np.diff(offsets) + 3) // 4  # a row's first chunk may hold elements before it
        registers = chunks <= self.reg_chunks * self.block
        shared = ~registers & (16 * chunks <= self.shared_bytes)
        return {"registers": int(registers.sum()), "shared": int(shared.sum()),
                "streamed": int((~registers & ~shared).sum())}


# --------------------------------------------------------------------------- traces and graph edges
def attach_trace_buffer(target, traced_module):
    """Task records for `target`'s graph, wired to the traced module: before any traced launch,
    a graph capture's first replay included (its kernels write through this pointer)."""
    from launchlab.gpu import probes

    return probes.attach_task_buffer(traced_module, target.task_graph().total)


def trace(target, traced_module, invoke=None, records=None) -> schedules.Trace:
    """One traced invocation (the target must be built on the traced module; `invoke` defaults to
    its own, a GraphReplay's works too; `records` from attach_trace_buffer, else attached here)
    -> a Trace in the target's task numbers."""
    from launchlab.gpu import probes

    if records is None:
        records = attach_trace_buffer(target, traced_module)
    table = probes.collect_raw(records, invoke or target.invoke)
    table = table[:target.task_graph().total * TASK_WORDS]  # a buffer attached for a larger graph
    if hasattr(target, "check_error"):  # a persistent worker that gave up
        target.check_error()
    return schedules.Trace.from_arrays(task_trace_arrays(table))


def graph_edge_record(replay) -> dict:
    """What a run keeps of a captured graph's dependencies: the driver's nodes and typed edges, their
    counts, and the edges of the verbose DOT dump with whatever attributes CUDA printed."""
    edges = pdl.graph_edges(replay.graph)
    verbose = replay.graph.debug_dot_str(1)  # CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE
    return {"nodes": edges["nodes"], "edges": edges["edges"], "edge_types": pdl.edge_type_counts(edges),
            "dot_edges": pdl.dot_edges(verbose)}
