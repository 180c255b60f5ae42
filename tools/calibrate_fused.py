"""Times every configuration the fused launch policy considers (chapters/fusion/plans.candidates) on a
CALIBRATION plane of shapes, warm and cold, beside the copy ceiling, and writes the measurements as JSON: the data
model/fused_cost.py's constants are fitted on (never the chapter's own plane, which has another seed).

    PYTHONPATH=src python tools/calibrate_fused.py --out calibration.json [--points 96] [--seed 4851]
        [--modes plain,rms] [--rounds 5] [--cubins DIR] [--budget-s 150] [--shapes 1x1,65536x1]

Development protocol, short on purpose (the chapter's own protocol is the frozen one): per shape one input matrix
(normal, seeded); per configuration and mode the output is poisoned (NaN), computed once and checked: every
element finite, and up to CHECK_ROWS rows (at most CHECK_ELEMENTS elements) against the float64 oracle. Then
  warm: a CUDA graph of `calls` back-to-back calls (as many as move about 256 MiB, at most 32), replayed once to
        warm up and `rounds` times between events; per call = the median replay / calls;
  cold: `rounds` times an L2 flush (a read of twice the L2) and a GPU wait, then one call between events; median.
The copy ceiling at the shape is the same for cudaMemcpyAsync and for the chapter's float4 copy kernel (kernels/copy.cu,
chapters/fusion/copy_kernel.py; its figures keep the key "vector", which tools/fused_fit.py reads).
`--libraries` (default cudnn,torch,triton; "" for none) times the chapter's library softmaxes
(chapters/fusion/baselines.py) the same way, each checked against the oracle first: the calibration plane then
shows where a library beats the candidates, without looking at the chapter's plane.
`--cubins DIR` loads prebuilt sm_90 modules (DIR/<module>.cubin, built by --build-cubins here with nvcc) instead of
compiling each with NVRTC on the GPU machine; a module missing there is compiled with NVRTC.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from launchlab.chapters.fusion import LIBRARIES, copy_kernel, plans  # noqa: E402
from launchlab.model import fused_cost, fused_policy  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fused_fit import fit_file, load_calibration, policy_table, report  # noqa: E402

CHECK_ROWS = 64
CHECK_ELEMENTS = 1 << 21
BYTES_PER_REPLAY = 1 << 28
MAX_CALLS = 32
COLD_WAIT_NS = 60_000
EDGE_SHAPES = ((1, 1), (1, 2), (1, 3), (5, 1), (1, 1 << 21), (65536, 1), (3, 1 << 21), (7, 3), (2, 509), (2, 510),
               (257, 1025), (1000, 4097), (33, 99999), (4099, 17), (1823, 781), (64, 1 << 20), (5, 8001))
H200 = {"sm_count": 132, "compute_capability": "9.0", "shared_bytes_per_block_optin": 232448}


def library_names(text: str) -> tuple[str, ...]:
    """The --libraries list: names among LIBRARIES, comma-separated (empty: none)."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in LIBRARIES]
    if unknown:
        raise SystemExit(f"--libraries: unknown {', '.join(unknown)}; known: {', '.join(LIBRARIES)}")
    return names


def offer_groups(text: str) -> frozenset:
    """The --offer list: names among plans.CALIBRATION_ONLY, comma-separated (empty: none)."""
    names = frozenset(name.strip() for name in text.split(",") if name.strip())
    unknown = sorted(names - plans.CALIBRATION_ONLY)
    if unknown:
        raise SystemExit(f"--offer: unknown {', '.join(unknown)}; calibration-only groups: "
                         f"{', '.join(sorted(plans.CALIBRATION_ONLY))}")
    return names


def calls_for(rows: int, cols: int) -> int:
    calls = max(1, BYTES_PER_REPLAY // (8 * rows * cols))
    return min(MAX_CALLS, 1 << (calls.bit_length() - 1))


def configurations(rows: int, cols: int, device: dict, picks_only: bool = False) -> list[dict]:
    """The plans timed at a shape: every candidate, or only the policy's pick (with its predictions)."""
    return [plans.fused_plan(rows, cols, device)] if picks_only else plans.candidates(rows, cols, device, every_build=True)


def builds(shapes, device, picks_only: bool = False) -> dict:
    """{module: (family, defines)} of every configuration of every shape, plus the instruments and the copy kernel."""
    found = {"instruments": ("instruments", {}), copy_kernel.MODULE: (copy_kernel.FAMILY, copy_kernel.DEFINES)}
    for rows, cols in shapes:
        for plan in configurations(rows, cols, device, picks_only):
            found[plan["module"]] = (plan["family"], plan["defines"])
    return found


def build_cubins(shapes, device, directory: Path, jobs: int = 16, picks_only: bool = False) -> None:
    """Every module as an sm_90 cubin, built here with nvcc (parallel), from the expanded source NVRTC would see."""
    from launchlab.gpu import build

    directory.mkdir(parents=True, exist_ok=True)

    def one(item):
        label, (family, defines) = item
        source = directory / f"{label}.cu"
        source.write_text(build.expand_source(build.KERNEL_DIR / f"{family}.cu"))
        command = ["nvcc", *build.compile_options(defines, arch="sm_90"), "-cubin", "-o",
                   str(directory / f"{label}.cubin"), str(source)]
        result = subprocess.run(command, capture_output=True, text=True)
        source.unlink()
        if result.returncode:
            raise RuntimeError(f"{label}: {result.stderr}")
        return label

    with ThreadPoolExecutor(jobs) as pool:
        done = list(pool.map(one, builds(shapes, device, picks_only).items()))
    (directory / "modules.json").write_text(json.dumps(builds(shapes, device, picks_only), indent=1, sort_keys=True))
    print(f"{len(done)} cubins in {directory}")


# ---------------------------------------------------------------- GPU
def one_kernel(label: str, family: str) -> str:
    """A kernel a module of this label and family holds (a loaded cubin is checked by looking it up)."""
    if family in ("fused_softmax", plans.REGISTERS_FAMILY):
        return plans.plan_kernels({"design": "row", "family": family})[0]
    if family == copy_kernel.FAMILY:
        return copy_kernel.KERNELS[0]
    if family == "instruments":
        return "gpu_wait"
    if family == plans.NARROW_FULL_FAMILY:
        return fused_policy.KERNELS["narrow"]["plain"]
    design = next(d for d in ("narrow", "cluster", "split") if f"_{d}_" in label)
    return fused_policy.KERNELS[design]["plain"]


class Modules(dict):
    """{module label: BuiltModule}, loaded from a prebuilt cubin where there is one, else compiled with NVRTC."""

    def __init__(self, cubins: Path | None):
        super().__init__()
        self.cubins = cubins
        self.compile_s = 0.0

    def get_module(self, label: str, family: str, defines: dict):
        import cupy

        from launchlab.gpu import build

        if label not in self:
            start = time.perf_counter()
            path = self.cubins / f"{label}.cubin" if self.cubins else None
            loaded = None
            if path is not None and path.exists():
                try:
                    module = cupy.RawModule(path=str(path))
                    module.get_function(one_kernel(label, family))
                    loaded = build.BuiltModule(family, build.compile_options(defines, arch="sm_90"), "", module)
                except Exception as error:  # a cubin this driver refuses: compiled with NVRTC instead
                    print(f"cubin {label} refused ({error}); NVRTC instead", flush=True)
            self[label] = loaded or build.load_module(family, defines)
            self.compile_s += time.perf_counter() - start
        return self[label]


def time_warm(target, stream, calls: int, rounds: int) -> list[float]:
    """Per-call device time of each of `rounds` replays of a graph of `calls` calls."""
    import cupy

    from launchlab.gpu.capture import GraphReplay
    from launchlab.gpu.targets import Repeated

    replay = GraphReplay(Repeated(target, calls), stream)
    replay.invoke()
    events = []
    for _ in range(rounds):
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        replay.invoke()
        end.record(stream)
        events.append((start, end))
    stream.synchronize()
    return [round(1000.0 * cupy.cuda.get_elapsed_time(a, b) / calls, 4) for a, b in events]


def time_cold(target, stream, cold, rounds: int) -> list[float]:
    import cupy

    events = []
    for _ in range(rounds):
        cold.flush()
        start, end = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        target.invoke()
        end.record(stream)
        events.append((start, end))
    stream.synchronize()
    return [round(1000.0 * cupy.cuda.get_elapsed_time(a, b), 4) for a, b in events]


def resources(target) -> dict:
    """The kernel's registers per thread and resident blocks per SM at the launch's block and shared memory."""
    from launchlab.gpu.targets import resident_blocks_per_sm

    found = {"registers": int(target.kernel.attributes["num_regs"]), "block": int(target.block),
             "shared_bytes": int(target.shared_bytes)}
    try:
        found["resident_per_sm"] = resident_blocks_per_sm(target.kernel, target.block, target.shared_bytes)
    except Exception as error:  # the occupancy API may refuse a kernel with compile-time cluster dimensions
        found["resident_per_sm"] = None
        found["occupancy_error"] = str(error)[:100]
    return found


def check_rows(rows: int, cols: int):
    """Row indices checked against the oracle: evenly spaced, first and last included."""
    import numpy as np

    count = max(1, min(rows, CHECK_ROWS, CHECK_ELEMENTS // cols))
    return np.unique(np.linspace(0, rows - 1, count).round().astype(np.int64))


def measure_library(name: str, x, stream, cold, calls: int, rounds: int, sample, reference) -> dict:
    """A library's plain softmax at the shape: why it is unavailable, or its check (output poisoned first) and
    times, and whether it was still valid after timing."""
    import cupy

    from launchlab.chapters.fusion.baselines import make_baseline
    from launchlab.model import oracles

    target, reason = make_baseline(name, x, stream)
    if target is None:
        return {"unavailable": reason}

    def check() -> bool:
        target.poison()
        target.invoke()
        stream.synchronize()
        return bool(cupy.isfinite(target.y).all()) and oracles.compare(
            target.y[sample], reference, oracles.SOFTMAX_TOLERANCE, xp=cupy)["passed"]

    try:
        found = {"valid": check()}
        if found["valid"] and rounds:
            found["warm"] = time_warm(target, stream, calls, rounds)
            found["cold"] = time_cold(target, stream, cold, rounds)
            found["valid_after"] = check()
        return found
    except Exception as error:  # a library that fails at this shape is recorded with the error, not timed
        return {"unavailable": f"{type(error).__name__}: {str(error)[:200]}"}


def measure_shape(rows, cols, device, modules, stream, cold, modes, rounds, seed, picks_only=False,
                  libraries=()) -> dict:
    import cupy

    from launchlab.chapters.fusion.targets import make_fused
    from launchlab.gpu import fused_designs
    from launchlab.gpu.targets import DeviceCopy
    from launchlab.model import oracles

    x = cupy.random.default_rng(seed).standard_normal((rows, cols), dtype=cupy.float32) * 2.0
    sample = cupy.asarray(check_rows(rows, cols))
    references = {"plain": (oracles.softmax(x[sample], xp=cupy), oracles.SOFTMAX_TOLERANCE),
                  "rms": (oracles.rms_softmax(x[sample], xp=cupy), oracles.RMS_SOFTMAX_TOLERANCE)}
    calls = calls_for(rows, cols)
    record = {"rows": rows, "cols": cols, "calls": calls, "copy": {}, "fused": []}
    copy_module = modules.get_module(copy_kernel.MODULE, copy_kernel.FAMILY, copy_kernel.DEFINES)
    copies = {"memcpy": DeviceCopy(x), "vector": copy_kernel.make(copy_module, x)}
    for name, target in copies.items():
        target.invoke()
        stream.synchronize()
        exact = bool((target.y == x).all())
        record["copy"][name] = {"exact": exact, "warm": time_warm(target, stream, calls, rounds) if rounds else [],
                                "cold": time_cold(target, stream, cold, rounds) if rounds else []}
    del copies
    for plan in configurations(rows, cols, device, picks_only):
        module = modules.get_module(plan["module"], plan["family"], plan["defines"])
        for mode in modes:
            entry = {"tag": plan["tag"], "design": plan["design"], "mode": mode, "defines": plan["defines"],
                     "options": plan["options"], "module": plan["module"], "tier": plan.get("tier"),
                     "shared_bytes": plan.get("shared_bytes"), "predicted_us": plan.get("predicted_us", {}).get(plan["tag"])}
            try:
                if plan["options"]:
                    target = fused_designs.make_target(plan["design"], module, rows, cols, mode, x, **plan["options"])
                else:
                    target = make_fused({plan["module"]: module}, plan, rows, cols, mode, x)
                entry["resources"] = resources(target)
                target.poison()
                target.invoke()
                stream.synchronize()
                y = target.y
                finite = bool(cupy.isfinite(y).all())
                reference, tolerance = references[mode]
                result = oracles.compare(y[sample], reference, tolerance, xp=cupy)
                entry["valid"] = finite and result["passed"]
                entry["check"] = {"finite": finite, "rows": int(sample.size), "failing": result["failing_elements"],
                                  "max_abs_error": result["max_abs_error"]}
                if entry["valid"] and rounds:  # no rounds: validation only
                    entry["warm"] = time_warm(target, stream, calls, rounds)
                    entry["cold"] = time_cold(target, stream, cold, rounds)
                    target.poison()
                    target.invoke()
                    stream.synchronize()
                    entry["valid_after"] = bool(oracles.compare(target.y[sample], reference, tolerance, xp=cupy)["passed"])
                describe = getattr(target, "describe", None)
                entry["launch"] = describe() if describe else {"grid": target.rows, "block": target.block}
                del target
            except Exception as error:  # a configuration the GPU refuses is recorded, not timed
                entry["valid"] = False
                entry["error"] = f"{type(error).__name__}: {str(error)[:200]}"
            record["fused"].append(entry)
    if libraries:
        record["libraries"] = {name: measure_library(name, x, stream, cold, calls, rounds, sample,
                                                     references["plain"][0]) for name in libraries}
    del x
    cupy.get_default_memory_pool().free_all_blocks()
    return record


def summary_line(record: dict) -> str:
    if not any(v["warm"] for v in record["copy"].values()):  # validation only
        bad = [e["tag"] + "/" + e["mode"] for e in record["fused"] if not e.get("valid")]
        return f"{record['rows']:>6}x{record['cols']:<8} validated {len(record['fused'])}" + (f" | INVALID {bad}" if bad else "")
    copy = {l2: min(statistics.median(record["copy"][k][l2]) for k in record["copy"]) for l2 in ("warm", "cold")}
    best = {}
    for entry in record["fused"]:
        if entry.get("valid") and entry["mode"] == "plain":
            for l2 in ("warm", "cold"):
                t = statistics.median(entry[l2])
                if l2 not in best or t < best[l2][0]:
                    best[l2] = (t, entry["tag"])
    bad = [e["tag"] + "/" + e["mode"] for e in record["fused"] if not e.get("valid") or e.get("valid_after") is False]
    bad += [name for name, lib in record.get("libraries", {}).items() if lib.get("valid") is False
            or lib.get("valid_after") is False]
    text = f"{record['rows']:>6}x{record['cols']:<8} copy {copy['warm']:8.2f} {copy['cold']:8.2f}"
    for l2 in ("warm", "cold"):
        if l2 in best:
            text += f" | {l2} {best[l2][0]:8.2f} ({best[l2][0] / copy[l2]:.2f}) {best[l2][1]}"
    timed = {name: statistics.median(lib["warm"]) for name, lib in record.get("libraries", {}).items() if lib.get("warm")}
    if timed:
        text += " | libraries warm " + " ".join(f"{name} {us:.2f}" for name, us in timed.items())
    return text + (f" | INVALID {bad}" if bad else "")


def calibrate(shapes, modes, rounds, cubins, out: Path, budget_s: float, seed: int, plane_seed, picks_only=False,
              libraries=()) -> None:
    import cupy

    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.device import identity
    from launchlab.gpu.instruments import KERNELS, ColdL2

    started = time.perf_counter()
    backend, device = CupyBackend(), identity()
    modules = Modules(cubins)
    for label, (family, defines) in builds(shapes, device, picks_only).items():
        modules.get_module(label, family, defines)
    print(f"{len(modules)} modules loaded in {modules.compile_s:.1f} s", flush=True)
    cold = ColdL2(modules["instruments"], device["l2_bytes"], device["sm_count"], COLD_WAIT_NS)
    result = {"device": device, "protocol": {"rounds": rounds, "bytes_per_replay": BYTES_PER_REPLAY,
              "max_calls": MAX_CALLS, "cold_wait_ns": COLD_WAIT_NS, "check_rows": CHECK_ROWS},
              "modes": list(modes), "shapes": [], "complete": False, "load_s": modules.compile_s,
              "plane_seed": plane_seed, "picks_only": picks_only, "libraries": list(libraries)}
    for index, (rows, cols) in enumerate(shapes):
        if time.perf_counter() - started > budget_s:
            print(f"budget of {budget_s} s reached after {index} shapes", flush=True)
            break
        shape_start = time.perf_counter()
        try:
            record = measure_shape(rows, cols, device, modules, backend.stream, cold, modes, rounds, seed + index,
                                   picks_only, libraries)
        except Exception:
            import traceback

            traceback.print_exc()
            result.setdefault("failed_shapes", []).append([rows, cols, traceback.format_exc()[-2000:]])
            cupy.get_default_memory_pool().free_all_blocks()
            continue
        record["wall_s"] = time.perf_counter() - shape_start
        result["shapes"].append(record)
        print(summary_line(record), flush=True)
        out.write_text(json.dumps(result))
    else:
        result["complete"] = True
    result["elapsed_s"] = time.perf_counter() - started
    out.write_text(json.dumps(result))
    print(f"done in {result['elapsed_s']:.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("calibration.json"))
    parser.add_argument("--points", type=int, default=fused_cost.CALIBRATION_POINTS)
    parser.add_argument("--seed", type=int, default=fused_cost.CALIBRATION_SEED)
    parser.add_argument("--shapes", help="ROWSxCOLS,... instead of the calibration plane")
    parser.add_argument("--edges", action="store_true", help="add the edge shapes (EDGE_SHAPES) before the plane")
    parser.add_argument("--modes", default="plain,rms")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds (0: validation only)")
    parser.add_argument("--cubins", type=Path)
    parser.add_argument("--build-cubins", type=Path, help="only build every module as an sm_90 cubin into this folder")
    parser.add_argument("--budget-s", type=float, default=1e9)
    parser.add_argument("--picks-only", action="store_true", help="time only the policy's pick at each shape")
    parser.add_argument("--libraries", default=",".join(LIBRARIES),
                        help="library softmaxes to time beside the candidates (\"\" for none)")
    parser.add_argument("--fit", type=Path, help="only fit the model on this calibration file and print the result")
    parser.add_argument("--fit-out", type=Path, help="with --fit: write the fit (constants, errors) here as JSON")
    parser.add_argument("--plane", type=Path, help="with --fit-out: the calibration file whose plane the fit's figures "
                        "are reported on (default: the fitted one; a later calibration times builds it lacks)")
    parser.add_argument("--report", type=Path, help="only report a calibration file against the fitted model")
    parser.add_argument("--offer", default="", help="with --fit or --report: calibration-only groups of builds "
                        f"({', '.join(sorted(plans.CALIBRATION_ONLY))}) the policy offers in this run, comma-separated "
                        "(with --fit, the plane is also reported under the new fit)")
    args = parser.parse_args()
    plans.CALIBRATION_ONLY = plans.CALIBRATION_ONLY - offer_groups(args.offer)
    if args.fit:
        fitted = fit_file(args.fit)
        print(json.dumps(fitted, indent=1))
        # the constants as FITTED holds them (6 significant digits): near ties between candidates follow the digits
        printed = fused_cost.Constants(**{k: float(f"{v:.6g}") for k, v in fitted["constants"].items()})
        if args.fit_out:
            constants = printed
            device = load_calibration(args.fit)["device"]
            fitted["policy"] = policy_table(device, constants)
            plane = args.plane or args.fit
            fitted["calibration_plane_file"] = plane.name
            fitted["calibration_plane"] = report(plane, constants)
            args.fit_out.write_text(json.dumps(fitted, indent=1, sort_keys=True) + "\n")
        elif args.offer:
            report(args.fit, printed)
        constants = ", ".join(f"{k}={v:.6g}" for k, v in fitted["constants"].items())
        print(f'MODEL_VERSION = f"{{MODEL_STRUCTURE}} {fitted["calibration_sha256_12"]}"\nFITTED = Constants({constants})')
        return
    if args.report:
        report(args.report)
        return
    if args.shapes:
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    else:
        shapes = fused_cost.draw_plane(args.seed, args.points)
    shapes = (list(EDGE_SHAPES) if args.edges else []) + list(shapes)  # the edges first: a budget cut spares them
    libraries = library_names(args.libraries)
    if args.build_cubins:
        build_cubins(shapes, H200, args.build_cubins, picks_only=args.picks_only)
        return
    if args.out.exists():  # a calibration is never overwritten: it may be the one the model was fitted on
        raise SystemExit(f"error: {args.out} exists; give another --out")
    calibrate(shapes, args.modes.split(","), args.rounds, args.cubins, args.out, args.budget_s, args.seed,
              None if args.shapes else args.seed, args.picks_only, libraries)


if __name__ == "__main__":
    main()
