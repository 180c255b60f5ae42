"""Development sweep for chapter 3 (fusion) on a GPU host: the fused kernel's launch options per shape.

    python3 tools/gpu_fusion_check.py --sweep            # fused-kernel launch options per shape, timed

The chapter itself runs with `python -m launchlab execute fusion --archive DIR`; this sweep is how its
declared build policy (chapters/fusion/__init__.py: fused_config) was chosen, and it never enters a run.

Each candidate launch of the fused RMS kernel is validated against the oracle on the shape's fixture 0
(every element written, the first CHECK_ROWS rows within tolerance), then timed exactly as the chapter
times device time with a warm L2: a graph of CALLS_PER_GRAPH captured calls, measured by the protocol's
`measure_warm` (a shorter development protocol, SWEEP_PROTOCOL), beside the copy of the same bytes in the
same rounds. Reported: device time per call and the paired ratio to the copy.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from launchlab.measure.protocol import MeasurementProtocol  # noqa: E402

SWEEP_PROTOCOL = MeasurementProtocol(warmups=3, rounds=7, large_batch=8)  # development only, never a run's
CHECK_ROWS = 256  # the sweep compares these rows with the oracle and checks every element was written


def candidates(rows: int, cols: int, shared_limit: int) -> list[dict]:
    """Block sizes and tiers worth comparing for one shape (all within the hardware limits)."""
    from launchlab.model import fused_policy

    chunks = fused_policy.worst_chunks(rows, cols)
    blocks = (32, 64, 128, 256, 512, 1024)
    found = []
    for block in blocks:  # registers: one to four chunks per thread, or eight where four do not fit
        if -(-chunks // 4) <= block <= max(32, chunks):
            found.append({"block": block, "reg_chunks": 4, "unroll": 4, "shared_bytes": 0})
        elif 4 * block < chunks <= 8 * block:
            found.append({"block": block, "reg_chunks": 8, "unroll": 4, "shared_bytes": 0})
    for block in blocks[1:]:
        if chunks > 4 * block:
            for unroll in (4, 8):
                if 16 * chunks <= shared_limit:
                    found.append({"block": block, "reg_chunks": 4, "unroll": unroll, "shared_bytes": 16 * chunks})
                if block >= 256:
                    found.append({"block": block, "reg_chunks": 4, "unroll": unroll, "shared_bytes": 0})
    return found


def builds(rows: int, cols: int, shared_limit: int) -> list[tuple[dict, dict]]:
    """(candidate, compile-time defines) for every candidate and register budget worth building."""
    from launchlab.chapters import fusion

    found = []
    for option in candidates(rows, cols, shared_limit):
        budget = 48 if option["unroll"] == 4 and option["reg_chunks"] == 4 else 64
        for blocks_per_sm in sorted({1, fusion.min_blocks(option["block"], budget)}):
            found.append((option, {"BLOCK": option["block"], "REG_CHUNKS": option["reg_chunks"],
                                   "UNROLL": option["unroll"], "MIN_BLOCKS": blocks_per_sm}))
    return found


def validated(path, x, reference) -> dict:
    """The oracle on the first rows, and every element written (the output was poisoned with NaN)."""
    import numpy as np

    from launchlab.model import oracles

    y = path.compute(x)
    result = oracles.compare(y[:CHECK_ROWS], reference, oracles.RMS_SOFTMAX_TOLERANCE)
    result["passed"] = result["passed"] and bool(np.isfinite(y).all())
    return result


def sweep_shape(rows: int, cols: int, backend, limit: int, modules: dict) -> None:
    import cupy

    from launchlab.chapters import fusion
    from launchlab.chapters.fusion.targets import graph_of_calls
    from launchlab.chapters.fusion.summary import call_ratio, per_call
    from launchlab.gpu import build
    from launchlab.gpu.targets import DeviceCopy, FusedRow
    from launchlab.measure import protocol, stats
    from launchlab.measure.variant import VariantId
    from launchlab.model import oracles, workloads

    shape = workloads.shape_name(rows, cols)
    x = workloads.rms_softmax_fixture(2026, 0, rows, cols)
    reference = oracles.rms_softmax(x[:CHECK_ROWS])
    copy = DeviceCopy(cupy.asarray(x))
    copy_id = VariantId("copy", shape, fusion.DEVICE)
    measured, described = [protocol.Measured(copy_id, graph_of_calls(copy, backend.stream).invoke, large=True)], {}
    for index, (option, defines) in enumerate(builds(rows, cols, limit)):
        key = tuple(sorted(defines.items()))
        if key not in modules:
            modules[key] = build.load_module("fused_softmax", defines)
        path = FusedRow(modules[key], rows, cols, "rms", option["shared_bytes"], x=copy.x)
        result = validated(path, x, reference)
        vid = VariantId("candidate", f"{shape}-{index}", fusion.DEVICE)
        described[str(vid)] = {**option, "min_blocks": defines["MIN_BLOCKS"], "result": result,
                               "tier": fusion.fused_tier(rows, cols, option["block"], option["shared_bytes"],
                                                         option["reg_chunks"]),
                               "resources": modules[key].resources(["fused_rms_softmax"])["fused_rms_softmax"]}
        if result["passed"]:  # never time a failing kernel
            measured.append(protocol.Measured(vid, graph_of_calls(path, backend.stream).invoke, large=True))
    samples = protocol.measure_warm(measured, backend, SWEEP_PROTOCOL)
    timing = stats.summarize(samples)
    copy_us = per_call(timing[str(copy_id)]["warm_batch"]["event_us"], fusion.CALLS_PER_GRAPH)["median"]
    policy = fusion.fused_config(rows, cols, limit, int(cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]))
    print(f"{shape:>11} copy {copy_us:9.2f} µs per call; chapter policy: block {policy['block']}, "
          f"shared {policy['shared_bytes']}, {policy['tier']}")
    for name, entry in described.items():
        if name in timing:
            us = per_call(timing[name]["warm_batch"]["event_us"], fusion.CALLS_PER_GRAPH)["median"]
            ratio = f"{call_ratio(samples, name, str(copy_id), 'warm_batch')['median']:7.3f}"
        else:
            us, ratio = float("nan"), "    n/a"
        print(f"{shape:>11} {entry['block']:5d} {entry['reg_chunks']:3d} {entry['unroll']:3d} {entry['min_blocks']:3d} "
              f"{entry['resources']['registers']:4d} {entry['resources']['local_bytes']:3d} {entry['shared_bytes']:7d} "
              f"{entry['tier']:>9} {us:9.2f} {ratio} "
              f"{'ok' if entry['result']['passed'] else 'FAILED ' + json.dumps(entry['result'])}", flush=True)


def sweep(shapes: str) -> None:
    import cupy

    from launchlab.gpu.backend import CupyBackend
    from launchlab.model import workloads

    backend = CupyBackend()
    limit = int(cupy.cuda.runtime.getDeviceProperties(0)["sharedMemPerBlockOptin"])
    modules: dict = {}
    print(f"{'shape':>11} {'block':>5} {'reg':>3} {'unr':>3} {'min':>3} {'regs':>4} {'lcl':>3} {'shared':>7} {'tier':>9} "
          f"{'µs/call':>9} {'/ copy':>7} check")
    for rows, cols in workloads.parse_shapes(shapes):
        sweep_shape(rows, cols, backend, limit, modules)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--sweep-shapes", default="4096x128,4096x512,4096x1024,4096x4096,4096x16384,128x65536")
    args = parser.parse_args()
    if args.sweep:
        sweep(args.sweep_shapes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
