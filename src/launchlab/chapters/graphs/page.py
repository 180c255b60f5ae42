"""Chapter 2's tables, figures and glued values: formatted from the run's summaries and record."""
from __future__ import annotations

from launchlab.chapters.graphs import CHAPTER, stream_twin
from launchlab.measure.variant import VariantId
from launchlab.chapters.graphs.page_names import _paths, label, ordered, replays_text, size_of_case  # noqa: F401
from launchlab.present import tables

# (measurement, metric) -> column header; the measurement is named because the chapters' single-call and
# batch figures differ (a single call pays for whatever ran just before it in the round)
TIMING_COLUMNS = {
    ("warm_single", "enqueue_us"): "host enqueue, 1 synchronised call (µs)",
    ("warm_batch", "enqueue_us"): "host enqueue per call, batch (µs)",
    ("warm_single", "complete_us"): "host completion, 1 synchronised call (µs)",
    ("warm_batch", "event_us"): "event interval per call, batch (µs)",
}
SUBMISSIONS = {"stream": "stream (Python launches)", "graph": "graph replay", "native": "C++ loop (cuLaunchKernel)"}


def glue_key(vid: VariantId, with_submission: bool = False) -> str:
    """row4.128x8192.graph -> row4_128x8192 (or row4_128x8192_graph): a name for the prose."""
    parts = [vid.target, vid.case] + ([vid.submission] if with_submission else [])
    return "_".join(parts).replace("-", "_")


def ratio_cell(ratio) -> str:
    """median [95 % interval], at 3 decimals where 2 would print the interval as the median itself."""
    if not ratio:
        return tables.MISSING
    if f"{ratio['ci_low']:.3f}" == f"{ratio['ci_high']:.3f}":   # the interval is narrower than 3 decimals show
        return f"{ratio['median']:.3f} [±0.0005]"
    same = f"{ratio['ci_low']:.2f}" == f"{ratio['ci_high']:.2f}"
    return tables.median_with_band(ratio, tables.CI, digits=3 if same else 2)


def interval_text(ratio: dict) -> str:
    """A ratio's 95 % interval for the prose, at the decimals that tell its ends apart."""
    low, high = ratio["ci_low"], ratio["ci_high"]
    for places in (2, 3):
        if f"{low:.{places}f}" != f"{high:.{places}f}":
            return f"95 % interval {low:.{places}f}–{high:.{places}f}"
    return "95 % interval within ±0.0005"


def band_cell(summary) -> str:
    """median [p10–p90] at 3 significant figures, more where 3 would print p10 and p90 as the median itself."""
    if not summary:
        return tables.MISSING
    for digits in (3, 4, 5):
        text = tables.median_with_band(summary, tables.BAND, digits=digits)
        low, _, high = text.partition("[")[2].rstrip("]").partition("–")
        if low != high:
            return text
    return text


def _band(summary: dict) -> str:
    return tables.median_with_band(summary, tables.BAND)


# ---------------------------------------------------------------- what the graph holds
def node_table(run):
    rows = [{"graph": label(VariantId.parse(g)), "kernel nodes (count)": n["kernel"], "other nodes (count)": n["other"],
             "edges (count)": n["edges"], "stream launches (count)": n["stream_launches"]}
            for g, n in ((g, run.summaries["nodes"][g]) for g in ordered(run.summaries["nodes"]))]
    return tables.page_table(rows, index="graph", formats={"graph": "text"},
                             csv="graphs-nodes",
                             note="Read from the DOT text CUDA printed for each captured graph (saved in the run). "
                                  "Stream launches: the kernel launches of the stream version of the same workload.")


def stage_label(kernel: str) -> str:
    """A node's kernel as CUDA printed it, after the stage name the text uses: "A: tile_producer", "K1: row_rms"."""
    from launchlab.chapters.graphs import TILED_KERNELS
    from launchlab.chapters.ordinary_launches import ROW_KERNELS

    stages = {**dict(zip(TILED_KERNELS, "ABC")), **{name: f"K{k}" for k, name in enumerate(ROW_KERNELS, 1)}}
    return f"{stages[kernel]}: {kernel}" if kernel in stages else kernel


def graph_figure(run):
    """The drawn graphs as CUDA printed them: one box per node, in dependency order."""
    from launchlab.present import figures

    drawn = run.summaries["drawn"]
    fig, axes = figures.figure(1, len(drawn), height=3.0, layout="constrained")
    for ax, graph in zip(axes[0], drawn):
        title = f"{label(VariantId.parse(graph['graph']))}:\n{graph['nodes']} nodes, {graph['edges']} edges"
        figures.draw_chain(ax, [stage_label(name) for name in graph["labels"]], title)
        ax.title.set_fontsize(figures.FONT_PT)
    described = "; ".join(f"{label(VariantId.parse(g['graph']))}: {g['nodes']} nodes in a chain, "
                          f"{' then '.join(stage_label(name) for name in g['labels'])}" for g in drawn)
    return figures.describe(figures.finish(fig, legend_where=None),
                            f"Two captured CUDA graphs drawn as chains of boxes joined by arrows. {described}.")


# ---------------------------------------------------------------- set-up
def _break_even_cell(entry: dict) -> str:
    if entry["median"] is None:
        return "never"
    return f"{replays_text(entry['median'])} [{replays_text(entry['low'])}–{replays_text(entry['high'])}]"


def instantiation_alone(steps: dict) -> dict | None:
    """A separate instantiation step where CuPy made one, else the one more instantiation timed alone."""
    return steps.get("instantiate_us") or steps.get("instantiate_again_us")


def _setups(run) -> dict:
    return {g: run.summaries["setup"][str(g)] for g in _paths(run)}


def setup_table(run):
    """Set-up steps per graph: median over the repeated captures [p10–p90], µs."""
    setups = _setups(run)
    instantiation = run.summaries["instantiation"]
    inside = instantiation["in_end_capture"] == instantiation["graphs"]
    end_capture = "end capture, with instantiation" if inside else "end capture"
    rows = []
    for g, s in setups.items():
        steps = s["steps"]
        alone = instantiation_alone(steps)
        rows.append({"graph": label(g), "capture": _band(steps["capture_us"]), end_capture: _band(steps["end_capture_us"]),
                     "instantiation alone": tables.MISSING if alone is None else _band(alone),
                     "upload": _band(steps["upload_us"]), "first replay": _band(steps["first_replay_us"])})
    repeats = sorted({s["repeats"] for s in setups.values()})
    return tables.page_table(
        rows, index="graph", units={column: "µs" for column in rows[0] if column != "graph"},
        formats={column: "text" for column in rows[0]},
        note=(f"Median over {'/'.join(map(str, repeats))} captures; brackets: p10–p90 of the captures. "
              "'Instantiation alone' times one more instantiation of the same graph where CuPy did it inside end "
              "capture; it is part of that column and is not added again."))


def payback_table(run):
    """The set-up charged to each graph and the replays after which it is paid back."""
    rows = []
    for g, s in _setups(run).items():
        rows.append({"graph": label(g), "warm replay, 1 call (µs)": _sig(s["warm_replay_us"]),
                     "set-up charged (µs)": _band(s["setup_us"]),
                     "to pay back, event interval (replays)": _break_even_cell(s["break_even_replays"]["event"]),
                     "to pay back, 1 call (replays)": _break_even_cell(s["break_even_replays"]["complete"])})
    return tables.page_table(
        rows, index="graph", formats={column: "text" for column in rows[0]},
        note=("Set-up charged = capture + end capture + a separate instantiation where there was one + upload + "
              "what the first replay took beyond a warm replay (one synchronised call), nothing where it took less: "
              "the first replay follows its upload on a quiet GPU, while a warm replay in the rounds follows other "
              "variants. Brackets: p10–p90 of the captures. To pay back: set-up charged over the saving per invocation, stream minus graph paired "
              "within rounds; brackets: the same over the ends of the saving's 95 % bootstrap interval."))


# ---------------------------------------------------------------- stream against graph
VERDICT_WORDS = {"above": "graph faster", "below": "stream faster", "tie": "tie"}


def ratio_table(run):
    ratios, verdicts = run.summaries["stream_over_graph"], run.summaries["verdicts"]
    rows = [{"workload": label(g), "event interval per call, batch (×)": ratios[str(g)]["event"],
             "by event interval": VERDICT_WORDS[verdicts[str(g)]["event"]],
             "host completion, 1 synchronised call (×)": ratios[str(g)]["complete"],
             "by host completion": VERDICT_WORDS[verdicts[str(g)]["complete"]]} for g in _paths(run)]
    return tables.page_table(rows, index="workload",
                             formats={"workload": "text", "event interval per call, batch (×)": ratio_cell,
                                      "host completion, 1 synchronised call (×)": ratio_cell,
                                      "by event interval": "text", "by host completion": "text"},
                             note="Stream time over graph time within each round. Brackets: 95 % bootstrap interval "
                                  "of the median over the rounds; a tie where it includes 1.")


def verdict_sentence(run) -> str:
    """How many workloads replay made faster, slower, or left tied, by each measure."""
    from launchlab.present.prose import tally_words

    tallies = run.summaries["tallies"]
    event, complete = (tally_words(tallies[name], "workloads") for name in ("event", "complete"))
    if event == complete:
        return (f"Replay was faster for {event} by both measures, the event interval per call and the completion of "
                "one synchronised call (a ratio whose 95 % interval includes 1 counts as a tie).")
    return (f"Replay was faster for {event} by the event interval per call and for {complete} by the completion of "
            "one synchronised call (a ratio whose 95 % interval includes 1 counts as a tie).")


def timing_table(run):
    rows = []
    for g in _paths(run):
        for vid in (stream_twin(g), g):
            m = run.summaries["timing"][str(vid)]
            rows.append({"workload": label(vid), "submission": SUBMISSIONS[vid.submission],
                         **{header: m[kind][metric] for (kind, metric), header in TIMING_COLUMNS.items()}})
    formats = {"workload": "text", "submission": "text", **{header: band_cell for header in TIMING_COLUMNS.values()}}
    return tables.page_table(rows, index=["workload", "submission"], formats=formats,
                             note="Brackets: p10–p90 of the rounds.")


# ---------------------------------------------------------------- the cost of one node
PER_NODE_PANELS = {  # panel title -> {(target, submission, per-node metric): legend}
    "empty kernels": {
        ("empty", "graph", "warm_batch.event_us"): "graph: event interval per node",
        ("empty", "graph", "warm_single.enqueue_us"): "graph: host enqueue per node, 1 call",
        ("empty", "stream", "warm_batch.event_us"): "Python: event interval per launch",
        ("empty", "native", "warm_batch.event_us"): "C++ loop: event interval per launch"},
    "k copies of the row path, 128×8192": {
        ("row4copies", "graph", "warm_batch.event_us"): "graph: event interval per node",
        ("row4copies", "stream", "warm_batch.event_us"): "Python: event interval per launch"},
}


def _series(run, target: str, submission: str, metric: str) -> list[tuple[int, dict]]:
    return sorted((entry["launches"], entry[metric]) for variant, entry in run.summaries["per_node"].items()
                  if VariantId.parse(variant).target == target and VariantId.parse(variant).submission == submission)


def per_node_figure(run):
    """Per launch or per node against the graph's length: empty kernels left, copies of the row path right."""
    from matplotlib.ticker import FuncFormatter, NullLocator

    from launchlab.present import figures

    fig, axes = figures.figure(1, 2, height=4.0, layout="constrained")
    for ax, (title, series) in zip(axes[0], PER_NODE_PANELS.items()):
        for index, ((target, submission, metric), legend) in enumerate(series.items()):
            points = _series(run, target, submission, metric)
            if not points:
                continue  # the C++ loop did not build
            xs = [x for x, _ in points]
            colour = figures.COLOURS[index % len(figures.COLOURS)]
            ax.plot(xs, [s["median"] for _, s in points], marker=figures.MARKERS[index % len(figures.MARKERS)],
                    color=colour, label=legend)
            ax.fill_between(xs, [s["p10"] for _, s in points], [s["p90"] for _, s in points], color=colour,
                            alpha=0.18, linewidth=0)
        ax.set_xscale("log", base=2)
        if ax is axes[0, 0]:   # empty kernels span three decades; the row paths' per-node times under a factor of 3
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        lengths = sorted({x for key in series for x, _ in _series(run, *key)})
        ax.set_xticks(lengths, [str(x) for x in lengths])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}"[0] in "25" else ""))
        ax.set_title(title, fontsize=figures.FONT_PT)
        ax.set_xlabel("kernel launches per invocation")
        ax.grid(alpha=0.3, which="both")
        figures.legend(ax, "below", ncols=1)
    axes[0, 0].set_ylabel("µs per launch or per node")
    return figures.describe(fig, (
        "Two line charts of the time per launch (stream, C++ loop) or per kernel node (graph) against the number "
        "of launches per invocation, 1 to 1024 on a logarithmic axis: left, empty kernels on a logarithmic time "
        "axis; right, back-to-back copies of the 128×8192 row path on a linear one. Each line is a median with a "
        "p10–p90 band."))


def per_node_table(run):
    rows = []
    for variant in ordered(run.summaries["per_node"]):
        vid, entry = VariantId.parse(variant), run.summaries["per_node"][variant]
        series = "empty kernels" if vid.target == "empty" else "row paths"
        rows.append({"series": f"{series}, {SUBMISSIONS[vid.submission]}",
                     "launches per invocation": entry["launches"],
                     "event interval per launch or node, batch (µs)": entry["warm_batch.event_us"],
                     "host enqueue per launch or node, 1 call (µs)": entry["warm_single.enqueue_us"],
                     "host enqueue per launch or node, batch (µs)": entry["warm_batch.enqueue_us"]})
    rows.sort(key=lambda r: r["series"])  # stable: each series keeps its lengths in order
    return tables.page_table(rows, index=["series", "launches per invocation"], formats={"series": "text"},
                             headers={"launches per invocation": "Launches per invocation (count)"},
                             csv="graphs-per-node",
                             note="Per-invocation quantiles divided by the launches (kernel nodes) of one invocation.")


# ---------------------------------------------------------------- glued values
def _fixed(value: float, digits: int = 2) -> str:
    return f"{value:.{digits}f}"


def _sig(value: float) -> str:
    return tables.fmt_sig(value)


def instantiation_sentence(run) -> str:
    counted = run.summaries["instantiation"]
    if counted["in_end_capture"] == counted["graphs"]:
        return ("CuPy instantiated every graph inside `end_capture`: there is no separate instantiation step, so its "
                "cost sits in the end-capture column")
    return (f"CuPy instantiated {counted['in_end_capture']} of {counted['graphs']} graphs inside `end_capture` and the "
            "others in a step of their own")


def page_values(run) -> dict:
    """Formatted numbers for the chapter's prose, all from the run's summaries and record."""
    record = run.record
    protocol = record.protocol
    values = {"run_id": run.run_id, "device_name": record.device_name, "sm_count": str(record.device["sm_count"]),
              "rounds": str(protocol["rounds"]), "batch": str(protocol["batch"]),
              "large_batch": str(protocol["large_batch"]), "warmups": str(protocol["warmups"]),
              "setup_repeats": str(CHAPTER.parameters_of(record).setup_repeats),
              "instantiation_sentence": instantiation_sentence(run), "verdict_sentence": verdict_sentence(run)}
    for g in _paths(run):
        values.update(path_values(run.summaries, g))
    values.update(node_values(run))
    values["stream_pace_sentence"] = stream_pace_sentence(run.summaries)
    from launchlab.chapters.graphs.page_answer import answer_values

    values.update(answer_values(run))
    return values


def path_values(s: dict, g: VariantId) -> dict:
    """Ratios, savings, nodes, set-up and timings of one path's graph and its stream version."""
    key, setup, values = glue_key(g), s["setup"][str(g)], {}
    for name in ("event", "complete"):
        ratio = s["stream_over_graph"][str(g)][name]
        values[f"ratio_{key}_{name}"] = _fixed(ratio["median"])
        values[f"ratio_{key}_{name}_ci"] = interval_text(ratio)
        values[f"saving_{key}_{name}_us"] = _sig(s["saving_us"][str(g)][name]["median"])
        replays = setup["break_even_replays"][name]["median"]
        values[f"breakeven_{key}_{name}"] = replays_text(replays)
        values[f"payback_{key}_{name}"] = (f"after {replays_text(replays)} replays" if replays is not None else
                                           "never: replay saved nothing per invocation by this measure")
    values[f"kernel_nodes_{key}"] = str(s["nodes"][str(g)]["kernel"])
    values[f"setup_{key}_us"] = _sig(setup["setup_us"]["median"])
    values[f"end_capture_{key}_us"] = _sig(setup["steps"]["end_capture_us"]["median"])
    alone = instantiation_alone(setup["steps"])
    values[f"instantiate_alone_{key}_us"] = "not timed" if alone is None else _sig(alone["median"])
    values[f"first_replay_beyond_{key}_us"] = _sig(setup["first_replay_beyond_warm_us"]["median"])
    pace = s["pace"][str(stream_twin(g))]
    values[f"stream_event_over_enqueue_{key}"] = _fixed(pace["event_over_enqueue"])
    values[f"stream_pace_{key}"] = pace["paced_by"]
    for vid in (stream_twin(g), g):
        m = s["timing"][str(vid)]
        for (measurement, metric) in TIMING_COLUMNS:
            values[f"{glue_key(vid, True)}_{measurement}_{metric}"] = _sig(m[measurement][metric]["median"])
    return values


def stream_pace_sentence(s: dict) -> str:
    """Who set the pace of every stream batch of the row and tiled paths, one sentence naming each pacer once."""
    from launchlab.present.glue import pace_sentence

    def batch(vid: VariantId) -> str:
        path = "row path" if vid.target == "row4" else "tiled path"
        return f"the {vid.case.replace('x', '×')} {path}"

    text = pace_sentence({batch(VariantId.parse(v)): pace["paced_by"] for v, pace in s["pace"].items()})
    return f"Of the stream versions, {text[0].lower()}{text[1:]}" if text else ""


def node_values(run) -> dict:
    """Per launch or per node of the graph-length series; the C++ series says so where the loop did not build."""
    values = {}
    for variant, entry in run.summaries["per_node"].items():
        key = glue_key(VariantId.parse(variant), True)
        values[f"node_event_{key}"] = _sig(entry["warm_batch.event_us"]["median"])
        values[f"node_single_enqueue_{key}"] = _sig(entry["warm_single.enqueue_us"]["median"])
        values[f"node_batch_enqueue_{key}"] = _sig(entry["warm_batch.enqueue_us"]["median"])
    native_built = bool(run.record.details.get("native_loop", {}).get("built"))
    values["native_loop"] = ("built for this run" if native_built else
                             "which could not be built on this host, so its series is missing")
    if native_built:
        from launchlab.chapters.graphs.page_answer import chapter_1
        from launchlab.chapters.ordinary_launches.page_answer import _launch_us

        first = chapter_1(run)
        if first is not None:
            values["native_loop"] += (f"; an interval per launch on the GPU's clock, where chapter 1's "
                                      f"{_sig(_launch_us(first, 'native'))} µs is the host's cost of one launch")
    if not native_built:  # the prose names the C++ series: say it was not measured rather than leave a blank
        for variant in run.summaries["per_node"]:
            vid = VariantId.parse(variant)
            if vid.target == "empty" and vid.submission == "stream":
                native = glue_key(vid.with_submission("native"), True)
                for prefix in ("node_event", "node_single_enqueue", "node_batch_enqueue"):
                    values[f"{prefix}_{native}"] = "(not measured)"
    return values
