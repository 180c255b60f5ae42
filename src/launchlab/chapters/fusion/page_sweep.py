"""Chapter 3's sweep on the page (its figures, targets table and glued values) and compute-sanitizer's table."""
from __future__ import annotations

from launchlab.chapters.fusion import (FEW_ROWS_REG_CHUNKS, L2_STATES, LIBRARIES, SWEEP_BYTES_PER_REPLAY, SWEEP_COPY_TARGETS,
                                       SWEEP_MAX_CALLS, rows_entering)
from launchlab.chapters.fusion.page_figures import plain_log_ticks
from launchlab.chapters.fusion.page_format import (label, listing, page_table, ratio_number, shape_label,
                                                   summaries_of, verdict_text)
from launchlab.model import fused_policy

# ---------------------------------------------------------------- the sweep
SWEEP_SERIES = {"4096": "4096 rows", "128": "128 rows"}


def sweep_figure(run, series: str):
    """Top: logical GB/s against the row length N, the same run's copy dashed; bottom: device time over the copy's.
    Left warm L2, right cold L2."""
    import numpy as np

    from launchlab.present import figures

    points = summaries_of(run)["sweep"][series]
    fig, axes = figures.figure(2, 2, height=2.9, layout="constrained", sharex=True, sharey="row")
    xs = [p["cols"] for p in points]
    names = sorted((n for n in rows_entering("sweep") if n != "copy" and any(n in p["device_us"] for p in points)),
                   key=lambda n: n != "fused_plain")   # fused plain first: the same colour as in the other figures
    for column, l2 in enumerate(L2_STATES):
        copy = [p["device_us"].get("copy", {}).get(l2) for p in points]
        gbs = {label(n): [p["gbs"].get(n, {}).get(l2) for p in points] for n in names}
        figures.sweep(axes[0, column], xs, gbs, ylabel="logical GB/s" if column == 0 else None, band=False,
                      logx=series == "128")
        figures.bandwidth_references(axes[0, column], run.record.device_name,
                                     [p["gbs"].get("copy", {}).get(l2, np.nan) for p in points], xs,
                                     copy_label="cudaMemcpyAsync")
        axes[0, column].set_ylim(bottom=0)
        ratio = {label(n): [None if c is None or n not in p["device_us"] or l2 not in p["device_us"][n] else
                            p["device_us"][n][l2] / c for p, c in zip(points, copy)] for n in names}
        figures.sweep(axes[1, column], xs, ratio, ceiling=1.0, ceiling_label="cudaMemcpyAsync", logy=True,
                      band=False, logx=series == "128", xlabel="row length N (floats)",
                      ylabel="device time / cudaMemcpyAsync's" if column == 0 else None)
        plain_log_ticks(axes[1, column])
        if series == "4096":
            axes[1, column].set_xticks([0, 4096, 8192, 12288], ["0", "4096", "8192", "12288"])
        axes[0, column].set_title(f"{SWEEP_SERIES[series]} × N, {l2} L2", fontsize=figures.FONT_PT)
    return figures.describe(figures.finish(fig, legend_where="right"), (
        f"Line charts over the row length N from {xs[0]:,} to {xs[-1]:,} floats for {SWEEP_SERIES[series]}, warm L2 "
        "left and cold L2 right: on top each contender's logical bandwidth in GB/s with cudaMemcpyAsync's dashed "
        "and the GPU's peak DRAM bandwidth dotted; below, its device time over cudaMemcpyAsync's on a log scale, 1 "
        "dashed."))


def rho_figure(run):
    """Fused RMS time over fused plain time at every sweep point (paired per round), warm and cold."""
    from launchlab.present import figures

    s = summaries_of(run)
    drawn = [series for series in SWEEP_SERIES if s["sweep"].get(series)] or ["128"]   # a series without points is left out
    fig, axes = figures.figure(1, len(drawn), height=2.8, layout="constrained", sharey="row")
    for column, series in enumerate(drawn):
        points = s["sweep"].get(series, [])
        values = {f"{l2} L2": [p["ratios"].get("fused_rms_over_fused_plain", {}).get(l2) for p in points]
                  for l2 in L2_STATES}
        figures.sweep(axes[0, column], [p["cols"] for p in points], values, ceiling=1.0, ceiling_label="no cost",
                      logx=series == "128", xlabel="row length N (floats)",
                      ylabel="fused RMS / fused plain" if column == 0 else None)
        axes[0, column].set_title(f"{SWEEP_SERIES[series]} × N", fontsize=figures.FONT_PT)
    return figures.describe(figures.finish(fig, legend_where="right"), (
        "Line charts of the fused RMS kernel's time over the fused plain kernel's, paired per round, against the row "
        f"length N, for {' and '.join(SWEEP_SERIES[series] for series in drawn)}, warm and cold L2, with a dashed line "
        "at 1 (no cost)."))


def sweep_targets_table(run):
    """The sweep's declared targets: the worst point of each, and the verdict."""
    s = summaries_of(run)
    what = {"fused_plain": "fused plain time / copy time", "fused_rms": "fused RMS time / copy time"}
    where = {"max_n_ge_1024": "every point with N ≥ 1024", "max_n_lt_1024": "every point with N < 1024",
             "every_point": "every point"}
    rows = []
    for target in s["sweep"]["targets"]:
        if sweep_verdict(target, s) == NO_POINT:   # a range the sweep does not reach gets no row
            continue
        library = target["kind"] not in what
        rows.append({"target": f"{label(target['kind'])} time / fused plain time" if library else what[target["kind"]],
                     "where": where[target["where"]], "L2": target["l2"],
                     "bound": ("above " if library else "at most ") + f"{target['threshold']:g}",
                     "worst measured": None if target["measured"] is None else ratio_number(target["measured"]),
                     "at": shape_label(target["shape"]) if target["shape"] else "—", "verdict": sweep_verdict(target, s)})
    if not rows:
        rows = [{"target": "every declared target", "where": "—", "L2": "—", "bound": "—", "worst measured": None,
                 "at": "—", "verdict": "not measured (no sweep point in any target's range)"}]
    return page_table(rows, "target", formats={k: "text" for k in ("target", "where", "L2", "bound", "worst measured", "at", "verdict")},
                  units={"worst measured": "ratio"},
                  note="Worst: the largest ratio over the copy, or the smallest library speed-up, over the sweep's points "
                       "(the fixed shapes on the sweep's grids included); paired medians over the rounds.")


def sanitizer_table(run):
    """compute-sanitizer's tools over every fused design (a separate process, small irregular shapes)."""
    s = summaries_of(run)
    rows = [{"tool": tool, "ran": "yes" if r["ran"] else "no", "errors": r["errors"], "checks in the child": r["child_checks"],
             "all checks passed": "yes" if r["child_passed"] else "no", "clean": "yes" if r["clean"] else "no"}
            for tool, r in sorted(s.get("sanitizer", {}).items())]
    if not rows:
        rows = [{"tool": "—", "ran": "no", "errors": None, "checks in the child": None, "all checks passed": "—", "clean": "—"}]
    return page_table(rows, "tool", formats={k: "text" for k in ("tool", "ran", "all checks passed", "clean")},
                  units={"errors": "count", "checks in the child": "count"},
                  note=run.record.details.get("sanitizer", {}).get("problem", ""))


# Every extreme summary.sweep_extremes can give, so that the prose has a value where a run has none (no sweep, no
# point in a range, a library not timed): the largest fused ratio over the copy per row-length range, the smallest
# library speed-up, the price of rho.
SWEEP_COPY_RATIOS = ("fused_plain_over_copy", "fused_rms_over_copy")
SWEEP_EXTREME_KEYS = tuple(
    [f"{ratio}.{where}.{l2}" for l2 in L2_STATES for ratio in SWEEP_COPY_RATIOS for where in SWEEP_COPY_TARGETS]
    + [f"min_speedup.{library}.{l2}" for l2 in L2_STATES for library in LIBRARIES]
    + [f"price_of_rho.{which}.{l2}" for l2 in L2_STATES for which in ("min", "median", "max")])
SWEEP_RANGES = {"max_n_ge_1024": "N ≥ 1024", "max_n_lt_1024": "N < 1024"}


def sweep_values(s: dict) -> dict:
    """Glue names for the sweep: its declared constants, point counts, extremes (sweep_<ratio>_<which>_<l2> and
    ..._at, the shape; "n/a" and why where the run has none), target verdicts and compute-sanitizer's results."""
    values = {**sweep_constant_values(), **sweep_point_values(s), **sweep_extreme_values(s), **few_rows_values(s)}
    values["sweep_below_1024_sentence"] = below_1024_sentence(s)
    for target in s["sweep"].get("targets", []):
        values["sweep_verdict_" + target["key"].replace(".", "_")] = sweep_verdict(target, s)
    values["sanitizer_summary"] = sanitizer_summary(s.get("sanitizer", {}))
    return values


def sanitizer_summary(results: dict) -> str:
    """compute-sanitizer's three tools in one clause: "compute-sanitizer's memcheck, racecheck and synccheck were
    clean over 93 checks each" where they agree, else each tool's own result."""
    tools = [tool for tool in ("memcheck", "racecheck", "synccheck") if tool in results]
    if not tools:
        return "compute-sanitizer did not run"
    checks = {results[tool]["child_checks"] for tool in tools}
    if all(results[tool]["clean"] for tool in tools) and len(checks) == 1:
        return (f"compute-sanitizer's {listing(tools)} {'was' if len(tools) == 1 else 'were'} clean over "
                f"{checks.pop()} checks each")
    return "compute-sanitizer's " + listing([f"{tool} " + ("clean" if results[tool]["clean"] else f"found {results[tool]['errors']} errors")
                    + f" over {results[tool]['child_checks']} checks" for tool in tools])


def below_1024_sentence(s: dict) -> str:
    """The largest fused plain ratio over the copy at rows shorter than 1024 floats, warm and cold; or that the
    sweep has no such row."""
    extremes = s["sweep"].get("extremes", {})
    found = {l2: extremes.get(f"fused_plain_over_copy.max_n_lt_1024.{l2}") for l2 in L2_STATES}
    if not any(found.values()):
        return "The sweep has no row shorter than 1,024 floats."
    return "Below N = 1024 the largest fused plain ratio was " + " and ".join(
        f"{ratio_number(e['value'])} {l2} (at {shape_label(e['shape'])})" for l2, e in found.items() if e) + "."


def sweep_constant_values() -> dict:
    """The sweep's declared targets and graph sizes and the largest cluster (the same in every run)."""
    return {"sweep_target_ge_1024": f"{SWEEP_COPY_TARGETS['max_n_ge_1024']:g}",
            "sweep_target_lt_1024": f"{SWEEP_COPY_TARGETS['max_n_lt_1024']:g}",
            "sweep_mib_per_replay": f"{SWEEP_BYTES_PER_REPLAY / 2**20:.0f}", "sweep_max_calls": str(SWEEP_MAX_CALLS),
            "max_cluster": str(fused_policy.MAX_CLUSTER),
            "few_rows_reg_chunks": str(FEW_ROWS_REG_CHUNKS), "few_rows_max_floats": f"{4 * FEW_ROWS_REG_CHUNKS * 1024:,}"}


def _sweep_points(s: dict) -> list[dict]:
    return [point for series in SWEEP_SERIES for point in s["sweep"].get(series, [])]


def sweep_point_values(s: dict) -> dict:
    counts = {series: len(s["sweep"].get(series, [])) for series in SWEEP_SERIES}
    return {"sweep_points": str(sum(counts.values())),
            **{f"sweep_points_{series}": str(count) for series, count in counts.items()}}


def few_rows_values(s: dict) -> dict:
    """The 128-row sweep points where the one-block-per-row kernel holds the row in registers: their row lengths,
    and the ranges of fused plain time over the copy's and of the Triton kernel's time over fused plain, warm L2
    ("n/a" where absent)."""
    points = [p for p in s["sweep"].get("128", [])
              if p["design"] == "row" and s["configs"].get(p["shape"], {}).get("tier") == "registers"]
    values = {"few_rows_lengths": f"{points[0]['cols']:,} to {points[-1]['cols']:,}" if points else "n/a"}
    for name, ratio in (("copy", "fused_plain_over_copy"), ("triton", "triton_over_fused_plain")):
        medians = [p["ratios"][ratio]["warm"]["median"] for p in points if "warm" in p["ratios"].get(ratio, {})]
        values[f"few_rows_{name}_range"] = (f"{ratio_number(min(medians))} to {ratio_number(max(medians))}"
                                            if medians else "n/a")
    return values


def sweep_extreme_values(s: dict) -> dict:
    """Every extreme of SWEEP_EXTREME_KEYS at 2 or 3 decimals with where it was; "n/a" with the reason in ..._at
    where the run has no figure for it (the prose reads "n/a (at no point: ...)")."""
    extremes, values = s["sweep"].get("extremes", {}), {}
    for key in dict.fromkeys([*SWEEP_EXTREME_KEYS, *extremes]):
        name, entry = "sweep_" + key.replace(".", "_"), extremes.get(key)
        if entry is None:
            values[name], values[f"{name}_at"] = "n/a", "no point: " + missing_extreme_reason(s, key)
            continue
        values[name] = ratio_number(entry["value"])
        values[f"{name}_at"] = shape_label(entry["shape"]) if entry.get("shape") else "over all points"
    return values


def missing_extreme_reason(s: dict, key: str) -> str:
    """Why the run has no figure for a sweep extreme: no sweep, a library not timed, or no point in the range."""
    kind, which, _ = key.split(".")
    if not _sweep_points(s):
        return "this run had no sweep"
    if kind == "min_speedup":
        return f"{label(which)} was not timed in the sweep"
    if which in SWEEP_RANGES:
        return f"the sweep had no point with {SWEEP_RANGES[which]}"
    return "no sweep point measured it"


NO_POINT = "not measured (no sweep point)"


def sweep_verdict(target: dict, s: dict) -> str:
    """A sweep target's verdict; one not measured says why: no sweep point, or (a library's) the library absent."""
    if target["met"] is None and (target["kind"] not in LIBRARIES or not _sweep_points(s)):
        return NO_POINT
    return verdict_text(target["met"])
