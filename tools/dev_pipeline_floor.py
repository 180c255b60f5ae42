"""What a pipelined read-wait-write design costs by itself (a development probe, kernels in
tools/dev_pipeline_floor.cu): at shapes of the fusion plane's bandwidth regime, device time per call of
`pipelined_d<DEPTH>` against the copy ceiling (the faster of cudaMemcpyAsync and the float4 copy kernel), warm (a
CUDA graph of many calls) and cold (after an L2 flush).

A resident grid of `b` blocks an SM is cut into groups of k blocks; each group walks its rows, keeping DEPTH rows'
pieces in shared memory, and writes a row only after all k blocks hold their pieces of it. Nothing is reduced, so a
fused design of the same grid, groups and depth cannot do better. Every output is checked equal to x before it is
timed.

    PYTHONPATH=src python tools/dev_pipeline_floor.py --cubin pipeline_floor.cubin --out pipeline_floor.json

(the cubin: nvcc -arch=sm_90 -std=c++17 -cubin -o pipeline_floor.cubin tools/dev_pipeline_floor.cu)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

import calibrate_fused as cf  # noqa: E402
from dev_phase_floor import Probe, fits, over_copy  # noqa: E402
from dev_probe import ROUNDS, Bench, save_json  # noqa: E402

# The fusion plane's worst bandwidth-regime shapes (rows, row length in floats; lengths rounded up to whole chunks).
SHAPES = ((47, 126781), (159, 39440), (12, 1172219), (6, 1546367), (17, 520106), (275, 23913), (30, 136831),
          (98, 102461), (390, 171713))
GRIDS = ((1, 1024), (2, 512))  # blocks an SM, threads a block
GROUPS_PER_GRID = (1, 4, 11, 33)  # groups of blocks that wait for one another (those that divide the grid)
DEPTHS = (1, 2, 4, 8)


def variants(units: int, length: int, sms: int):
    """(name, blocks an SM, threads, k, depth, chunks a piece) of every variant whose slots fit."""
    for per_sm, threads in GRIDS:
        grid = per_sm * sms
        for groups in GROUPS_PER_GRID:
            if grid % groups:
                continue
            k = grid // groups
            per = -(-length // k)
            for depth in DEPTHS:
                if depth > 1 and groups >= units:
                    continue  # every group holds one row at most: no row to load ahead
                if fits(depth * per, per_sm):
                    yield f"b{per_sm}_k{k}_d{depth}", per_sm, threads, k, depth, per


def measure(cubin: Path, shapes, out: Path | None = None) -> dict:
    """{device, rounds, shapes: [{rows, cols, ceiling_us, us, over_copy}]}, saved to `out` after every shape."""
    import cupy
    import numpy as np

    from launchlab.gpu.targets import allow_dynamic_shared

    bench = Bench()
    stream, sms = bench.stream, bench.sms
    module = cupy.RawModule(path=str(cubin))
    result = {"device": bench.device, "rounds": ROUNDS, "shapes": []}
    for rows, cols in shapes:
        length = -(-cols // 4)
        x = cupy.random.default_rng(rows * cols).standard_normal(rows * length * 4, dtype=cupy.float32)
        y = cupy.empty_like(x)
        counters = cupy.zeros(rows, dtype=cupy.uint32)
        calls = cf.calls_for(rows, length * 4)
        times = bench.copies(x, calls)
        for name, per_sm, threads, k, depth, per in variants(rows, length, sms):
            kernel = module.get_function(f"pipelined_d{depth}")
            shared = 16 * depth * per
            allow_dynamic_shared(kernel, max(shared, 48 * 1024))
            grid = per_sm * sms
            args = (x, y, np.int32(rows), np.int32(length), np.int32(k), counters)

            def launch(kernel=kernel, grid=grid, threads=threads, args=args, shared=shared):
                kernel((grid,), (threads,), args, shared_mem=shared)

            counters.fill(0)  # a counter's rounds are k arrivals long: a new k starts from zero
            y.fill(0)
            launch()
            stream.synchronize()
            if not bool((y == x).all()):
                raise RuntimeError(f"{name} at {rows}x{cols} did not copy x")
            times[name] = bench.time(Probe(launch), calls)
        ceiling, over = over_copy(times)
        best = {l2: min((v[l2], k) for k, v in over.items() if k.startswith("b")) for l2 in ("warm", "cold")}
        result["shapes"].append({"rows": rows, "cols": cols, "ceiling_us": ceiling, "us": times, "over_copy": over})
        if out is not None:
            save_json(out, result)
        print(f"{rows}x{cols} copy {ceiling['warm']:.2f} / {ceiling['cold']:.2f} us | best warm {best['warm'][1]} "
              f"{best['warm'][0]:.3f} | best cold {best['cold'][1]} {best['cold'][0]:.3f}", flush=True)
        for l2 in ("warm", "cold"):
            print(f"  {l2}: " + " ".join(f"{k} {v[l2]:.2f}" for k, v in over.items() if k.startswith("b")),
                  flush=True)
        del x, y
        cupy.get_default_memory_pool().free_all_blocks()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cubin", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--shapes", default=None, help="rows x cols, comma separated (default: the worst points)")
    args = parser.parse_args()
    if args.out.exists():
        raise SystemExit(f"error: {args.out} exists; give another --out")
    shapes = SHAPES if args.shapes is None else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    save_json(args.out, measure(args.cubin, shapes, args.out))


if __name__ == "__main__":
    main()
