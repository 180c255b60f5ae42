"""The child side of chapter 4's compute-sanitizer runs (`python -m launchlab.gpu.sanitizer inner megakernels`):
every kernel of the chapter, small, once from the stream and once as a graph replay, each output checked
against the float64 oracle, the queue's and the dependency kernel's error words too.

Small cases keep each tool within about a minute: eight rows of a balanced and of a ragged case (one row of
36,864 elements, so that the fused kernel's shared-memory tier and an 8-block cluster run), one persistent
worker block per SM. The designs are those the parent run measured (its environment names them)."""
from __future__ import annotations

import os

from launchlab.model import oracles, workloads

CASES = {"balanced": [8192] * 8, "ragged": [36864] + [4096] * 7}
WORKERS_PER_SM = 1
SEED = 1


def designs_to_run() -> list:
    from launchlab.chapters.megakernels import DESIGN, DESIGNS
    from launchlab.chapters.megakernels.run import DESIGNS_ENVIRONMENT

    named = os.environ.get(DESIGNS_ENVIRONMENT)
    if not named:
        return list(DESIGNS)
    return [DESIGN[name] for name in named.split(",") if name]


def load_modules(designs) -> dict:
    from launchlab.chapters.megakernels.run import device_shared_limit, fused_defines
    from launchlab.gpu import build

    modules = {}
    for family in dict.fromkeys(d.family for d in designs):
        defines = fused_defines(device_shared_limit()) if family == "fused_softmax" else None
        modules[family] = build.load_module(family, defines)
    return modules


def inner_checks(backend) -> dict:
    """{"<case>.<variant>": passed} for every variant of every design; words checks as "<...>.words"."""
    from launchlab.chapters.megakernels import run
    from launchlab.chapters.megakernels import persistent

    designs = designs_to_run()
    modules = load_modules(designs)
    checks = {}
    for case, lengths in CASES.items():
        variants = run.case_variants(modules, case, WORKERS_PER_SM, [], backend.stream, lengths=lengths,
                                     designs=designs)
        for vid, variant in variants.items():
            target = persistent.underlying(variant)
            path = getattr(target, "path", target)
            values = workloads.packed_fixture(SEED, 0, path.lengths)
            reference = oracles.rms_softmax_packed(values, path.row_offsets)
            if isinstance(target, persistent.TaskQueue):
                target.clear_error()
            output = variant.compute(values)
            checks[str(vid)] = oracles.compare(output, reference, oracles.RMS_SOFTMAX_TOLERANCE,
                                               path.row_offsets)["passed"]
            if isinstance(target, persistent.TaskQueue):
                checks[f"{vid}.words"] = bool(target.counters_match() and target.error_message() is None)
            if run.is_dependency(target):
                checks[f"{vid}.words"] = bool(not target.error.get().any() and target.counters_consistent())
    return checks
