"""Example A's tables, figures and glued values: formatted from the run's summaries, headline and record.

The comparison with the article (`article_table`), the sanitizer table and sentence, and the verdict words are
shared with Example B's page."""
from __future__ import annotations

from launchlab.chapters.example_a_pointwise import BASELINE, CHAPTER, SUBMISSIONS, kernels_of, size_of
from launchlab.chapters.example_a_pointwise.page_answer import answer_values, sizes
from launchlab.present.prose import tally_words

ARTICLE = "article (H100, October 2026)"
# (measurement, metric) -> (column of the timing table, title of the latency panel)
LATENCY = {("warm_batch", "event_us"): ("event interval per call, batch", "event interval per call"),
           ("warm_single", "complete_us"): ("host completion, 1 call", "host completion of one call"),
           ("warm_single", "enqueue_us"): ("host enqueue, 1 call", None)}
ARTICLE_ROWS_A = (
    ("exact array checks", "272"),
    ("timing samples", "588 (28 configurations × 21 rounds)"),
)
VERDICT_WORDS = {"above": "the second faster", "below": "the first faster", "tie": "tie (95 % interval includes 1)"}


def timed(run) -> list:
    """The run's declared variants that were timed, in declared order (size, row, submission)."""
    return [v for v in CHAPTER.variants(CHAPTER.parameters_of(run.record)) if "timing" in v.enters]


def rows(run) -> dict:
    """{row name: Row} of the run's declaration, in declared order: labels come from the rows."""
    return {v.row.name: v.row for v in CHAPTER.variants(CHAPTER.parameters_of(run.record))}


def label(run, vid) -> str:
    """'three kernels, graph'."""
    return f"{rows(run)[vid.target].label}, {vid.submission}"


def _mb(nbytes: float) -> str:
    return f"{nbytes / 1e6:.1f}"


def in_row_order(run, mapping: dict) -> list[str]:
    """The keys of a summary keyed by row name, in declared row order (summaries.json keeps keys sorted)."""
    return [name for name in rows(run) if name in mapping]


def comparison_order(key: str, names: list[str]) -> tuple:
    """Ratio keys by size, then each row over the baseline per submission, then stream over graph per row."""
    family, what, n = key.split(".")
    if family == "stream_over_graph":
        return int(n), 1, names.index(what), 0
    return int(n), 0, names.index(family.split("_over_")[0]), SUBMISSIONS.index(what)


def comparison_label(key: str, declared: dict) -> str:
    """'three_over_fused.graph.256' -> 'three kernels / fused kernel, graph'; 'stream_over_graph.three.256' ->
    'stream / graph, three kernels' (`declared`: the rows by name)."""
    family, what, _ = key.split(".")
    if family == "stream_over_graph":
        return f"stream / graph, {declared[what].label}"
    top, bottom = family.split("_over_")
    return f"{declared[top].label} / {declared[bottom].label}, {what}"


# --------------------------------------------------------------------------- tables
def timing_table(run):
    """Per size and variant: event interval per call, host completion and enqueue of one call, logical GB/s."""
    from launchlab.present import tables

    rows = []
    for variant in timed(run):
        m = run.summaries["timing"][str(variant.id)]
        row = {"elements N": size_of(variant.id), "variant": label(run, variant.id)}
        for (measurement, metric), (column, _) in LATENCY.items():
            row[f"{column} (µs)"] = m[measurement][metric]
        row["logical GB/s (event median)"] = run.summaries["logical_gbps"][str(variant.id)]
        rows.append(row)
    return tables.page_table(rows, index=["elements N", "variant"], formats={"elements N": "count"},
                             rounds=run.record.protocol["rounds"],
                             caption="Warm timing of every variant (one synchronised call, and batches of calls "
                                     "between CUDA events).")


def ratio_table(run):
    """Paired ratios per size, one row per comparison, with where each interval lies against 1."""
    from launchlab.present import tables

    ratios, verdicts, declared = run.summaries["ratios"], run.summaries["verdicts"], rows(run)
    table = [{"elements N": int(key.rsplit(".", 1)[1]), "comparison": comparison_label(key, declared),
              "ratio": ratios[key], "verdict": VERDICT_WORDS[verdicts[key]]}
             for key in sorted(ratios, key=lambda k: comparison_order(k, list(declared)))]
    return tables.page_table(table, index=["elements N", "comparison"], formats={"elements N": "count",
                                                                                "verdict": "text"},
                             units={"ratio": "×"},
                             caption="Event interval per call, one variant over another within each round "
                                     "(>1: the second is faster; a tie where the 95 % interval includes 1).")


def bytes_table(run):
    """Per profiled row: logical bytes beside Nsight Compute's DRAM bytes (MB per invocation)."""
    from launchlab.present import tables

    dram = run.summaries["dram"]
    if dram is None:
        return None
    declared, table = rows(run), []
    for name in in_row_order(run, dram["logical"]):
        logical, measured = dram["logical"][name], dram["paths"].get(name)
        table.append({"path": declared[name].label, "logical read": _mb(logical["read_bytes"]),
                     "logical written": _mb(logical["write_bytes"]),
                     "DRAM read": _mb(measured["read_bytes"]) if measured else "no counters",
                     "DRAM written": _mb(measured["write_bytes"]) if measured else "no counters",
                     "DRAM / logical": f"{measured['dram_over_logical']:.2f}" if measured else "no counters"})
    columns = ("logical read", "logical written", "DRAM read", "DRAM written")
    return tables.page_table(table, index="path", units={c: "MB" for c in columns},
                             formats={c: "text" for c in (*columns, "DRAM / logical")},
                             caption=f"Bytes of one invocation at N = {dram['size']:,} (MB = 10^6 bytes).")


def dram_status(run):
    """Where the DRAM figures come from, or why there are none (ncu's own words)."""
    from IPython.display import Markdown

    dram = run.summaries["dram"]
    if dram is None:
        return Markdown("No Nsight Compute profile was asked for in this run (`profile_size` 0).")
    if len(dram["paths"]) == len(dram["logical"]) and not dram["error"]:
        return Markdown(f"Nsight Compute read the DRAM counters of every kernel of every path at N = {dram['size']:,} "
                        f"(exit status {dram['returncode']}).")
    missing = ", ".join(rows(run)[name].label for name in in_row_order(run, dram["logical"])
                        if name not in dram["paths"]) or "none"
    return Markdown(f"Nsight Compute gave no DRAM counters for: {missing}. Its output ends:\n\n```text\n"
                    f"{dram['error']}\n```")


def nodes_table(run):
    """Per row: the kernel entry points one invocation launches beside the kernel nodes CUDA's DOT shows."""
    from launchlab.present import tables

    declared, table = rows(run), []
    for name in in_row_order(run, run.summaries["graph_nodes"]):
        held = run.summaries["graph_nodes"][name]
        table.append({"path": declared[name].label, "entry points launched, in order": " → ".join(kernels_of(name)),
                     "launches per stream invocation": len(kernels_of(name)),
                     "kernel nodes in the DOT": ", ".join(map(str, held["kernel"])),
                     "other nodes": ", ".join(map(str, held["other"])),
                     "kernels in the DOT, dependency order": "; ".join(held["orders"])})
    built = ", ".join(run.summaries["entry_points"])
    return tables.page_table(table, index="path", formats={"kernel nodes in the DOT": "text", "other nodes": "text"},
                             caption=f"Captured graphs at all {len(sizes(run))} sizes against the kernels launched "
                                     f"(the build holds {built}).")


def sanitizer_table(run):
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
                             caption=f"compute-sanitizer over {run.summaries['sanitizer_problem']}, in a separate "
                                     "process with CuPy's memory pool off.")


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


def timing_samples_text(run) -> str:
    samples = run.summaries["samples"]
    total = samples["configurations"] * samples["rounds"]
    return f"{total} ({samples['configurations']} configurations × {samples['rounds']} rounds)"


def comparison_table(run):
    checks = run.summaries["checks"]
    ours = (f"{checks['exact_outputs_passed']} passed of {checks['exact_outputs']} (bit for bit)",
            f"{timing_samples_text(run)}, each round also one single-call sample")
    return article_table(run, [(q, a, o) for (q, a), o in zip(ARTICLE_ROWS_A, ours)])


# --------------------------------------------------------------------------- figures
def latency_figure(run):
    """2×2: event interval per call (top) and host completion of one call (bottom), stream (left) and graph
    (right), every row across N."""
    from launchlab.present import figures

    variants = timed(run)
    submissions = list(dict.fromkeys(v.id.submission for v in variants))
    fig, axes = figures.figure(2, len(submissions), height=2.9, layout="constrained", sharex=True)
    panels = [(key, title) for key, (_, title) in LATENCY.items() if title]
    for row, ((measurement, metric), title) in enumerate(panels):
        for column, submission in enumerate(submissions):
            series = {}
            for v in (v for v in variants if v.id.submission == submission):
                series.setdefault(v.row.label, []).append(run.summaries["timing"][str(v.id)][measurement][metric])
            ax = axes[row, column]
            figures.sweep(ax, sizes(run), series, logx=True, logy=True, ylabel="µs" if column == 0 else None,
                          xlabel="elements N" if row == len(panels) - 1 else None)
            ax.set_title(f"{title}, {submission}")
    return figures.describe(figures.finish(fig), (
        f"Log-log line charts of {' and '.join(t for _, t in panels)} in µs against the number of elements N, "
        f"one panel per submission ({', '.join(submissions)}), one line per way of running the pointwise chain, "
        "each a median with a p10–p90 band."))


def bytes_figure(run):
    """Logical bytes beside DRAM bytes per profiled row at the profiled size (logical only where ncu gave none)."""
    import numpy as np

    from launchlab.present import figures

    fig, axes = figures.figure(1, 1, height=3.2, layout="constrained")
    ax = axes[0, 0]
    dram = run.summaries["dram"]
    if dram is None:
        ax.text(0.5, 0.5, "no Nsight Compute profile was asked for", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return figures.finish(fig)
    names, declared = in_row_order(run, dram["logical"]), rows(run)
    xs = np.arange(len(names))
    bars = {"logical read": [dram["logical"][p]["read_bytes"] for p in names],
            "logical written": [dram["logical"][p]["write_bytes"] for p in names],
            "DRAM read": [dram["paths"].get(p, {}).get("read_bytes", np.nan) for p in names],
            "DRAM written": [dram["paths"].get(p, {}).get("write_bytes", np.nan) for p in names]}
    width = 0.2
    for index, (name, values) in enumerate(bars.items()):
        ax.bar(xs + (index - 1.5) * width, np.asarray(values, dtype=float) / 1e6, width, label=name,
               color=figures.COLOURS[index], hatch="//" if name.startswith("DRAM") else None)
    for x, name in zip(xs, names):
        if name not in dram["paths"]:
            ax.text(x + width, 0, "no ncu\ncounters", ha="center", va="bottom", fontsize=figures.SMALL_PT)
    ax.set_xticks(xs, [declared[p].label for p in names])
    ax.set_xlim(-0.5, len(names) - 0.5)
    ax.set_ylabel("MB per invocation")
    ax.set_title(f"N = {dram['size']:,} elements")
    ax.grid(axis="y", alpha=0.3)
    return figures.describe(figures.finish(fig), (
        f"Bar chart at N = {dram['size']:,} elements: for each way of running the chain "
        f"({', '.join(declared[p].label for p in names)}), the logical bytes read and written beside the DRAM "
        "bytes read and written that Nsight Compute counted, in MB per invocation."))


# --------------------------------------------------------------------------- glued values
def _us(summary: dict) -> str:
    from launchlab.present.tables import fmt_sig

    return fmt_sig(summary["median"])


def page_values(run) -> dict:
    """Formatted numbers for the page's prose, all from the run's summaries, headline and record."""
    record, headline, summaries = run.record, run.headline, run.summaries
    protocol, all_sizes = record.protocol, sizes(run)
    samples = summaries["samples"]
    values = {"run_id": run.run_id, "device_name": record.device_name, "sm_count": str(record.device["sm_count"]),
              "l2_mib": f"{record.device['l2_bytes'] / 2**20:.0f}", "rounds": str(protocol["rounds"]),
              "batch": str(protocol["batch"]), "large_batch": str(protocol["large_batch"]),
              "warmups": str(protocol["warmups"]), "fixture_seed": str(CHAPTER.parameters_of(record).fixture_seed),
              "sizes": ", ".join(f"{n:,}" for n in all_sizes), "size_count": str(len(all_sizes)),
              "largest": f"{all_sizes[-1]:,}", "smallest": f"{all_sizes[0]:,}",
              "smallest_array_bytes": f"{4 * all_sizes[0]:,}", "largest_array_mib": f"{4 * all_sizes[-1] / 2**20:,.0f}",
              "exact_checks": str(headline["exact_checks"]), "exact_outputs": str(summaries["checks"]["exact_outputs"]),
              "configurations": str(samples["configurations"]),
              "timing_samples": str(samples["configurations"] * samples["rounds"]),
              "dram_sentence": dram_sentence(run),
              "profiled_size": f"{summaries['dram']['size']:,}" if summaries["dram"] else "no size", "sanitizer_sentence": sanitizer_sentence(run),
              "verdict_sentence": verdict_sentence(run)}
    values.update({f"kernel_nodes_{name}": str(headline[f"kernel_nodes.{name}"]) for name in summaries["graph_nodes"]})
    tags = {all_sizes[0]: "small", all_sizes[-1]: "large"}
    for variant in timed(run):
        tag = tags.get(size_of(variant.id))
        if tag:
            m, key = summaries["timing"][str(variant.id)], f"{tag}_{variant.id.target}_{variant.id.submission}"
            values[f"{key}_event_us"] = _us(m["warm_batch"]["event_us"])
            values[f"{key}_complete_us"] = _us(m["warm_single"]["complete_us"])
            values[f"{key}_enqueue_us"] = _us(m["warm_single"]["enqueue_us"])
    for key, ratio in summaries["ratios"].items():
        family, what, n = key.split(".")
        if int(n) in tags:  # large_three_over_fused_graph, small_three_stream_over_graph
            name = f"{family}_{what}" if family != "stream_over_graph" else f"{what}_{family}"
            values[f"{tags[int(n)]}_{name}"] = f"{ratio['median']:.2f}"

    values.update(answer_values(run))
    return values


def verdict_sentence(run, declared: dict | None = None, unit: str = "sizes") -> str:
    """How often the baseline beat each other row, lost to it, or tied, from the tallies of the paired ratios
    (`declared`: the chapter's rows by name, this chapter's by default; `unit`: what a ratio is taken at); a row
    whose tallies agree from the stream and from graphs is said once."""
    declared = declared or rows(run)
    by_row: dict[str, dict[str, str]] = {}
    for family, tally in run.summaries["tallies"].items():
        if family.startswith("stream_over_graph"):
            continue
        top, submission = family.split("_over_")[0], family.split(".")[1]
        where = "launched from the stream" if submission == "stream" else "replayed from graphs"
        by_row.setdefault(top, {})[where] = tally_words(tally, unit)
    if not by_row:
        return f"No paired ratio against the {declared[BASELINE].label} was measured."
    parts = []
    for top, found in by_row.items():
        if len(set(found.values())) == 1:
            parts.append(f"than the {declared[top].label} at {next(iter(found.values()))}, "
                         f"{' and '.join(found)}")
        else:
            parts.append(f"than the {declared[top].label} at " + " and at ".join(f"{words} {where}"
                                                                                 for where, words in found.items()))
    return (f"Counting a ratio whose 95 % interval includes 1 as a tie, the {declared[BASELINE].label} was faster "
            + "; and ".join(parts) + ".")


def dram_sentence(run) -> str:
    dram = run.summaries["dram"]
    if dram is None:
        return "No Nsight Compute profile was asked for in this run."
    names = [name for name in in_row_order(run, dram["logical"]) if name in dram["paths"]]
    ratios = {name: f"{dram['paths'][name]['dram_over_logical']:.2f}" for name in names}
    parts = [f"{ratios[name]} times the logical bytes for the {rows(run)[name].label}" for name in names]
    if len(names) == len(dram["logical"]):
        if len(set(ratios.values())) == 1 and len(names) > 1:
            both = "both" if len(names) == 2 else "each of"
            labels = " and ".join(f"the {rows(run)[name].label}" for name in names)
            return (f"At N = {dram['size']:,}, Nsight Compute counted DRAM traffic of {ratios[names[0]]} times the "
                    f"logical bytes for {both} {labels}.")
        return f"At N = {dram['size']:,}, Nsight Compute counted DRAM traffic of " + " and ".join(parts) + "."
    return ("Nsight Compute gave no DRAM counters for " + ("some kernels" if parts else "either path")
            + " in this run, so no DRAM figure is stated" + (f" beyond {'; '.join(parts)}" if parts else "")
            + "; the reason is shown below the figure.")


def sanitizer_sentence(run) -> str:
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
    return f"compute-sanitizer ran over {run.summaries['sanitizer_problem']}: " + "; ".join(parts) + "."
