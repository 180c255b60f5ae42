"""Development profile of fused softmax candidates with Nsight Compute: where a candidate's device time goes at a
shape (DRAM throughput, achieved occupancy, what its warps wait on), to explain the fusion chapter's worst plane
points. Never used by a chapter; its output goes under evidence/development/.

    PYTHONPATH=src python tools/dev_fused_profile.py --out DIR [--cases TAG@ROWSxCOLS,...]

Each case runs in a child process (`--child TAG ROWS COLS`) that builds the candidate `plans.candidates` names TAG
at the shape, checks its plain-mode output against the float64 oracle on a row sample, then calls it three times;
ncu (clock control off) profiles the third call's kernel with the sections below, and writes its report as text.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

CASES = ("split-b512-u4@6x1546367,split-b512-u4@159x39440,split-b256-u6@390x171713,"
         "row-b512-r4-u8-m2-shared@3804x12755,cluster-c8-b256-g8-u4@47x126781,cluster-c8-b256-g16-u4@47x126781")
SECTIONS = ("SpeedOfLight", "MemoryWorkloadAnalysis", "Occupancy", "LaunchStats", "WarpStateStats", "SchedulerStats")
CALLS = 3


def child(tag: str, rows: int, cols: int) -> None:
    import cupy
    import numpy as np

    from launchlab.chapters.fusion import plans
    from launchlab.chapters.fusion.targets import make_fused
    from launchlab.gpu import build
    from launchlab.gpu.device import identity
    from launchlab.model import oracles

    plan = next((p for p in plans.candidates(rows, cols, identity()) if p["tag"] == tag), None)
    if plan is None:
        raise SystemExit(f"{tag} is not a candidate at {rows}x{cols}")
    module = build.load_module(plan["family"], plan["defines"])
    target = make_fused({plan["module"]: module}, plan, rows, cols, "plain", None)
    x = np.random.default_rng(7).standard_normal((rows, cols), dtype=np.float32)
    target.x[...] = cupy.asarray(x)
    for _ in range(CALLS):
        target.invoke()
    cupy.cuda.get_current_stream().synchronize()
    sample = np.linspace(0, rows - 1, min(rows, 16)).astype(int)
    got = cupy.asnumpy(target.y[cupy.asarray(sample)])
    result = oracles.compare(got, oracles.softmax(x[sample]), oracles.SOFTMAX_TOLERANCE)
    print(f"{tag} {rows}x{cols}: {plan['place']}; oracle {'passed' if result['passed'] else 'FAILED'} {result}",
          flush=True)


def parent(cases: list[str], out: Path) -> None:
    from launchlab.gpu.ncu import find_ncu

    out.mkdir(parents=True, exist_ok=True)
    ncu = find_ncu()
    for case in cases:
        tag, shape = case.split("@")
        rows, cols = (int(v) for v in shape.split("x"))
        kernel = {"row": "regex:fused_softmax", "narrow": "regex:narrow_softmax", "cluster": "regex:cluster_softmax",
                  "split": "regex:split_softmax"}[tag.split("-")[0]]
        command = [ncu, "--clock-control", "none", "--kernel-name", kernel, "--launch-skip", str(CALLS - 1),
                   "--launch-count", "1", *[a for s in SECTIONS for a in ("--section", s)],
                   sys.executable, __file__, "--child", tag, str(rows), str(cols)]
        start = time.time()
        done = subprocess.run(command, capture_output=True, text=True, timeout=240)
        (out / f"{tag}@{shape}.txt").write_text(f"$ {' '.join(command)}\n(rc {done.returncode}, "
                                               f"{time.time() - start:.1f} s)\n{done.stdout}\n{done.stderr}")
        print(f"{case}: rc {done.returncode} in {time.time() - start:.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", nargs=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--cases", default=CASES)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]))
    else:
        parent(args.cases.split(","), args.out)


if __name__ == "__main__":
    main()
