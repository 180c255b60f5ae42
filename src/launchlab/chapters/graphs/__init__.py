"""Chapter 2, CUDA graphs: the row path and the tiled path captured once and replayed, against the same
launches from a stream; what setting a graph up costs; what one more node costs as a graph grows."""
from __future__ import annotations

import dataclasses

from launchlab.chapters.declaration import Chapter, VariantSpec
from launchlab.chapters.ordinary_launches import ROW_KERNELS, ROW_PATH_BYTES_READ, ROW_PATH_BYTES_WRITTEN
from launchlab.measure.variant import VariantId
from launchlab.model import workloads

TILED_KERNELS = ("tile_producer", "row_combiner", "tile_consumer")
EMPTY_KERNELS = ("empty_kernel",)
LARGE_ELEMENTS = 1 << 24  # shapes this big use the protocol's smaller event batch
LARGE_LAUNCHES = 256      # so do invocations with this many launches
STATISTICS_BYTES = 12     # three floats per tile and per row (kernels/tiled.cuh)


@dataclasses.dataclass(frozen=True)
class Parameters:
    row_shapes: str = "4096x4096,4096x1024,128x8192"
    tiled_cases: str = "balanced,ragged"
    fixture_seed: int = 2026
    empty_lengths: str = "1,4,16,64,256,1024"  # graphs of N empty kernels
    row_copies: str = "1,4,16,64"              # graphs of k back-to-back row paths
    copies_shape: str = "128x8192"
    setup_repeats: int = 5                     # captures per graph whose set-up steps are timed


def counts(text: str) -> list[int]:
    """'1,4,16' -> [1, 4, 16]; every count positive."""
    values = [int(v) for v in str(text).split(",")]
    if not values or any(v <= 0 for v in values):
        raise ValueError(f"{text!r}: counts must be positive integers")
    return values


def tiled_cases(text: str) -> list[str]:
    return [case.strip() for case in str(text).split(",") if case.strip()]


# ---------------------------------------------------------------- variant ids
def row_variant(rows: int, cols: int, submission: str) -> VariantId:
    return VariantId("row4", workloads.shape_name(rows, cols), submission)


def tiled_variant(case: str, submission: str) -> VariantId:
    return VariantId("tiled3", case, submission)


def empty_variant(count: int, submission: str) -> VariantId:
    return VariantId("empty", f"n{count}", submission)


def copies_variant(copies: int, submission: str) -> VariantId:
    return VariantId("row4copies", f"k{copies}", submission)


def graph_twin(vid: VariantId) -> VariantId:
    return vid.with_submission("graph")


def stream_twin(vid: VariantId) -> VariantId:
    return vid.with_submission("stream")


def is_graph_length(vid: VariantId) -> bool:
    """The graph-length experiment: N empty kernels, k copies of the row path."""
    return vid.target in ("empty", "row4copies")


def launches_of(vid: VariantId) -> int:
    """Kernel launches of one invocation's stream version (= kernel nodes of its graph)."""
    if vid.target == "row4":
        return len(ROW_KERNELS)
    if vid.target == "tiled3":
        return len(TILED_KERNELS)
    if vid.target == "empty":
        return int(vid.case[1:])
    if vid.target == "row4copies":
        return len(ROW_KERNELS) * int(vid.case[1:])
    raise ValueError(f"{vid} is not a variant of this chapter")


def kernel_names(vid: VariantId) -> tuple[str, ...]:
    return {"row4": ROW_KERNELS, "row4copies": ROW_KERNELS, "tiled3": TILED_KERNELS,
            "empty": EMPTY_KERNELS}[vid.target]


# ---------------------------------------------------------------- the variant table
def _tiled_bytes(case: str) -> tuple[int, int]:
    """A reads x, C reads x and writes y; the statistics are written once and read once."""
    table = workloads.tile_table(workloads.tiled_row_lengths(case))
    elements, tiles, rows = int(table["row_offsets"][-1]), len(table["tile_row"]), len(table["row_offsets"]) - 1
    statistics = STATISTICS_BYTES * (tiles + rows)
    return 8 * elements + statistics, 4 * elements + statistics


def variants(parameters: Parameters) -> list[VariantSpec]:
    table = []
    for rows, cols in workloads.parse_shapes(parameters.row_shapes):
        read, written = ROW_PATH_BYTES_READ * rows * cols, ROW_PATH_BYTES_WRITTEN * rows * cols
        table += [VariantSpec(row_variant(rows, cols, "stream"), "RowPath", "rms_softmax (float64)", read, written),
                  VariantSpec(row_variant(rows, cols, "graph"), "GraphReplay(RowPath)", "rms_softmax (float64)",
                              read, written)]
    for case in tiled_cases(parameters.tiled_cases):
        read, written = _tiled_bytes(case)
        oracle = "rms_softmax_packed (float64)"
        table += [VariantSpec(tiled_variant(case, "stream"), "TiledPath", oracle, read, written),
                  VariantSpec(tiled_variant(case, "graph"), "GraphReplay(TiledPath)", oracle, read, written)]
    for count in counts(parameters.empty_lengths):
        table += [VariantSpec(empty_variant(count, submission), target, "none (no output)", 0, 0)
                  for submission, target in (("stream", "EmptyKernels"), ("graph", "GraphReplay(EmptyKernels)"),
                                             ("native", "EmptyKernels via the C++ loop"))]
    rows, cols = workloads.parse_shapes(parameters.copies_shape)[0]
    for copies in counts(parameters.row_copies):
        read, written = copies * ROW_PATH_BYTES_READ * rows * cols, copies * ROW_PATH_BYTES_WRITTEN * rows * cols
        table += [VariantSpec(copies_variant(copies, "stream"), "RowCopies", "rms_softmax (float64)", read, written),
                  VariantSpec(copies_variant(copies, "graph"), "GraphReplay(RowCopies)", "rms_softmax (float64)",
                              read, written)]
    return table


CHAPTER = Chapter(
    stem="graphs", tag="ch02", title="CUDA Graphs",
    host_path=("CuPy from CPython on one non-blocking stream: RawKernel launches for the stream versions, "
               "Graph.launch for replays; the native loop calls cuLaunchKernel from C++ on the same stream"),
    parameters=Parameters, expand=variants)
