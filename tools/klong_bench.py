"""Development bench of the long-row designs (kernels/softmax_designs.cu's cluster and split): where a call's time
goes (empty launches plain and cooperative, empty clusters with and without their barrier, the split design's
round trip at growing piece counts) and the designs against the copy ceiling and the row kernel at given shapes,
warm and cold, each output checked against the float64 oracle before and after timing.

    PYTHONPATH=src python tools/klong_bench.py --build-cubins DIR [--base FILE]   # here, with nvcc
    PYTHONPATH=src python tools/klong_bench.py --cubins DIR --out FILE [--shapes 1x582769,...] [--budget-s 100]

`--base FILE` builds another version of softmax_designs.cu (e.g. the committed one before a change, in a folder with
the headers it includes) as the "base" contenders. Protocol as tools/calibrate_fused.py (time_warm: a graph of many calls; time_cold: after an L2
flush), plain mode timed, both modes validated.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from launchlab.chapters.fusion import copy_kernel, plans  # noqa: E402
from launchlab.model import fused_policy  # noqa: E402

from calibrate_fused import H200, time_cold, time_warm  # noqa: E402  (the same protocol and device)

SHAPES = ("1x20169,1x582769,2x315093,17x520106,6x1546367,12x1172219,11x93564,47x126781,98x102461,380x78869,"
          "390x171713,159x39440,287x48081,1x1339742,8x334609,22x155086,1x60942,5x61453,30x461656,24x751971")
WIDTHS = (4, 8, 16)
PROBE = "klong_probe"  # tools/klong_probe.cu: a development probe, not one of the book's kernel families
SPLIT_BLOCKS = (256, 512, 1024)
SPLIT_VARIANTS = {"new_split_b256_u6": {"UNROLL": 6}, "new_split_b256_u8r2": {"UNROLL": 8, "SPLIT_REGS": 2}}


def cluster_defines(width: int) -> dict:
    return {"BLOCK": 256, "CLUSTER": width, "DESIGN": 2, "SLICE_REGS": 8, "UNROLL": 4}


def builds(shapes) -> dict:
    """{label: (family, defines, base)}: base = built from --base instead of the working tree."""
    found = {"instruments": ("instruments", {}, False), copy_kernel.MODULE: (copy_kernel.FAMILY, copy_kernel.DEFINES, False),
             "base_split": ("softmax_designs", {"BLOCK": 512, "DESIGN": 3, "UNROLL": 4}, True)}
    for width in WIDTHS:
        found[f"base_cluster_c{width}"] = ("softmax_designs", cluster_defines(width), True)
        found[f"new_cluster_c{width}"] = ("softmax_designs", cluster_defines(width), False)
        found[f"probe_c{width}"] = (PROBE, {"PROBE_CLUSTER": width}, False)
    for block in SPLIT_BLOCKS:
        found[f"new_split_b{block}"] = ("softmax_designs", fused_policy.split_config(1, 1, 132, block), False)
    for label, extra in SPLIT_VARIANTS.items():
        found[label] = ("softmax_designs", fused_policy.split_config(1, 1, 132, 256) | extra, False)
    for rows, cols in shapes:
        plan = plans.row_plan(rows, cols, H200["shared_bytes_per_block_optin"], H200["sm_count"])
        found[plan["module"]] = ("fused_softmax", plan["defines"], False)
    return found


def build_cubins(shapes, directory: Path, base: Path | None) -> None:
    from launchlab.gpu import build

    directory.mkdir(parents=True, exist_ok=True)

    def one(item):
        label, (family, defines, from_base) = item
        if from_base and base is None:
            return None
        source = directory / f"{label}.cu"
        if from_base:  # its includes resolve beside it
            source.write_text(build.expand_source(base))
        elif family == PROBE:
            source.write_text(build.expand_source(Path(__file__).resolve().parent / f"{PROBE}.cu"))
        else:
            source.write_text(build.expand_source(build.KERNEL_DIR / f"{family}.cu"))
        command = ["nvcc", *build.compile_options(defines, arch="sm_90"), "-cubin", "-Xptxas", "-v", "-o",
                   str(directory / f"{label}.cubin"), str(source)]
        result = subprocess.run(command, capture_output=True, text=True, cwd=str(build.KERNEL_DIR))
        source.unlink()
        if result.returncode:
            raise RuntimeError(f"{label}: {result.stderr}")
        return label, build.parse_ptxas(result.stderr)

    with ThreadPoolExecutor(16) as pool:
        done = [r for r in pool.map(one, builds(shapes).items()) if r]
    table = {label: report for label, report in done}
    (directory / "modules.json").write_text(json.dumps({"builds": builds(shapes), "ptxas": table}, indent=1))
    for label, report in sorted(table.items()):
        print(label, {k: (v["registers"], v["spill_stores"]) for k, v in report.items()})


# ---------------------------------------------------------------- GPU
def load(directory: Path, label: str, family: str, defines: dict, base: Path | None = None):
    """The prebuilt cubin, else (a driver that refuses it) the source compiled with NVRTC: the base file's for a
    base build, the working tree's otherwise."""
    import cupy

    from launchlab.gpu import build

    options = build.compile_options(defines, arch="sm_90")
    try:
        module = cupy.RawModule(path=str(directory / f"{label}.cubin"))
        module.get_function({"instruments": "gpu_wait", copy_kernel.MODULE: copy_kernel.KERNELS[0]}.get(
            label, "probe_empty" if family == PROBE else "fused_softmax" if family == "fused_softmax"
            else "cluster_softmax" if "cluster" in label else "split_softmax"))
        return build.BuiltModule(family, options, "", module)
    except Exception as error:
        print(f"cubin {label} refused ({str(error)[:80]}): NVRTC", flush=True)
    if family == PROBE:
        module = cupy.RawModule(code=build.expand_source(Path(__file__).resolve().parent / f"{PROBE}.cu"),
                                options=build.compile_options(defines))
        module.compile()
        return build.BuiltModule(family, options, "", module)
    if label.startswith("base_"):
        if base is None:
            raise FileNotFoundError(f"{label} needs --base")
        module = cupy.RawModule(code=build.expand_source(base), options=build.compile_options(defines))
        module.compile()
        return build.BuiltModule(family, options, "", module)
    return build.load_module(family, defines)


class Launch:
    """A bare launch (probes): kernel, grid, block, no arguments; optionally cooperative."""

    name = "probe"

    def __init__(self, kernel, grid: int, block: int, cooperative: bool = False):
        self.kernel, self.grid, self.block, self.cooperative = kernel, grid, block, cooperative
        self.launches = ((kernel, (grid,), (block,), ()),)

    def invoke(self) -> None:
        self.kernel.kernel((self.grid,), (self.block,), (), enable_cooperative_groups=self.cooperative)


def median(values) -> float:
    return float(statistics.median(values))


def probes(modules, stream, rounds: int) -> list[dict]:
    """Empty launches in a graph of 64 calls: plain and cooperative grids, empty clusters, cluster barriers."""
    import cupy

    from launchlab.gpu.targets import resident_blocks_per_sm

    found = []
    empty = modules["probe_c4"].kernel("probe_empty")
    for grid, block, cooperative in ((1, 32, False), (132, 512, False), (264, 512, False), (264, 512, True),
                                     (132, 1024, False), (132, 1024, True)):
        found.append({"probe": f"empty grid {grid}x{block}" + (" cooperative" if cooperative else ""),
                      "warm": time_warm(Launch(empty, grid, block, cooperative), stream, 64, rounds)})
    for width in WIDTHS:
        for name in ("probe_cluster_empty", "probe_cluster_sync"):
            kernel = modules[f"probe_c{width}"].kernel(name)
            if width > fused_policy.PORTABLE_CLUSTER:
                attribute = getattr(cupy.cuda.driver, "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 14)
                cupy.cuda.driver.funcSetAttribute(kernel.kernel.ptr, attribute, 1)
            for clusters in (1, 33):
                found.append({"probe": f"{name} c{width} x{clusters} (256 threads)",
                              "warm": time_warm(Launch(kernel, clusters * width, 256), stream, 64, rounds)})
        try:
            kernel = modules[f"new_cluster_c{width}"].kernel("cluster_softmax")
            found.append({"probe": f"cluster_softmax c{width} resident blocks/SM (256 thr, 0 shared)",
                          "value": resident_blocks_per_sm(kernel, 256, 0)})
        except Exception as error:
            found.append({"probe": f"occupancy c{width}", "error": str(error)[:120]})
    for entry in found:
        if "warm" in entry:
            print(f"{entry['probe']:<60} {median(entry['warm']):8.3f} us", flush=True)
        else:
            print(entry, flush=True)
    return found


class OldSplit:
    """The committed split design's launch (partials, totals, arrivals, generations; cooperative)."""

    name = "base-split"

    def __init__(self, built, rows, cols, x):
        import cupy
        import numpy as np

        from launchlab.gpu import device
        from launchlab.gpu.targets import allow_dynamic_shared, resident_blocks_per_sm

        self.rows, self.cols, self.x, self.block = rows, cols, x, 512
        self.y = cupy.empty_like(x)
        self.kernel = built.kernel("split_softmax")
        budget = 112 * 1024
        allow_dynamic_shared(self.kernel, budget)
        capacity = min(resident_blocks_per_sm(self.kernel, 512, budget), 2) * device.sm_count()
        self.pieces = max(1, capacity // rows)
        grid = self.pieces * min(rows, capacity // self.pieces)
        per_piece = -(-fused_policy.worst_chunks(rows, cols) // self.pieces)
        self.shared_bytes = 16 * per_piece if 16 * per_piece <= budget else 0
        self.partials = cupy.empty(3 * rows * self.pieces, dtype=cupy.float32)
        self.totals = cupy.empty(3 * rows, dtype=cupy.float32)
        self.arrivals = cupy.zeros(rows, dtype=cupy.uint32)
        self.generations = cupy.zeros(rows, dtype=cupy.uint32)
        self.args = (x, self.y, np.int32(rows), np.int32(cols), np.int32(self.pieces), self.partials, self.totals,
                     self.arrivals, self.generations)
        self.grid = grid
        self.launches = ((self.kernel, (grid,), (512,), self.args),)

    def invoke(self) -> None:
        self.kernel.kernel((self.grid,), (512,), self.args, shared_mem=self.shared_bytes, enable_cooperative_groups=True)

    def poison(self) -> None:
        import numpy as np

        self.y.fill(np.nan)

    def describe(self) -> dict:
        return {"grid": self.grid, "pieces": self.pieces, "shared_bytes": self.shared_bytes}


def contenders(rows: int, cols: int, sm_count: int) -> list[tuple[str, str, dict]]:
    """(name, module label, target options) of every contender at a shape."""
    found = [("row", "row", {})]
    chunks = fused_policy.worst_chunks(rows, cols)
    for width in WIDTHS:
        slice_chunks = -(-chunks // width)
        if rows * width <= 64 * sm_count and (slice_chunks <= 8 * 256 or 16 * slice_chunks <= 227 * 1024):
            found += [(f"base-c{width}", f"base_cluster_c{width}", {}), (f"new-c{width}", f"new_cluster_c{width}", {})]
    found.append(("base-split", "base_split", {}))
    capacity = 2 * sm_count
    on_chip = fused_policy.split_on_chip_chunks()
    default = fused_policy.split_pieces(rows, capacity, chunks, on_chip)
    found.append((f"split-p{default}", "new_split_b512", {}))
    found.append((f"split-p{default}-coop", "new_split_b512", {"cooperative": True}))
    needed = -(-chunks // on_chip)
    for pieces in sorted({max(1, default // 2), max(1, default // 4), needed, needed + 1, 2 * needed} - {default}):
        if pieces * 1 <= capacity:
            found.append((f"split-p{pieces}", "new_split_b512", {"pieces": pieces}))
    found.append(("split-b256", "new_split_b256", {}))
    found.append(("split-b1024", "new_split_b1024", {}))
    return found


def make(name, label, options, modules, rows, cols, x):
    from launchlab.chapters.fusion.targets import make_fused
    from launchlab.gpu import fused_designs

    if name == "row":
        plan = plans.row_plan(rows, cols, H200["shared_bytes_per_block_optin"], H200["sm_count"])
        return make_fused({plan["module"]: modules[plan["module"]]}, plan, rows, cols, "plain", x)
    if name == "base-split":
        return OldSplit(modules[label], rows, cols, x)
    design = "cluster" if "cluster" in label else "split"
    return fused_designs.make_target(design, modules[label], rows, cols, "plain", x, **options)


def check(target, sample, reference, tolerance) -> bool:
    import cupy

    from launchlab.model import oracles

    target.poison()
    target.invoke()
    cupy.cuda.get_current_stream().synchronize()
    y = target.y
    return bool(cupy.isfinite(y).all()) and bool(oracles.compare(y[sample], reference, tolerance, xp=cupy)["passed"])


def measure_shape(rows, cols, modules, stream, cold, rounds, seed) -> dict:
    import cupy
    import numpy as np

    from launchlab.gpu.targets import DeviceCopy
    from launchlab.model import oracles

    x = cupy.random.default_rng(seed).standard_normal((rows, cols), dtype=cupy.float32) * 2.0
    sample = cupy.asarray(np.unique(np.linspace(0, rows - 1, max(1, min(rows, 16, (1 << 22) // cols))).round()
                                    .astype(np.int64)))
    reference = oracles.softmax(x[sample], xp=cupy)
    calls = min(32, max(1, (1 << 28) // (8 * rows * cols)))
    calls = 1 << (calls.bit_length() - 1)
    record = {"rows": rows, "cols": cols, "calls": calls, "copy": {}, "fused": {}}
    for name, target in (("memcpy", DeviceCopy(x)), ("vector", copy_kernel.make(modules[copy_kernel.MODULE], x))):
        record["copy"][name] = {"warm": time_warm(target, stream, calls, rounds), "cold": time_cold(target, stream, cold, rounds)}
    for name, label, options in contenders(rows, cols, 132):
        entry = {"label": label, "options": options}
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
            entry["valid"] = False
            entry["error"] = f"{type(error).__name__}: {str(error)[:160]}"
        record["fused"][name] = entry
    del x
    cupy.get_default_memory_pool().free_all_blocks()
    return record


def report(record: dict) -> str:
    copy = {l2: min(median(v[l2]) for v in record["copy"].values()) for l2 in ("warm", "cold")}
    lines = [f"{record['rows']}x{record['cols']}  copy warm {copy['warm']:.2f} cold {copy['cold']:.2f}"]
    for name, entry in record["fused"].items():
        if "warm" in entry:
            w, c = median(entry["warm"]), median(entry["cold"])
            flag = "" if entry.get("valid_after") else "  INVALID AFTER"
            launch = {k: v for k, v in entry.get("launch", {}).items() if k in ("grid", "pieces", "shared_bytes")}
            lines.append(f"   {name:<18} warm {w:8.2f} ({w / copy['warm']:.2f})  cold {c:8.2f} ({c / copy['cold']:.2f})"
                         f"  {launch}{flag}")
        else:
            lines.append(f"   {name:<18} {'INVALID' if 'error' not in entry else entry['error']}")
    return "\n".join(lines)


def run(shapes, directory: Path, out: Path, rounds: int, budget_s: float, base: Path | None) -> None:
    import cupy

    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.device import identity
    from launchlab.gpu.instruments import ColdL2

    started = time.perf_counter()
    backend, device = CupyBackend(), identity()
    modules = {label: load(directory, label, family, defines, base)
               for label, (family, defines, from_base) in builds(shapes).items() if base or not from_base}
    print(f"{len(modules)} modules loaded in {time.perf_counter() - started:.1f} s", flush=True)
    cold = ColdL2(modules["instruments"], device["l2_bytes"], device["sm_count"], 60_000)
    result = {"device": device, "probes": probes(modules, backend.stream, rounds), "shapes": []}
    out.write_text(json.dumps(result))
    for index, (rows, cols) in enumerate(shapes):
        if time.perf_counter() - started > budget_s:
            print(f"budget reached after {index} shapes", flush=True)
            break
        try:
            record = measure_shape(rows, cols, modules, backend.stream, cold, rounds, 7001 + index)
        except Exception:
            import traceback

            traceback.print_exc()
            cupy.get_default_memory_pool().free_all_blocks()
            continue
        result["shapes"].append(record)
        print(report(record), flush=True)
        out.write_text(json.dumps(result))
    print(f"done in {time.perf_counter() - started:.1f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--build-cubins", type=Path)
    parser.add_argument("--base", type=Path)
    parser.add_argument("--cubins", type=Path)
    parser.add_argument("--out", type=Path, default=Path("klong.json"))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=100.0)
    args = parser.parse_args()
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    if args.build_cubins:
        build_cubins(shapes, args.build_cubins, args.base)
    else:
        run(shapes, args.cubins, args.out, args.rounds, args.budget_s, args.base)


if __name__ == "__main__":
    main()
