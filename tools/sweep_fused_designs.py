"""Times each fused softmax design (kernels/softmax_designs.cu) against a device copy of the same
bytes over a grid of row lengths, and prints a table from which the launch policy is declared.

    .venv/bin/python tools/sweep_fused_designs.py                 # the whole grid, RMS mode
    .venv/bin/python tools/sweep_fused_designs.py --shapes 4096x128,128x65536 --rounds 7

Development evidence only (it never enters a run). Per shape: every candidate configuration of
every design that can hold the shape (and of the one-block-per-row kernel) is validated against the float64 oracle on fixture 0 (its
first CHECK_ROWS rows, and every element for being written; a failing one is reported, not timed), then all
candidates and the copy are timed together in device time, as the chapter times its sweep: each as a CUDA graph of
back-to-back calls (as many as move about 256 MiB, at most 32), replayed in `measure.protocol.measure_warm`'s
shuffled rounds (warm L2), so that the host's pace of submission never sets the figure. The table gives each one's
median device time per call, its paired ratio to the copy [p10, p90] and its logical bandwidth (8 bytes per
element: x read once, y written once). The policy's pick is marked with '*'.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from launchlab.chapters.fusion import design_plan, fused_config, fused_plan, sweep_calls  # noqa: E402
from launchlab.model import fused_policy as designs  # noqa: E402
from launchlab.model import workloads  # noqa: E402

# 2^24 floats (64 MiB of x, as much again of y: past the 60 MiB L2) at row lengths 2^5 .. 2^22,
# and the fusion chapter's shapes.
SHAPES = tuple(dict.fromkeys([((1 << 24) >> k, 1 << k) for k in (5, 7, 9, 10, 11, 12, 14, 16, 18, 20, 22)]
                             + list(workloads.FUSION_SHAPES)))
LARGE_ELEMENTS = 1 << 22  # from here a shape is timed with the protocol's smaller batch
CLUSTER_WIDEST_BLOCKS_PER_SM = 32  # see cluster_candidates()
CHECK_ROWS = 64  # rows per candidate compared with the oracle (every element is checked for being written)
# Letters of the defines in a tag, in this order; REG_CHUNKS (row kernel) and ROW_CHUNKS (narrow) share "r" as the
# book's build labels do (never both in one design); SLICE_REGS is "g" (r and s are taken).
TAG_LETTERS = {"CLUSTER": "c", "BLOCK": "b", "LANES": "l", "ROW_CHUNKS": "r", "REG_CHUNKS": "r", "UNROLL": "u",
               "SLICE_REGS": "g", "MIN_BLOCKS": "m"}
OPTION_LETTERS = {"blocks_per_sm": "s"}


# ---------------------------------------------------------------- candidates (no CuPy: plain arithmetic on the device)
def row_candidates(rows: int, cols: int, device: dict) -> list[tuple[dict, dict]]:
    """The one-block-per-row kernel as fused_plan configures it where the policy picks "row", and as it is
    configured without the SM count (rows outnumbering the SMs): with fewer rows than SMs the two differ
    (longer rows in registers against the shared tier)."""
    shared_limit = int(device["shared_bytes_per_block_optin"])
    configs = [fused_config(rows, cols, shared_limit, int(device["sm_count"])), fused_config(rows, cols, shared_limit)]
    return [({"design": "row", "family": "fused_softmax", **config}, {}) for config in configs]


def _defines(design: str, rows: int, cols: int, sm_count: int, **choices) -> dict | None:
    """design_defines, or None where the configuration cannot hold the shape."""
    try:
        return designs.design_defines(design, rows, cols, sm_count, **choices)
    except ValueError:
        return None


def narrow_candidates(rows: int, cols: int, sm_count: int) -> list[tuple[dict, dict]]:
    """Every lane count that holds the row, in blocks of 128 and of 256 threads (the two the policy uses)."""
    found = []
    for lanes in (4, 8, 16, 32):
        base = _defines("narrow", rows, cols, sm_count, lanes=lanes)
        if base:
            found += [(design_plan("narrow", base | {"BLOCK": block}), {}) for block in (128, 256)]
    return found


def cluster_candidates(rows: int, cols: int, device: dict, picked: int | None) -> list[tuple[dict, dict]]:
    """Every cluster width whose slice fits a block (policy's registers or shared memory), and for the picked
    width 512 threads, deeper unrolling and the slice in shared memory."""
    sm_count, chunks = int(device["sm_count"]), designs.worst_chunks(rows, cols)
    optin = int(device["shared_bytes_per_block_optin"]) - designs.SHARED_RESERVED_PER_BLOCK
    found = []
    for width in (1, 2, 4, 8, 16):
        # beyond CLUSTER_WIDEST_BLOCKS_PER_SM blocks per SM a wider cluster only adds blocks: not timed
        if width > 1 and rows * width > CLUSTER_WIDEST_BLOCKS_PER_SM * sm_count:
            continue
        choice_sets = [{}]
        if width == picked:
            choice_sets += [{"block": 512}, {"unroll": 8}]
            choice_sets += [{"slice_regs": 0}] if 16 * -(-chunks // width) <= optin else []
        for choices in choice_sets:
            defines = _defines("cluster", rows, cols, sm_count, cluster=width, **choices)
            if defines:
                found.append((design_plan("cluster", defines), {}))
    return found


def split_candidates(rows: int, cols: int, sm_count: int) -> list[tuple[dict, dict]]:
    """The split design as the policy configures it, with one resident block per SM, and with 256 threads."""
    base = designs.design_defines("split", rows, cols, sm_count)
    return [(design_plan("split", base), {}), (design_plan("split", base), {"blocks_per_sm": 1}),
            (design_plan("split", base | {"BLOCK": 256}), {})]


def candidates(rows: int, cols: int, device: dict) -> list[tuple[dict, dict]]:
    """(plan, target options) worth timing for one shape, the policy's pick (fused_plan) first, then the row
    kernel and every design that can hold the shape, each configuration once. `device` needs "sm_count" and
    "shared_bytes_per_block_optin" (no CuPy here: the tests call this on the CPU)."""
    sm_count, pick = int(device["sm_count"]), fused_plan(rows, cols, device)
    found = [(pick, {}), *row_candidates(rows, cols, device)]
    if designs.worst_chunks(rows, cols) <= designs.NARROW_MAX_CHUNKS:
        found += narrow_candidates(rows, cols, sm_count)
    found += cluster_candidates(rows, cols, device, picked=pick["defines"].get("CLUSTER"))  # only a cluster has one
    if cols >= 4096:
        found += split_candidates(rows, cols, sm_count)
    unique = {}
    for plan, options in found:
        key = (plan["design"], tuple(sorted(plan["defines"].items())), tuple(sorted(options.items())))
        unique.setdefault(key, (plan, options))
    return list(unique.values())


def tag(plan: dict, options: dict) -> str:
    """A VariantId-safe label of a configuration: e.g. narrow-b128-l8-r4, cluster-c16-b256-u4-g8,
    split-b512-u4-s1 (one resident block per SM), row-b256-r4-u4-m5."""
    defines = plan["defines"]
    parts = [f"{letter}{defines[key]}" for key, letter in TAG_LETTERS.items() if key in defines]
    parts += [f"{OPTION_LETTERS[key]}{value}" for key, value in sorted(options.items())]
    return "-".join([plan["design"], *parts])


# ---------------------------------------------------------------- timing (GPU)
def make_candidate(modules: dict, plan: dict, options: dict, rows: int, cols: int, mode: str, x):
    """The candidate's target on x, built as the fusion chapter builds it (targets.make_fused); launch options
    (the split design's resident blocks per SM) go to the design's target directly."""
    from launchlab.chapters.fusion.targets import make_fused
    from launchlab.gpu import build, fused_designs

    if plan["module"] not in modules:
        modules[plan["module"]] = build.load_module(plan["family"], plan["defines"])
    if not options:
        return make_fused(modules, plan, rows, cols, mode, x)
    return fused_designs.make_target(plan["design"], modules[plan["module"]], rows, cols, mode, x, **options)


def checked_candidate(modules, plan, options, rows, cols, mode, x_host, copy, reference):
    """The candidate's target where the GPU accepts it and it passes the oracle, else (None, why)."""
    import numpy as np

    from launchlab.model import oracles

    tolerance = {"rms": oracles.RMS_SOFTMAX_TOLERANCE, "plain": oracles.SOFTMAX_TOLERANCE}[mode]
    try:
        target = make_candidate(modules, plan, options, rows, cols, mode, copy.x)
        y = target.compute(x_host)
    except Exception as error:  # a configuration the GPU refuses is reported, not timed
        return None, f"refused: {type(error).__name__}: {str(error)[:80]}"
    if not np.isfinite(y).all():
        return None, f"FAILED validation: {int((~np.isfinite(y)).sum())} elements not finite"
    result = oracles.compare(y[:CHECK_ROWS], reference, tolerance)
    return (target, "") if result["passed"] else (None, f"FAILED validation: {result['failing_elements']} elements")


def print_row(case: str, label: str, us: float, bracket: str, rows: int, cols: int) -> None:
    from launchlab.measure import stats

    print(f"{case:>14} {label:<32} {us:>12.2f} {bracket:>22} {stats.gigabytes_per_second(8 * rows * cols, us):>8.0f}")


def sweep_shape(rows: int, cols: int, mode: str, device: dict, modules: dict, backend, protocol) -> None:
    """Every candidate of one shape validated, then all of them and the copy timed together (warm L2)."""
    import cupy

    from launchlab.chapters.fusion.targets import graph_of_calls
    from launchlab.gpu.targets import DeviceCopy
    from launchlab.measure import stats
    from launchlab.measure.protocol import Measured, measure_warm
    from launchlab.measure.variant import VariantId
    from launchlab.model import oracles

    case, large = workloads.shape_name(rows, cols), rows * cols >= LARGE_ELEMENTS
    calls = sweep_calls(rows, cols)
    x_host = workloads.rms_softmax_fixture(20261018, 0, rows, cols)
    reference = {"rms": oracles.rms_softmax, "plain": oracles.softmax}[mode](x_host[:CHECK_ROWS])
    copy = DeviceCopy(cupy.asarray(x_host))
    graphs = {"copy": graph_of_calls(copy, backend.stream, calls)}  # kept alive until the timing is done
    measured, labels = [Measured(VariantId("copy", case), graphs["copy"].invoke, large=large)], {}
    for index, (plan, options) in enumerate(candidates(rows, cols, device)):
        name = tag(plan, options)
        label = name + (" *" if index == 0 else "")
        target, why = checked_candidate(modules, plan, options, rows, cols, mode, x_host, copy, reference)
        if target is None:
            print(f"{case:>14} {label:<32} {why}")
            continue
        variant = VariantId(name.replace(plan["design"], f"{plan['design']}_{mode}", 1), case)
        labels[str(variant)] = label
        graphs[str(variant)] = graph_of_calls(target, backend.stream, calls)
        measured.append(Measured(variant, graphs[str(variant)].invoke, large=large))
    samples = measure_warm(measured, backend, protocol)
    summary, copy_id = stats.summarize(samples), str(measured[0].id)
    per_call = {v: summary[v]["warm_batch"]["event_us"]["median"] / calls for v in [copy_id, *labels]}
    print_row(case, f"copy ({calls} calls a replay)", per_call[copy_id], "1", rows, cols)
    for variant, label in labels.items():
        ratio = stats.paired_ratio(samples, variant, copy_id)
        print_row(case, label, per_call[variant], f"{ratio['median']:.2f} [{ratio['p10']:.2f}, {ratio['p90']:.2f}]",
                  rows, cols)
    del copy, measured, graphs
    cupy.get_default_memory_pool().free_all_blocks()


def sweep(shapes, mode: str, rounds: int) -> None:
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.device import identity
    from launchlab.measure.protocol import FROZEN

    backend, device = CupyBackend(), identity()
    protocol = dataclasses.replace(FROZEN, rounds=rounds)
    modules = {}  # builds by module label, shared by the shapes
    print(f"{device['name']}, {device['sm_count']} SMs; mode {mode}; {rounds} rounds; warm L2; device time per call "
          "from graph replays")
    print(f"{'shape':>14} {'configuration':<32} {'median (µs)':>12} {'÷ copy [p10, p90]':>22} {'GB/s':>8}")
    for rows, cols in shapes:
        sweep_shape(rows, cols, mode, device, modules, backend, protocol)


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
