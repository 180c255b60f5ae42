"""Appendix, Example A: the pointwise chain y = ((x + 1)^2) / 2 in float32, as three kernels or one,
launched from the stream or replayed from a CUDA graph, at every size of `sizes`; every output bit for bit
against the float32 oracle (model.py).

VariantIds: `<row>.n<N>.<submission>`, row `three` (pw_add_one, pw_square, pw_halve: a and b go through
global memory) or `fused` (pw_fused: a and b stay in registers), N elements, submission `stream` or `graph`;
e.g. `three.n16777216.graph`. Headline keys name a variant as `<row>_<submission>` with N last:
`event_us.three_stream.16777216`.

What a variant enters (OUTPUTS): `timing` (validated, timed warm, and in the tables, figures and paired
ratios), `dram` (profiled under Nsight Compute at `profile_size`: stream variants, since a graph replays the
same kernels on the same buffers) and `sanitizer` (run under compute-sanitizer's tools in a child process).
Every row is compared with BASELINE within rounds (`<row>_over_fused`), and each row's stream variant with
its graph replay (`stream_over_graph`).
"""
from __future__ import annotations

import dataclasses

from launchlab.chapters.declaration import Chapter, Counts, Oracle, Row, Variant
from launchlab.chapters.example_a_pointwise import model
from launchlab.measure.variant import VariantId

SUBMISSIONS = ("stream", "graph")
OUTPUTS = ("timing", "dram", "sanitizer")
BASELINE = "fused"
LARGE_ELEMENTS = 1 << 24                # sizes this big use the protocol's smaller event batch


@dataclasses.dataclass(frozen=True)
class Parameters:
    sizes: Counts = Counts.parse("256,32768,1048576,16777216")   # elements N, in the order given
    fixture_seed: int = 2026
    profile_size: int = 16777216   # N at which Nsight Compute reads DRAM bytes of every row (0: none)


def size_case(n: int) -> str:
    return f"n{int(n)}"


def elements(case: str) -> int:
    """n256 -> 256."""
    return int(case.removeprefix("n"))


def size_of(vid: VariantId | str) -> int:
    return elements(VariantId.parse(str(vid)).case)


def per_element(read: int, written: int):
    """A row's logical bytes per call from its bytes per element (each array access counted once)."""
    return lambda case: (read * elements(case), written * elements(case))


def make_three(context, case: str):
    from launchlab.chapters.example_a_pointwise.device import ThreePointwise

    return ThreePointwise(context, elements(case))


def make_fused(context, case: str):
    from launchlab.chapters.example_a_pointwise.device import FusedPointwise

    return FusedPointwise(context, elements(case))


EXACT = Oracle("pointwise.reference (float32, exact)", model.reference)
# Three kernels read x, a, b and write a, b, y (4 bytes each); the fused kernel reads x and writes y.
# A row's kernels are its entry points in launch order: its captured graph must hold exactly these and no other.
THREE = Row("three", "three kernels", make_three, EXACT, SUBMISSIONS, bytes=per_element(12, 12),
            outputs=frozenset(OUTPUTS), kernels=("pw_add_one", "pw_square", "pw_halve"))
FUSED = Row("fused", "fused kernel", make_fused, EXACT, SUBMISSIONS, bytes=per_element(4, 4),
            outputs=frozenset(OUTPUTS), kernels=("pw_fused",))
ROWS = (THREE, FUSED)


def row_named(target: str) -> Row:
    """The row of a VariantId target."""
    return next(row for row in ROWS if row.name == target)


def kernels_of(target: str) -> tuple[str, ...]:
    return row_named(target).kernels


def expand(parameters: Parameters) -> list[Variant]:
    """Every row at every size, from the stream and replayed from its graph (only stream variants are profiled)."""
    return [Variant(VariantId(row.name, size_case(n), submission), row,
                    outputs=row.outputs if submission == "stream" else row.outputs - {"dram"})
            for n in parameters.sizes for row in ROWS for submission in row.submissions]


def historical_name(vid: VariantId | str) -> str:
    """`three_stream`, `fused_graph`, ...: the variant's name in headline keys."""
    vid = VariantId.parse(str(vid))
    return f"{vid.target}_{vid.submission}"


def label(vid: VariantId | str) -> str:
    """'three kernels, graph'."""
    vid = VariantId.parse(str(vid))
    return f"{row_named(vid.target).label}, {vid.submission}"


def is_large(vid: VariantId) -> bool:
    return size_of(vid) >= LARGE_ELEMENTS


HOST_PATH = ("CuPy RawKernel launches from CPython on one non-blocking stream (three launches or one per "
             "invocation); Graph.launch of the same launches captured once into a CUDA graph, on the same stream")

CHAPTER = Chapter(stem="example_a_pointwise", tag="exa", title="Example A: a pointwise chain",
                  host_path=HOST_PATH, parameters=Parameters, expand=expand)
