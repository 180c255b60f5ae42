"""The child side of chapter 3's compute-sanitizer runs (`python -m launchlab.chapters.fusion.sanitize`):
every fused design, in both modes, once from the stream and once as a graph replay, on small irregular shapes
(rows that start off a 16-byte boundary, a cluster's last slice short, one row), each output checked against
the float64 oracle."""
from __future__ import annotations

import sys

from launchlab.model import fused_policy, oracles, workloads

SEED = 1
PROBLEM = ("every fused design (narrow rows, the row kernel's three tiers, a cluster with slices in registers and in "
           "shared memory, split rows kept and streamed) in both modes, from the stream and as a graph replay, on small "
           "irregular shapes (launchlab.chapters.fusion.sanitize)")
# (label, design, rows, cols, overriding defines or target options)
CASES = (
    ("narrow-1", "narrow", 5, 1, {}),
    ("narrow-127", "narrow", 33, 127, {}),
    ("narrow-509", "narrow", 17, 509, {}),
    ("row-registers", "row", 9, 1000, {}),
    ("row-wide-registers", "row", 5, 5001, {}),   # fewer rows than SMs: 8 chunks a thread
    ("row-shared", "row", 200, 5001, {}),
    ("row-streamed", "row", 3, 70001, {}),
    ("cluster-registers", "cluster", 3, 131075, {}),
    ("cluster-shared", "cluster", 3, 20001, {"cluster": 4, "slice_regs": 0}),
    ("split-kept", "split", 2, 50001, {}),
    ("split-streamed", "split", 2, 50001, {"slice_bytes": 1024}),
    ("split-one-row", "split", 1, 4099, {}),
)
TARGET_OPTIONS = ("slice_bytes",)  # options of the target rather than compile-time defines


def make(case, modes=fused_policy.MODES) -> dict:
    """{mode: target} for one case."""
    from launchlab.chapters.fusion import fused_config
    from launchlab.gpu import build, device, fused_designs
    from launchlab.gpu.targets import FusedRow

    _, design, rows, cols, choices = case
    if design == "row":
        config = fused_config(rows, cols, device.shared_limit(), device.sm_count())
        module = build.load_module("fused_softmax", config["defines"])
        return {mode: FusedRow(module, rows, cols, mode, config["shared_bytes"]) for mode in modes}
    options = {k: v for k, v in choices.items() if k in TARGET_OPTIONS}
    defines = fused_policy.design_defines(design, rows, cols, device.sm_count(),
                                          **{k: v for k, v in choices.items() if k not in TARGET_OPTIONS})
    module = build.load_module(fused_policy.FAMILY, defines)
    return {mode: fused_designs.make_target(design, module, rows, cols, mode, **options) for mode in modes}


def inner_checks(backend) -> dict:
    """{"<case>.<mode>.<stream|graph>": passed} over every case."""
    from launchlab.gpu.capture import GraphReplay

    checks = {}
    for case in CASES:
        label, _, rows, cols, _ = case
        x = workloads.rms_softmax_fixture(SEED, 0, rows, cols)
        references = {"rms": (oracles.rms_softmax(x), oracles.RMS_SOFTMAX_TOLERANCE),
                      "plain": (oracles.softmax(x), oracles.SOFTMAX_TOLERANCE)}
        for mode, target in make(case).items():
            reference, tolerance = references[mode]
            for how, variant in (("stream", target), ("graph", GraphReplay(target, backend.stream))):
                checks[f"{label}.{mode}.{how}"] = oracles.compare(variant.compute(x), reference, tolerance)["passed"]
    return checks


if __name__ == "__main__":
    from launchlab.gpu.sanitizer import child_main

    sys.exit(child_main(PROBLEM, inner_checks))
