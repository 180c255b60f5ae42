"""Chapter 1, ordinary launches: the four-kernel row path in one stream, and what a launch costs the host.

Two rows: the row path (`row4`) and the empty kernel (`empty`). The row path is timed warm at every shape of
`shapes` from the stream, traced once per shape, and its launches are timed from the host at `launch_shape`,
from CuPy and from the native C++ loop; the empty kernel only has its launches timed.
"""
from __future__ import annotations

import dataclasses

from launchlab.chapters.declaration import Chapter, Oracle, Row, Shapes, Variant, expand_rows
from launchlab.measure.variant import VariantId
from launchlab.model import oracles, workloads

ROW_KERNELS = ("row_rms", "row_max", "row_exp_sum", "row_scale")
ROW_PATH_BYTES_READ = 16    # per element: x three times (K1, K2, K3), e once (K4)
ROW_PATH_BYTES_WRITTEN = 8  # per element: e (K3) and y (K4)
LARGE_ELEMENTS = 1 << 24    # shapes this big use the protocol's smaller event batch
# What a variant enters: `timing` (warm events and host clocks per invocation, traced once), `launch_cost`
# (batches enqueued with no events: the host's cost per launch).
OUTPUTS = ("timing", "launch_cost")


@dataclasses.dataclass(frozen=True)
class Parameters:
    shapes: Shapes = Shapes.parse("4096x4096,4096x1024,128x8192")
    fixture_seed: int = 2026
    launch_shape: Shapes = Shapes.parse("128x8192")  # the row path whose launches are also timed from C++


def row_path_bytes(case: str) -> tuple[int, int]:
    rows, cols = workloads.parse_shapes(case)[0]
    return ROW_PATH_BYTES_READ * rows * cols, ROW_PATH_BYTES_WRITTEN * rows * cols


def make_row_path(context, case: str):
    from launchlab.gpu.targets import RowPath

    return RowPath(context.modules["row_softmax"], *workloads.parse_shapes(case)[0])


def make_empty(context, case: str):
    from launchlab.gpu.targets import EmptyKernel

    return EmptyKernel(context.modules["empty"])


def row_path_cases(parameters: Parameters) -> list[tuple[str, int]]:
    """Every timed shape, then the launch shape (where it is not one of them)."""
    shapes = dict.fromkeys(tuple(parameters.shapes) + tuple(parameters.launch_shape))
    return [(workloads.shape_name(*shape), 1) for shape in shapes]


def row_path_outputs(parameters: Parameters, case: str, submission: str) -> set[str]:
    """From the stream the row path is timed at every shape of `shapes`; at the launch shape its launches are
    timed too, from the stream and from the C++ loop."""
    launch = workloads.shape_name(*parameters.launch_shape[0])
    timed = {workloads.shape_name(*shape) for shape in parameters.shapes}
    return ({"timing"} if submission == "stream" and case in timed else set()) | ({"launch_cost"} if case == launch else set())


ROW_PATH = Row("row4", "row path (4 kernels)", make_row_path,
               Oracle("rms_softmax (float64)", oracles.rms_softmax, oracles.RMS_SOFTMAX_TOLERANCE),
               submissions=("stream", "native"), bytes=row_path_bytes, outputs=frozenset(OUTPUTS),
               kernels=ROW_KERNELS, cases=row_path_cases, outputs_at=row_path_outputs)
EMPTY = Row("empty", "empty kernel", make_empty, Oracle("none (no output)"), submissions=("stream", "native"),
            bytes=lambda case: (0, 0), outputs=frozenset({"launch_cost"}), kernels=("empty_kernel",),
            cases=lambda parameters: [("1x1", 1)])
ROWS = (ROW_PATH, EMPTY)


def row_variant(rows: int, cols: int, submission: str = "stream") -> VariantId:
    return VariantId(ROW_PATH.name, workloads.shape_name(rows, cols), submission)


EMPTY_STREAM = VariantId(EMPTY.name, "1x1", "stream")
EMPTY_NATIVE = VariantId(EMPTY.name, "1x1", "native")


def expand(parameters: Parameters) -> list[Variant]:
    """Every row on its cases under each of its submissions, where it enters an output (rows' `outputs_at`)."""
    return expand_rows(ROWS, parameters)


def is_large(vid: VariantId) -> bool:
    rows, cols = workloads.parse_shapes(vid.case)[0]
    return rows * cols >= LARGE_ELEMENTS


CHAPTER = Chapter(
    stem="ordinary_launches", tag="ch01", title="Ordinary launches",
    host_path=("CuPy RawKernel launches from CPython on one non-blocking stream; the native loop calls "
               "cuLaunchKernel from C++ on the same stream, kernels and arguments"),
    parameters=Parameters, expand=expand)
