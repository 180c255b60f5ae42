"""Why the fused softmax loses to the libraries on small matrices (the latency regime), and which kernel shape wins
there: per shape, device time per call in a CUDA graph of many calls (warm L2) and after an L2 flush (cold) of the
copy ceiling (cudaMemcpyAsync, the float4 copy kernel), an empty kernel, every candidate of the fused policy
(plans.candidates; built from this tree's kernels and, with --old-kernels, from another kernel folder), the three
libraries, and (unless --no-dev) development variants (tools/dev_small_rows_variants.py) that each change one thing:
scalar, float4 or whole-granule loads, max-then-sum or one online (m, s) reduction, the division, rows per block,
threads per row, the shipped kernels without their launch-time switch or cold tiers. Ends with a summary: fused -
copy (median, p90) and the shapes where fused beats each library, for the best candidate and the policy's pick.

    PYTHONPATH=src python tools/dev_small_rows.py --out dev.json [--old-kernels DIR] [--cubins DIR] [--no-dev]
        [--shapes 1x1,201x6 | --plane-seed S --points 20 --max-x-bytes 4194304] [--seed 777] [--rounds 7]
    PYTHONPATH=src python tools/dev_small_rows.py --build-cubins DIR [--old-kernels DIR] [same shape options]

Every contender's output is poisoned, computed once and compared with the float64 oracle before it is timed; an
invalid one is reported, never timed. Development protocol (median of `rounds`); the chapter's is the frozen one.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

from launchlab.chapters.fusion import plans  # noqa: E402
from dev_small_rows_variants import (FIXED, H200, DevTarget, dev_source, dev_variants, fixed_contenders,  # noqa: E402
                                     fixed_source)

SHAPES = ((1, 1), (1776, 1), (201, 6), (4841, 14), (53, 55), (14, 147), (11, 375), (119, 368), (1, 1073),
          (8, 1496), (4, 2826))
CALLS = 32
LIBRARIES = ("cudnn", "torch", "triton")


# ---------------------------------------------------------------- GPU
def module_label(family_dir: Path, family: str, defines: dict) -> str:
    return f"{family_dir.name}-{family}-" + "_".join(f"{k}{v}" for k, v in sorted(defines.items()))


CUBINS: Path | None = None  # prebuilt modules (--build-cubins), loaded instead of compiling with NVRTC


def load(family_dir: Path, family: str, defines: dict, cache: dict):
    """kernels/<family>.cu from `family_dir` with `defines` (a prebuilt cubin where there is one, else NVRTC), once."""
    import cupy

    from launchlab.gpu import build

    label = module_label(family_dir, family, defines)
    if label not in cache:
        source = build.expand_source(family_dir / f"{family}.cu")
        options = build.compile_options(defines, arch="sm_90")
        cubin = CUBINS / f"{label}.cubin" if CUBINS else None
        if cubin is not None and cubin.exists():
            module = cupy.RawModule(path=str(cubin))
        else:
            print(f"  NVRTC {label}", flush=True)
            module = cupy.RawModule(code=source, options=build.compile_options(defines))
            module.compile()
        cache[label] = build.BuiltModule(family, options, source, module)
    return cache[label]


def needed_modules(shapes, folders) -> dict:
    """{label: (folder, family, defines)} of every module the run loads."""
    from launchlab.chapters.fusion import copy_kernel

    found = {}
    for folder in folders:
        for family, defines in (("instruments", {}), (copy_kernel.FAMILY, copy_kernel.DEFINES)):
            found[module_label(folder, family, defines)] = (folder, family, defines)
        for rows, cols in shapes:
            for plan in plans.candidates(rows, cols, H200):
                found[module_label(folder, plan["family"], plan["defines"])] = (folder, plan["family"], plan["defines"])
    return found


def build_cubins(shapes, folders, directory: Path, dev: bool = True) -> None:
    """Every module the run needs (and the development kernels) as sm_90 cubins, built here with nvcc."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "dev.cu").write_text(dev_source(shapes if dev else []))
    sources = {"dev": (directory / "dev.cu", {})}
    for label in FIXED:
        (directory / f"{label}.cu").write_text(fixed_source(label, folders[0]))
        sources[label] = (directory / f"{label}.cu", FIXED[label][1])
    build_modules(needed_modules(shapes, folders), directory, sources)


def build_modules(modules: dict, directory: Path, sources: dict | None = None) -> None:
    """{label: (folder, family, defines)} (and {label: (source, defines)}) as sm_90 cubins in `directory`."""
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    from launchlab.gpu import build

    directory.mkdir(parents=True, exist_ok=True)
    jobs = dict(sources or {})
    for label, (folder, family, defines) in modules.items():
        source = directory / f"{label}.cu"
        source.write_text(build.expand_source(folder / f"{family}.cu"))
        jobs[label] = (source, defines)

    def one(item):
        label, (source, defines) = item
        command = ["nvcc", *build.compile_options(defines, arch="sm_90"), "-cubin", "-o", str(directory / f"{label}.cubin"),
                   str(source)]
        result = subprocess.run(command, capture_output=True, text=True)
        source.unlink()
        if result.returncode:
            raise RuntimeError(f"{label}: {result.stderr}")

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, jobs.items()))
    print(f"{len(jobs)} cubins in {directory}")


class Timer:
    def __init__(self, stream, cold, rounds):
        self.stream, self.cold, self.rounds = stream, cold, rounds

    def warm(self, target) -> float:
        import cupy

        from launchlab.gpu.capture import GraphReplay
        from launchlab.gpu.targets import Repeated

        replay = GraphReplay(Repeated(target, CALLS), self.stream)
        replay.invoke()
        times = []
        for _ in range(self.rounds):
            a, b = cupy.cuda.Event(), cupy.cuda.Event()
            a.record(self.stream)
            replay.invoke()
            b.record(self.stream)
            b.synchronize()
            times.append(1000.0 * cupy.cuda.get_elapsed_time(a, b) / CALLS)
        return statistics.median(times)

    def cold_time(self, target) -> float:
        import cupy

        times = []
        for _ in range(self.rounds):
            self.cold.flush()
            a, b = cupy.cuda.Event(), cupy.cuda.Event()
            a.record(self.stream)
            target.invoke()
            b.record(self.stream)
            b.synchronize()
            times.append(1000.0 * cupy.cuda.get_elapsed_time(a, b))
        return statistics.median(times)


def contenders(rows, cols, x, stream, dev_modules, old_dir, new_dir, cache, dev=True):
    """[(name, target, mode)] at a shape: the copies, the empty kernel, every candidate of the fused policy built
    from each kernel folder, the libraries and (`dev`) the development variants."""
    from launchlab.chapters.fusion import baselines, copy_kernel
    from launchlab.chapters.fusion.targets import make_fused
    from launchlab.gpu import build
    from launchlab.gpu.targets import DeviceCopy

    found = [("memcpy", DeviceCopy(x), None),
             ("copy4", copy_kernel.make(load(new_dir, copy_kernel.FAMILY, copy_kernel.DEFINES, cache), x), None)]
    empty = DevTarget(dev_modules["dev"], {"name": "dev_empty"}, x, 1, 32)  # one block of one warp
    found.append(("empty", empty, "none"))
    for folder, label in ((old_dir, "old"), (new_dir, "new")):
        if folder is None:
            continue
        for plan in plans.candidates(rows, cols, H200):
            module = load(folder, plan["family"], plan["defines"], cache)
            for mode in ("plain", "rms"):
                target = make_fused({plan["module"]: module}, plan, rows, cols, mode, x)
                found.append((f"{label}:{plan['tag']}/{mode}", target, mode))
    for name in baselines.NAMES:
        target, why = baselines.make_baseline(name, x, stream)
        if target is None:
            print(f"  {name} unavailable: {why}", flush=True)
        else:
            found.append((f"{name}/plain", target, "plain"))
    if dev:
        found += fixed_contenders(rows, cols, x, dev_modules)
    for v in dev_variants(rows, cols) if dev else []:
        found.append((v["name"], DevTarget(dev_modules["dev"], v, x), None if v["kind"] == "c" else ("rms" if v["rms"] else "plain")))
    del build
    return found


def measure(shapes, seed, rounds, old_dir, new_dir, dev=True) -> list[dict]:
    import cupy

    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.device import identity
    from launchlab.gpu.instruments import ColdL2
    from launchlab.model import oracles

    backend, device = CupyBackend(), identity()
    stream, cache = backend.stream, {}
    dev_modules = {}
    for label in ("dev", *FIXED):
        cubin = CUBINS / f"{label}.cubin" if CUBINS else None
        if cubin is not None and cubin.exists():
            dev_modules[label] = cupy.RawModule(path=str(cubin))
        else:
            from launchlab.gpu import build

            print(f"  NVRTC {label}", flush=True)
            source = dev_source(shapes) if label == "dev" else fixed_source(label, new_dir)
            dev_modules[label] = cupy.RawModule(code=source, options=build.compile_options(
                {} if label == "dev" else FIXED[label][1]))
    instruments = load(new_dir, "instruments", {}, cache)
    cold = ColdL2(instruments, device["l2_bytes"], device["sm_count"], 60_000)
    timer = Timer(stream, cold, rounds)
    records = []
    for index, (rows, cols) in enumerate(shapes):
        x = cupy.random.default_rng(seed + index).standard_normal((rows, cols), dtype=cupy.float32) * 2.0
        refs = {"plain": oracles.softmax(x, xp=cupy), "rms": oracles.rms_softmax(x, xp=cupy)}
        tols = {"plain": oracles.SOFTMAX_TOLERANCE, "rms": oracles.RMS_SOFTMAX_TOLERANCE}
        record = {"rows": rows, "cols": cols, "times": {}, "pick": plans.fused_plan(rows, cols, H200)["tag"]}
        for name, target, mode in contenders(rows, cols, x, stream, dev_modules, old_dir, new_dir, cache, dev):
            try:
                target.poison() if hasattr(target, "poison") else target.y.fill(float("nan"))
                target.invoke()
                stream.synchronize()
                if mode == "none":  # the empty kernel writes nothing
                    valid = True
                elif mode is None:
                    valid = bool((target.y == x).all())
                else:
                    valid = bool(oracles.compare(target.y, refs[mode], tols[mode], xp=cupy)["passed"])
                if not valid:
                    record["times"][name] = {"valid": False}
                    continue
                record["times"][name] = {"valid": True, "mode": mode, "warm": round(timer.warm(target), 4),
                                         "cold": round(timer.cold_time(target), 4)}
                target.y.fill(float("nan"))
                target.invoke()
                stream.synchronize()
                if mode not in (None, "none") and not oracles.compare(target.y, refs[mode], tols[mode], xp=cupy)["passed"]:
                    record["times"][name]["valid_after"] = False
            except Exception as error:
                record["times"][name] = {"valid": False, "error": f"{type(error).__name__}: {str(error)[:160]}"}
        records.append(record)
        print(table(record), flush=True)
    return records


def table(record: dict) -> str:
    times = record["times"]
    copy = {l2: min(times[k][l2] for k in ("memcpy", "copy4") if times.get(k, {}).get("valid")) for l2 in ("warm", "cold")}
    libs = {l2: min((times[f"{k}/plain"][l2] for k in LIBRARIES if times.get(f"{k}/plain", {}).get("valid")),
                    default=float("nan")) for l2 in ("warm", "cold")}
    lines = [f"== {record['rows']}x{record['cols']}  pick {record['pick']}  copy warm {copy['warm']:.3f} cold {copy['cold']:.3f}  "
             f"best lib warm {libs['warm']:.3f} cold {libs['cold']:.3f}"]
    for prefix in ("new", "old"):
        for pick_only in (False, True):
            text = f"  {prefix} {'pick' if pick_only else 'best'}:"
            for l2 in ("warm", "cold"):
                fused = fused_times(record, prefix, l2, pick_only)
                if fused is None:
                    continue
                text += f"  {l2} {fused:.3f} -copy {fused - copy[l2]:+.3f}"
                for name in LIBRARIES:
                    if times.get(f"{name}/plain", {}).get("valid"):
                        text += f" /{name} {fused / times[f'{name}/plain'][l2]:.3f}"
            lines.append(text)
    for name, t in sorted(times.items(), key=lambda item: item[1].get("warm", 1e9)):
        if not t.get("valid"):
            lines.append(f"  {name:44s} INVALID {t.get('error', '')}")
            continue
        lines.append(f"  {name:44s} {t['mode'] or 'copy':5s} warm {t['warm']:6.3f} (-c {t['warm'] - copy['warm']:+.3f}, "
                     f"/lib {t['warm'] / libs['warm']:.3f})  cold {t['cold']:6.3f} (/lib {t['cold'] / libs['cold']:.3f})"
                     + ("  INVALID AFTER" if t.get("valid_after") is False else ""))
    return "\n".join(lines)


def latency_shapes(seed: int, points: int, max_x_bytes: int) -> list[tuple[int, int]]:
    """The first `points` shapes of the chapter's plane distribution drawn with `seed` whose x holds at most
    `max_x_bytes` (the latency regime: the copy well under 10 us)."""
    from launchlab.chapters.fusion.plane import draw

    drawn = [shape for shape in draw(40 * points, seed) if 4 * shape[0] * shape[1] <= max_x_bytes]
    return drawn[:points]


def fused_times(record: dict, prefix: str, l2: str, pick_only: bool) -> float | None:
    """The plain fused time of a shape: the best valid candidate with this prefix, or the policy's pick."""
    found = [t[l2] for name, t in record["times"].items() if t.get("valid") and t.get("mode") == "plain"
             and name.startswith(prefix + ":") and (not pick_only or name == f"{prefix}:{record['pick']}/plain")]
    return min(found) if found else None


def summary(records: list[dict]) -> str:
    """Per contender (new/old, best candidate/pick) and L2 state: fused - copy (median, p90), and against each
    library the shapes where fused is faster (ratio < 1) and the worst ratio."""
    import numpy as np

    lines = []
    for prefix in ("new", "old"):
        for pick_only in (False, True):
            for l2 in ("warm", "cold"):
                over, ratios = [], {name: [] for name in LIBRARIES}
                for record in records:
                    fused = fused_times(record, prefix, l2, pick_only)
                    copies = [record["times"][k][l2] for k in ("memcpy", "copy4") if record["times"].get(k, {}).get("valid")]
                    if fused is None or not copies:
                        continue
                    over.append(fused - min(copies))
                    for name in ratios:
                        if record["times"].get(f"{name}/plain", {}).get("valid"):
                            ratios[name].append(fused / record["times"][f"{name}/plain"][l2])
                if not over:
                    continue
                text = (f"{prefix} {'pick' if pick_only else 'best'} {l2}: fused-copy median {np.median(over):.3f} "
                        f"p90 {np.percentile(over, 90):.3f} us over {len(over)} shapes")
                for name, values in ratios.items():
                    if values:
                        text += (f" | {name}: faster at {sum(v < 1 for v in values)}/{len(values)}, "
                                 f"worst {max(values):.3f}")
                lines.append(text)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("dev_small_rows.json"))
    parser.add_argument("--shapes", help="ROWSxCOLS,...")
    parser.add_argument("--seed", type=int, default=777)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--old-kernels", type=Path, help="a kernels folder to time beside this tree's")
    parser.add_argument("--cubins", type=Path, help="prebuilt sm_90 modules (--build-cubins)")
    parser.add_argument("--build-cubins", type=Path, help="only build every module the run needs into this folder")
    parser.add_argument("--plane-seed", type=int, help="shapes of the plane's distribution drawn with this seed")
    parser.add_argument("--points", type=int, default=20)
    parser.add_argument("--max-x-bytes", type=int, default=8 << 20)
    parser.add_argument("--no-dev", action="store_true", help="no development variants")
    args = parser.parse_args()
    if args.plane_seed is not None:
        shapes = latency_shapes(args.plane_seed, args.points, args.max_x_bytes)
    elif args.shapes:
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    else:
        shapes = list(SHAPES)
    from launchlab.gpu import build

    folders = [build.KERNEL_DIR] + ([args.old_kernels] if args.old_kernels else [])
    if args.build_cubins:
        build_cubins(shapes, folders, args.build_cubins, not args.no_dev)
        return
    global CUBINS
    CUBINS = args.cubins
    started = time.perf_counter()
    records = measure(shapes, args.seed, args.rounds, args.old_kernels, build.KERNEL_DIR, not args.no_dev)
    args.out.write_text(json.dumps({"shapes": records, "elapsed_s": time.perf_counter() - started}, indent=1))
    print(summary(records), flush=True)
    print(f"done in {time.perf_counter() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main()
