"""Chapter 3, fusion: a fused RMS-scaled softmax against the four-kernel path, library
softmax and a device copy of the same bytes, with a warm and a cold L2.

GPU mode (`run_on_gpu`) writes raw files into a new run; `summarize` derives every figure
the chapter shows from those files alone, on any machine.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from launchlab.model import oracles
from launchlab.measure import stats
from launchlab.model import workloads
from launchlab.measure.protocol import FROZEN, round_orders
from launchlab.chapters.common import fail_validation, provenance, read_jsonl

STEM = "fusion"
TAG = "ch03"
DEFAULT_PARAMETERS = {
    "shapes": "4096x128,4096x512,4096x1024,4096x4096,4096x16384,128x65536",
    "fixture_seed": 2026,
    "baselines": "cudnn,torch,triton",
    "cold_repeats": 3,           # cold invocations per variant and round
    "profile_shape": "4096x4096",  # Nsight Compute's DRAM bytes for this shape ("" for none)
}
LARGE_ELEMENTS = 1 << 24  # shapes this big use the protocol's smaller event batch
COLD_WAIT_NS = 200_000    # GPU-side wait between the L2 flush and a cold invocation's start event
FUSED_KERNELS = ("fused_rms_softmax", "fused_softmax")
HELPER_KERNELS = ("l2_flush_read", "gpu_wait")
FAMILIES = ("copy", "row4", "fused_rms", "fused_plain", "cudnn", "torch", "triton")
LIBRARIES = ("cudnn", "torch", "triton")
# Logical bytes per matrix element, declared once (4-byte floats): the bytes each variant must
# move if every array is read or written exactly as often as its algorithm says.
LOGICAL_BYTES_PER_ELEMENT = {
    "copy": 8,         # read x, write y
    "row4": 24,        # K1 reads x; K2 reads x; K3 reads x, writes e; K4 reads e, writes y
    "fused_rms": 8,    # read x once, write y once (rows that fit on chip)
    "fused_plain": 8,
    "cudnn": 8, "torch": 8, "triton": 8,  # library softmax: the same minimum
}
# Performance targets (SPEC issue 4): printed, recorded, never asserted by tests.
COPY_RATIO_TARGET = 1.15
COPY_RATIO_SHAPES = ("4096x4096", "4096x16384")
CUDNN_SPEEDUP_TARGET = 1.3
CUDNN_SPEEDUP_SHAPE = "4096x4096"
HOST_PATH = ("CuPy from CPython on one non-blocking stream: RawKernel launches (row path, fused kernel), "
             "Graph.launch (captured versions), cudaMemcpyAsync (copy); cuDNN through ctypes, torch.softmax and "
             "Triton through PyTorch on the same stream (torch.cuda.ExternalStream) and memory (DLPack)")

# The fused kernel's launch policy, declared before any run. A row walks in 16-byte chunks;
# a block holds up to REG_CHUNKS chunks per thread in registers, else the row in dynamic shared
# memory, else it streams the row twice (kernels/fused_softmax.cu decides, from these). The
# numbers come from a development sweep on an H200 (tools/gpu_fusion_check.py --sweep): one
# warp per row for rows up to 256 chunks, a register budget that lets several rows share an SM,
# and deeper unrolling where a row is cached in shared memory or streamed.
REG_CHUNKS = 4
WARP_ROW_CHUNKS = 8           # chunks per thread a one-warp block may hold (rows up to 1024 floats)
REGISTER_TIER_MAX_BLOCK = 256
SHARED_TIER_BLOCK = 512
STREAMED_TIER_BLOCK = 1024
UNROLL = {"registers": 4, "shared": 8, "streamed": 8}
REGISTER_BUDGET = {"registers": 48, "shared": 64, "streamed": 64}  # per thread; ptxas fits these without spills


# --------------------------------------------------------------------------- launch policy (CPU)
def max_chunks(rows: int, cols: int) -> int:
    """16-byte chunks of the worst-aligned row: rows start at r*cols floats from an aligned base."""
    lead = 0 if cols % 4 == 0 else (3 if rows > 1 else 0)
    return (lead + cols + 3) // 4


def fused_tier(rows: int, cols: int, block: int, shared_bytes: int, reg_chunks: int = REG_CHUNKS) -> str:
    """Where the kernel keeps a row (the worst-aligned one), mirroring fused_row() in the .cu file."""
    chunks = max_chunks(rows, cols)
    if chunks <= reg_chunks * block:
        return "registers"
    if 16 * chunks <= shared_bytes:
        return "shared"
    return "streamed"


def fused_config(rows: int, cols: int, shared_limit: int) -> dict:
    """Block size, compile-time defines and dynamic shared memory of the fused kernel for a shape."""
    chunks = max_chunks(rows, cols)
    if chunks <= WARP_ROW_CHUNKS * 32:
        tier, block, reg_chunks, shared = "registers", 32, (REG_CHUNKS if chunks <= REG_CHUNKS * 32 else WARP_ROW_CHUNKS), 0
    elif chunks <= REG_CHUNKS * REGISTER_TIER_MAX_BLOCK:
        tier, block, reg_chunks, shared = "registers", 1 << (-(-chunks // REG_CHUNKS) - 1).bit_length(), REG_CHUNKS, 0
    elif 16 * chunks <= shared_limit:
        block = SHARED_TIER_BLOCK
        while REG_CHUNKS * block >= chunks:  # the kernel keeps a row in registers when it fits: keep it from fitting
            block //= 2
        tier, reg_chunks, shared = "shared", REG_CHUNKS, 16 * chunks
    else:
        tier, block, reg_chunks, shared = "streamed", STREAMED_TIER_BLOCK, REG_CHUNKS, 0
    defines = {"BLOCK": block, "REG_CHUNKS": reg_chunks, "UNROLL": UNROLL[tier],
               "MIN_BLOCKS": min_blocks(block, REGISTER_BUDGET[tier])}
    assert fused_tier(rows, cols, block, shared, reg_chunks) == tier
    return {"defines": defines, "block": block, "shared_bytes": shared, "tier": tier, "module": module_label(defines)}


def min_blocks(block: int, register_budget: int = REGISTER_BUDGET["registers"]) -> int:
    """Blocks per SM that __launch_bounds__ asks the register allocation to allow: as many as a
    budget of registers per thread gives (4 schedulers of 16384 registers, 32 threads a warp),
    within the SM's 2048 threads and 32 blocks."""
    warps = 4 * (16384 // (32 * register_budget))
    return max(1, min(32, 2048 // block, warps // max(1, block // 32)))


def module_label(defines: dict) -> str:
    return (f"fused_softmax_b{defines['BLOCK']}_r{defines['REG_CHUNKS']}_u{defines['UNROLL']}"
            f"_m{defines.get('MIN_BLOCKS', 1)}")


def variant_name(family: str, how: str, shape: str) -> str:
    return f"{family}.{how}.{shape}"


def split_variant(name: str) -> tuple[str, str, str]:
    family, how, shape = name.split(".")
    return family, how, shape


def logical_bytes(family: str, rows: int, cols: int) -> int:
    return LOGICAL_BYTES_PER_ELEMENT[family] * rows * cols


def bandwidth_gbs(nbytes: float, microseconds: float) -> float:
    """Effective bandwidth: logical bytes over time, in GB/s (1e9 bytes per second)."""
    return nbytes / microseconds / 1e3


# --------------------------------------------------------------------------- GPU side
class _Target:
    """A variant that validation can run: buffers, poisoning, the invocation, the oracle."""

    def __init__(self, x, y, poison, invoke, oracle: str, every_fixture: bool):
        self.x, self.y, self.poison, self.invoke = x, y, poison, invoke
        self.oracle, self.every_fixture = oracle, every_fixture

    def compute(self, x: np.ndarray, stream) -> np.ndarray:
        self.x.set(np.ascontiguousarray(x, dtype=np.float32))
        self.poison()
        self.invoke()
        stream.synchronize()
        return self.y.get()


def run_on_gpu(writer, parameters: dict) -> None:
    """Build, validate, time warm and cold, validate again, profile bytes; write it all into the run."""
    import time

    from launchlab.gpu import baselines
    from launchlab.gpu import build
    from launchlab.gpu import device
    from launchlab.gpu import capture
    from launchlab.model import dot
    from launchlab.measure import protocol
    from launchlab.gpu.instruments import ColdL2
    from launchlab.gpu.backend import CupyBackend
    from launchlab.gpu.targets import DeviceCopy, FusedRow, RowPath
    from launchlab.chapters.ordinary_launches import ROW_KERNELS

    clock = time.perf_counter()
    phases = {}

    def phase(name):
        nonlocal clock
        now = time.perf_counter()
        phases[name] = round(now - clock, 3)
        clock = now
        print(f"fusion: {name} took {phases[name]:.1f} s", flush=True)

    shapes = workloads.parse_shapes(parameters["shapes"])
    seed = int(parameters["fixture_seed"])
    wanted = [n for n in str(parameters["baselines"]).split(",") if n]
    unknown = set(wanted) - set(LIBRARIES)
    if unknown:
        raise ValueError(f"unknown baselines {sorted(unknown)}; known: {', '.join(LIBRARIES)}")
    backend = CupyBackend()
    stream = backend.stream
    identity = device.identity()
    record = {"chapter": STEM, "run_id": writer.run_id, "parameters": parameters, "protocol": FROZEN.record(),
              "cold_protocol": {"repeats": int(parameters["cold_repeats"]), "rounds": FROZEN.rounds,
                                "host_seed": FROZEN.host_seed, "flush": "read of a buffer of 2 x L2 bytes",
                                "wait_ns": COLD_WAIT_NS},
              "host_path": HOST_PATH, "device": identity, "state_before_build": device.state(),
              "logical_bytes_per_element": LOGICAL_BYTES_PER_ELEMENT, **provenance()}

    row_module = build.load_module("row_softmax")
    builds = {"row_softmax": build.save_build(writer, "row_softmax", row_module, ROW_KERNELS)}
    configs = {workloads.shape_name(*s): fused_config(*s, identity["shared_bytes_per_block_optin"]) for s in shapes}
    modules = {}
    for config in configs.values():
        if config["module"] not in modules:
            modules[config["module"]] = build.load_module("fused_softmax", config["defines"])
            builds[config["module"]] = build.save_build(writer, config["module"], modules[config["module"]],
                                                        FUSED_KERNELS + HELPER_KERNELS)
    record["fused_configs"] = configs
    record["local_memory_free"] = all(r["local_bytes"] == 0 for b in builds.values() for r in b["resources_loaded"].values())
    cold = ColdL2(next(iter(modules.values())), identity["l2_bytes"], identity["sm_count"], COLD_WAIT_NS)
    phase("build")

    targets, setup, library_notes, library_info = {}, {}, {name: {} for name in wanted}, {}
    for rows, cols in shapes:
        shape = workloads.shape_name(rows, cols)
        config = configs[shape]
        row = RowPath(row_module, rows, cols)
        fused = {mode: FusedRow(modules[config["module"]], rows, cols, mode, config["shared_bytes"], x=row.x)
                 for mode in ("rms", "plain")}
        copy = DeviceCopy(row.x)
        found = {variant_name("row4", "stream", shape): _Target(row.x, row.y, row.poison, row.invoke, "rms", True),
                 variant_name("copy", "stream", shape): _Target(row.x, copy.y, copy.poison, copy.invoke, "copy", True)}
        for mode, family in (("rms", "fused_rms"), ("plain", "fused_plain")):
            path = fused[mode]
            found[variant_name(family, "stream", shape)] = _Target(row.x, path.y, path.poison, path.invoke, mode, True)
        for family, path in (("row4", row), ("fused_rms", fused["rms"]), ("fused_plain", fused["plain"])):
            graph, setup[variant_name(family, "graph", shape)] = capture.capture(path.invoke, stream)
            found[variant_name(family, "graph", shape)] = _Target(row.x, path.y, path.poison, lambda g=graph: g.launch(stream),
                                                                  "plain" if family == "fused_plain" else "rms", False)
        for name in wanted:
            baseline, note = baselines.make_baseline(name, row.x, stream)
            if baseline is None:
                library_notes[name][shape] = note
                continue
            library_info[name] = baseline.describe()
            found[variant_name(name, "stream", shape)] = _Target(row.x, baseline.y, lambda b=baseline: b.y.fill(np.nan),
                                                                 baseline.invoke, "plain", True)
        targets[shape] = found
    phase("setup")

    checks = []
    for rows, cols in shapes:
        checks += _validate_shape(targets, rows, cols, seed, range(workloads.FIXTURES_BEFORE_TIMING), "before", stream)
    for check in checks:  # a library that fails our oracle is not timed; it is recorded
        family, _, shape = split_variant(check["variant"])
        if not check["passed"] and family in LIBRARIES and check["variant"] in targets[shape]:
            del targets[shape][check["variant"]]
            library_notes[family][shape] = "failed validation before timing against the float64 oracle; not timed"
    if not all(c["passed"] for c in checks if split_variant(c["variant"])[0] not in LIBRARIES):
        fail_validation(writer, record, checks, "validation before timing failed", _tolerances())
    phase("validation_before")

    warm, cold_samples = [], []
    record["state_before"] = device.state()
    for rows, cols in shapes:
        shape = workloads.shape_name(rows, cols)
        large = rows * cols >= LARGE_ELEMENTS
        variants = [protocol.Variant(name, target.invoke, large) for name, target in targets[shape].items()]
        warm += protocol.measure(variants, backend)
        cold_samples += _measure_cold(variants, backend, cold, int(parameters["cold_repeats"]))
    record["state_after"] = device.state()
    record["clocks_dropped"] = device.clocks_dropped(record["state_before"], record["state_after"])
    writer.write_jsonl("samples/warm.jsonl", warm)
    writer.write_jsonl("samples/cold.jsonl", cold_samples)
    phase("timing")

    after = []
    for rows, cols in shapes:
        after += _validate_shape(targets, rows, cols, seed, [workloads.HELD_OUT_FIXTURE], "after", stream)
    checks += after
    if not all(c["passed"] for c in after):
        fail_validation(writer, record, checks, "validation after timing failed", _tolerances())
    phase("validation_after")

    writer.write_json("graphs/setup.json", setup)
    record["baselines"] = {name: {"requested": True, "unavailable": library_notes[name], **({"setup": library_info[name]}
                                                                                          if name in library_info else {})}
                           for name in wanted}
    profile = str(parameters.get("profile_shape") or "")
    if profile:
        rows, cols = workloads.parse_shapes(profile)[0]
        from launchlab.gpu.ncu import ncu_dram_bytes
        result = ncu_dram_bytes(rows, cols, fused_config(rows, cols, identity["shared_bytes_per_block_optin"]))
        writer.write_text(f"profiles/ncu_{profile}.csv", result["csv"])
        writer.write_json(f"profiles/ncu_{profile}.json", {k: v for k, v in result.items() if k != "csv"})
    phase("profile")
    record["state_end"] = device.state()
    record["phase_seconds"] = phases
    record["validation"] = {"verdict": "passed", "checks": len(checks), "tolerance": _tolerances()}
    writer.write_json("validation.json", checks)
    writer.write_json("run.json", record)


def _validate_shape(targets, rows, cols, seed, indices, phase, stream) -> list[dict]:
    from concurrent.futures import ThreadPoolExecutor

    from launchlab.store.evidence import sha256_array

    hasher = ThreadPoolExecutor(1)
    shape = workloads.shape_name(rows, cols)
    results = []
    for index in indices:
        x = workloads.rms_softmax_fixture(seed, index, rows, cols)
        input_hash = sha256_array(x)
        references = {}
        for name, target in targets[shape].items():
            if phase == "before" and index > 0 and not target.every_fixture:
                continue
            y = target.compute(x, stream)
            output_hash = hasher.submit(sha256_array, y)  # hashing overlaps the comparison (hashlib frees the GIL)
            if target.oracle == "copy":
                differs = int(np.count_nonzero(y != x))
                result = {"passed": differs == 0, "elements": int(y.size), "failing_elements": differs,
                          "non_finite_elements": int((~np.isfinite(y)).sum()), "max_abs_error": None,
                          "relative_l2_error": None, "exact": True}
            else:
                if target.oracle not in references:
                    function = oracles.rms_softmax if target.oracle == "rms" else oracles.softmax
                    references[target.oracle] = oracles.by_row_blocks(function, x)
                tolerance = oracles.RMS_SOFTMAX_TOLERANCE if target.oracle == "rms" else oracles.SOFTMAX_TOLERANCE
                result = oracles.compare_by_row_blocks(y, references[target.oracle], tolerance)
            result.update({"variant": name, "shape": shape, "fixture": index, "phase": phase, "oracle": target.oracle,
                           "input_sha256": input_hash, "output_sha256": output_hash.result()})
            results.append(result)
    hasher.shutdown()
    return results


def _measure_cold(variants, backend, cold, repeats: int) -> list[dict]:
    """Per round (shuffled order, the protocol's seed) and variant: `repeats` flushed invocations."""
    from launchlab.gpu.instruments import time_cold

    by_name = {v.name: v for v in variants}
    samples = []
    for round_index, order in enumerate(round_orders(list(by_name), FROZEN.rounds, FROZEN.host_seed)):
        for position, name in enumerate(order):
            for repeat in range(repeats):
                event_ms, enqueue_ns = time_cold(by_name[name].invoke, backend, cold)
                samples.append({"round": round_index, "position": position, "variant": name, "repeat": repeat,
                                "event_ms": event_ms, "enqueue_ns": enqueue_ns, "wait_ns": cold.wait_ns})
    return samples


def _tolerances() -> dict:
    return {"rms": {"rtol": oracles.RMS_SOFTMAX_TOLERANCE.rtol, "atol": oracles.RMS_SOFTMAX_TOLERANCE.atol},
            "plain": {"rtol": oracles.SOFTMAX_TOLERANCE.rtol, "atol": oracles.SOFTMAX_TOLERANCE.atol},
            "copy": "exact"}


# --------------------------------------------------------------------------- analysis (CPU)
def cold_us(sample: dict) -> float:
    return sample["event_ms"] * 1e3


def summarize_cold(samples: list[dict]) -> dict:
    """Per variant: quantiles of the cold invocation time (us), and how often the host was late."""
    grouped = defaultdict(list)
    late = defaultdict(int)
    for sample in samples:
        grouped[sample["variant"]].append(cold_us(sample))
        late[sample["variant"]] += sample["enqueue_ns"] > sample["wait_ns"]
    return {variant: {"cold_us": stats.quantiles(values), "host_enqueue_exceeded_wait": late[variant]}
            for variant, values in sorted(grouped.items())}


def cold_paired_ratio(samples: list[dict], numerator: str, denominator: str) -> dict:
    """numerator/denominator of the cold time within each round (medians of the round's repeats):
    median, p10/p90 and the bootstrap interval, as stats.paired_ratio gives for warm samples."""
    by_round: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for sample in samples:
        if sample["variant"] in (numerator, denominator):
            by_round[sample["round"]][sample["variant"]].append(cold_us(sample))
    ratios = [float(np.median(pair[numerator]) / np.median(pair[denominator])) for _, pair in sorted(by_round.items())
              if numerator in pair and denominator in pair]
    if not ratios:
        raise ValueError(f"no round holds both {numerator!r} and {denominator!r}")
    summary = stats.quantiles(ratios)
    summary["ci_low"], summary["ci_high"] = stats.bootstrap_median_interval(ratios)
    summary["metric"] = "cold_us"
    return summary


def _shapes(record: dict) -> list[str]:
    return [workloads.shape_name(*s) for s in workloads.parse_shapes(record["parameters"]["shapes"])]


def _dims(shape: str) -> tuple[int, int]:
    return workloads.parse_shapes(shape)[0]


RATIOS = {  # name: (numerator family.how, denominator family.how)
    "fused_rms_over_copy": ("fused_rms.stream", "copy.stream"),
    "row4_over_fused_rms": ("row4.stream", "fused_rms.stream"),
    "cudnn_over_fused_plain": ("cudnn.stream", "fused_plain.stream"),
    "torch_over_fused_plain": ("torch.stream", "fused_plain.stream"),
    "triton_over_fused_plain": ("triton.stream", "fused_plain.stream"),
    "fused_plain_over_fused_rms": ("fused_plain.stream", "fused_rms.stream"),
    "cudnn_over_copy": ("cudnn.stream", "copy.stream"),  # bounds any 8-byte kernel's speed-up over the library
    "torch_over_copy": ("torch.stream", "copy.stream"),
    "row4_stream_over_graph": ("row4.stream", "row4.graph"),
    "fused_rms_stream_over_graph": ("fused_rms.stream", "fused_rms.graph"),
}


def summarize(run_dir: Path) -> dict:
    """Every summary the chapter shows, recomputed from the run's raw files."""
    run_dir = Path(run_dir)
    record = json.loads((run_dir / "run.json").read_text())
    warm_samples = read_jsonl(run_dir / "samples/warm.jsonl")
    cold_samples = read_jsonl(run_dir / "samples/cold.jsonl")
    warm, cold = stats.summarize_variants(warm_samples), summarize_cold(cold_samples)
    for summary in warm.values():  # the host set the pace when it enqueued no faster than the GPU ran
        summary["host_bound"] = summary["batch_enqueue_us"]["median"] >= 0.9 * summary["event_us"]["median"]
    shapes = _shapes(record)
    ratios = {}
    for name, (numerator, denominator) in RATIOS.items():
        for shape in shapes:
            top, bottom = f"{numerator}.{shape}", f"{denominator}.{shape}"
            if top in warm and bottom in warm:
                ratios.setdefault(name, {})[shape] = {"warm": stats.paired_ratio(warm_samples, top, bottom),
                                                      "cold": cold_paired_ratio(cold_samples, top, bottom)}
    return {
        "shapes": shapes,
        "warm": warm,
        "cold": cold,
        "bandwidth": summarize_bandwidth(warm, cold, shapes),
        "ratios": ratios,
        "targets": evaluate_targets(ratios, shapes),
        "resources": summarize_resources(run_dir),
        "dram": summarize_dram(run_dir),
        "graph_setup": json.loads((run_dir / "graphs/setup.json").read_text()),
        "configs": record["fused_configs"],
        "baselines": record["baselines"],
    }


def summarize_bandwidth(warm: dict, cold: dict, shapes: list[str]) -> dict:
    """Per variant: logical bytes, effective GB/s warm and cold, and the percentage of the copy's."""
    result = {}
    for shape in shapes:
        rows, cols = _dims(shape)
        copy = variant_name("copy", "stream", shape)
        for variant in sorted(v for v in warm if v.endswith(f".{shape}")):
            family = split_variant(variant)[0]
            nbytes = logical_bytes(family, rows, cols)
            entry = {"logical_bytes": nbytes}
            for l2, time_us in (("warm", warm[variant]["event_us"]["median"]), ("cold", cold[variant]["cold_us"]["median"])):
                entry[f"{l2}_gbs"] = bandwidth_gbs(nbytes, time_us)
            if copy in warm:
                copy_bytes = logical_bytes("copy", rows, cols)
                entry["warm_pct_of_copy"] = 100 * entry["warm_gbs"] / bandwidth_gbs(copy_bytes, warm[copy]["event_us"]["median"])
                entry["cold_pct_of_copy"] = 100 * entry["cold_gbs"] / bandwidth_gbs(copy_bytes, cold[copy]["cold_us"]["median"])
            result[variant] = entry
    return result


def evaluate_targets(ratios: dict, shapes: list[str]) -> list[dict]:
    """The issue's performance targets against the paired medians: met, missed, or not measurable."""
    found = []

    def add(target, shape, l2, ratio_name, threshold, sense):
        entry = {"target": target, "shape": shape, "l2": l2, "threshold": threshold, "sense": sense}
        ratio = ratios.get(ratio_name, {}).get(shape)
        if ratio is None:
            entry.update({"measured": None, "met": None})
        else:
            value = ratio[l2]["median"]
            met = value <= threshold if sense == "at most" else value > threshold if sense == "above" else value >= threshold
            entry.update({"measured": value, "ci_low": ratio[l2]["ci_low"], "ci_high": ratio[l2]["ci_high"], "met": bool(met)})
        found.append(entry)

    for shape in COPY_RATIO_SHAPES:
        if shape in shapes:
            for l2 in ("warm", "cold"):
                add("fused RMS time / copy time", shape, l2, "fused_rms_over_copy", COPY_RATIO_TARGET, "at most")
    for library in ("cudnn", "torch"):
        for shape in shapes:
            for l2 in ("warm", "cold"):
                add(f"{library} time / fused plain time", shape, l2, f"{library}_over_fused_plain", 1.0, "above")
    if CUDNN_SPEEDUP_SHAPE in shapes:
        for l2 in ("warm", "cold"):
            add("cudnn time / fused plain time", CUDNN_SPEEDUP_SHAPE, l2, "cudnn_over_fused_plain", CUDNN_SPEEDUP_TARGET,
                "at least")
    return found


def summarize_resources(run_dir: Path) -> dict:
    """Per build and kernel: registers, static shared bytes, local bytes, spills (nvcc's report where kept)."""
    result = {}
    for record_path in sorted((run_dir / "builds").glob("*/record.json")):
        build = json.loads(record_path.read_text())
        nvcc = (build.get("nvcc") or {}).get("resources", {})
        for kernel, loaded in sorted(build["resources_loaded"].items()):
            entry = {"registers": loaded["registers"], "shared_bytes": loaded["shared_bytes"],
                     "local_bytes": loaded["local_bytes"]}
            if kernel in nvcc:
                entry.update({"spill_stores": nvcc[kernel]["spill_stores"], "spill_loads": nvcc[kernel]["spill_loads"],
                              "stack_bytes": nvcc[kernel]["stack_bytes"]})
            result.setdefault(record_path.parent.name, {})[kernel] = entry
    return result


def summarize_dram(run_dir: Path) -> dict:
    """Per profiled shape: ncu's DRAM bytes beside the logical bytes, or the recorded error."""
    from launchlab.gpu.ncu import dram_by_variant, parse_ncu_csv

    result = {}
    for meta_path in sorted((run_dir / "profiles").glob("ncu_*.json")):
        shape = meta_path.stem.removeprefix("ncu_")
        meta = json.loads(meta_path.read_text())
        csv_text = (run_dir / "profiles" / f"ncu_{shape}.csv").read_text()
        measured = dram_by_variant(parse_ncu_csv(csv_text))
        rows, cols = _dims(shape)
        entry = {"error": meta.get("error"), "variants": {}}
        for family, values in sorted(measured.items()):
            nbytes = logical_bytes(family, rows, cols)
            entry["variants"][family] = {**values, "logical_bytes": nbytes,
                                         "measured_over_logical": (values["read_bytes"] + values["write_bytes"]) / nbytes}
        result[shape] = entry
    return result


def headline(summaries: dict) -> dict:
    figures = {}
    ratios = summaries["ratios"]
    for shape in summaries["shapes"]:
        if shape in ratios.get("fused_rms_over_copy", {}):
            for l2 in ("warm", "cold"):
                figures[f"fused_rms_over_copy.{shape}.{l2}"] = ratios["fused_rms_over_copy"][shape][l2]["median"]
        for library in LIBRARIES:
            name = f"{library}_over_fused_plain"
            if shape in ratios.get(name, {}):
                figures[f"{name}.{shape}"] = ratios[name][shape]["warm"]["median"]
                figures[f"{name}.{shape}.cold"] = ratios[name][shape]["cold"]["median"]
        if shape in ratios.get("row4_over_fused_rms", {}):
            figures[f"row4_over_fused_rms.{shape}"] = ratios["row4_over_fused_rms"][shape]["warm"]["median"]
        fused = summaries["bandwidth"].get(variant_name("fused_rms", "stream", shape))
        if fused:
            figures[f"fused_rms_gbs.{shape}.warm"] = fused["warm_gbs"]
            figures[f"fused_rms_gbs.{shape}.cold"] = fused["cold_gbs"]
    for target in summaries["targets"]:
        if target["met"] is not None:
            figures[f"target_met.{_target_key(target)}"] = target["met"]
    return figures


def _target_key(target: dict) -> str:
    names = {"fused RMS time / copy time": "fused_rms_within_copy", "cudnn time / fused plain time": "faster_than_cudnn",
             "torch time / fused plain time": "faster_than_torch"}
    name = names[target["target"]]
    if target["sense"] == "at least":
        name = f"cudnn_over_fused_plain_at_least_{target['threshold']}"
    elif target["sense"] == "at most":
        name = f"{name}_{target['threshold']}x"
    return f"{name}.{target['shape']}.{target['l2']}"


# --------------------------------------------------------------------------- page
VARIANT_LABELS = {
    "copy.stream": "copy (cudaMemcpyAsync)", "row4.stream": "row path, stream", "row4.graph": "row path, graph",
    "fused_rms.stream": "fused RMS, stream", "fused_rms.graph": "fused RMS, graph",
    "fused_plain.stream": "fused plain, stream", "fused_plain.graph": "fused plain, graph",
    "cudnn.stream": "cuDNN softmax", "torch.stream": "torch.softmax", "triton.stream": "Triton softmax",
}


def _kinds(run) -> list[str]:
    present = {".".join(split_variant(v)[:2]) for v in run.summaries["warm"]}
    return [kind for kind in VARIANT_LABELS if kind in present]


def _cell(summary: dict, digits: int = 1) -> str:
    return f"{summary['median']:.{digits}f} [{summary['p10']:.{digits}f}, {summary['p90']:.{digits}f}]"


def _ratio_cell(ratio: dict | None, l2: str) -> str:
    if ratio is None:
        return ""
    r = ratio[l2]
    return f"{r['median']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"


def config_table(run):
    """Per shape: where the fused kernel keeps a row, its block and shared memory, its registers."""
    import pandas as pd

    rows = []
    for shape in run.summaries["shapes"]:
        config = run.summaries["configs"][shape]
        resources = run.summaries["resources"].get(config["module"], {})
        rows.append({"shape": shape, "row lives in": config["tier"], "threads per block": config["block"],
                     "dynamic shared bytes": config["shared_bytes"],
                     "registers (RMS / plain)": f"{resources.get('fused_rms_softmax', {}).get('registers', '')} / "
                                                f"{resources.get('fused_softmax', {}).get('registers', '')}",
                     "module": config["module"]})
    return pd.DataFrame(rows).set_index("shape")


def timing_table(run):
    """Per shape and variant: warm and cold time (median [p10, p90], us), GB/s and % of the copy."""
    import pandas as pd

    s = run.summaries
    rows = []
    for shape in s["shapes"]:
        for kind in _kinds(run):
            variant = f"{kind}.{shape}"
            if variant not in s["warm"]:
                continue
            band = s["bandwidth"][variant]
            rows.append({"shape": shape, "variant": VARIANT_LABELS[kind],
                         "warm us": _cell(s["warm"][variant]["event_us"], 2), "cold us": _cell(s["cold"][variant]["cold_us"], 2),
                         "warm GB/s": round(band["warm_gbs"]), "cold GB/s": round(band["cold_gbs"]),
                         "warm % of copy": round(band.get("warm_pct_of_copy", float("nan")), 1),
                         "cold % of copy": round(band.get("cold_pct_of_copy", float("nan")), 1),
                         "host-bound (warm)": "yes" if s["warm"][variant]["host_bound"] else ""})
    return pd.DataFrame(rows).set_index(["shape", "variant"])


def ratio_table(run):
    """Paired within-round ratios (median [95% bootstrap interval]), warm and cold."""
    import pandas as pd

    labels = {"fused_rms_over_copy": "fused RMS / copy", "row4_over_fused_rms": "row path / fused RMS",
              "cudnn_over_fused_plain": "cuDNN / fused plain", "torch_over_fused_plain": "torch / fused plain",
              "triton_over_fused_plain": "Triton / fused plain"}
    rows = {}
    for shape in run.summaries["shapes"]:
        entry = {}
        for name, label in labels.items():
            ratio = run.summaries["ratios"].get(name, {}).get(shape)
            entry[f"{label}, warm"] = _ratio_cell(ratio, "warm")
            entry[f"{label}, cold"] = _ratio_cell(ratio, "cold")
        rows[shape] = entry
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("shape")


def graph_table(run):
    """Stream over graph time (paired, warm and cold) and the graph's one-off setup cost."""
    import pandas as pd

    rows = []
    for shape in run.summaries["shapes"]:
        for family, name in (("row4", "row4_stream_over_graph"), ("fused_rms", "fused_rms_stream_over_graph")):
            ratio = run.summaries["ratios"].get(name, {}).get(shape)
            setup = run.summaries["graph_setup"].get(variant_name(family, "graph", shape), {})
            total = sum(setup.get(k, 0.0) for k in ("capture_us", "end_capture_us", "instantiate_us", "upload_us",
                                                   "first_replay_us"))
            rows.append({"shape": shape, "path": "row path" if family == "row4" else "fused RMS",
                         "stream / graph, warm": _ratio_cell(ratio, "warm"), "stream / graph, cold": _ratio_cell(ratio, "cold"),
                         "setup us (capture to first replay)": round(total, 1)})
    return pd.DataFrame(rows).set_index(["shape", "path"])


def resource_table(run):
    import pandas as pd

    rows = []
    for label, kernels in run.summaries["resources"].items():
        for kernel, entry in kernels.items():
            rows.append({"module": label, "kernel": kernel, **entry})
    return pd.DataFrame(rows).set_index(["module", "kernel"])


def dram_table(run):
    """Logical against measured DRAM bytes (MB) per variant at the profiled shape."""
    import pandas as pd

    rows = []
    for shape, entry in run.summaries["dram"].items():
        for family, values in entry["variants"].items():
            rows.append({"shape": shape, "variant": family, "logical MB": round(values["logical_bytes"] / 1e6, 1),
                         "DRAM read MB": round(values["read_bytes"] / 1e6, 1),
                         "DRAM written MB": round(values["write_bytes"] / 1e6, 1),
                         "measured / logical": round(values["measured_over_logical"], 3)})
    if not rows:
        return pd.DataFrame([{"shape": shape, "error": entry["error"]} for shape, entry in run.summaries["dram"].items()])
    return pd.DataFrame(rows).set_index(["shape", "variant"])


def targets_table(run):
    import pandas as pd

    rows = []
    for target in run.summaries["targets"]:
        measured = "" if target["measured"] is None else \
            f"{target['measured']:.3f} [{target['ci_low']:.3f}, {target['ci_high']:.3f}]"
        verdict = {True: "met", False: "missed", None: "not measured (library absent)"}[target["met"]]
        rows.append({"target": f"{target['target']} {target['sense']} {target['threshold']}", "shape": target["shape"],
                     "L2": target["l2"], "measured [95% CI]": measured, "verdict": verdict})
    return pd.DataFrame(rows).set_index(["target", "shape", "L2"])


def baseline_table(run):
    import pandas as pd

    rows = []
    for name, entry in run.summaries["baselines"].items():
        rows.append({"library": name, "timed at": ", ".join(s for s in run.summaries["shapes"]
                                                             if variant_name(name, "stream", s) in run.summaries["warm"]),
                     "how": json.dumps(entry.get("setup", {}), sort_keys=True),
                     "not timed": "; ".join(f"{s}: {n}" for s, n in entry["unavailable"].items())})
    return pd.DataFrame(rows).set_index("library") if rows else pd.DataFrame()


def _variant_style(kind: str, index: int) -> dict:
    """Ten variants need ten colours (matplotlib's tab10); graph versions are hollow markers."""
    import matplotlib

    colour = matplotlib.colormaps["tab10"](index % 10)
    return {"color": colour, "markerfacecolor": "white" if kind.endswith(".graph") else colour,
            "marker": "s" if kind.split(".")[0] in LIBRARIES else "o"}


def time_figure(run):
    """Time per invocation per shape and variant, warm (event batches) and cold (flushed L2)."""
    from launchlab.present import figures

    s = run.summaries
    kinds = _kinds(run)
    fig, axes = figures.figure(2, 1, height=3.6)
    width = 0.8 / max(1, len(kinds))
    for ax, (l2, source, metric) in zip(axes[:, 0], (("warm L2", s["warm"], "event_us"), ("cold L2", s["cold"], "cold_us"))):
        for index, kind in enumerate(kinds):
            points = [(i, source[f"{kind}.{shape}"][metric]) for i, shape in enumerate(s["shapes"])
                      if f"{kind}.{shape}" in source]
            xs = np.array([i for i, _ in points]) + (index - (len(kinds) - 1) / 2) * width
            medians = np.array([q["median"] for _, q in points])
            spread = [medians - np.array([q["p10"] for _, q in points]), np.array([q["p90"] for _, q in points]) - medians]
            ax.errorbar(xs, medians, yerr=spread, linestyle="none", capsize=2, markersize=5,
                        label=VARIANT_LABELS[kind], **_variant_style(kind, index))
        ax.set_xticks(np.arange(len(s["shapes"])), s["shapes"])
        ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)
        ax.set_ylabel("us per invocation")
        ax.set_title(f"{l2}: median and p10-p90 per shape (rows x cols)", fontsize="medium")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncols=5, fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def bandwidth_figure(run):
    """Effective bandwidth as a percentage of the same run's copy, per shape and variant."""
    from launchlab.present import figures

    s = run.summaries
    kinds = _kinds(run)
    fig, axes = figures.figure(1, 2, width=11, height=4.4)
    width = 0.8 / max(1, len(kinds) - 1)
    for ax, l2 in zip(axes[0], ("warm", "cold")):
        for index, kind in enumerate(kinds):
            if kind == "copy.stream":
                continue
            offset = kinds.index(kind) - 1 - (len(kinds) - 2) / 2
            xs = np.arange(len(s["shapes"])) + offset * width
            values = [s["bandwidth"].get(f"{kind}.{shape}", {}).get(f"{l2}_pct_of_copy", np.nan) for shape in s["shapes"]]
            style = _variant_style(kind, index)
            ax.bar(xs, values, width, label=VARIANT_LABELS[kind], color=style["color"],
                   hatch="//" if kind.endswith(".graph") else None, edgecolor="white")
        ax.axhline(100, color="black", linewidth=0.8)
        ax.set_xticks(np.arange(len(s["shapes"])), s["shapes"], rotation=30, fontsize="small")
        ax.set_ylabel("logical GB/s as % of the copy's")
        ax.set_title(f"{l2} L2 (the line: the same run's copy)", fontsize="medium")
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncols=5, fontsize="small", frameon=False)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def bytes_figure(run):
    """Logical bytes against DRAM bytes measured by Nsight Compute, per variant."""
    from launchlab.present import figures

    fig, axes = figures.figure(1, 1, width=7, height=3.4)
    ax = axes[0, 0]
    entries = [(shape, family, values) for shape, e in run.summaries["dram"].items() for family, values in e["variants"].items()]
    if not entries:
        errors = "; ".join(f"{shape}: {e['error']}" for shape, e in run.summaries["dram"].items()) or "no profile was taken"
        ax.text(0.5, 0.5, f"DRAM counters not read:\n{errors[:300]}", ha="center", va="center", wrap=True, fontsize="small")
        ax.set_axis_off()
        return fig
    labels = [f"{family}\n{shape}" for shape, family, _ in entries]
    xs = np.arange(len(entries))
    ax.bar(xs - 0.2, [v["logical_bytes"] / 1e6 for _, _, v in entries], 0.4, label="logical", color=figures.KERNEL_COLOURS[0])
    ax.bar(xs + 0.2, [v["read_bytes"] / 1e6 for _, _, v in entries], 0.4, label="DRAM read", color=figures.KERNEL_COLOURS[1])
    ax.bar(xs + 0.2, [v["write_bytes"] / 1e6 for _, _, v in entries], 0.4, bottom=[v["read_bytes"] / 1e6 for _, _, v in entries],
           label="DRAM written", color=figures.KERNEL_COLOURS[2])
    ax.set_xticks(xs, labels, fontsize="small")
    ax.set_ylabel("MB per invocation")
    ax.set_title("Logical bytes against measured DRAM bytes (Nsight Compute, caches flushed)", fontsize="medium")
    ax.legend(fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def _verdict(met) -> str:
    return {True: "met", False: "missed", None: "not measured"}[met]


def page_values(run) -> dict:
    """Formatted numbers for the chapter's prose, all from the run's summaries and record."""
    s, record = run.summaries, run.record
    values = {"run_id": run.run_id, "device_name": record["device"]["name"], "sm_count": str(record["device"]["sm_count"]),
              "l2_mib": f"{record['device']['l2_bytes'] / 2**20:.0f}",
              "flush_mib": f"{2 * record['device']['l2_bytes'] / 2**20:.0f}",
              "rounds": str(record["protocol"]["rounds"]), "batch": str(record["protocol"]["batch"]),
              "large_batch": str(record["protocol"]["large_batch"]), "warmups": str(record["protocol"]["warmups"]),
              "cold_repeats": str(record["cold_protocol"]["repeats"]),
              "cold_wait_us": f"{record['cold_protocol']['wait_ns'] / 1e3:.0f}",
              "copy_ratio_target": f"{COPY_RATIO_TARGET}", "cudnn_speedup_target": f"{CUDNN_SPEEDUP_TARGET}",
              "checks": str(record["validation"]["checks"])}
    for shape in s["shapes"]:
        for kind in VARIANT_LABELS:
            variant = f"{kind}.{shape}"
            if variant not in s["warm"]:
                continue
            key = f"{kind.replace('.', '_')}_{shape}"
            values[f"{key}_warm_us"] = f"{s['warm'][variant]['event_us']['median']:.1f}"
            values[f"{key}_cold_us"] = f"{s['cold'][variant]['cold_us']['median']:.1f}"
            band = s["bandwidth"][variant]
            values[f"{key}_warm_gbs"] = f"{band['warm_gbs']:.0f}"
            values[f"{key}_cold_gbs"] = f"{band['cold_gbs']:.0f}"
            if "warm_pct_of_copy" in band:
                values[f"{key}_warm_pct"] = f"{band['warm_pct_of_copy']:.0f}"
                values[f"{key}_cold_pct"] = f"{band['cold_pct_of_copy']:.0f}"
        for name, by_shape in s["ratios"].items():
            if shape in by_shape:
                for l2 in ("warm", "cold"):
                    r = by_shape[shape][l2]
                    values[f"{name}_{shape}_{l2}"] = f"{r['median']:.2f}"
                    values[f"{name}_{shape}_{l2}_ci"] = f"{r['ci_low']:.2f}–{r['ci_high']:.2f}"
        config = s["configs"][shape]
        values[f"tier_{shape}"] = config["tier"]
        values[f"block_{shape}"] = str(config["block"])
    for target in s["targets"]:
        values[f"verdict_{_target_key(target).replace('.', '_')}"] = _verdict(target["met"])
    values.update(_target_sentences(s))
    values.update(_dram_values(s))
    values["libraries_timed"] = ", ".join(n for n in LIBRARIES if any(f"{n}.stream.{x}" in s["warm"] for x in s["shapes"])) or "none"
    absent = [f"{n} ({'; '.join(sorted(set(e['unavailable'].values())))})" for n, e in s["baselines"].items() if e["unavailable"]]
    values["libraries_absent"] = "; ".join(absent) if absent else "none: every requested library loaded and was timed"
    values["host_bound_summary"] = _host_bound_summary(s)
    named = list(dict.fromkeys([*s["shapes"], *(workloads.shape_name(*x) for x in workloads.FUSION_SHAPES)]))
    for shape in named:  # every name the prose may use exists, also where a variant was not measured
        values.setdefault(f"tier_{shape}", "n/a")
        values.setdefault(f"block_{shape}", "n/a")
        for name in RATIOS:
            for l2 in ("warm", "cold"):
                values.setdefault(f"{name}_{shape}_{l2}", "n/a")
                values.setdefault(f"{name}_{shape}_{l2}_ci", "n/a")
        for kind in VARIANT_LABELS:
            for suffix in ("warm_us", "cold_us", "warm_gbs", "cold_gbs", "warm_pct", "cold_pct"):
                values.setdefault(f"{kind.replace('.', '_')}_{shape}_{suffix}", "n/a")
        for family in ("row4", "fused_rms", "fused_plain"):
            values.setdefault(f"dram_{family}_{shape}_ratio", "n/a")
            values.setdefault(f"dram_{family}_{shape}_mb", "n/a")
        values.setdefault(f"dram_{shape}_status", "not profiled in this run")
    return values


def _host_bound_summary(s: dict) -> str:
    """Where the warm batch ran at the host's pace: per variant, the shapes."""
    found = []
    for kind, label in VARIANT_LABELS.items():
        shapes = [shape for shape in s["shapes"] if s["warm"].get(f"{kind}.{shape}", {}).get("host_bound")]
        if shapes:
            found.append(f"{label} at {', '.join(shapes)}")
    return "; ".join(found) if found else "none of the variants at any shape"


def _target_sentences(s: dict) -> dict:
    """Short computed verdicts for the prose (never typed by hand)."""
    copy_targets = [t for t in s["targets"] if t["target"].startswith("fused RMS")]
    missed = [f"{t['shape']} {t['l2']} ({t['measured']:.2f})" for t in copy_targets if t["met"] is False]
    values = {"copy_target_summary": (f"met in all {len(copy_targets)} cases" if copy_targets and not missed else
                                      f"missed in {len(missed)} of {len(copy_targets)} cases: " + ", ".join(missed)
                                      if copy_targets else "not measured")}
    for library in ("cudnn", "torch"):
        for l2 in ("warm", "cold"):
            rows = [t for t in s["targets"] if t["target"].startswith(library) and t["l2"] == l2 and t["sense"] == "above"]
            measured = [t for t in rows if t["met"] is not None]
            lost = [f"{t['shape']} ({t['measured']:.2f})" for t in measured if not t["met"]]
            if not measured:
                text = "not measured (library absent)"
            elif not lost:
                text = f"faster at all {len(measured)} shapes"
            else:
                text = f"not faster at {len(lost)} of {len(measured)} shapes: " + ", ".join(lost)
            values[f"{library}_{l2}_summary"] = text
    return values


def _dram_values(s: dict) -> dict:
    values = {}
    for shape, entry in s["dram"].items():
        values[f"dram_{shape}_status"] = ("read by Nsight Compute" if entry["variants"] else
                                          f"not read: {entry['error']}")
        for family, v in entry["variants"].items():
            values[f"dram_{family}_{shape}_ratio"] = f"{v['measured_over_logical']:.2f}"
            values[f"dram_{family}_{shape}_mb"] = f"{(v['read_bytes'] + v['write_bytes']) / 1e6:.0f}"
    return values


def validation_table(run):
    """Every oracle check of the run: phase, shape, variant, fixture, verdict and error."""
    import pandas as pd

    checks = json.loads((run.path / "validation.json").read_text())
    frame = pd.DataFrame(checks)[["phase", "shape", "variant", "fixture", "oracle", "passed", "failing_elements",
                                  "max_abs_error", "relative_l2_error"]]
    frame["variant"] = [".".join(v.split(".")[:2]) for v in frame["variant"]]
    return frame.set_index(["phase", "shape", "variant", "fixture"])
