"""What a fused design's read-then-write structure costs by itself (a development probe, kernels in
tools/dev_phase_floor.cu): per size of x, device time per call against the copy ceiling (the faster of
cudaMemcpyAsync and the float4 copy kernel), warm (a CUDA graph of many calls) and cold (after an L2 flush), of

  read_only, write_only  x read (summed) or y written by a grid of 4 blocks an SM, to set each phase against the copy;
  phased_local_<b>       one wave of `b` blocks an SM: each block copies its part of x into shared memory, waits for
                         its own loads, then writes them to y (no block waits for another);
  phased_grid_<b>        the same with a grid-wide barrier between the phases (a cooperative launch): every block waits
                         for the slowest block's reads, as the blocks of a row spread over the whole GPU must before
                         they know its statistics.

Neither phased kernel reduces or exchanges anything, so a fused design of the same shape of grid cannot do better.
Every output is checked equal to x before it is timed.

    PYTHONPATH=src python tools/dev_phase_floor.py --cubin phase_floor.cubin --out phase_floor.json [--sizes-mb 4,8,16,24,28]

(the cubin: nvcc -arch=sm_90 -std=c++17 -cubin -o phase_floor.cubin tools/dev_phase_floor.cu)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

import calibrate_fused as cf  # noqa: E402
from dev_probe import ROUNDS, Bench  # noqa: E402

SHARED_PER_SM = 232448  # the H200's opt-in shared memory per block, which is also what an SM holds for them
READ_WRITE_GRID = (4, 512)  # blocks an SM and threads a block of read_only and write_only
PHASED = ((1, 1024), (2, 512))  # blocks an SM and threads a block of the phased kernels
GROUP_GRID = (2, 512)  # blocks an SM and threads a block of phased_group
GROUPS = (1, 2, 8, 24, 66, 264)  # blocks that wait for one another (those that divide the grid are timed)


class Probe:
    """A launch as a target for calibrate_fused's timers."""

    name = "probe"

    def __init__(self, launch):
        self.launch = launch

    def invoke(self) -> None:
        self.launch()

    def poison(self) -> None:
        pass


def fits(per: int, per_sm: int) -> bool:
    """Whether `per` chunks of 16 bytes fit the shared memory of one of `per_sm` blocks an SM (1 KiB left each)."""
    return 16 * per <= SHARED_PER_SM // per_sm - 1024


def launcher(kernel, grid: int, threads: int, args, shared: int, cooperative: bool):
    """One launch of `kernel` as a closure (cooperative: the driver refuses a grid that cannot all be resident)."""
    def launch() -> None:
        kernel.kernel((grid,), (threads,), args, shared_mem=shared, enable_cooperative_groups=cooperative)
    return launch


def over_copy(times: dict) -> tuple[dict, dict]:
    """The copy ceiling (the faster copy, warm and cold) and every entry of `times` over it."""
    ceiling = {l2: min(times["memcpy"][l2], times["copy_vec4"][l2]) for l2 in ("warm", "cold")}
    return ceiling, {k: {l2: v[l2] / ceiling[l2] for l2 in v} for k, v in times.items()}


def measure(cubin: Path, sizes_mb) -> dict:
    import cupy
    import numpy as np

    from launchlab.gpu.targets import allow_dynamic_shared

    bench = Bench()
    stream, sms = bench.stream, bench.sms
    module = cupy.RawModule(path=str(cubin))
    result = {"device": bench.device, "rounds": ROUNDS, "sizes": {}}
    for mb in sizes_mb:
        n = mb * (1 << 20) // 16  # float4 chunks
        x = cupy.random.default_rng(mb).standard_normal(n * 4, dtype=cupy.float32)
        y, sink = cupy.empty_like(x), cupy.zeros(1, cupy.float32)
        calls = cf.calls_for(1, n * 4)
        times = bench.copies(x, calls)

        def timed(name, target):
            times[name] = bench.time(target, calls)

        per_sm, threads = READ_WRITE_GRID
        read, write = module.get_function("read_only"), module.get_function("write_only")
        timed("read_only", Probe(lambda: read((per_sm * sms,), (threads,), (x, np.int64(n), sink))))
        timed("write_only", Probe(lambda: write((per_sm * sms,), (threads,), (y, np.int64(n)))))

        def checked(name, kernel, grid, threads, args, shared, cooperative=False):
            """`name` timed after one launch whose y must equal x (y zeroed first)."""
            launch = launcher(kernel, grid, threads, args, shared, cooperative)
            y.fill(0)
            launch()
            stream.synchronize()
            if not bool((y == x).all()):
                raise RuntimeError(f"{name} at {mb} MB did not copy x")
            timed(name, Probe(launch))

        for per_sm, threads in PHASED:
            grid = per_sm * sms
            per = -(-n // grid)
            if not fits(per, per_sm):
                continue
            for name in ("phased_local", "phased_grid"):
                kernel = module.get_function(name)
                allow_dynamic_shared(kernel, max(16 * per, 48 * 1024))
                checked(f"{name}_{per_sm}x{threads}", kernel, grid, threads, (x, y, np.int64(n), np.int32(per)),
                        16 * per, cooperative=name == "phased_grid")
        per_sm, threads = GROUP_GRID
        grid = per_sm * sms
        per = -(-n // grid)
        if fits(per, per_sm):
            kernel = module.get_function("phased_group")
            allow_dynamic_shared(kernel, max(16 * per, 48 * 1024))
            counters = cupy.zeros(grid, dtype=cupy.uint32)
            for k in GROUPS:
                if grid % k:
                    continue
                counters.fill(0)  # a counter's rounds are k arrivals long: a new k starts from zero
                checked(f"group{k}", kernel, grid, threads,
                        (x, y, np.int64(n), np.int32(per), np.int32(k), counters), 16 * per)
        ceiling, over = over_copy(times)
        result["sizes"][mb] = {"ceiling_us": ceiling, "us": times, "over_copy": over}
        print(f"{mb} MB copy {ceiling['warm']:.2f} / {ceiling['cold']:.2f} us | "
              + " | ".join(f"{k} {v['warm']:.3f} / {v['cold']:.3f}" for k, v in result["sizes"][mb]["over_copy"].items()),
              flush=True)
        x = y = None  # this size's buffers go before the next size allocates its own
        cupy.get_default_memory_pool().free_all_blocks()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cubin", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sizes-mb", default="4,8,16,24,28")
    args = parser.parse_args()
    if args.out.exists():
        raise SystemExit(f"error: {args.out} exists; give another --out")
    sizes = [int(s) for s in args.sizes_mb.split(",")]
    args.out.write_text(json.dumps(measure(args.cubin, sizes), indent=1))


if __name__ == "__main__":
    main()
