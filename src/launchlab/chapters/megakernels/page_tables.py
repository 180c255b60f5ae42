"""Chapter 4's tables, as data frames from the run's summaries, record and build records; and the helpers
the page's other modules read the run through (its cases, sweep points, designs and variants)."""
from __future__ import annotations

from launchlab.chapters.megakernels import (CHAPTER, DESIGN, baseline, is_one_launch, label, stream_submissions,
                                            sweep_points, sweep_variant)
from launchlab.chapters.megakernels.summary import measured_variants
from launchlab.chapters.megakernels.targets import build_label
from launchlab.chapters.megakernels.trace_models import QUEUE_STYLE
from launchlab.measure.variant import VariantId


def cases(run) -> list[str]:
    return list(CHAPTER.parameters_of(run.record).tiled_cases)


def sweep(run) -> list[int]:
    return sweep_points(CHAPTER.parameters_of(run.record))


def designs_of(run) -> list:
    """The designs the run measured in its main table, in table order."""
    return list({v.row.name: v.row for v in measured_variants(run.record) if "table" in v.enters}.values())


def main_variants_of(case: str, designs=None) -> list[VariantId]:
    """The main variants of a case, in table order (default: the designs every run has)."""
    designs = [d for d in DESIGN.values() if d.group is None] if designs is None else designs
    return [VariantId(d.name, case, s) for d in designs for s in d.submissions]


def swept_designs() -> list:
    return [d for d in DESIGN.values() if d.swept]


def _cell(summary: dict) -> str:
    """A time: median [p10–p90] over the rounds, three significant figures."""
    from launchlab.present import tables

    return tables.median_with_band(summary)


def _interval(ratio: dict) -> str:
    """A paired ratio: median [95 % bootstrap interval of the median], two decimals."""
    from launchlab.present import tables

    return tables.median_with_band(ratio, tables.CI)


def _places(ratio: dict) -> int:
    """Decimals (2 to 4) that tell a ratio's interval ends apart, as tables.median_with_band picks them; a column
    takes the most any of its cells needs, so that its numbers line up."""
    places = 2
    while places < 4 and ratio["ci_low"] != ratio["ci_high"] and (
            f"{ratio['ci_low']:.{places}f}" == f"{ratio['ci_high']:.{places}f}"):
        places += 1
    return places


def _us(ns: float, digits: int = 2) -> str:
    return f"{ns / 1e3:.{digits}f}"


def _event(run, vid) -> dict:
    return run.summaries["timing"][str(vid)]["warm_batch"]["event_us"]


def resources_table(run):
    """Per kernel: registers and shared memory of the loaded binary, resident blocks per SM, blocks launched."""
    import pandas as pd

    details, rows = run.record.details, {}
    grids = details["persistent_grids"]
    first = cases(run)[0]
    designs = designs_of(run)
    for family in dict.fromkeys(d.family for d in designs):
        loaded = run.json(f"builds/{build_label(family, traced=False)}/record.json")["resources_loaded"]
        for kernel, resources in loaded.items():
            if kernel in details["three_kernel_resident_blocks_per_sm"]:
                resident = details["three_kernel_resident_blocks_per_sm"][kernel]
                launched = "one per row" if kernel == "row_combiner" else "one per tile"
            elif str(VariantId(_design_of_kernel(kernel, designs).name, first, "stream")) in grids:
                grid = grids[str(VariantId(_design_of_kernel(kernel, designs).name, first, "stream"))]
                resident, launched = grid["resident_blocks_per_sm"], f"{grid['workers']} ({grid['blocks_per_sm']} per SM)"
            else:
                resident, launched = None, _launched(run, kernel, _design_of_kernel(kernel, designs), first)
            rows[kernel] = {"registers / thread": resources["registers"], "static shared (bytes)": resources["shared_bytes"],
                            "local (bytes)": resources["local_bytes"],
                            "resident blocks / SM": "—" if resident is None else resident,
                            "co-resident blocks": "—" if resident is None else resident * details["sm_count"],
                            "blocks launched": launched}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("kernel")


def _design_of_kernel(kernel: str, designs):
    return next(d for d in designs if kernel in d.kernels)


def _launched(run, kernel: str, design, case: str) -> str:
    """Blocks an added design's kernel launches, in words (first case)."""
    facts = run.record.details.get("design_launches", {}).get(str(VariantId(design.name, case, "stream")), {})
    if design.name == "depend":
        return f"{facts['workers']} workers (cooperative), {facts['cached_tiles']} of {facts['tiles']} tiles kept on chip"
    if design.name == "cluster":
        return "; ".join(f"{rows} clusters of {k}" for k, rows in facts["classes"]) + f" ({case})"
    if design.name == "fused_row":
        return f"one per row, {facts['block']} threads"
    if design.name == "varlen":
        return (f"{facts['grid']} blocks of {facts['threads']} threads ({facts['split_rows']} rows split into up to "
                f"{facts['most_pieces']} pieces, {facts['packed_rows']} rows packed a warp each; {case})")
    return "one per row" if kernel == "pdl_row_combiner" else "one per tile"


def graph_table(run):
    """Node records of each captured graph, from CUDA's DOT text."""
    import pandas as pd

    rows = {}
    edges = run.summaries.get("graph_edges", {})
    for case in cases(run):
        for vid in main_variants_of(case, designs_of(run)):
            graph = run.summaries["graphs"].get(str(vid))
            if graph:
                typed = edges.get(str(vid))
                rows[(case, DESIGN[vid.target].label)] = {
                    "kernel nodes": graph["counts"]["kernel"], "other nodes": graph["counts"]["other"],
                    "edges": graph["edges"],
                    "programmatic edges (driver)": "not read" if typed is None else typed.get("programmatic", 0),
                    "host submissions from the stream": graph["stream_submissions"]}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["case", "graph of"])


def timing_table(run):
    """Per case and variant: host enqueue and completion of one synchronised call (the batch's event interval is
    the pays table's warm time)."""
    import pandas as pd

    rows = {}
    for case in cases(run):
        for vid in main_variants_of(case, designs_of(run)):
            m = run.summaries["timing"][str(vid)]
            rows[(case, label(vid))] = {"host enqueue, 1 call (µs)": _cell(m["warm_single"]["enqueue_us"]),
                                        "host completion, 1 call (µs)": _cell(m["warm_single"]["complete_us"])}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["case", "variant"])


def trace_table(run):
    """Per traced main variant: checks, B tasks started before the last A ended (trace and model), spans (trace and
    model), median handoffs A→B and B→C, the median wait of a B task for its inputs, workers."""
    import pandas as pd

    rows = {}
    for case in cases(run):
        for vid in main_variants_of(case):
            t = run.summaries["traces"][str(vid)]
            rows[(case, label(vid))] = {
                "checks": "passed" if t["passed"] else "FAILED: " + ", ".join(k for k, v in t["checks"].items() if not v),
                "B before last A": f"{t['b_before_last_a']} of {t['b_tasks']}", "model": t["model"]["b_before_last_a"],
                "span (µs)": _us(t["makespan_ns"], 1), "model span (µs)": _us(t["model"]["makespan_ns"], 1),
                "A→B (µs)": _us(t["handoff_ns.B"]["median"]), "B→C (µs)": _us(t["handoff_ns.C"]["median"]),
                "B wait (µs)": _us(t["wait_ns.B"]["median"]), "workers": t["workers"]}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["case", "variant"])


def sweep_rows(run) -> list[dict]:
    """One row per case, swept design and blocks per SM: time, speed-ups, overlap (trace and model), waits."""
    rows = []
    for case in cases(run):
        for design in swept_designs():
            for workers_per_sm in sweep(run):
                vid = sweep_variant(design.name, case, workers_per_sm)
                trace = run.summaries["traces"][str(vid)]
                rows.append({"case": case, "design": design.name, "workers_per_sm": workers_per_sm, "variant": vid,
                             "workers": trace["workers"], "event_us": _event(run, vid),
                             "speedup_vs_graph3": run.summaries["speedup_vs_graph3"][str(vid)],
                             "speedup_vs_coop": run.summaries["speedup_vs_coop"].get(str(vid)),
                             "b_before_last_a": trace["b_before_last_a"], "b_tasks": trace["b_tasks"],
                             "model_b_before_last_a": trace["model"]["b_before_last_a"],
                             "b_wait_total_ns": trace["wait_ns.B"]["total"], "makespan_ns": trace["makespan_ns"],
                             "passed": trace["passed"]})
    return rows


def sweep_table(run):
    """The persistent kernels over worker blocks per SM, replayed as graphs: time, speed-up over the three-kernel
    graph, the queue's speed-up over the cooperative kernel, B tasks before the last A (trace, model), the total
    time B tasks waited for their inputs, the trace checks."""
    import pandas as pd

    from launchlab.present import tables

    rows, found = {}, sweep_rows(run)
    places = {key: max((_places(r[key]) for r in found if r[key]), default=2)
              for key in ("speedup_vs_graph3", "speedup_vs_coop")}

    def ratio(r: dict, key: str) -> str:
        return tables.median_with_band(r[key], tables.CI, digits=places[key]) if r[key] else "—"

    for r in found:
        rows[(r["case"], DESIGN[r["design"]].label, r["workers_per_sm"])] = {
            "workers": r["workers"], "time (µs)": _cell(r["event_us"]),
            "speed-up (×)": ratio(r, "speedup_vs_graph3"), "over coop (×)": ratio(r, "speedup_vs_coop"),
            "B before last A": f"{r['b_before_last_a']} of {r['b_tasks']}", "model": r["model_b_before_last_a"],
            "B wait, all (µs)": _us(r["b_wait_total_ns"], 1), "checks": "passed" if r["passed"] else "FAILED"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis(["case", "design", "blocks / SM"])


def design_trace_table(run):
    """Per traced variant of an added design: its model's checks, the span of the trace and of the model
    replaying the trace's durations, median hand-offs A→B and B→C, B tasks started before the last A, places."""
    import pandas as pd

    rows = {}
    for case in cases(run):
        for vid in main_variants_of(case, [d for d in designs_of(run) if d.schedule and d.schedule not in QUEUE_STYLE]):
            t = run.summaries["traces"].get(str(vid))
            if t is None:
                continue
            failed = ", ".join(k for k, v in t["checks"].items() if not v)
            row = {"checks": "passed" if t["passed"] else f"FAILED: {failed}"}
            if "span_ns" in t:
                row.update({"span (µs)": _us(t["span_ns"], 1), "model span (µs)": _us(t["model"]["model_span_ns"], 1),
                            "A→B (µs)": _us(t["handoff_ns.B"]["median"]), "B→C (µs)": _us(t["handoff_ns.C"]["median"]),
                            "B before last A": f"{t['b_before_last_a']} of {t['b_tasks']}",
                            "places": t["workers"]})
            rows[(case, label(vid))] = row
    return pd.DataFrame.from_dict(rows, orient="index").fillna("—").rename_axis(["case", "variant"])


def pays_rows(run) -> list[dict]:
    """Every main variant of every case: warm and cold time, speed-ups over the three-kernel graph (warm, cold),
    host submissions per invocation, grid-wide synchronisations, logical bytes."""
    s, rows = run.summaries, []
    for case in cases(run):
        for vid in main_variants_of(case, designs_of(run)):
            design = DESIGN[vid.target]
            timing = s["timing"][str(vid)]
            read, written = design.bytes(case)
            rows.append({"case": case, "variant": vid, "design": design, "warm": timing["warm_batch"]["event_us"],
                         "cold": timing.get("cold", {}).get("event_us"),
                         "speedup": s["speedup_vs_graph3"].get(str(vid)),
                         "speedup_cold": s["speedup_vs_graph3_cold"].get(str(vid)),
                         "launches": stream_submissions(design, case), "grid_syncs": design.grid_syncs,
                         "bytes": read + written, "one_launch": is_one_launch(design, case)})
    return rows


def pays_table(run):
    """When a megakernel pays: every variant's time with a warm and a cold L2, its speed-up over the three-kernel
    graph (within-round ratio, warm and cold), host submissions per invocation, grid-wide synchronisations inside
    one invocation, logical bytes moved."""
    import pandas as pd

    table = {}
    for r in pays_rows(run):
        baseline_row = r["variant"] == baseline(r["case"])
        table[(r["case"], label(r["variant"]))] = {
            "warm (µs)": _cell(r["warm"]), "cold (µs)": _cell(r["cold"]) if r["cold"] else "—",
            "speed-up, warm (×)": "1 (baseline)" if baseline_row else _interval(r["speedup"]),
            "speed-up, cold (×)": "1 (baseline)" if baseline_row else (
                _interval(r["speedup_cold"]) if r["speedup_cold"] else "—"),
            "launches / invocation": str(r["launches"]), "grid-wide syncs": str(r["grid_syncs"]),
            "logical MB": f"{r['bytes'] / 1e6:.2f}"}
    return pd.DataFrame.from_dict(table, orient="index").rename_axis(["case", "variant"])


def sanitizer_table(run):
    """compute-sanitizer's tools over every kernel of the chapter (child process, small cases)."""
    import pandas as pd

    rows = {}
    for tool, r in run.summaries.get("sanitizer", {}).items():
        rows[tool] = {"ran": "yes" if r["ran"] else f"no: {r['error']}",
                      "errors reported": "—" if r["errors"] is None else str(r["errors"]),
                      "outputs checked": str(r["child_checks"]),
                      "outputs correct": {True: "all", False: "NOT all", None: "—"}[r["child_passed"]],
                      "verdict": "clean" if r["clean"] else "NOT clean"}
    if not rows:
        rows["(none)"] = {"ran": "no: sanitizer_tools was empty", "errors reported": "—", "outputs checked": "—",
                          "outputs correct": "—", "verdict": "—"}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("tool")
