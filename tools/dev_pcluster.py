"""Persistent pipelined clusters against the policy's pick (a development probe; kernels in tools/dev_pcluster.cu):
at each shape, device time per call warm (a CUDA graph of many calls) and cold (after an L2 flush) of the copy
ceiling, of the fused launch policy's pick (calibrate_fused.measure_shape, plain mode) and of every variant
(CLUSTER blocks a row, BLOCK threads, blocks an SM) whose two slices fit the shared memory. Every variant's output
is poisoned, computed and checked against the float64 oracle on a sample of rows (every element finite) before it
is timed, and again after.

    PYTHONPATH=src python tools/dev_pcluster.py --cubins DIR --pick-cubins DIR2 --shapes 47x126781,... --out f.json

DIR holds pcluster_c<CLUSTER>_b<BLOCK>.cubin (built with --build DIR here: nvcc -arch=sm_90), DIR2 the policy's
picks (calibrate_fused.py --build-cubins DIR2 --picks-only --shapes ...). The result committed as
evidence/development/pcluster_probe.json (16 shapes of the fusion chapter's plane, its worst bandwidth points and
three many-row points, two buffers a block) and evidence/development/pcluster_depth_probe.json (11 of them,
--depths 2,3,4) are what chapters/fusion/pipelined_probe.py reads for the fusion page.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

import calibrate_fused as cf  # noqa: E402

ROUNDS = 7
WIDTHS = (1, 2, 4, 8, 16)
BLOCKS = (256, 512, 1024)
DEPTHS = (2,)  # shared-memory buffers a block cycles through (--depths)
SHARED_PER_SM = 233472
SHARED_PER_BLOCK = 232448
STATIC_SHARED = 1024 + 1024  # the hardware's reservation a block and the kernel's own (under 1 KiB)


def build(directory: Path, depths=DEPTHS) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        for block in BLOCKS:
            for depth in depths:
                out = directory / f"pcluster_c{width}_b{block}_d{depth}.cubin"
                subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", f"-DCLUSTER={width}", f"-DBLOCK={block}",
                                f"-DDEPTH={depth}", "-o", str(out), str(ROOT / "tools" / "dev_pcluster.cu")], check=True)
    print(f"{len(WIDTHS) * len(BLOCKS) * len(depths)} cubins in {directory}")


def variants(rows: int, cols: int, sms: int, depths=DEPTHS):
    """(width, block, depth, blocks an SM, clusters, stride chunks, shared bytes) of every variant that fits."""
    from launchlab.model.fused_cost import cluster_sms
    from launchlab.model.fused_policy import worst_chunks

    found = []
    for width in WIDTHS:
        stride = -(-worst_chunks(rows, cols) // width)
        for depth in depths:
            shared = depth * 16 * stride
            if shared > SHARED_PER_BLOCK:
                continue
            for block in BLOCKS:
                most = min(2048 // block, SHARED_PER_SM // (shared + STATIC_SHARED))
                for per_sm in sorted({1, most}):
                    if per_sm < 1 or per_sm > most:
                        continue
                    clusters = min(max(1, cluster_sms(width, sms) * per_sm // width), rows)
                    found.append((width, block, depth, per_sm, clusters, stride, shared))
    return found


class Launch:
    name = "pcluster"

    def __init__(self, kernel, grid, block, args, shared, y):
        self.kernel, self.grid, self.block, self.args, self.shared, self.y = kernel, grid, block, args, shared, y

    def invoke(self) -> None:
        self.kernel.kernel((self.grid,), (self.block,), self.args, shared_mem=self.shared)

    def poison(self) -> None:
        self.y.fill(float("nan"))


def measure(shapes, cubins: Path, pick_cubins: Path, seed: int, depths=DEPTHS) -> dict:
    import cupy
    import numpy as np

    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.device import identity
    from launchlab.gpu.instruments import ColdL2
    from launchlab.gpu.targets import allow_dynamic_shared
    from launchlab.model import oracles

    backend, device = CupyBackend(), identity()
    stream, sms = backend.stream, device["sm_count"]
    modules = cf.Modules(pick_cubins)
    cold = ColdL2(modules.get_module("instruments", "instruments", {}), device["l2_bytes"], sms, cf.COLD_WAIT_NS)
    kernels = {}
    result = {"device": device["name"], "rounds": ROUNDS, "seed": seed, "shapes": []}
    for rows, cols in shapes:
        record = cf.measure_shape(rows, cols, device, modules, stream, cold, ("plain",), ROUNDS, seed, picks_only=True)
        ceiling = {l2: min(statistics.median(record["copy"][k][l2]) for k in ("memcpy", "vector"))
                   for l2 in ("warm", "cold")}
        pick = record["fused"][0]
        line = {"rows": rows, "cols": cols, "ceiling_us": ceiling, "pick": {
            "tag": pick["tag"], "valid": pick.get("valid"),
            **{l2: statistics.median(pick[l2]) for l2 in ("warm", "cold") if l2 in pick}}, "variants": []}
        x = cupy.random.default_rng(seed).standard_normal((rows, cols), dtype=cupy.float32) * 2.0
        y = cupy.empty_like(x)
        sample = cupy.asarray(cf.check_rows(rows, cols))
        reference = oracles.softmax(x[sample], xp=cupy)
        calls = cf.calls_for(rows, cols)
        for width, block, depth, per_sm, clusters, stride, shared in variants(rows, cols, sms, depths):
            key = (width, block, depth)
            if key not in kernels:
                module = cupy.RawModule(path=str(cubins / f"pcluster_c{width}_b{block}_d{depth}.cubin"))
                kernels[key] = module.get_function("pcluster_softmax")
                if width > 8:
                    attribute = getattr(cupy.cuda.driver, "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 14)
                    cupy.cuda.driver.funcSetAttribute(kernels[key].kernel.ptr, attribute, 1)
            kernel = kernels[key]
            allow_dynamic_shared(kernel, max(shared, 48 * 1024))
            args = (x, y, np.int32(rows), np.int32(cols), np.int32(stride))
            target = Launch(kernel, clusters * width, block, args, shared, y)
            entry = {"cluster": width, "block": block, "depth": depth, "per_sm": per_sm, "clusters": clusters,
                     "shared": shared}
            try:
                checks = []
                for _ in range(2):
                    target.poison()
                    target.invoke()
                    stream.synchronize()
                    finite = bool(cupy.isfinite(y).all())
                    checks.append(finite and oracles.compare(y[sample], reference, oracles.SOFTMAX_TOLERANCE,
                                                             xp=cupy)["passed"])
                    if len(checks) == 1 and checks[0]:
                        entry["warm"] = statistics.median(cf.time_warm(target, stream, calls, ROUNDS))
                        entry["cold"] = statistics.median(cf.time_cold(target, stream, cold, ROUNDS))
                    else:
                        break
                entry["valid"] = all(checks) and len(checks) == 2
            except Exception as error:
                entry["valid"] = False
                entry["error"] = f"{type(error).__name__}: {str(error)[:200]}"
            line["variants"].append(entry)
        best = {l2: min((v for v in line["variants"] if v.get("valid")), key=lambda v: v[l2], default=None)
                for l2 in ("warm", "cold")}
        text = " | ".join(f"{l2} copy {ceiling[l2]:.2f} pick {line['pick'].get(l2, float('nan')) / ceiling[l2]:.3f} "
                          + (f"pc {best[l2][l2] / ceiling[l2]:.3f} (c{best[l2]['cluster']} b{best[l2]['block']} "
                             f"x{best[l2]['per_sm']} d{best[l2]['depth']})" if best[l2] else "pc none")
                          for l2 in ("warm", "cold"))
        invalid = sum(1 for v in line["variants"] if not v.get("valid"))
        print(f"{rows}x{cols} {pick['tag']}: {text} invalid {invalid}/{len(line['variants'])}", flush=True)
        result["shapes"].append(line)
        del x, y
        cupy.get_default_memory_pool().free_all_blocks()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", type=Path, help="only build the probe's cubins into this folder")
    parser.add_argument("--cubins", type=Path)
    parser.add_argument("--pick-cubins", type=Path)
    parser.add_argument("--shapes", default="")
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--depths", default="2", help="buffers a block cycles through, e.g. 2,3,4")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    depths = tuple(int(d) for d in args.depths.split(","))
    if args.build:
        build(args.build, depths)
        return
    if args.out.exists():
        raise SystemExit(f"error: {args.out} exists; give another --out")
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    args.out.write_text(json.dumps(measure(shapes, args.cubins, args.pick_cubins, args.seed, depths), indent=1))


if __name__ == "__main__":
    main()
