"""Times each fused softmax design (kernels/softmax_designs.cu) against a device copy of the same
bytes over a grid of row lengths, and prints a table from which the launch policy is declared.

    .venv/bin/python tools/sweep_fused_designs.py                 # the whole grid, RMS mode
    .venv/bin/python tools/sweep_fused_designs.py --shapes 4096x128,128x65536 --rounds 7

Development evidence only (it never enters a run). Per shape: every candidate configuration of
every design that can hold the shape is validated against the float64 oracle on fixture 0 (its
first CHECK_ROWS rows, and every element for being written; a failing one is reported, not timed), then all candidates and the copy are timed together with
`measure.protocol.measure_warm` (warm L2, shuffled rounds); the table gives each one's median event
time per invocation, its paired ratio to the copy [p10, p90] and its logical bandwidth (8 bytes
per element: x read once, y written once). The policy's pick is marked with '*'.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from launchlab.model import fused_policy as designs  # noqa: E402
from launchlab.model import workloads  # noqa: E402

# 2^24 floats (64 MiB of x, as much again of y: past the 60 MiB L2) at row lengths 2^5 .. 2^22,
# and the fusion chapter's shapes.
SHAPES = tuple(dict.fromkeys([((1 << 24) >> k, 1 << k) for k in (5, 7, 9, 10, 11, 12, 14, 16, 18, 20, 22)]
                             + list(workloads.FUSION_SHAPES)))
LARGE_ELEMENTS = 1 << 22  # from here a shape is timed with the protocol's smaller batch
CLUSTER_WIDEST_BLOCKS_PER_SM = 32  # see candidates()
CHECK_ROWS = 64  # rows per candidate compared with the oracle (every element is checked for being written)


def candidates(rows: int, cols: int, device: dict) -> list[tuple[str, dict, dict]]:
    """(design, defines, target options) worth timing for one shape; the policy's pick first."""
    sm_count = device["sm_count"]
    chunks = designs.worst_chunks(rows, cols)
    design, config = designs.launch_policy(rows, cols, device)
    found = [(design, config["defines"], {})]
    if chunks <= designs.NARROW_MAX_CHUNKS:
        for lanes in (4, 8, 16, 32):
            if lanes * designs.NARROW_MAX_ROW_CHUNKS >= chunks:
                base = designs.design_defines("narrow", rows, cols, sm_count, lanes=lanes)
                found += [("narrow", base, {})] + [("narrow", base | {"BLOCK": b}, {}) for b in (128, 256)]
    optin = device["shared_bytes_per_block_optin"] - 1024
    picked = design == "cluster" and config["defines"]["CLUSTER"]
    for width in (1, 2, 4, 8, 16):
        # beyond CLUSTER_WIDEST_BLOCKS_PER_SM blocks per SM a wider cluster only adds blocks: not timed
        fits = 16 * -(-chunks // width) <= optin
        if fits and (width == 1 or rows * width <= CLUSTER_WIDEST_BLOCKS_PER_SM * sm_count):
            base = designs.design_defines("cluster", rows, cols, sm_count, cluster=width)
            found.append(("cluster", base, {}))
            if width == picked:
                found += [("cluster", base | {"BLOCK": 512}, {}), ("cluster", base | {"UNROLL": 8}, {})]
    if cols >= 4096:
        base = designs.design_defines("split", rows, cols, sm_count)
        found += [("split", base, {}), ("split", base, {"blocks_per_sm": 1}), ("split", base | {"BLOCK": 256}, {})]
    unique, seen = [], set()
    for design, defines, options in found:
        key = (design, tuple(sorted(defines.items())), tuple(sorted(options.items())))
        if key not in seen:
            seen.add(key)
            unique.append((design, defines, options))
    return unique


def tag(design: str, defines: dict, options: dict) -> str:
    """A VariantId-safe label of a configuration: e.g. narrow-b64-l8-r4, cluster-c8-b256-u4, split-b512-u4-s1."""
    short = {"BLOCK": "b", "LANES": "l", "ROW_CHUNKS": "r", "CLUSTER": "c", "UNROLL": "u"}
    parts = [f"{short[k]}{defines[k]}" for k in short if k in defines]
    parts += [f"s{v}" for k, v in options.items() if k == "blocks_per_sm"]
    return "-".join([design] + parts)


def sweep(shapes, mode: str, rounds: int) -> None:
    import cupy
    import numpy as np

    from launchlab.gpu import build
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.device import identity
    from launchlab.gpu.targets import DeviceCopy
    from launchlab.gpu import fused_designs
    from launchlab.measure import stats
    from launchlab.measure.protocol import FROZEN, Measured, measure_warm
    from launchlab.measure.variant import VariantId
    from launchlab.model import oracles

    backend = CupyBackend()
    device = identity()
    protocol = dataclasses.replace(FROZEN, rounds=rounds)
    oracle, tolerance = {"rms": (oracles.rms_softmax, oracles.RMS_SOFTMAX_TOLERANCE),
                         "plain": (oracles.softmax, oracles.SOFTMAX_TOLERANCE)}[mode]
    modules = {}
    print(f"{device['name']}, {device['sm_count']} SMs; mode {mode}; {rounds} rounds; warm L2")
    print(f"{'shape':>14} {'configuration':<28} {'median (µs)':>12} {'÷ copy [p10, p90]':>22} {'GB/s':>8}")
    for rows, cols in shapes:
        case = workloads.shape_name(rows, cols)
        x_host = workloads.rms_softmax_fixture(20261018, 0, rows, cols)
        reference = oracle(x_host[:CHECK_ROWS])
        copy = DeviceCopy(cupy.asarray(x_host))
        large = rows * cols >= LARGE_ELEMENTS
        measured = [Measured(VariantId("copy", case), copy.invoke, large=large)]
        labels = {}
        for index, (design, defines, options) in enumerate(candidates(rows, cols, device)):
            label = tag(design, defines, options) + (" *" if index == 0 else "")
            key = tuple(sorted(defines.items()))
            try:
                if key not in modules:
                    modules[key] = build.load_module(designs.FAMILY, defines)
                target = fused_designs.make_target(design, modules[key], rows, cols, mode, x=copy.x, **options)
                y = target.compute(x_host)
                result = oracles.compare(y[:CHECK_ROWS], reference, tolerance)
                if not np.isfinite(y).all():
                    result = {"passed": False, "failing_elements": int((~np.isfinite(y)).sum())}
            except Exception as error:  # a configuration the GPU refuses is reported, not timed
                print(f"{case:>14} {label:<28} refused: {type(error).__name__}: {str(error)[:80]}")
                continue
            if not result["passed"]:
                print(f"{case:>14} {label:<28} FAILED validation: {result['failing_elements']} elements")
                continue
            variant = VariantId(tag(design, defines, options).replace(design, f"{design}_{mode}", 1), case)
            labels[str(variant)] = label
            measured.append(Measured(variant, target.invoke, large=large))
        samples = measure_warm(measured, backend, protocol)
        summary = stats.summarize(samples)
        copy_id = str(measured[0].id)
        copy_us = summary[copy_id]["warm_batch"]["event_us"]["median"]
        print(f"{case:>14} {'copy':<28} {copy_us:>12.2f} {'1':>22} "
              f"{stats.gigabytes_per_second(8 * rows * cols, copy_us):>8.0f}")
        for variant, label in labels.items():
            us = summary[variant]["warm_batch"]["event_us"]["median"]
            ratio = stats.paired_ratio(samples, variant, copy_id)
            bracket = f"{ratio['median']:.2f} [{ratio['p10']:.2f}, {ratio['p90']:.2f}]"
            print(f"{case:>14} {label:<28} {us:>12.2f} {bracket:>22} "
                  f"{stats.gigabytes_per_second(8 * rows * cols, us):>8.0f}")
        del copy, measured
        cupy.get_default_memory_pool().free_all_blocks()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", help="ROWSxCOLS,... (default: the grid of SHAPES)")
    parser.add_argument("--mode", choices=designs.MODES, default="rms")
    parser.add_argument("--rounds", type=int, default=7, help="protocol rounds (the frozen protocol has 21)")
    args = parser.parse_args()
    shapes = workloads.parse_shapes(args.shapes) if args.shapes else SHAPES
    sweep(shapes, args.mode, args.rounds)


if __name__ == "__main__":
    main()
