"""Cluster builds with fewer, larger blocks (a development probe): at each shape, device time per call warm and cold
of the copy ceiling, the policy's pick (calibrate_fused.measure_shape, plain mode) and cluster builds of
BLOCK 256/512/1024 threads x CLUSTER 2-16 x SLICE_REGS 4/8/16 (those whose slice fits registers or shared memory).
A thread-block cluster's blocks start one after another (the cost model's `cluster_block`), so a row in fewer,
larger blocks starts sooner. Every output is poisoned, computed and checked against the float64 oracle on a sample
of rows (every element finite) before timing and after.

    PYTHONPATH=src python tools/dev_cluster_blocks.py --build DIR --shapes ...     (CPU: nvcc, sm_90 cubins)
    PYTHONPATH=src python tools/dev_cluster_blocks.py --cubins DIR --shapes ... --out f.json   (GPU)
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

import calibrate_fused as cf  # noqa: E402
from launchlab.model import fused_policy  # noqa: E402

ROUNDS = 7
BLOCKS = (256, 512, 1024)
WIDTHS = (2, 4, 8, 16)
REGS = {256: (4, 8, 16), 512: (4, 8, 16), 1024: (4, 8)}
SHARED_LIMIT = 232448 - 1024


def configurations(rows: int, cols: int) -> list[dict]:
    found = []
    chunks = fused_policy.worst_chunks(rows, cols)
    for block in BLOCKS:
        for width in WIDTHS:
            if rows * width > 64 * 132:
                continue
            slice_chunks = -(-chunks // width)
            for regs in REGS[block]:
                if slice_chunks > regs * block and (regs != 8 or 16 * slice_chunks > SHARED_LIMIT):
                    continue  # another capacity only where it holds the slice in registers
                if regs != 8 and slice_chunks <= (regs // 2) * block:
                    continue
                try:
                    found.append(fused_policy.design_defines("cluster", rows, cols, 132, cluster=width, block=block,
                                                             slice_regs=regs))
                except ValueError:  # a slice past CLUSTER_SLICE_BYTES
                    continue
    return found


def build(directory: Path, shapes) -> None:
    from launchlab.gpu import build as gpu_build

    directory.mkdir(parents=True, exist_ok=True)
    wanted = {fused_policy.module_label("cluster", d): d for r, c in shapes for d in configurations(r, c)}

    def one(item):
        label, defines = item
        source = directory / f"{label}.cu"
        source.write_text(gpu_build.expand_source(gpu_build.KERNEL_DIR / "softmax_designs.cu"))
        subprocess.run(["nvcc", *gpu_build.compile_options(defines, arch="sm_90"), "-cubin", "-o",
                        str(directory / f"{label}.cubin"), str(source)], check=True, capture_output=True)
        source.unlink()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, wanted.items()))
    print(f"{len(wanted)} cluster cubins in {directory}")


def measure(shapes, cubins: Path, seed: int) -> dict:
    import cupy

    from launchlab.gpu import fused_designs
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.device import identity
    from launchlab.gpu.instruments import ColdL2
    from launchlab.model import oracles

    backend, device = CupyBackend(), identity()
    stream = backend.stream
    modules = cf.Modules(cubins)
    cold = ColdL2(modules.get_module("instruments", "instruments", {}), device["l2_bytes"], device["sm_count"],
                  cf.COLD_WAIT_NS)
    result = {"device": device, "rounds": ROUNDS, "seed": seed, "shapes": []}
    for rows, cols in shapes:
        record = cf.measure_shape(rows, cols, device, modules, stream, cold, ("plain",), ROUNDS, seed, picks_only=True)
        ceiling = {l2: min(statistics.median(record["copy"][k][l2]) for k in ("memcpy", "vector")) for l2 in ("warm", "cold")}
        pick = record["fused"][0]
        line = {"rows": rows, "cols": cols, "ceiling_us": ceiling,
                "pick": {"tag": pick["tag"], **{l2: statistics.median(pick[l2]) for l2 in ("warm", "cold") if l2 in pick}},
                "builds": []}
        x = cupy.random.default_rng(seed).standard_normal((rows, cols), dtype=cupy.float32) * 2.0
        sample = cupy.asarray(cf.check_rows(rows, cols))
        reference = oracles.softmax(x[sample], xp=cupy)
        calls = cf.calls_for(rows, cols)
        for defines in configurations(rows, cols):
            label = fused_policy.module_label("cluster", defines)
            entry = {"block": defines["BLOCK"], "cluster": defines["CLUSTER"], "slice_regs": defines["SLICE_REGS"]}
            try:
                module = modules.get_module(label, "softmax_designs", defines)
                target = fused_designs.make_target("cluster", module, rows, cols, "plain", x)
                entry["registers"] = int(target.kernel.attributes["num_regs"])
                checks = []
                for timed in (True, False):
                    target.poison()
                    target.invoke()
                    stream.synchronize()
                    checks.append(bool(cupy.isfinite(target.y).all()) and oracles.compare(
                        target.y[sample], reference, oracles.SOFTMAX_TOLERANCE, xp=cupy)["passed"])
                    if not checks[-1]:
                        break
                    if timed:
                        entry["warm"] = statistics.median(cf.time_warm(target, stream, calls, ROUNDS))
                        entry["cold"] = statistics.median(cf.time_cold(target, stream, cold, ROUNDS))
                entry["valid"] = len(checks) == 2 and all(checks)
                del target
            except Exception as error:
                entry["valid"] = False
                entry["error"] = f"{type(error).__name__}: {str(error)[:200]}"
            line["builds"].append(entry)
        parts = []
        for l2 in ("warm", "cold"):
            text = [f"{l2} pick {line['pick'].get(l2, float('nan')) / ceiling[l2]:.3f}"]
            for block in BLOCKS:
                valid = [b for b in line["builds"] if b.get("valid") and b["block"] == block]
                if valid:
                    best = min(valid, key=lambda b: b[l2])
                    text.append(f"b{block} {best[l2] / ceiling[l2]:.3f} (c{best['cluster']} g{best['slice_regs']})")
            parts.append(" ".join(text))
        bad = sum(1 for b in line["builds"] if not b.get("valid"))
        print(f"{rows}x{cols} {pick['tag']}: " + " | ".join(parts) + f" invalid {bad}/{len(line['builds'])}", flush=True)
        result["shapes"].append(line)
        del x
        cupy.get_default_memory_pool().free_all_blocks()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path)
    parser.add_argument("--cubins", type=Path)
    parser.add_argument("--shapes", required=True)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    if args.build:
        build(args.build, shapes)
        return
    if args.out.exists():
        raise SystemExit(f"error: {args.out} exists; give another --out")
    args.out.write_text(json.dumps(measure(shapes, args.cubins, args.seed), indent=1))


if __name__ == "__main__":
    main()
