"""The child side of Example A's compute-sanitizer runs (`python -m launchlab.chapters.example_a_pointwise.sanitize`):
every variant once at a size with a partial last block and at one of a few full blocks, each output checked
exactly against the oracle."""
from __future__ import annotations

import sys

SIZES = (1000, 32_768)  # a partial last block, and a few full ones
SEED = 1
PROBLEM = f"every variant at {' and '.join(f'{n:,}' for n in SIZES)} elements"


def inner_checks(backend) -> dict:
    from launchlab.gpu import pointwise
    from launchlab.model import pointwise as model

    built, checks = pointwise.load(), {}
    for n in SIZES:
        x = model.fixture(SEED, 0, n)
        reference = model.reference(x)
        for name, variant in pointwise.variants(built, n, backend.stream).items():
            checks[f"{name}.{n}"] = model.compare_exact(variant.compute(x), reference)["passed"]
    return checks


if __name__ == "__main__":
    from launchlab.gpu.sanitizer import child_main

    sys.exit(child_main(PROBLEM, inner_checks))
