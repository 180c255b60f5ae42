"""The long-row designs under compute-sanitizer (memcheck, racecheck, synccheck) on small irregular shapes: split
pieces in registers, shared memory and streamed, several grid steps; cluster slices in shared memory and short
slices in registers. Each case in both modes, from the stream, then three graph replays, each output
checked against the float64 oracle. Prints one line per case and "ALL PASSED" at the end.

    compute-sanitizer --tool racecheck python tools/klong_sanitize.py --cubins DIR
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from klong_bench import builds, load  # noqa: E402

# (label, module, rows, cols, target options)
CASES = (
    ("split-registers", "new_split_b512", 3, 4099, {}),
    ("split-shared", "new_split_b256", 2, 50001, {"pieces": 2}),
    ("split-streamed", "new_split_b512", 2, 50001, {"pieces": 2, "slice_bytes": 1024}),
    ("split-steps", "new_split_b256", 301, 9001, {"pieces": 3}),
    ("cluster-shared", "new_cluster_c4", 3, 40001, {}),
    ("cluster-short", "new_cluster_c8", 2, 31, {}),
)


def main() -> None:
    import cupy
    import numpy as np

    from launchlab.gpu import fused_designs
    from launchlab.gpu.capture import GraphReplay
    from launchlab.model import oracles

    parser = argparse.ArgumentParser()
    parser.add_argument("--cubins", type=Path, required=True)
    parser.add_argument("--only", default="", help="run only the cases whose label starts with this")
    args = parser.parse_args()
    table = builds([])
    failed = []
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        for label, module, rows, cols, options in CASES:
            if not label.startswith(args.only):
                continue
            family, defines, _ = table[module]
            built = load(args.cubins, module, family, defines)
            design = "cluster" if "cluster" in module else "split"
            # odd row lengths: every row but the first starts off a 16-byte boundary
            base = cupy.random.default_rng(len(label)).standard_normal(rows * cols, dtype=cupy.float32) * 2.0
            for mode in ("plain", "rms"):
                x = base.reshape(rows, cols)
                target = fused_designs.make_target(design, built, rows, cols, mode, x, **options)
                oracle = oracles.softmax if mode == "plain" else oracles.rms_softmax
                tolerance = oracles.SOFTMAX_TOLERANCE if mode == "plain" else oracles.RMS_SOFTMAX_TOLERANCE
                reference = oracle(x, xp=cupy)
                replay = GraphReplay(target, stream)
                ok = True
                for invoke in (target.invoke, replay.invoke, replay.invoke, replay.invoke):
                    target.poison()
                    invoke()
                    stream.synchronize()
                    ok &= bool(oracles.compare(target.y, reference, tolerance, xp=cupy)["passed"])
                print(f"{label:<20} {mode:<6} {rows}x{cols} {target.describe()} {'ok' if ok else 'FAILED'}", flush=True)
                if not ok:
                    failed.append((label, mode))
                del replay, target
            del base
    print("ALL PASSED" if not failed else f"FAILED {failed}", flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
