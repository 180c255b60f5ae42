"""Long-row shapes drawn with a seed of their own (rows 1-400, rows of 10^4 to 2^21 floats, x at most 256 MiB): the
long-row designs as the launch policy configures them, against the copy ceiling and the libraries (cuDNN, torch,
Triton: chapters/fusion/baselines.py), warm and cold, each output checked against the float64 oracle before and
after timing. Prints fused / copy per shape and the geometric means.

    PYTHONPATH=src python tools/klong_final.py --cubins DIR --out FILE [--seed 9157] [--points 20] [--budget-s 90]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from klong_bench import builds, check, load, make, median, time_cold, time_warm  # noqa: E402

from launchlab.chapters.fusion import copy_kernel  # noqa: E402
from launchlab.model import fused_policy  # noqa: E402

MAX_BYTES = 256 << 20
LIBRARIES = ("cudnn", "torch", "triton")


def draw(seed: int, points: int) -> list[tuple[int, int]]:
    """Shapes with log-uniform rows (1-400) and row lengths (10^4 - 2^21 floats), x at most MAX_BYTES."""
    rng = np.random.default_rng(seed)
    shapes = []
    while len(shapes) < points:
        rows = int(round(math.exp(rng.uniform(0.0, math.log(400.0)))))
        cols = int(round(math.exp(rng.uniform(math.log(1e4), math.log(2.0 ** 21)))))
        if 4 * rows * cols <= MAX_BYTES and (rows, cols) not in shapes:
            shapes.append((rows, cols))
    return shapes


def contenders(rows: int, cols: int, sm_count: int) -> list[tuple[str, str, dict]]:
    """The long-row designs at a shape: the split builds (512 and 256 threads, two unrolling variants of the
    latter) with their default pieces, and the cluster widths whose slices fit; the row kernel as context."""
    found = [("row", "row", {}), ("split-b512", "new_split_b512", {}), ("split-b256", "new_split_b256", {}),
             ("split-b256-u6", "new_split_b256_u6", {}), ("split-b256-u8r2", "new_split_b256_u8r2", {})]
    chunks = fused_policy.worst_chunks(rows, cols)
    for width in (4, 8, 16):
        if rows * width <= 64 * sm_count and -(-chunks // width) * 16 <= 227 * 1024:
            found.append((f"cluster-c{width}", f"new_cluster_c{width}", {}))
    return found


def measure(rows, cols, modules, stream, cold, rounds, seed) -> dict:
    import cupy

    from launchlab.chapters.fusion.baselines import make_baseline
    from launchlab.gpu.targets import DeviceCopy
    from launchlab.model import oracles

    x = cupy.random.default_rng(seed).standard_normal((rows, cols), dtype=cupy.float32) * 2.0
    sample = cupy.asarray(np.unique(np.linspace(0, rows - 1, max(1, min(rows, 16, (1 << 22) // cols))).round()
                                    .astype(np.int64)))
    reference = oracles.softmax(x[sample], xp=cupy)
    calls = min(32, max(1, (1 << 28) // (8 * rows * cols)))
    calls = 1 << (calls.bit_length() - 1)
    record = {"rows": rows, "cols": cols, "calls": calls, "copy": {}, "fused": {}, "libraries": {}}
    for name, target in (("memcpy", DeviceCopy(x)), ("vector", copy_kernel.make(modules[copy_kernel.MODULE], x))):
        record["copy"][name] = {"warm": time_warm(target, stream, calls, rounds), "cold": time_cold(target, stream, cold, rounds)}
    for name, label, options in contenders(rows, cols, 132):
        entry = {"label": label}
        try:
            target = make(name, label, options, modules, rows, cols, x)
            entry["valid"] = check(target, sample, reference, oracles.SOFTMAX_TOLERANCE)
            if entry["valid"]:
                entry["warm"] = time_warm(target, stream, calls, rounds)
                entry["cold"] = time_cold(target, stream, cold, rounds)
                entry["valid_after"] = check(target, sample, reference, oracles.SOFTMAX_TOLERANCE)
            describe = getattr(target, "describe", None)
            entry["launch"] = describe() if describe else {}
            del target
        except Exception as error:
            entry["valid"], entry["error"] = False, f"{type(error).__name__}: {str(error)[:160]}"
        record["fused"][name] = entry
    for name in LIBRARIES:
        target, why = make_baseline(name, x, stream)
        if target is None:
            record["libraries"][name] = {"unavailable": why[:160]}
            continue
        try:
            record["libraries"][name] = {"warm": time_warm(target, stream, calls, rounds),
                                         "cold": time_cold(target, stream, cold, rounds)}
        except Exception as error:
            record["libraries"][name] = {"error": f"{type(error).__name__}: {str(error)[:160]}"}
        del target
    del x
    cupy.get_default_memory_pool().free_all_blocks()
    return record


def line(record: dict) -> tuple[str, dict]:
    copy = {l2: min(median(v[l2]) for v in record["copy"].values()) for l2 in ("warm", "cold")}
    best = {}
    for name, entry in record["fused"].items():
        if entry.get("valid") and entry.get("valid_after") and name != "row":  # the row kernel is context
            for l2 in ("warm", "cold"):
                t = median(entry[l2])
                if l2 not in best or t < best[l2][0]:
                    best[l2] = (t, name)
    lib = {n: median(e["warm"]) for n, e in record["libraries"].items() if "warm" in e}
    text = f"{record['rows']:>5}x{record['cols']:<8} copy {copy['warm']:8.2f} {copy['cold']:8.2f}"
    ratios = {}
    for l2 in ("warm", "cold"):
        if l2 in best:
            ratios[l2] = best[l2][0] / copy[l2]
            text += f" | {l2} {best[l2][0]:8.2f} ({ratios[l2]:.2f}) {best[l2][1]:<12}"
    text += " | " + " ".join(f"{n}={t:.2f}" for n, t in lib.items())
    text += " | " + " ".join(f"{n}:{median(e['warm']):.2f}" for n, e in record["fused"].items() if "warm" in e)
    bad = [n for n, e in record["fused"].items() if not e.get("valid") or e.get("valid_after") is False]
    return text + (f" | INVALID {bad}" if bad else ""), ratios | {"copy_warm": copy["warm"], "copy_cold": copy["cold"]}


def main() -> None:
    import cupy

    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.device import identity
    from launchlab.gpu.instruments import ColdL2

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cubins", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("klong_final.json"))
    parser.add_argument("--seed", type=int, default=9157)
    parser.add_argument("--points", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=90.0)
    args = parser.parse_args()
    started = time.perf_counter()
    shapes = draw(args.seed, args.points)  # in the order drawn: a budget cut spares no size class
    backend, device = CupyBackend(), identity()
    modules = {label: load(args.cubins, label, family, defines) for label, (family, defines, from_base)
               in builds(shapes).items() if not from_base and family != "klong_probe"}
    cold = ColdL2(modules["instruments"], device["l2_bytes"], device["sm_count"], 60_000)
    result = {"device": device, "seed": args.seed, "shapes": []}
    summary = []
    for index, (rows, cols) in enumerate(shapes):
        if time.perf_counter() - started > args.budget_s:
            print(f"budget reached after {index} shapes", flush=True)
            break
        try:
            record = measure(rows, cols, modules, backend.stream, cold, args.rounds, args.seed + index)
        except Exception:
            import traceback

            traceback.print_exc()
            cupy.get_default_memory_pool().free_all_blocks()
            continue
        result["shapes"].append(record)
        text, ratios = line(record)
        summary.append(ratios)
        print(text, flush=True)
        args.out.write_text(json.dumps(result))
    for regime, chosen in (("bandwidth (copy >= 10 us)", [r for r in summary if r["copy_warm"] >= 10]),
                           ("latency (copy < 10 us)", [r for r in summary if r["copy_warm"] < 10])):
        for l2 in ("warm", "cold"):
            values = [r[l2] for r in chosen if l2 in r]
            if values:
                excess = [(r[l2] - 1.0) * r["copy_" + l2] for r in chosen if l2 in r]
                print(f"{regime:<28} {l2}: n={len(values)} fused/copy geomean {math.exp(np.mean(np.log(values))):.3f} "
                      f"p90 {np.percentile(values, 90):.3f} max {max(values):.3f}; fused - copy median "
                      f"{np.median(excess):.2f} us p90 {np.percentile(excess, 90):.2f} us", flush=True)
    print(f"done in {time.perf_counter() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main()
