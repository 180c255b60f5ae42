"""Appendix, Example A: the pointwise chain y = ((x + 1)^2) / 2 in float32, as three kernels or one,
launched from the stream or replayed from a CUDA graph, at four sizes; every output bit for bit
against the float32 oracle (model/pointwise.py).

VariantIds: `<path>.n<N>.<submission>`, path `three` (pw_add_one, pw_square, pw_halve: a and b go
through global memory) or `fused` (pw_fused: a and b stay in registers), N elements, submission
`stream` or `graph`; e.g. `three.n16777216.graph`. Headline keys name a variant as
`<path>_<submission>` with N last: `event_us.three_stream.16777216`.
"""
from __future__ import annotations

import dataclasses

from launchlab.chapters.declaration import Chapter, VariantSpec
from launchlab.measure.variant import VariantId
from launchlab.model import pointwise as model

PATHS = model.PATHS                     # ("three", "fused")
SUBMISSIONS = ("stream", "graph")
KERNELS = {"three": ("pw_add_one", "pw_square", "pw_halve"), "fused": ("pw_fused",)}
KERNEL_NODES = model.KERNEL_NODES       # kernel nodes each path's captured graph must hold: 3 and 1
# Logical bytes per element, read and written: three kernels read x, a, b and write a, b, y (4 bytes each);
# the fused kernel reads x and writes y.
BYTES_PER_ELEMENT = {"three": (12, 12), "fused": (4, 4)}
LARGE_ELEMENTS = 1 << 24                # sizes this big use the protocol's smaller event batch
LABELS = {"three": "three kernels", "fused": "fused kernel"}


@dataclasses.dataclass(frozen=True)
class Parameters:
    sizes: str = "256,32768,1048576,16777216"
    fixture_seed: int = 2026
    profile_size: int = 16777216   # N at which Nsight Compute reads DRAM bytes of both paths (0: none)


def parse_sizes(text: str) -> list[int]:
    """Element counts, in the order given: positive and distinct."""
    sizes = [int(v) for v in str(text).split(",") if v.strip()]
    if not sizes or any(n < 1 for n in sizes) or len(set(sizes)) != len(sizes):
        raise ValueError(f"sizes must be distinct positive element counts, not {text!r}")
    return sizes


def variant(path: str, n: int, submission: str) -> VariantId:
    return VariantId(path, f"n{int(n)}", submission)


def size_of(vid: VariantId | str) -> int:
    return int(VariantId.parse(str(vid)).case.removeprefix("n"))


def historical_name(vid: VariantId | str) -> str:
    """`three_stream`, `fused_graph`, ...: the variant's name in headline keys (model.VARIANTS)."""
    vid = VariantId.parse(str(vid))
    return f"{vid.target}_{vid.submission}"


def label(vid: VariantId | str) -> str:
    """'three kernels, graph'."""
    vid = VariantId.parse(str(vid))
    return f"{LABELS[vid.target]}, {vid.submission}"


def logical_bytes(path: str, n: int) -> tuple[int, int]:
    read, written = BYTES_PER_ELEMENT[path]
    return read * int(n), written * int(n)


def timed_variants(parameters: Parameters) -> list[VariantId]:
    return [variant(path, n, submission) for n in parse_sizes(parameters.sizes) for path in PATHS
            for submission in SUBMISSIONS]


def variants(parameters: Parameters) -> list[VariantSpec]:
    table = []
    for vid in timed_variants(parameters):
        builder = {"three": "ThreePointwise", "fused": "FusedPointwise"}[vid.target]
        if vid.submission == "graph":
            builder = f"GraphReplay({builder})"
        table.append(VariantSpec(vid, builder, "pointwise.reference (float32, exact)",
                                 *logical_bytes(vid.target, size_of(vid))))
    return table


HOST_PATH = ("CuPy RawKernel launches from CPython on one non-blocking stream (three launches or one per "
             "invocation); Graph.launch of the same launches captured once into a CUDA graph, on the same stream")

CHAPTER = Chapter(stem="example_a_pointwise", tag="exa", title="Example A: a pointwise chain",
                  host_path=HOST_PATH, parameters=Parameters, expand=variants)
