"""The child side of Example A's compute-sanitizer runs (`python -m launchlab.chapters.example_a_pointwise.sanitize`):
every declared row once at a size with a partial last block and at one of a few full blocks, from the stream and
replayed from its graph, each output checked exactly against the row's oracle."""
from __future__ import annotations

import sys

SIZES = (1000, 32_768)  # a partial last block, and a few full ones
SEED = 1
PROBLEM = f"every variant at {' and '.join(f'{n:,}' for n in SIZES)} elements"


def inner_checks(backend) -> dict:
    """{"<VariantId>": passed} for every declared variant that enters the sanitizer output, at SIZES."""
    from launchlab.chapters.declaration import Counts
    from launchlab.chapters.example_a_pointwise import CHAPTER, Parameters, model, size_of
    from launchlab.chapters.example_a_pointwise.device import Context, load
    from launchlab.gpu.capture import stream_and_graph

    variants = [v for v in CHAPTER.variants(Parameters(sizes=Counts(SIZES), profile_size=0)) if "sanitizer" in v.enters]
    context = Context(load())
    runners = stream_and_graph(variants, lambda v: v.row.make(context, v.id.case), backend.stream)
    checks = {}
    for variant in variants:
        x = model.fixture(SEED, 0, size_of(variant.id))
        checks[str(variant.id)] = model.compare_exact(runners[variant.id].compute(x), variant.row.oracle.function(x))["passed"]
    return checks


if __name__ == "__main__":
    from launchlab.gpu.sanitizer import child_main

    sys.exit(child_main(PROBLEM, inner_checks))
