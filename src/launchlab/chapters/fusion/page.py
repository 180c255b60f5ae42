"""Chapter 3's tables, figures and glued values, all read from the run (its summaries and record).

Comparisons are device time per call: warm L2 from graphs of CALLS_PER_GRAPH captured calls, cold L2 from one
stream call after the flush and the GPU wait. Stream launches' warm batches appear only as the host-path view.
This module holds the glued values; the tables (page_tables), figures (page_figures) and the sweep (page_sweep)
are imported here, so that the notebook reads every name from `page`."""
from __future__ import annotations

from launchlab.chapters.fusion import (CALLS_PER_GRAPH, COPY_RATIO_TARGET, CUDNN_SPEEDUP_TARGET, L2_STATES, LIBRARIES,
                                       ROWS)
from launchlab.chapters.fusion import plans
from launchlab.chapters.fusion.page_figures import bandwidth_figure, bytes_figure, ratio_figure  # noqa: F401
from launchlab.chapters.fusion.page_format import (columns_of, design_label, fmt, graph_ratio, interval_text, label,
                                                   listing, plan_place, ratio_number, shape_label,
                                                   summaries_of, verdict_text)
from launchlab.chapters.fusion.page_plane import (bandwidth_plane_figure, distribution_figure,  # noqa: F401
                                                  library_map_figure, model_figure, plane_map_figure)
from launchlab.chapters.fusion.page_plane_text import (interactive_map, plane_default_names,  # noqa: F401
                                                       plane_table, plane_targets_table, plane_values)
from launchlab.chapters.fusion.page_sweep import (NO_POINT, rho_figure, sanitizer_table, sweep_figure,  # noqa: F401
                                                  sweep_targets_table, sweep_values, sweep_verdict)
from launchlab.chapters.fusion.page_tables import (baseline_table, config_table, copy_ratio_table,  # noqa: F401
                                                   device_table, dram_table, host_table, library_ratio_table,
                                                   pacing_table, policy_table, resource_table, submission_table,
                                                   targets_table)
from launchlab.chapters.fusion.page_model import choice_values
from launchlab.chapters.fusion.phase_floor import phase_floor_values
from launchlab.chapters.fusion.pipelined_probe import later_probe_values, pipelined_values
from launchlab.chapters.fusion.triton_layout import triton_layout_values
from launchlab.chapters.fusion.summary import variant
from launchlab.measure.variant import VariantId
from launchlab.model import workloads

# ---------------------------------------------------------------- glued values
def page_values(run) -> dict:
    """Formatted numbers for the chapter's prose, all from the run's summaries and record (and the committed
    phase-floor, pipelined and Triton-layout probes, phase_floor.py, pipelined_probe.py and triton_layout.py, and
    the cost model's fit, page_model.py); every name the prose may use exists ("n/a" where this run did not
    measure it)."""
    s, record = summaries_of(run), run.record
    protocol, device = record.protocol, record.device
    values = {"run_id": run.run_id, "device_name": record.device_name, "sm_count": str(device["sm_count"]),
              "l2_mib": f"{device['l2_bytes'] / 2**20:.0f}", "flush_mib": f"{2 * device['l2_bytes'] / 2**20:.0f}",
              "rounds": str(protocol["rounds"]), "batch": str(protocol["batch"]),
              "large_batch": str(protocol["large_batch"]), "warmups": str(protocol["warmups"]),
              "cold_repeats": str(protocol["cold_repeats"]), "cold_wait_us": f"{protocol['cold_wait_ns'] / 1e3:.0f}",
              "calls_per_graph": str(CALLS_PER_GRAPH), "graph_calls_per_batch": str(CALLS_PER_GRAPH * protocol["large_batch"]),
              "copy_ratio_target": f"{COPY_RATIO_TARGET}", "cudnn_speedup_target": f"{CUDNN_SPEEDUP_TARGET}",
              "checks": str(record.validation.get("checks", "n/a"))}
    values.update(_device_values(s))
    values.update(_ratio_values(s))
    values.update(_config_values(s))
    values.update(_target_sentences(s))
    values.update(_dram_values(s))
    values.update(_pacing_values(s))
    values.update(_library_values(s))
    values.update(finding_values(s))
    values.update(sweep_values(s))
    values.update(plane_values(run))
    values.update(phase_floor_values())
    values.update(choice_values())
    values.update(pipelined_values())
    values.update(later_probe_values())
    values.update(triton_layout_values())
    return _with_defaults(values, s)


def _device_values(s: dict) -> dict:
    values = {}
    for name, by_shape in s["device"].items():
        for shape, times in by_shape.items():
            for l2, summary in times.items():
                band = s["bandwidth"][name][shape]
                values[f"{name}_{shape}_{l2}_us"] = fmt(summary["median"])
                values[f"{name}_{shape}_{l2}_gbs"] = f"{band[f'{l2}_gbs']:.0f}"
                if f"{l2}_pct_of_copy" in band:
                    values[f"{name}_{shape}_{l2}_pct"] = f"{band[f'{l2}_pct_of_copy']:.0f}"
    for vid, host in s["host_view"].items():
        parsed = VariantId.parse(vid)
        if parsed.submission == "stream":
            values[f"{parsed.target}_{parsed.case}_stream_us"] = fmt(host["event_us"]["median"])
            values[f"{parsed.target}_{parsed.case}_stream_enqueue_us"] = fmt(host["enqueue_us"]["median"])
    return values


def _ratio_values(s: dict) -> dict:
    values = {}
    for kind, prefix in (("graph", ""), ("stream", "stream_")):
        for ratio_name, by_shape in s["ratios"][kind].items():
            for shape, by_l2 in by_shape.items():
                for l2, ratio in by_l2.items():
                    values[f"{prefix}{ratio_name}_{shape}_{l2}"] = ratio_number(ratio["median"])
                    values[f"{prefix}{ratio_name}_{shape}_{l2}_ci"] = interval_text(ratio)
    return values


def _config_values(s: dict) -> dict:
    values = {}
    for shape, config in s["configs"].items():
        values[f"tier_{shape}"] = plan_place(config)
        values[f"holding_{shape}"] = holding_phrase(config)
        values[f"design_{shape}"] = design_label(config["design"])
        values[f"block_{shape}"] = str(config.get("block") or config["defines"]["BLOCK"])
        values[f"module_{shape}"] = config["module"]
    values["fused_builds"] = str(len({c["module"] for c in s["configs"].values()}))
    values.update(row_build_values(s))
    values.update(byte_values(s))
    return values


def row_build_values(s: dict) -> dict:
    """How the run's one-block-per-row shapes split between the full row kernel and its registers tier alone
    (plans.REGISTERS_FAMILY), and the registers a thread of each needs (from the loaded binaries), as a range."""
    rows = [c for c in s["configs"].values() if c["design"] == "row"]
    alone = [c for c in rows if c["family"] == plans.REGISTERS_FAMILY]

    def registers(configs, kernels) -> str:
        found = sorted({s["resources"].get(c["module"], {}).get(k, {}).get("registers") for c in configs for k in kernels}
                       - {None})
        return "none" if not found else f"{found[0]}" if found[0] == found[-1] else f"{found[0]} to {found[-1]}"

    return {"row_shapes": str(len(rows)), "registers_only_shapes": str(len(alone)),
            "registers_only_registers": registers(alone, plans.REGISTERS_KERNELS),
            "full_row_registers": registers([c for c in rows if c not in alone], plans.FUSED_KERNELS)}


def byte_values(s: dict) -> dict:
    """Bytes beside the kernel code, per shape: a row, what one thread and one block hold in registers (chunks of
    16 bytes), the dynamic shared memory, and the logical bytes of one call."""
    values = {}
    for shape, config in s["configs"].items():
        values[f"row_bytes_{shape}"] = f"{columns_of(shape) * 4:,}"
        values[f"row_fit_{shape}"] = row_fit_sentence(shape, config)
        logical = s["bandwidth"].get("fused_rms", {}).get(shape, {}).get("logical_bytes_per_call")
        values[f"logical_mib_{shape}"] = "n/a" if logical is None else f"{logical / 2**20:g}"
        if config["design"] != "row":
            continue
        chunks, block = config.get("defines", {}).get("REG_CHUNKS", 0), config["block"]
        values[f"reg_chunks_{shape}"] = str(chunks)
        values[f"thread_reg_bytes_{shape}"] = str(16 * chunks)
        values[f"block_reg_bytes_{shape}"] = f"{16 * chunks * block:,}"
        values[f"shared_bytes_{shape}"] = f"{config['shared_bytes']:,}"
    return values


def row_fit_sentence(shape: str, config: dict) -> str:
    """Where a row of this shape lives under the run's plan, with the bytes that decide it, as a sentence."""
    row = columns_of(shape) * 4
    opening = f"At {shape_label(shape)} a row is {row:,} bytes"
    if config["design"] != "row":
        return f"{opening}; there {holding_phrase(config)}."
    block, chunks = config["block"], config.get("defines", {}).get("REG_CHUNKS", 0)
    threads, capacity = f"{block:,} threads of {chunks} chunks", 16 * chunks * block
    held = f"{threads} each hold {capacity:,} bytes in registers"
    place = plan_place(config)
    if place == "registers":
        return f"{opening}, and {held}, so the row lives there."
    if place == "shared":
        return (f"{opening}, more than the {capacity:,} bytes that {threads} hold in registers; the block is launched "
                f"with {config['shared_bytes']:,} bytes of dynamic shared memory and keeps the row there.")
    return f"{opening}, more than {held} or shared memory holds, so the block streams it, reading x twice."


def _target_sentences(s: dict) -> dict:
    """Short computed verdicts for the prose (never typed by hand)."""
    values = {}
    both: dict[str, dict] = {}
    for target in s["targets"]:
        values[f"verdict_{target['key'].replace('.', '_')}"] = verdict_text(target["met"])
        base, _, l2 = target["key"].rpartition(".")
        both.setdefault(base, {})[l2] = verdict_text(target["met"])
    for base, by_l2 in both.items():   # "missed warm and cold", "met warm, missed cold"
        words = (f"{by_l2.get('warm')} warm and cold" if by_l2.get("warm") == by_l2.get("cold") else
                 f"{by_l2.get('warm', 'not measured')} warm, {by_l2.get('cold', 'not measured')} cold")
        values[f"verdict_both_{base.replace('.', '_')}"] = words
    copy_targets = [t for t in s["targets"] if t["ratio"] == "fused_rms_over_copy"]
    missed = [f"{shape_label(t['shape'])} {t['l2']} ({ratio_number(t['measured'])})" for t in copy_targets if t["met"] is False]
    measured = [t for t in copy_targets if t["met"] is not None]
    values["copy_target_summary"] = ("not measured" if not measured else f"met in all {len(measured)} cases" if not missed
                                     else f"missed in {len(missed)} of {len(measured)} cases: " + ", ".join(missed))
    for library in ("cudnn", "torch"):
        for l2 in L2_STATES:
            rows = [t for t in s["targets"] if t["ratio"] == f"{library}_over_fused_plain" and t["l2"] == l2
                    and t["sense"] == "above" and t["met"] is not None]
            lost = [f"{shape_label(t['shape'])} ({ratio_number(t['measured'])})" for t in rows if not t["met"]]
            values[f"{library}_{l2}_summary"] = ("not measured (library absent)" if not rows else
                                                 f"faster at all {len(rows)} shapes" if not lost else
                                                 f"not faster at {len(lost)} of {len(rows)} shapes: " + ", ".join(lost))
            values[f"{library}_{l2}_verdict"] = ("not measured (library absent)" if not rows else
                                                 "met" if not lost else f"missed at {listing(lost)}")
    return values


def _dram_values(s: dict) -> dict:
    profiled = [shape_label(shape) for shape, entry in s["dram"].items() if entry["contenders"]]
    values = {"profiled_shapes": listing(profiled) if profiled else "no shape (the counters were not read)"}
    for shape, entry in s["dram"].items():
        values[f"dram_{shape}_status"] = ("read by Nsight Compute" if entry["contenders"] else f"not read: {entry['error']}")
        for name, v in entry["contenders"].items():
            values[f"dram_{name}_{shape}_ratio"] = f"{v['measured_over_logical']:.2f}"
            values[f"dram_{name}_{shape}_mb"] = f"{(v['read_bytes'] + v['write_bytes']) / 1e6:.0f}"
    return values


def _pacing_values(s: dict) -> dict:
    pacing = s["graph_pacing"]
    paced = [v for v, p in pacing.items() if p["device_paced"]]
    host_paced = [f"{label(VariantId.parse(v).target)} at {VariantId.parse(v).case}"
                  for v, p in pacing.items() if not p["device_paced"]]
    largest = max((p["host_share_max"] for p in pacing.values()), default=None)
    bound = {}
    for shape in s["shapes"]:
        for name in s["contenders"]:
            if s["host_view"].get(variant(name, shape, "stream"), {}).get("host_bound"):
                bound.setdefault(label(name), []).append(shape_label(shape))
    bound = [f"{name} at {', '.join(shapes)}" for name, shapes in bound.items()]
    late = sum(p["host_enqueue_exceeded_wait"] for p in s["cold_pacing"].values())
    total = sum(p["samples"] for p in s["cold_pacing"].values())
    return {"graph_paced_summary": (f"all {len(pacing)} graph variants" if not host_paced else
                                    f"{len(paced)} of {len(pacing)} graph variants; host-paced: " + ", ".join(host_paced)),
            "graph_host_share_max": "n/a" if largest is None else f"{largest:.2f}",
            "host_bound_summary": "; ".join(bound) if bound else "none of the contenders at any shape",
            "cold_late": str(late), "cold_samples": str(total)}


NEAR_COPY = 1.10       # "near the copy": a fused kernel's device time at most this many times the copy's
LONG_ROW = 1024        # rows of at least this many columns are where a fused kernel should reach the copy


def near_copy_count_sentence(s: dict, name: str = "fused_plain") -> str:
    """One sentence for the answer: of the (shape, L2 state) pairs with rows of LONG_ROW floats or more, how many
    came within NEAR_COPY of the copy, and which did not (with their ratios)."""
    near, far = [], {}
    for shape in (sh for sh in s["shapes"] if columns_of(sh) >= LONG_ROW):
        for l2 in L2_STATES:
            ratio = graph_ratio(s, f"{name}_over_copy", shape, l2)
            if ratio is not None:
                if ratio["median"] <= NEAR_COPY:
                    near.append(shape)
                else:
                    far.setdefault(shape, []).append(f"{ratio_number(ratio['median'])} {l2}")
    total = len(near) + sum(len(v) for v in far.values())
    if not total:
        return f"No fixed shape has rows of {LONG_ROW:,} floats or more in this run."
    head = (f"With rows of {LONG_ROW:,} floats or more, the fused plain kernel came within {NEAR_COPY:.2f} times "
            f"the copy")
    if not far:
        return f"{head} at all {total} shape and L2 pairs."
    further = listing([f"{shape_label(shape)} ({', '.join(ratios)})" for shape, ratios in far.items()])
    return f"{head} at {len(near)} of {total} shape and L2 pairs; it stayed further away at {further}."


def _below_copy(ratios) -> list[tuple]:
    """The (name, shape, l2, ratio) whose ratio's whole 95 % interval lies below 1."""
    return [(name, shape, l2, r) for name, shape, l2, r in ratios
            if r is not None and r.get("ci_high") is not None and r["ci_high"] < 1.0]


def below_copy_value(s: dict) -> str:
    """A sentence: how often a contender's device time was below cudaMemcpyAsync's with the whole 95 % interval
    below 1, at the fixed shapes and at the slice's points, which contenders, and the largest margin; then, where
    the slice also timed the copy kernel at those points, how the same contenders stood against it (that copy is
    the faster one there, so beating cudaMemcpyAsync is not beating the copy ceiling). Or that none was below."""
    fixed = _below_copy((name, shape, l2, graph_ratio(s, f"{name}_over_copy", shape, l2))
                        for name in s["contenders"] for shape in s["shapes"] for l2 in L2_STATES)
    points = {f"{p['rows']}x{p['cols']}" if "rows" in p else f"{series}x{p['cols']}": p
              for series in ("4096", "128") for p in s.get("sweep", {}).get(series, [])}
    swept = _below_copy((name[:-len("_over_copy")], shape, l2, ratio) for shape, p in points.items()
                        for name, by_l2 in p.get("ratios", {}).items() if name.endswith("_over_copy")
                        for l2, ratio in by_l2.items())
    at_fixed = {case[:3] for case in fixed}
    found = fixed + [case for case in swept if case[:3] not in at_fixed]
    if not found:
        return "No contender's device time was below cudaMemcpyAsync's with the whole 95 % interval below 1, at the " \
               "fixed shapes or at any point of the slice."
    names = listing([label(name) for name in s["contenders"] if any(case[0] == name for case in found)])
    where = ("at the fixed shapes and along the 128-row slice" if fixed and len(found) > len(fixed)
             else "at the fixed shapes" if fixed else "along the 128-row slice")
    name, shape, l2, ratio = min(found, key=lambda case: case[3]["median"])
    cases = "in one measured case" if len(found) == 1 else f"in {len(found)} measured cases"
    sentence = (f"cudaMemcpyAsync alone is no ceiling: {names} took less device time than it {cases} {where}, "
                f"with the whole 95 % interval below 1, most at {shape_label(shape)} {l2} ({label(name)}, "
                f"{ratio_number(ratio['median'])} times its device time, {interval_text(ratio)}).")
    kernel = [p["device_us"][n][l2] / p["device_us"]["copy4"][l2] for n, shape, l2, _ in found if shape in points
              for p in [points[shape]] if l2 in p["device_us"].get("copy4", {}) and l2 in p["device_us"].get(n, {})]
    if kernel:
        sentence += (" The copy kernel timed beside it there was faster still: at those points of the slice the same "
                     f"kernels took {ratio_number(min(kernel))}–{ratio_number(max(kernel))} times its device time.")
    return sentence


def libraries_faster_sentence(s: dict) -> str:
    """One sentence: at which shapes each library's device time was below the fused plain kernel's (median ratio
    below 1), the libraries faster nowhere named together."""
    faster, nowhere = [], []
    for library in LIBRARIES:
        if library not in s["contenders"]:
            continue
        found = library_faster_value(s, library)
        (nowhere.append(label(library)) if found is None else faster.append(f"{label(library)} at {found}"))
    parts = []
    if faster:
        parts.append(f"A library finished sooner than the fused plain kernel (device time, median ratio below 1): "
                     f"{'; '.join(faster)}")
    if nowhere:
        verb = "was" if len(nowhere) == 1 else "were"
        parts.append(f"{listing(nowhere)} {verb} slower than the fused plain kernel at every shape, warm and cold")
    return (". ".join(parts) + ".") if parts else "No library was timed in this run."


def library_faster_value(s: dict, library: str) -> str | None:
    """Shapes where a library's device time was below the fused plain kernel's (median ratio below 1)."""
    found = []
    for shape in s["shapes"]:
        faster = [f"{l2} {ratio_number(r['median'])}" for l2 in L2_STATES
                  if (r := graph_ratio(s, f"{library}_over_fused_plain", shape, l2)) is not None and r["median"] < 1.0]
        if faster:
            found.append(f"{shape_label(shape)} ({', '.join(faster)})")
    return listing(found) if found else None


def sooner_libraries_value(s: dict, shape: str) -> str:
    """Which libraries finished a shape sooner than the fused plain kernel (median ratio below 1, warm or
    cold) and which did not, with their ratios."""
    sooner, later = [], []
    for library in LIBRARIES:
        medians = {l2: r["median"] for l2 in L2_STATES
                   if (r := graph_ratio(s, f"{library}_over_fused_plain", shape, l2)) is not None}
        if medians:
            text = f"{label(library)} ({', '.join(f'{l2} {ratio_number(m)}' for l2, m in medians.items())})"
            (sooner if min(medians.values()) < 1.0 else later).append(text)
    parts = ([f"{listing(sooner)} finished sooner than the fused plain kernel"] if sooner else []) + (
        [f"{listing(later)} took longer"] if later else [])
    return "; ".join(parts) if parts else "no library ran at this shape"


def holding_phrase(config: dict) -> str:
    """How the run's plan at a shape holds each row while it is reduced, as a clause ("one block holds each row in
    shared memory"), from the plan's design and place (plans.place)."""
    design, place = config["design"], plan_place(config)
    if design == "row":
        return {"registers": "one block holds each row in registers",
                "shared": "one block holds each row in shared memory",
                "streamed": "one block streams each row, reading x twice"}.get(place, f"one block holds each row ({place})")
    if design == "split":
        where, pieces = place.rsplit(", ", 1)
        kept = "each held on chip" if where != "streamed" else "streamed, reading x twice"
        return f"each row is split into {pieces} over resident blocks, {kept}"
    if design == "cluster":
        where, blocks = place.split(", ", 1)
        return f"a cluster of {blocks} holds each row in {where}"
    where, lanes = place.rsplit(", ", 1)  # "registers (single floats), 16 lanes"
    scalar = " as single floats" if "single floats" in where else ""
    return f"{lanes} of a warp hold each row in registers{scalar}"


LONG_ROW_SHAPES = ("4096x16384", "128x65536")  # the fixed shapes of the longest rows


def long_rows_sentence(s: dict) -> str:
    """Where the long rows of the fixed shapes live in this run, one clause per shape."""
    parts = [f"at {shape_label(shape)} {holding_phrase(s['configs'][shape])}"
             for shape in LONG_ROW_SHAPES if shape in s["configs"]]
    if not parts:
        return f"This run measured neither {' nor '.join(shape_label(shape) for shape in LONG_ROW_SHAPES)}."
    text = "; ".join(parts)
    return f"{text[0].upper()}{text[1:]}."


def widest_fixed_miss_sentence(s: dict) -> str:
    """The fixed shape where fused plain is furthest above the copy (warm, graph replay), with how it holds a row."""
    ratios = s["ratios"]["graph"].get("fused_plain_over_copy", {})
    warm = {shape: r["warm"]["median"] for shape, r in ratios.items() if "warm" in r and shape in s["configs"]}
    if not warm:
        return "No fixed shape has both the fused plain kernel and the copy measured warm."
    shape = max(warm, key=warm.get)
    copy_us = s["device"].get("copy", {}).get(shape, {}).get("warm", {}).get("median")
    took = "" if copy_us is None else f" (the copy takes {fmt(copy_us)} µs there)"
    return (f"The widest miss among these shapes is {shape_label(shape)}, {ratio_number(warm[shape])} times the copy "
            f"warm for the plain kernel{took}; there {holding_phrase(s['configs'][shape])}.")


def finding_values(s: dict) -> dict:
    """The run's findings, computed: near-copy shapes, contenders below the copy, where libraries beat fused plain."""
    values = {"below_copy_summary": below_copy_value(s)}
    values["long_rows_sentence"] = long_rows_sentence(s)
    values["widest_fixed_miss_sentence"] = widest_fixed_miss_sentence(s)
    values["libraries_faster_sentence"] = libraries_faster_sentence(s)
    values["near_copy_sentence"] = near_copy_count_sentence(s)
    values["sooner_libraries_4096x128"] = sooner_libraries_value(s, "4096x128")
    return values


def _library_values(s: dict) -> dict:
    timed = [label(n) for n in LIBRARIES if n in s["device"]]
    absent = [f"{label(n)} ({'; '.join(sorted(set(e['unavailable'].values())))})"
              for n, e in s["baselines"].items() if e["unavailable"]]
    return {"libraries_timed": ", ".join(timed) or "none",
            "libraries_absent": "; ".join(absent) if absent else "none: every requested library loaded and was timed"}


def _with_defaults(values: dict, s: dict) -> dict:
    """Every per-shape and plane name the prose may use, "n/a" where this run has no value for it."""
    for name in plane_default_names():
        values.setdefault(name, "n/a")
    shapes = list(dict.fromkeys([*s["shapes"], *(workloads.shape_name(*x) for x in workloads.FUSION_SHAPES)]))
    names = [declared.name for declared in ROWS]
    ratio_names = [f"{a}_over_copy" for a in names if a != "copy"] + ["row4_over_fused_rms", "fused_plain_over_fused_rms"]
    ratio_names += [f"{lib}_over_fused_plain" for lib in LIBRARIES]
    for shape in shapes:
        for key in ("tier", "holding", "design", "block", "module", "row_bytes", "reg_chunks", "thread_reg_bytes",
                    "block_reg_bytes", "shared_bytes", "logical_mib", "row_fit"):
            values.setdefault(f"{key}_{shape}", "n/a")
        for name in names:
            for l2 in L2_STATES:
                for unit in ("us", "gbs", "pct"):
                    values.setdefault(f"{name}_{shape}_{l2}_{unit}", "n/a")
            for suffix in ("stream_us", "stream_enqueue_us"):
                values.setdefault(f"{name}_{shape}_{suffix}", "n/a")
            values.setdefault(f"dram_{name}_{shape}_ratio", "n/a")
            values.setdefault(f"dram_{name}_{shape}_mb", "n/a")
        for ratio_name in ratio_names:
            for l2 in L2_STATES:
                for prefix in ("", "stream_"):
                    values.setdefault(f"{prefix}{ratio_name}_{shape}_{l2}", "n/a")
                    values.setdefault(f"{prefix}{ratio_name}_{shape}_{l2}_ci", "n/a")
        values.setdefault(f"dram_{shape}_status", "not profiled in this run")
    return values



