"""The child side of chapter 4's compute-sanitizer runs: every kernel of the chapter, small, once from the
stream and once as a graph replay, each output checked against its design's oracle, the error words of the
designs that have them (the queue, the dependency kernel) too.

    LAUNCHLAB_MEGAKERNEL_DESIGNS=tiled3,coop,... compute-sanitizer --tool memcheck python -m launchlab.chapters.megakernels.sanitize

prints one tagged JSON line ({"problem", "checks", "passed"}; gpu/sanitizer.py's child_main) and exits non-zero
where a check failed. The designs are those the environment variable names (the parent run's), else every design.

Small cases keep each tool within about a minute: eight rows of a balanced and of a ragged case (one row of
36,864 elements, so that the fused kernel's shared-memory tier and an 8-block cluster run), one persistent
worker block per SM. CuPy's memory pool is off, so every array is its own allocation and an access past its
end is one memcheck sees."""
from __future__ import annotations

import os
import sys

import numpy as np

from launchlab.model import oracles, workloads

CASES = {"balanced": [8192] * 8, "ragged": [36864] + [4096] * 7}
CHAIN_STAGES = (2,)  # a chain of two stages runs every chain kernel and one stage-to-stage hand-over
WORKERS_PER_SM = 1
SEED = 1
DESIGNS_ENVIRONMENT = "LAUNCHLAB_MEGAKERNEL_DESIGNS"
PROBLEM = ("every chapter 4 design (the run's `designs`) from the stream and as a graph replay, one invocation "
           "each on a small balanced and a small ragged case (launchlab.chapters.megakernels.sanitize)")


def designs_named(names: str | None) -> list:
    """The designs a comma-separated list names (None or empty: every design), in table order."""
    from launchlab.chapters.megakernels import DESIGN

    if not names:
        return list(DESIGN.values())
    unknown = sorted(set(names.split(",")) - set(DESIGN) - {""})
    if unknown:
        raise ValueError(f"unknown designs {unknown}; known: {', '.join(DESIGN)}")
    return [DESIGN[name] for name in names.split(",") if name]


def inner_checks(backend, designs=None) -> dict:
    """{"<variant>": passed} for every variant of every design (default: those DESIGNS_ENVIRONMENT names);
    error-word checks as "<variant>.words"."""
    from launchlab.chapters.megakernels import chain_model, persistent, stages_of, variants_of
    from launchlab.chapters.megakernels.targets import Context, load_modules, make_variants, rows_of
    from launchlab.gpu import device

    designs = designs_named(os.environ.get(DESIGNS_ENVIRONMENT)) if designs is None else designs
    context = Context(load_modules(designs, device.shared_limit()), WORKERS_PER_SM, lengths=CASES)
    variants = variants_of(designs, list(CASES), [], chain_stages=CHAIN_STAGES)
    made = make_variants(context, variants, backend.stream)
    checks = {}
    for variant in variants:
        design, target = variant.row, persistent.underlying(made[variant.id])
        path = rows_of(target)
        values = workloads.packed_fixture(SEED, 0, path.lengths)
        stages = stages_of(variant.id)
        reference = design.oracle.function(values, path.row_offsets, *((stages,) if design.chain else ()))
        offsets = chain_model.stacked_offsets(path.row_offsets, stages) if design.chain else path.row_offsets
        if design.words:
            design.words.clear(target)
        output = made[variant.id].compute(values)
        checks[str(variant.id)] = oracles.compare(output, reference, design.oracle.tolerance, offsets)["passed"]
        if design.words:
            found, expected, _ = design.words.read(target)
            checks[f"{variant.id}.words"] = bool(np.array_equal(found, expected))
    return checks


def main() -> int:
    """The designs the parent names in DESIGNS_ENVIRONMENT (none named: every design), under gpu/sanitizer.py's
    child_main (pool off, one tagged result line)."""
    from launchlab.gpu.sanitizer import child_main

    designs = designs_named(os.environ.get(DESIGNS_ENVIRONMENT))
    return child_main(PROBLEM, lambda backend: inner_checks(backend, designs))


if __name__ == "__main__":
    sys.exit(main())
