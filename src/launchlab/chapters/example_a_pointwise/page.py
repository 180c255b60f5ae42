"""Example A's tables, figures and glued values, all read from the run (its summaries and record).

The comparison with the article (`article_table`) and the sanitizer table are shared with Example B's page."""
from __future__ import annotations

from launchlab.chapters.example_a_pointwise import (KERNELS, LABELS, PATHS, SUBMISSIONS, label, logical_bytes,
                                                    parse_sizes, variant)
from launchlab.measure import stats

ARTICLE = "article (H100, October 2026)"
# (measurement, metric) -> (column of the timing table, title of the latency panel)
LATENCY = {("warm_batch", "event_us"): ("event interval per call, batch", "event interval per call"),
           ("warm_single", "complete_us"): ("host completion, 1 call", "host completion of one call"),
           ("warm_single", "enqueue_us"): ("host enqueue, 1 call", None)}
ARTICLE_ROWS_A = (
    ("exact array checks", "272"),
    ("timing samples", "588 (28 configurations × 21 rounds)"),
)


def sizes(run) -> list[int]:
    return parse_sizes(run.record.parameters["sizes"])


def _timing(run, path: str, n: int, submission: str) -> dict:
    return run.summaries["timing"][str(variant(path, n, submission))]


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:.1f}"


# --------------------------------------------------------------------------- tables
def timing_table(run):
    """Per size and variant: event interval per call, host completion and enqueue of one call, logical GB/s."""
    from launchlab.present import tables

    rows = []
    for n in sizes(run):
        for path in PATHS:
            for submission in SUBMISSIONS:
                m = _timing(run, path, n, submission)
                row = {"elements N": n, "variant": label(variant(path, n, submission))}
                for (measurement, metric), (column, _) in LATENCY.items():
                    row[f"{column} (µs)"] = m[measurement][metric]
                event = m["warm_batch"]["event_us"]["median"]
                row["logical GB/s (event median)"] = stats.gigabytes_per_second(sum(logical_bytes(path, n)), event)
                rows.append(row)
    return tables.page_table(rows, index=["elements N", "variant"], formats={"elements N": "count"},
                             rounds=run.record.protocol["rounds"],
                             caption="Warm timing of every variant (one synchronised call, and batches of calls "
                                     "between CUDA events).")


def ratio_table(run):
    """Paired ratios per size, one row per comparison: three kernels over fused (per submission), stream over
    graph (per path)."""
    from launchlab.present import tables

    ratios, rows = run.summaries["ratios"], []
    for n in sizes(run):
        for submission in SUBMISSIONS:
            rows.append({"elements N": n, "comparison": f"three kernels / fused, {submission}",
                         "ratio": ratios[f"three_over_fused.{submission}.{n}"]})
        for path in PATHS:
            rows.append({"elements N": n, "comparison": f"stream / graph, {LABELS[path]}",
                         "ratio": ratios[f"stream_over_graph.{path}.{n}"]})
    return tables.page_table(rows, index=["elements N", "comparison"], formats={"elements N": "count"},
                             units={"ratio": "×"},
                             caption="Event interval per call, one variant over another within each round "
                                     "(>1: the second is faster).")


def bytes_table(run):
    """Per path at the profiled size: logical bytes beside Nsight Compute's DRAM bytes (MB per invocation)."""
    from launchlab.present import tables

    dram = run.summaries["dram"]
    if dram is None:
        return None
    rows = []
    for path in PATHS:
        read, written = logical_bytes(path, dram["size"])
        measured = dram["paths"].get(path)
        rows.append({"path": LABELS[path], "logical read": _mb(read), "logical written": _mb(written),
                     "DRAM read": _mb(measured["read_bytes"]) if measured else "no counters",
                     "DRAM written": _mb(measured["write_bytes"]) if measured else "no counters",
                     "DRAM / logical": f"{measured['dram_over_logical']:.2f}" if measured else "no counters"})
    return tables.page_table(rows, index="path", units={c: "MB" for c in ("logical read", "logical written",
                                                                           "DRAM read", "DRAM written")},
                             formats={c: "text" for c in ("logical read", "logical written", "DRAM read",
                                                          "DRAM written", "DRAM / logical")},
                             caption=f"Bytes of one invocation at N = {dram['size']:,} (MB = 10^6 bytes).")


def dram_status(run):
    """Where the DRAM figures come from, or why there are none (ncu's own words)."""
    from IPython.display import Markdown

    dram = run.summaries["dram"]
    if dram is None:
        return Markdown("No Nsight Compute profile was asked for in this run (`profile_size` 0).")
    if dram["paths"] and not dram["error"]:
        return Markdown(f"Nsight Compute read the DRAM counters of every kernel of both paths at N = {dram['size']:,} "
                        f"(exit status {dram['returncode']}).")
    missing = ", ".join(LABELS[p] for p in PATHS if p not in dram["paths"]) or "none"
    return Markdown(f"Nsight Compute gave no DRAM counters for: {missing}. Its output ends:\n\n```text\n"
                    f"{dram['error']}\n```")


def nodes_table(run):
    """Per path: the kernel entry points one invocation launches beside the kernel nodes CUDA's DOT shows."""
    from launchlab.present import tables

    rows = []
    for path in PATHS:
        graphs = [run.summaries["graphs"][str(variant(path, n, "graph"))] for n in sizes(run)]
        kernel_counts = sorted({g["kernel"] for g in graphs})
        orders = {" → ".join(g["kernels_in_order"]) for g in graphs}
        rows.append({"path": LABELS[path], "entry points launched, in order": " → ".join(KERNELS[path]),
                     "launches per stream invocation": len(KERNELS[path]),
                     "kernel nodes in the DOT": ", ".join(map(str, kernel_counts)),
                     "other nodes": ", ".join(map(str, sorted({g["other"] for g in graphs}))),
                     "kernels in the DOT, dependency order": "; ".join(sorted(orders))})
    built = ", ".join(run.summaries["entry_points"])
    return tables.page_table(rows, index="path", formats={"kernel nodes in the DOT": "text", "other nodes": "text"},
                             caption=f"Captured graphs at all {len(sizes(run))} sizes against the kernels launched "
                                     f"(the build holds {built}).")


def sanitizer_table(run, example: str):
    """compute-sanitizer's verdict per tool, from the run's sanitizer/*.json."""
    from launchlab.present import tables

    rows = []
    for tool, outcome in run.summaries["sanitizer"].items():
        passed = "all" if outcome["child_passed"] else "not all"
        rows.append({"tool": tool, "ran": outcome["ran"], "errors reported": outcome["errors"],
                     "exit status": outcome["exit_code"],
                     "child checks (passed)": f"{outcome['child_checks']} ({passed})" if outcome["child_checks"] else "none",
                     "clean": outcome["clean"], "why not run": outcome["error"] or ""})
    return tables.page_table(rows, index="tool", formats={"errors reported": "text", "exit status": "text"},
                             caption=f"compute-sanitizer over {sanitized_problem(run)}, in a separate process "
                                     "with CuPy's memory pool off.")


def article_table(run, rows):
    """The article's figures beside this run's: rows of (quantity, article's text, ours)."""
    from launchlab.present import tables

    ours = f"this book ({run.device.removeprefix('NVIDIA ')}, run {run.run_id})"
    frame = [{"quantity": quantity, ARTICLE: article, ours: mine} for quantity, article, mine in rows]
    return tables.page_table(frame, index="quantity", formats={ARTICLE: "text", ours: "text"},
                             headers={ARTICLE: ARTICLE, ours: ours},
                             caption="The article's reported figures beside this run's.",
                             note="The article's counts are as it reports them; this book's protocol sets its own "
                                  "fixtures, sizes and variants, so equal counts are not expected.")


def warm_batch_samples(run) -> tuple[int, int]:
    """(configurations, rounds) of the warm measurement: every timed variant gives one batch per round."""
    counts = [m["warm_batch"]["event_us"]["n"] for m in run.summaries["timing"].values() if "warm_batch" in m]
    return len(counts), max(counts)


def comparison_table(run):
    checks = run.summaries["checks"]
    configurations, rounds = warm_batch_samples(run)
    ours = (f"{checks['exact_outputs_passed']} passed of {checks['exact_outputs']} (bit for bit)",
            f"{configurations * rounds} ({configurations} configurations × {rounds} rounds), each round also "
            "one single-call sample")
    return article_table(run, [(q, a, o) for (q, a), o in zip(ARTICLE_ROWS_A, ours)])


# --------------------------------------------------------------------------- figures
def latency_figure(run):
    """2×2: event interval per call (top) and host completion of one call (bottom), stream (left) and graph
    (right), three kernels against the fused kernel across N."""
    from launchlab.present import figures

    fig, axes = figures.figure(2, 2, height=2.9, layout="constrained", sharex=True)
    panels = [(key, title) for key, (_, title) in LATENCY.items() if title]
    for row, ((measurement, metric), title) in enumerate(panels):
        for column, submission in enumerate(SUBMISSIONS):
            series = {LABELS[path]: [_timing(run, path, n, submission)[measurement][metric] for n in sizes(run)]
                      for path in PATHS}
            ax = axes[row, column]
            figures.sweep(ax, sizes(run), series, logx=True, logy=True, ylabel="µs" if column == 0 else None,
                          xlabel="elements N" if row == len(panels) - 1 else None)
            ax.set_title(f"{title}, {submission}")
    return figures.finish(fig)


def bytes_figure(run):
    """Logical bytes beside DRAM bytes per path at the profiled size (logical only where ncu gave none)."""
    import numpy as np

    from launchlab.present import figures

    dram = run.summaries["dram"] or {"size": None, "paths": {}, "error": "no profile asked for"}
    fig, axes = figures.figure(1, 1, height=3.2, layout="constrained")
    ax = axes[0, 0]
    xs = np.arange(len(PATHS))
    size = dram["size"] or sizes(run)[-1]
    bars = {"logical read": [logical_bytes(p, size)[0] for p in PATHS],
            "logical written": [logical_bytes(p, size)[1] for p in PATHS],
            "DRAM read": [dram["paths"].get(p, {}).get("read_bytes", np.nan) for p in PATHS],
            "DRAM written": [dram["paths"].get(p, {}).get("write_bytes", np.nan) for p in PATHS]}
    width = 0.2
    for index, (name, values) in enumerate(bars.items()):
        ax.bar(xs + (index - 1.5) * width, np.asarray(values, dtype=float) / 1e6, width, label=name,
               color=figures.COLOURS[index], hatch="//" if name.startswith("DRAM") else None)
    for x, path in zip(xs, PATHS):
        if path not in dram["paths"]:
            ax.text(x + width, 0, "no ncu\ncounters", ha="center", va="bottom", fontsize=figures.SMALL_PT)
    ax.set_xticks(xs, [LABELS[p] for p in PATHS])
    ax.set_xlim(-0.5, len(PATHS) - 0.5)
    ax.set_ylabel("MB per invocation")
    ax.set_title(f"N = {size:,} elements")
    ax.grid(axis="y", alpha=0.3)
    return figures.finish(fig)


# --------------------------------------------------------------------------- glued values
def _us(summary: dict) -> str:
    from launchlab.present.tables import fmt_sig

    return fmt_sig(summary["median"])


def page_values(run) -> dict:
    """Formatted numbers for the page's prose, all from the run's summaries, headline and record."""
    record, headline, summaries = run.record, run.headline, run.summaries
    protocol, all_sizes = record.protocol, sizes(run)
    configurations, rounds = warm_batch_samples(run)
    values = {"run_id": run.run_id, "device_name": record.device_name, "sm_count": str(record.device["sm_count"]),
              "l2_mib": f"{record.device['l2_bytes'] / 2**20:.0f}", "rounds": str(protocol["rounds"]),
              "batch": str(protocol["batch"]), "large_batch": str(protocol["large_batch"]),
              "warmups": str(protocol["warmups"]), "fixture_seed": str(record.parameters["fixture_seed"]),
              "sizes": ", ".join(f"{n:,}" for n in all_sizes), "size_count": str(len(all_sizes)),
              "largest": f"{all_sizes[-1]:,}", "smallest": f"{all_sizes[0]:,}",
              "smallest_array_bytes": f"{4 * all_sizes[0]:,}", "largest_array_mib": f"{4 * all_sizes[-1] / 2**20:,.0f}",
              "exact_checks": str(headline["exact_checks"]), "exact_outputs": str(summaries["checks"]["exact_outputs"]),
              "configurations": str(configurations), "timing_samples": str(configurations * rounds),
              "kernel_nodes_three": str(headline["kernel_nodes.three"]),
              "kernel_nodes_fused": str(headline["kernel_nodes.fused"]),
              "dram_sentence": dram_sentence(run), "sanitizer_sentence": sanitizer_sentence(run)}
    for n, tag in ((all_sizes[0], "small"), (all_sizes[-1], "large")):
        for path in PATHS:
            for submission in SUBMISSIONS:
                m = _timing(run, path, n, submission)
                values[f"{tag}_{path}_{submission}_event_us"] = _us(m["warm_batch"]["event_us"])
                values[f"{tag}_{path}_{submission}_complete_us"] = _us(m["warm_single"]["complete_us"])
                values[f"{tag}_{path}_{submission}_enqueue_us"] = _us(m["warm_single"]["enqueue_us"])
            ratio = summaries["ratios"][f"stream_over_graph.{path}.{n}"]
            values[f"{tag}_{path}_stream_over_graph"] = f"{ratio['median']:.2f}"
        for submission in SUBMISSIONS:
            values[f"{tag}_three_over_fused_{submission}"] = \
                f"{summaries['ratios'][f'three_over_fused.{submission}.{n}']['median']:.2f}"
    return values


def dram_sentence(run) -> str:
    dram = run.summaries["dram"]
    if dram is None:
        return "No Nsight Compute profile was asked for in this run."
    parts = [f"{LABELS[p]} {dram['paths'][p]['dram_over_logical']:.2f} times its logical bytes" for p in PATHS
             if p in dram["paths"]]
    if len(parts) == len(PATHS):
        return f"At N = {dram['size']:,}, Nsight Compute counted DRAM traffic of " + " and ".join(parts) + "."
    return ("Nsight Compute gave no DRAM counters for " + ("some kernels" if parts else "either path")
            + " in this run, so no DRAM figure is stated" + (f" beyond {'; '.join(parts)}" if parts else "")
            + "; the reason is shown below the figure.")


def sanitized_problem(run) -> str:
    """What the sanitizer's child ran, in its own words (the first tool that ran says it)."""
    said = [o["problem"] for o in run.summaries["sanitizer"].values() if o.get("problem")]
    return said[0] if said else "every variant"


def sanitizer_sentence(run, example: str = "pointwise") -> str:
    """What compute-sanitizer ran over and what each tool reported, or why it did not run."""
    outcomes = run.summaries["sanitizer"]
    if not outcomes:
        return "compute-sanitizer was not run."
    parts = []
    for tool, outcome in outcomes.items():
        if not outcome["ran"]:
            parts.append(f"{tool} did not run ({outcome['error']})")
            continue
        errors = "an unread number of" if outcome["errors"] is None else str(outcome["errors"])
        verdict = "" if outcome["clean"] else f" (exit status {outcome['exit_code']}; not clean)"
        parts.append(f"{tool} reported {errors} errors{verdict}")
    return f"compute-sanitizer ran over {sanitized_problem(run)}: " + "; ".join(parts) + "."
