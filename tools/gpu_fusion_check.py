"""Device checks for chapter 3 (fusion), for a development run on a GPU host.

    python3 tools/gpu_fusion_check.py --sweep            # fused-kernel launch options per shape, timed

The chapter itself runs with `python -m launchlab execute fusion --archive DIR`.

The sweep is development evidence only (it never enters a run): each candidate launch of the
fused RMS kernel is validated against the oracle on the shape's fixture 0, then timed as a
captured graph of REPLAY_LAUNCHES launches (warm L2), beside a copy of the same bytes.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

REPLAY_LAUNCHES = 20
REPLAYS = 7
CHECK_ROWS = 256  # the sweep compares these rows with the oracle and checks every element was written


def candidates(rows: int, cols: int, shared_limit: int) -> list[dict]:
    """Block sizes and tiers worth comparing for one shape (all within the hardware limits)."""
    from launchlab.chapters import fusion

    chunks = fusion.max_chunks(rows, cols)
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


def time_graph(invoke, stream) -> float:
    """Median microseconds per launch over REPLAYS replays of a graph of REPLAY_LAUNCHES launches."""
    import cupy

    stream.begin_capture()
    for _ in range(REPLAY_LAUNCHES):
        invoke()
    graph = stream.end_capture()
    graph.upload(stream)
    graph.launch(stream)
    stream.synchronize()
    times = []
    for _ in range(REPLAYS):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        graph.launch(stream)
        end.record(stream)
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end) * 1e3 / REPLAY_LAUNCHES)
    return sorted(times)[len(times) // 2]


def sweep(shapes: str) -> None:
    import cupy
    import numpy as np

    from launchlab.gpu import build
    from launchlab.model import oracles
    from launchlab.model import workloads
    from launchlab.chapters import fusion
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.targets import DeviceCopy, FusedRow

    stream = CupyBackend().stream
    limit = int(cupy.cuda.runtime.getDeviceProperties(0)["sharedMemPerBlockOptin"])
    modules = {}
    print(f"{'shape':>11} {'block':>5} {'reg':>3} {'unr':>3} {'min':>3} {'regs':>4} {'lcl':>3} {'shared':>7} {'tier':>9} "
          f"{'us':>9} {'% copy':>7} check")
    for rows, cols in workloads.parse_shapes(shapes):
        x = workloads.rms_softmax_fixture(2026, 0, rows, cols)
        reference = oracles.rms_softmax(x[:CHECK_ROWS])
        copy = DeviceCopy(cupy.asarray(x))
        copy_us = time_graph(copy.invoke, stream)
        policy = fusion.fused_config(rows, cols, limit)
        print(f"{workloads.shape_name(rows, cols):>11} copy {copy_us:9.2f} us; chapter policy: block {policy['block']}, "
              f"shared {policy['shared_bytes']}, {policy['tier']}")
        for option in candidates(rows, cols, limit):
            budget = 48 if option["unroll"] == 4 and option["reg_chunks"] == 4 else 64
            for blocks_per_sm in sorted({1, fusion.min_blocks(option["block"], budget)}):
                defines = {"BLOCK": option["block"], "REG_CHUNKS": option["reg_chunks"], "UNROLL": option["unroll"],
                           "MIN_BLOCKS": blocks_per_sm}
                key = tuple(sorted(defines.items()))
                if key not in modules:
                    modules[key] = build.load_module("fused_softmax", defines)
                path = FusedRow(modules[key], rows, cols, "rms", option["shared_bytes"], x=copy.x)
                tier = fusion.fused_tier(rows, cols, option["block"], option["shared_bytes"], option["reg_chunks"])
                y = path.compute(x)  # every element written, the first rows against the oracle
                result = oracles.compare(y[:CHECK_ROWS], reference[:CHECK_ROWS], oracles.RMS_SOFTMAX_TOLERANCE)
                result["passed"] = result["passed"] and bool(np.isfinite(y).all())
                registers = modules[key].resources(["fused_rms_softmax"])["fused_rms_softmax"]
                us = time_graph(path.invoke, stream) if result["passed"] else float("nan")  # never time a failing kernel
                print(f"{workloads.shape_name(rows, cols):>11} {option['block']:5d} {option['reg_chunks']:3d} "
                      f"{option['unroll']:3d} {blocks_per_sm:3d} {registers['registers']:4d} {registers['local_bytes']:3d} "
                      f"{option['shared_bytes']:7d} {tier:>9} {us:9.2f} {100 * copy_us / us:7.1f} "
                      f"{'ok' if result['passed'] else 'FAILED ' + json.dumps(result)}", flush=True)


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
