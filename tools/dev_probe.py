"""The measuring loop of the development probes that set a new fused design against the policy's pick
(tools/dev_pcluster.py, tools/dev_gpipe.py).

At each shape: the copy ceiling and the fused launch policy's pick (calibrate_fused.measure_shape, plain mode), then
every variant the probe offers there. A variant's output is poisoned, computed and checked against the float64
oracle on a sample of rows (every element finite) before it is timed, warm (a CUDA graph of many calls) and cold
(after an L2 flush), and checked again after. A variant that fails either check, or raises, is kept with
valid: false and is never timed again.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

import calibrate_fused as cf  # noqa: E402

ROUNDS = 7
SHARED_PER_SM = 233472  # an H200 SM's shared memory
SHARED_PER_BLOCK = 232448  # the most one block may opt in to


class Bench:
    """What the probes share: the GPU's stream, an L2 flush, modules (from prebuilt cubins in `cubins` where given,
    else NVRTC), and per-call device time warm (the median of ROUNDS replays of a graph of many calls) and cold (the
    median of ROUNDS calls, each after an L2 flush)."""

    def __init__(self, cubins: Path | None = None):
        from launchlab.chapters.fusion import copy_kernel
        from launchlab.gpu.backend import CupyBackend
        from launchlab.gpu.device import identity
        from launchlab.gpu.instruments import ColdL2

        self.device = identity()
        self.stream, self.sms = CupyBackend().stream, self.device["sm_count"]
        self.modules = modules = cf.Modules(cubins)
        self.cold = ColdL2(modules.get_module("instruments", "instruments", {}), self.device["l2_bytes"], self.sms,
                           cf.COLD_WAIT_NS)
        self.copy_module = modules.get_module(copy_kernel.MODULE, copy_kernel.FAMILY, copy_kernel.DEFINES)

    def time(self, target, calls: int) -> dict:
        return {"warm": statistics.median(cf.time_warm(target, self.stream, calls, ROUNDS)),
                "cold": statistics.median(cf.time_cold(target, self.stream, self.cold, ROUNDS))}

    def copies(self, x, calls: int) -> dict:
        """{"memcpy", "copy_vec4": times} of copying x (cudaMemcpyAsync, the float4 copy kernel)."""
        from launchlab.chapters.fusion import copy_kernel
        from launchlab.gpu.targets import DeviceCopy

        flat = x.reshape(1, -1)
        return {"memcpy": self.time(DeviceCopy(flat), calls),
                "copy_vec4": self.time(copy_kernel.make(self.copy_module, flat), calls)}


class Launch:
    """One launch of a probe kernel as a target for calibrate_fused's timers."""

    name = "probe"

    def __init__(self, kernel, grid, block, args, shared, y):
        self.kernel, self.grid, self.block, self.args, self.shared, self.y = kernel, grid, block, args, shared, y

    def invoke(self) -> None:
        self.kernel.kernel((self.grid,), (self.block,), self.args, shared_mem=self.shared)

    def poison(self) -> None:
        self.y.fill(float("nan"))


def resident_launch(entry: dict, kernel, grid: int, block: int, per_sm: int, shared: int, args, y):
    """(entry, Launch) where the GPU holds `per_sm` blocks of the kernel an SM at once (the occupancy API), else
    (entry marked not run, with the reason, None): a grid whose blocks wait for one another and cannot all be
    resident could wait for itself forever."""
    import cupy

    resident = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, block, shared)
    if resident < per_sm:
        entry.update(valid=False, error=f"only {resident} blocks an SM are resident")
        return entry, None
    return entry, Launch(kernel, grid, block, args, shared, y)


def save_json(path: Path, result: dict) -> None:
    """Write `result` to `path` whole or not at all (a run cut short by a time limit keeps its last whole shape)."""
    partial = Path(path).with_name(Path(path).name + ".partial")
    partial.write_text(json.dumps(result, indent=1))
    os.replace(partial, path)


def probe(shapes, pick_cubins: Path | None, seed: int, targets_at, label, out: Path | None = None) -> dict:
    """{device, rounds, seed, shapes: [{rows, cols, ceiling_us, pick, variants}]}.

    targets_at(rows, cols, x, y, sms) yields (entry, Launch) for each variant at a shape (entry: the variant's
    parameters, to which valid, warm, cold or error are added), or (entry, None) for one it could not run, its
    entry saying why; label(entry) names a variant in the printed summary line. With `out`, the result so far is
    saved there after every shape."""
    import cupy

    from launchlab.model import oracles

    bench = Bench(pick_cubins)
    device, stream, sms, cold = bench.device, bench.stream, bench.sms, bench.cold
    result = {"device": device["name"], "rounds": ROUNDS, "seed": seed, "shapes": []}
    for rows, cols in shapes:
        record = cf.measure_shape(rows, cols, device, bench.modules, stream, cold, ("plain",), ROUNDS, seed, picks_only=True)
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
        for entry, target in targets_at(rows, cols, x, y, sms):
            if target is None:  # not run; the entry says why
                line["variants"].append(entry)
                continue
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
                        entry.update(bench.time(target, calls))
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
                          + (f"probe {best[l2][l2] / ceiling[l2]:.3f} ({label(best[l2])})" if best[l2]
                             else "probe none")
                          for l2 in ("warm", "cold"))
        invalid = sum(1 for v in line["variants"] if not v.get("valid"))
        print(f"{rows}x{cols} {pick['tag']}: {text} invalid {invalid}/{len(line['variants'])}", flush=True)
        result["shapes"].append(line)
        if out is not None:
            save_json(out, result)
        del x, y
        cupy.get_default_memory_pool().free_all_blocks()
    return result


def command_line(doc: str, build, targets, label, default_shapes=None, extra=None) -> None:
    """The probes' command line: --build DIR only builds their cubins (build(args)); otherwise --cubins,
    --pick-cubins, --shapes (default_shapes where not given), --seed and --out run `probe` with targets(args) and
    save the result to --out, which must not exist yet. extra(parser) adds a probe's own options."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--build", type=Path, help="only build the probe's cubins into this folder")
    parser.add_argument("--cubins", type=Path)
    parser.add_argument("--pick-cubins", type=Path)
    parser.add_argument("--shapes", default=None, help="ROWSxCOLS, comma separated")
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--out", type=Path)
    if extra is not None:
        extra(parser)
    args = parser.parse_args()
    if args.build:
        build(args)
        return
    if args.out is None or args.cubins is None:
        raise SystemExit("error: give --cubins and --out (or --build DIR)")
    if args.out.exists():
        raise SystemExit(f"error: {args.out} exists; give another --out")
    if args.shapes is None and default_shapes is None:
        raise SystemExit("error: give --shapes")
    shapes = default_shapes if args.shapes is None else [tuple(int(v) for v in s.split("x"))
                                                          for s in args.shapes.split(",")]
    save_json(args.out, probe(shapes, args.pick_cubins, args.seed, targets(args), label, args.out))
