"""The child side of chapter 3's compute-sanitizer runs (`python -m launchlab.chapters.fusion.sanitize`):
every fused design, in both modes, once from the stream and once as a graph replay, on small irregular shapes
(rows that start off a 16-byte boundary, a cluster's last slice short, one row), each output checked against
the float64 oracle; then, on the run's plane (PLANE_ENVIRONMENT: its point count and seed), the plan of the two
smallest points each design serves there, and the float4 copy kernel at the plane's two smallest points and on a
view that starts off a 16-byte boundary with an odd length."""
from __future__ import annotations

import os
import sys

from launchlab.model import fused_policy, oracles, workloads

SEED = 1
PROBLEM = ("every fused design (narrow rows in chunks and in single floats, the row kernel's three tiers, a cluster with slices in registers and in "
           "shared memory, split rows kept and streamed) in both modes, from the stream and as a graph replay, on small "
           "irregular shapes (launchlab.chapters.fusion.sanitize)")
# (label, design, rows, cols, overriding defines or target options)
CASES = (
    ("narrow-1", "narrow", 5, 1, {}),
    ("narrow-127", "narrow", 33, 127, {}),
    ("narrow-509", "narrow", 17, 509, {}),
    ("narrow-scalar-1", "narrow", 5, 1, {"row_chunks": 1, "scalar": 1}),
    ("narrow-scalar-37", "narrow", 9, 37, {"row_chunks": 2, "scalar": 1}),
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
PLANE_ENVIRONMENT = "LAUNCHLAB_FUSION_PLANE"  # "<points>,<seed>" of the run's plane, set by run.py for the child
PLANE_POINTS_PER_DESIGN = 2
PLANE_PROBLEM = ("; on the run's plane, the plan of the two smallest points each design serves, and the float4 copy "
                 "kernel at the plane's two smallest points and on a view of odd length 4 bytes off a 16-byte boundary")


def plane_cases(points: int, seed: int, device: dict, per_design: int = PLANE_POINTS_PER_DESIGN) -> list[tuple]:
    """(label, plan, rows, cols) for the `per_design` smallest points of the plane that each design serves under the
    launch policy on this device (smallest matrix first; a design the policy picks nowhere on the plane has none)."""
    from launchlab.chapters.fusion import fused_plan
    from launchlab.chapters.fusion.plane import draw

    chosen, taken = [], {}
    for rows, cols in sorted(draw(points, seed) if points else [], key=lambda shape: (shape[0] * shape[1], shape)):
        plan = fused_plan(rows, cols, device)
        if taken.get(plan["design"], 0) < per_design:
            taken[plan["design"]] = taken.get(plan["design"], 0) + 1
            chosen.append((f"plane-{plan['design']}-{rows}x{cols}", plan, rows, cols))
    return chosen


def plane_from_environment() -> tuple[int, int]:
    """(points, seed) of the run's plane from PLANE_ENVIRONMENT; (0, 0) where it is not set (no plane cases)."""
    text = os.environ.get(PLANE_ENVIRONMENT, "")
    if not text:
        return 0, 0
    points, seed = (int(v) for v in text.split(","))
    return points, seed


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


def plane_targets(plan: dict, rows: int, cols: int) -> dict:
    """{mode: target} of a plan's fused kernel at a plane point, on its own input."""
    import cupy

    from launchlab.chapters.fusion.targets import make_fused
    from launchlab.gpu import build

    modules = {plan["module"]: build.load_module(plan["family"], plan["defines"])}
    return {mode: make_fused(modules, plan, rows, cols, mode, cupy.empty((rows, cols), dtype=cupy.float32))
            for mode in fused_policy.MODES}


def copy_checks(backend, shapes) -> dict:
    """The float4 copy kernel, bit for bit, at each shape (stream and graph replay) and on a view of odd length that
    starts 4 bytes past a 16-byte boundary."""
    import cupy
    import numpy as np

    from launchlab.chapters.fusion import copy_kernel
    from launchlab.gpu import build
    from launchlab.gpu.capture import GraphReplay

    built = build.load_module(copy_kernel.FAMILY, copy_kernel.DEFINES)
    checks = {}
    for rows, cols in shapes:
        x = workloads.rms_softmax_fixture(SEED, 0, rows, cols)
        target = copy_kernel.make(built, cupy.empty((rows, cols), dtype=cupy.float32))
        for how, variant in (("stream", target), ("graph", GraphReplay(target, backend.stream))):
            checks[f"copy4-{rows}x{cols}.{how}"] = bool(np.array_equal(variant.compute(x).view(np.uint32),
                                                                       x.view(np.uint32)))
    base = cupy.empty(4 * 1001 + 1, dtype=cupy.float32)
    view = base[1:1 + 4 * 1000 + 3]                     # 4 bytes past the allocation's start, 4003 floats
    target = copy_kernel.make(built, view)
    x = workloads.rms_softmax_fixture(SEED, 1, 1, view.size)[0]
    checks["copy4-unaligned-4003.stream"] = bool(np.array_equal(target.compute(x), x))
    return checks


def inner_checks(backend) -> dict:
    """{"<case>.<mode>.<stream|graph>": passed} over every case, the plane's cases and the copy kernel's."""
    from launchlab.chapters.fusion.plane import draw
    from launchlab.gpu import device
    from launchlab.gpu.capture import GraphReplay

    points, seed = plane_from_environment()
    cases = plane_cases(points, seed, device.identity()) if points else []
    checks = {}
    for label, plan, rows, cols in cases:
        x = workloads.rms_softmax_fixture(SEED, 0, rows, cols)
        references = {"rms": (oracles.rms_softmax(x), oracles.RMS_SOFTMAX_TOLERANCE),
                      "plain": (oracles.softmax(x), oracles.SOFTMAX_TOLERANCE)}
        for mode, target in plane_targets(plan, rows, cols).items():
            reference, tolerance = references[mode]
            for how, variant in (("stream", target), ("graph", GraphReplay(target, backend.stream))):
                checks[f"{label}.{mode}.{how}"] = oracles.compare(variant.compute(x), reference, tolerance)["passed"]
    smallest = sorted(draw(points, seed), key=lambda shape: (shape[0] * shape[1], shape))[:2] if points else []
    checks.update(copy_checks(backend, smallest or [(3, 1001)]))
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
