"""Chapter 1, ordinary launches: the four-kernel row path in one stream, and what a launch costs the host."""
from __future__ import annotations

import dataclasses

from launchlab.chapters.declaration import Chapter, VariantSpec
from launchlab.measure.variant import VariantId
from launchlab.model import workloads

ROW_KERNELS = ("row_rms", "row_max", "row_exp_sum", "row_scale")
ROW_PATH_BYTES_READ = 16    # per element: x three times (K1, K2, K3), e once (K4)
ROW_PATH_BYTES_WRITTEN = 8  # per element: e (K3) and y (K4)
LARGE_ELEMENTS = 1 << 24    # shapes this big use the protocol's smaller event batch


@dataclasses.dataclass(frozen=True)
class Parameters:
    shapes: str = "4096x4096,4096x1024,128x8192"
    fixture_seed: int = 2026
    launch_shape: str = "128x8192"  # the row path whose launches are also timed from the native C++ loop


def row_variant(rows: int, cols: int, submission: str = "stream") -> VariantId:
    return VariantId("row4", workloads.shape_name(rows, cols), submission)


EMPTY_STREAM = VariantId("empty", "1x1", "stream")
EMPTY_NATIVE = VariantId("empty", "1x1", "native")


def variants(parameters: Parameters) -> list[VariantSpec]:
    table = []
    for rows, cols in workloads.parse_shapes(parameters.shapes):
        elements = rows * cols
        table.append(VariantSpec(row_variant(rows, cols), "RowPath", "rms_softmax (float64)",
                                 ROW_PATH_BYTES_READ * elements, ROW_PATH_BYTES_WRITTEN * elements))
    rows, cols = workloads.parse_shapes(parameters.launch_shape)[0]
    table.append(VariantSpec(row_variant(rows, cols, "native"), "RowPath via the C++ loop", "rms_softmax (float64)",
                             ROW_PATH_BYTES_READ * rows * cols, ROW_PATH_BYTES_WRITTEN * rows * cols))
    table += [VariantSpec(EMPTY_STREAM, "empty_kernel", "none (no output)", 0, 0),
              VariantSpec(EMPTY_NATIVE, "empty_kernel via the C++ loop", "none (no output)", 0, 0)]
    return table


CHAPTER = Chapter(
    stem="ordinary_launches", tag="ch01", title="Ordinary launches",
    host_path=("CuPy RawKernel launches from CPython on one non-blocking stream; the native loop calls "
               "cuLaunchKernel from C++ on the same stream, kernels and arguments"),
    parameters=Parameters, variants=variants)
