"""Chapter 2, CUDA graphs: the row path and the tiled path captured once and replayed, against the same
launches from a stream; what setting a graph up costs; what one more node costs as a graph grows.

Four rows: the row path (`row4`, at every shape of `row_shapes`) and the tiled path (`tiled3`, on every case of
`tiled_cases`), which enter the `paths` output (stream and graph paired within rounds, set-up, break-even,
timing); N empty kernels (`empty`, for every N of `empty_lengths`, also launched from the native C++ loop) and k
back-to-back row paths at `copies_shape` (`row4copies`, for every k of `row_copies`), which enter the
`per_node` output (the graph-length series, in rounds of their own). Every graph variant replays its stream
twin's target, captured once; its nodes are read from the DOT text CUDA prints.
"""
from __future__ import annotations

import dataclasses
import re

from launchlab.chapters.declaration import Chapter, Counts, Names, Oracle, Row, Shapes, Variant
from launchlab.chapters.ordinary_launches import ROW_KERNELS, row_path_bytes
from launchlab.measure.variant import VariantId
from launchlab.model import oracles, workloads

TILED_KERNELS = ("tile_producer", "row_combiner", "tile_consumer")
EMPTY_KERNELS = ("empty_kernel",)
OUTPUTS = ("paths", "per_node")
LARGE_ELEMENTS = 1 << 24  # shapes this big use the protocol's smaller event batch
LARGE_LAUNCHES = 256      # so do invocations with this many launches
STATISTICS_BYTES = 12     # three floats per tile and per row (kernels/tiled.cuh)


@dataclasses.dataclass(frozen=True)
class Parameters:
    row_shapes: Shapes = Shapes.parse("4096x4096,4096x1024,128x8192")
    tiled_cases: Names = Names.parse("balanced,ragged")
    fixture_seed: int = 2026
    empty_lengths: Counts = Counts.parse("1,4,16,64,256,1024")  # graphs of N empty kernels
    row_copies: Counts = Counts.parse("1,4,16,64")              # graphs of k back-to-back row paths
    copies_shape: Shapes = Shapes.parse("128x8192")
    setup_repeats: int = 5                                      # captures per graph whose set-up steps are timed


# ---------------------------------------------------------------- the rows
def tiled_bytes(case: str) -> tuple[int, int]:
    """A reads x, C reads x and writes y; the statistics are written once and read once."""
    table = workloads.tile_table(workloads.tiled_row_lengths(case))
    elements, tiles, rows = int(table["row_offsets"][-1]), len(table["tile_row"]), len(table["row_offsets"]) - 1
    statistics = STATISTICS_BYTES * (tiles + rows)
    return 8 * elements + statistics, 4 * elements + statistics


def count_of(case: str) -> int:
    """n64 -> 64 (empty kernels), k16 -> 16 (copies of the row path)."""
    return int(case[1:])


def make_row_path(context, case: str):
    from launchlab.gpu.targets import RowPath

    return RowPath(context.modules["row"], *workloads.parse_shapes(case)[0])


def make_tiled(context, case: str):
    from launchlab.gpu.targets import TiledPath

    return TiledPath(context.modules["tiled"], workloads.tiled_row_lengths(case))


def make_empty(context, case: str):
    from launchlab.chapters.graphs.targets import EmptyKernels

    return EmptyKernels(context.modules["empty"], count_of(case))


def make_copies(context, case: str):
    from launchlab.chapters.graphs.targets import RowCopies

    return RowCopies(context.copies_path, count_of(case))


# The tiled oracle reads the packed rows' offsets: function(x, row_offsets).
RMS_SOFTMAX = Oracle("rms_softmax (float64)", oracles.rms_softmax, oracles.RMS_SOFTMAX_TOLERANCE)
PACKED = Oracle("rms_softmax_packed (float64)", oracles.rms_softmax_packed, oracles.RMS_SOFTMAX_TOLERANCE)
STREAM_AND_GRAPH = ("stream", "graph")
# Each row's cases come from the parameters, with the calls of the row one invocation makes (N empty kernels, k copies).
ROW_PATH = Row("row4", "row path (4 kernels)", make_row_path, RMS_SOFTMAX, STREAM_AND_GRAPH, bytes=row_path_bytes,
               outputs=frozenset({"paths"}), kernels=ROW_KERNELS,
               cases=lambda p: [(workloads.shape_name(*shape), 1) for shape in p.row_shapes])
TILED = Row("tiled3", "tiled path (3 kernels)", make_tiled, PACKED, STREAM_AND_GRAPH, bytes=tiled_bytes,
            outputs=frozenset({"paths"}), kernels=TILED_KERNELS, cases=lambda p: [(case, 1) for case in p.tiled_cases])
EMPTY = Row("empty", "empty kernels", make_empty, Oracle("none (no output)"), ("stream", "graph", "native"),
            bytes=lambda case: (0, 0), outputs=frozenset({"per_node"}), kernels=EMPTY_KERNELS,
            cases=lambda p: [(f"n{count}", count) for count in p.empty_lengths])
def row_path_copy_bytes(case: str) -> tuple[int, int]:
    """Stands for the row path's bytes at the run's copies_shape, which expand fills in (a case `k<count>` does
    not name the shape)."""
    return 0, 0


# k copies = k calls, each moving what the row path moves at copies_shape.
COPIES = Row("row4copies", "back-to-back row paths", make_copies, RMS_SOFTMAX, STREAM_AND_GRAPH,
             bytes=row_path_copy_bytes, outputs=frozenset({"per_node"}), kernels=ROW_KERNELS,
             cases=lambda p: [(f"k{count}", count) for count in p.row_copies])
ROWS = (ROW_PATH, TILED, EMPTY, COPIES)


def kernels_of(target: str) -> tuple[str, ...]:
    """The kernels one call of a row launches, by its VariantId target."""
    return next(row.kernels for row in ROWS if row.name == target)


def expand(parameters: Parameters) -> list[Variant]:
    """Every row on its cases (each row's `cases`), under each of its submissions: the row path at every shape and the tiled
    path on every case; the graph-length series, N empty kernels and k copies of the row path at copies_shape."""
    copies_shape = workloads.shape_name(*parameters.copies_shape[0])
    variants = []
    for row in ROWS:
        if row.bytes is row_path_copy_bytes:
            row = dataclasses.replace(row, bytes=lambda case: row_path_bytes(copies_shape))
        variants += [Variant(VariantId(row.name, case, submission), row, calls=calls)
                     for case, calls in row.cases(parameters) for submission in row.submissions]
    return variants


# ---------------------------------------------------------------- reading a VariantId
def stream_twin(vid: VariantId) -> VariantId:
    return vid.with_submission("stream")


def launches_of(vid: VariantId) -> int:
    """Kernel launches of one invocation's stream version (= kernel nodes of its graph)."""
    calls = count_of(vid.case) if re.fullmatch(r"[nk]\d+", vid.case) else 1
    return len(kernels_of(vid.target)) * calls


def is_large(vid: VariantId) -> bool:
    """Large shapes and long invocations use the protocol's smaller event batch."""
    if re.fullmatch(r"\d+x\d+", vid.case):
        rows, cols = workloads.parse_shapes(vid.case)[0]
        if rows * cols >= LARGE_ELEMENTS:
            return True
    return launches_of(vid) >= LARGE_LAUNCHES


CHAPTER = Chapter(
    stem="graphs", tag="ch02", title="CUDA Graphs",
    host_path=("CuPy from CPython on one non-blocking stream: RawKernel launches for the stream versions, "
               "Graph.launch for replays; the native loop calls cuLaunchKernel from C++ on the same stream"),
    parameters=Parameters, expand=expand)
