"""Chapter 2's answer, its key figure and the sentences that tie it to chapter 1: each sentence is written from a
finding in the run's summaries (the verdicts, who set the pace, the node counts), and where a finding does not
hold in a run the sentence says what was found instead."""
from __future__ import annotations

from launchlab.chapters.graphs import stream_twin
from launchlab.chapters.graphs.page_names import _paths, label, ordered, replays_text
from launchlab.measure.variant import VariantId
from launchlab.present import tables
from launchlab.present.prose import tally_words
from launchlab.present.replicas import counted, joined, replicates_of, spread_sentence

KEY = "row4.128x8192.graph"        # the workload the answer leads with: chapter 1's host-paced row path


def workload(g: VariantId) -> str:
    """'the 128×8192 row path', 'the ragged tiled path': a workload's name inside a sentence."""
    paths = {"row4": "row path", "tiled3": "tiled path"}
    return f"the {g.case.replace('x', '×')} {paths[g.target]}" if g.target in paths else label(g)


def _ratio(summaries: dict, graph: VariantId | str, measure: str = "event") -> dict:
    return summaries["stream_over_graph"][str(graph)][measure]


def verdict_answer(run) -> str:
    """How many of the measured cases replay made faster, by each measure, in one sentence."""
    tallies = run.summaries["tallies"]
    paths = {"row4": ("shape", "row path"), "tiled3": ("case", "tiled path")}
    kinds = {}
    for g in _paths(run):
        kinds[g.target] = kinds.get(g.target, 0) + 1
    cases = joined([f"{counted(n, paths.get(target, ('case', ''))[0])} of the {paths.get(target, ('', target))[1]}"
                    for target, n in kinds.items()])
    total = sum(tallies["event"].values())
    if all(tallies[m]["above"] == sum(tallies[m].values()) for m in ("event", "complete")):
        return (f"Replaying the launches as a CUDA graph made every one of the {total} cases faster ({cases}), both "
                "by the event interval per call of a batch and by the host completion of one synchronised call.")
    event, complete = (tally_words(tallies[m], "cases") for m in ("event", "complete"))
    return (f"Of the {total} cases ({cases}), replaying the launches as a CUDA graph made {event} faster by the event "
            f"interval per call of a batch, and {complete} by the host completion of one synchronised call.")


def ratios_answer(run) -> str:
    """The largest event-interval ratio with its interval, and whether the gain ordered by who set the pace."""
    s = run.summaries
    graphs = sorted(_paths(run), key=lambda g: -_ratio(s, g)["median"])
    first, last = _ratio(s, graphs[0]), _ratio(s, graphs[-1])
    text = (f"From the stream, {workload(graphs[0])} took {first['median']:.2f} times as long per call as replayed "
            f"(95 % interval {first['ci_low']:.2f}–{first['ci_high']:.2f}), {workload(graphs[-1])} "
            f"{last['median']:.2f} times.")
    host = [g for g in graphs if s["pace"][str(stream_twin(g))]["paced_by"] == "the host"]
    gpu = [g for g in graphs if g not in host]
    if host and gpu and min(_ratio(s, g)["median"] for g in host) > max(_ratio(s, g)["median"] for g in gpu):
        return text + (" Replay gained most where the host set the pace of the stream version and least where the "
                       "GPU did, as chapter 1's finding predicts: a graph removes host submissions, not GPU work.")
    return text + (" Note: in this run the gain did not order by who set the pace of the stream version (the host "
                   f"for {joined([workload(g) for g in host]) or 'none'}, the GPU for "
                   f"{joined([workload(g) for g in gpu]) or 'none'}).")


def every_ratio(run) -> str:
    s = run.summaries
    graphs = sorted(_paths(run), key=lambda g: -_ratio(s, g)["median"])
    return ("By the event interval per call, stream over graph was "
            + joined([f"{_ratio(s, g)['median']:.2f} for {workload(g)}" for g in graphs]) + ".")


def spread_answer(run) -> str:
    """How the key ratio moved between this run and its replicates, and which other cases' ratios moved by more
    than 5 % as well."""
    replicas = replicates_of(run)
    others = [_ratio(r.summaries, KEY)["median"] for r in replicas if KEY in r.summaries["stream_over_graph"]]
    here = _ratio(run.summaries, KEY)["median"]
    text = spread_sentence("the 128×8192 row path's ratio", here, others, "{:.2f}".format)
    moved = []
    for g in (g for g in _paths(run) if str(g) != KEY):
        theirs = [_ratio(r.summaries, g)["median"] for r in replicas if str(g) in r.summaries["stream_over_graph"]]
        mine = _ratio(run.summaries, g)["median"]
        if any(abs(v / mine - 1.0) > 0.05 for v in theirs):
            moved.append(f"{workload(g)}'s from {mine:.2f} here to {joined([f'{v:.2f}' for v in theirs])}")
    if moved:
        text += f" Other ratios moved as well: {joined(moved)}."
    return text


def spread_why(run) -> str:
    """Which side of the key ratio moved between runs, where the run has replicates."""
    runs = [run, *(r for r in replicates_of(run) if KEY in r.summaries["stream_over_graph"])]
    if len(runs) < 2:
        return "Which side of the ratio moves between runs is not known without replicates."
    stream = str(stream_twin(VariantId.parse(KEY)))
    events = {side: [r.summaries["timing"][name]["warm_batch"]["event_us"]["median"] for r in runs]
              for side, name in (("graph", KEY), ("stream", stream))}
    steady = {side: max(v) <= 1.05 * min(v) for side, v in events.items()}
    host_paced = run.summaries["pace"][stream]["paced_by"] == "the host"
    low, high = min(events["stream"]), max(events["stream"])
    if steady["graph"] and not steady["stream"] and host_paced:
        return ("Between this run and its replicates the graph's event interval per call was the same within 5 %, "
                f"while the stream version's, which Python paced, ranged from {tables.fmt_sig(low)} to "
                f"{tables.fmt_sig(high)} µs: the ratio moves with how fast the host process submits, not with the GPU.")
    held = {side: "held within 5 %" if steady[side] else "moved by more than 5 %" for side in steady}
    return (f"Between this run and its replicates the graph's event interval per call {held['graph']} and the stream "
            f"version's {held['stream']}.")


def payback_answer(run) -> str:
    setup = run.summaries["setup"][KEY]
    return (f"Capturing, instantiating and uploading the 128×8192 row path's graph cost {tables.fmt_sig(setup['setup_us']['median'])} µs "
            f"once, repaid after {replays_text(setup['break_even_replays']['event']['median'])} replays.")


def keeps_answer(run) -> str:
    """What replay keeps: one kernel node per launch, where the saved graphs show it."""
    nodes = {g: run.summaries["nodes"][str(g)] for g in _paths(run)}
    if all(n["kernel"] == n["stream_launches"] and n["other"] == 0 for n in nodes.values()):
        paths = {"row4": "the row path", "tiled3": "the tiled path"}
        counts = joined(list(dict.fromkeys(f"{n['kernel']} for {paths.get(g.target, label(g))}"
                                           for g, n in nodes.items())))
        return ("What replay keeps is every kernel: each graph holds one kernel node per launch of its stream "
                f"version ({counts}), so every kernel boundary stays, and every intermediate array is still written "
                "to global memory and read back.")
    return ("Note: in this run a captured graph does not hold exactly one kernel node per launch of its stream "
            "version; the node table on the data page shows what each holds.")


def counted_launches(n: int) -> str:
    return "one" if n == 1 else f"{n:,}"


def chapter_1(run):
    """Chapter 1's accepted run in the same evidence root as `run`, or None where there is none."""
    from launchlab.analysis import accepted_run
    from launchlab.store import evidence

    root = run.path.parents[1]
    if root not in _FIRST:
        try:
            _FIRST[root] = accepted_run("ordinary_launches", root)
        except (evidence.EvidenceError, KeyError, OSError):
            _FIRST[root] = None
    return _FIRST[root]


_FIRST: dict = {}


def chapter_1_launch(run) -> tuple[str, str, float] | None:
    """(chapter 1's launch cost as written, its run id, its value in µs), or None without chapter 1's run."""
    from launchlab.chapters.ordinary_launches.page_answer import _launch_us, launch_cost

    first = chapter_1(run)
    return None if first is None else (launch_cost(first), first.run_id, _launch_us(first, "stream"))


def pace_against_chapter_1(run) -> str:
    """Where this run and chapter 1's found a different side setting the pace of the same stream variant, why."""
    first = chapter_1(run)
    if first is None:
        return "Chapter 1 has no accepted run beside this one to compare who set the pace."
    differing = []
    for variant, pace in run.summaries["pace"].items():
        theirs = first.summaries["pace"].get(variant)
        if theirs and theirs["paced_by"] != pace["paced_by"]:
            here, there = (r.summaries["timing"][variant]["warm_batch"] for r in (run, first))
            differing.append(
                f"at {VariantId.parse(variant).case.replace('x', '×')} chapter 1's run found {theirs['paced_by']} "
                f"setting the pace and this run {pace['paced_by']} (Python's enqueue per call "
                f"{tables.fmt_sig(there['enqueue_us']['median'])} µs there and "
                f"{tables.fmt_sig(here['enqueue_us']['median'])} µs here, event intervals "
                f"{tables.fmt_sig(there['event_us']['median'])} and {tables.fmt_sig(here['event_us']['median'])} µs)")
    if not differing:
        return "Chapter 1's run found the same side setting the pace of every stream variant both runs measured."
    return ("The pace is a finding of each run, and the two runs differ: " + "; ".join(differing) + ". Where the kernels "
            "take about as long as Python's launches, a host a little faster or slower in one process than in another "
            "decides which side waits.")


def launch_cost_sentence(run) -> str:
    """This run's per-launch figure for an empty kernel from Python, set against chapter 1's launch cost with the
    reason the two differ."""
    per_node = run.summaries["per_node"]
    series = sorted((entry["launches"], entry["warm_batch.enqueue_us"]["median"]) for v, entry in per_node.items()
                    if v.startswith("empty.") and v.endswith(".stream"))
    (one, single), (most, many) = series[0], series[-1]
    text = (f"In this run Python enqueued an empty kernel in {tables.fmt_sig(many)} µs per launch when one invocation "
            f"made {most:,} launches and in {tables.fmt_sig(single)} µs when it made {counted_launches(one)}")
    cited = chapter_1_launch(run)
    if cited is None:
        return text + ". Chapter 1 has no accepted run beside this one, so the book's launch cost is not cited here."
    cost, first_id, first = cited
    why = (": the Python harness's own cost per invocation is shared by all the launches of a long invocation and "
           "paid in full by each launch where an invocation is one launch, as in chapter 1's measurement"
           if single > 1.05 * many else "")
    gap = abs(single - first) / first
    rest = ("With one launch per invocation the two runs agree within 5 %." if gap <= 0.05 else
            f"With one launch per invocation the two runs still differ by {gap * 100:.0f} %: they are separate "
            "processes on one host, measured at different times, with other variants in their rounds.")
    native = sorted((entry["launches"], entry["warm_batch.enqueue_us"]["median"]) for v, entry in per_node.items()
                    if v.startswith("empty.") and v.endswith(".native"))
    from launchlab.chapters.ordinary_launches.page_answer import _launch_us

    cpp = ""
    if native and "empty.1x1.native" in chapter_1(run).summaries["timing"]:
        (n_one, c_one), (n_most, c_most) = native[0], native[-1]
        cpp = (f" The C++ loop's cost per launch falls the same way, from {tables.fmt_sig(c_one)} µs at "
               f"{counted_launches(n_one)} launch{'' if n_one == 1 else 'es'} per invocation to "
               f"{tables.fmt_sig(c_most)} µs at {n_most:,}; chapter 1's "
               f"{tables.fmt_sig(_launch_us(chapter_1(run), 'native'))} µs comes from a batch of invocations with no "
               "events between them.")
    return (text + f", against the book's launch cost of {cost} µs, measured in chapter 1 (run {first_id}) with one "
            f"launch per invocation and no events{why}. {rest}{cpp}")


def answer_values(run) -> dict:
    return {"verdict_answer": verdict_answer(run), "ratios_answer": ratios_answer(run),
            "spread_answer": spread_answer(run), "spread_why": spread_why(run), "every_ratio": every_ratio(run),
            "payback_answer": payback_answer(run),
            "keeps_answer": keeps_answer(run), "launch_cost_sentence": launch_cost_sentence(run),
            "pace_against_chapter_1": pace_against_chapter_1(run)}


def ratio_figure(run):
    """Stream time over graph time per workload, both measures, with the 95 % intervals and the replicates'
    medians: the chapter's key figure."""
    import numpy as np

    from launchlab.present import figures

    s, replicas = run.summaries, replicates_of(run)
    graphs = [g for g in ordered(str(g) for g in _paths(run))]
    fig, axes = figures.figure(1, 1, height=0.5 * len(graphs) + 1.6, layout="constrained")
    ax = axes[0, 0]
    y = np.arange(len(graphs))[::-1]
    measures = {"event": "event interval per call, batch", "complete": "host completion, 1 synchronised call"}
    for index, (measure, legend) in enumerate(measures.items()):
        offset = 0.15 if index == 0 else -0.15
        ratios = [_ratio(s, g, measure) for g in graphs]
        medians = np.array([r["median"] for r in ratios])
        errors = [medians - [r["ci_low"] for r in ratios], [r["ci_high"] for r in ratios] - medians]
        ax.errorbar(medians, y + offset, xerr=errors, fmt=figures.MARKERS[index], color=figures.COLOURS[index],
                    capsize=3, label=f"{legend} (95 % interval)")
        if measure == "event" and replicas:
            xs = [_ratio(r.summaries, g)["median"] for r in replicas for g in graphs
                  if g in r.summaries["stream_over_graph"]]
            ys = [pos + offset for r in replicas for g, pos in zip(graphs, y) if g in r.summaries["stream_over_graph"]]
            ax.plot(xs, ys, linestyle="none", marker="o", markerfacecolor="none", color=figures.COLOURS[index],
                    label="event interval, the replicate runs")
    ax.axvline(1.0, color="black", linewidth=1.0, linestyle="--", gid=figures.REFERENCE_GID)
    ax.set_yticks(y, [label(VariantId.parse(g)) for g in graphs])
    ax.set_xlim(left=min(0.9, ax.get_xlim()[0]))
    ax.set_xlabel("stream time ÷ graph time (right of 1: the graph was faster)")
    ax.grid(axis="x", alpha=0.3)
    figures.finish(fig)
    shown = "; ".join(f"{label(VariantId.parse(g))}: {_ratio(s, g)['median']:.2f}" for g in graphs)
    return figures.describe(fig, (
        "Dot plot, one row per workload, of the stream version's time over the graph replay's, paired within "
        f"rounds, with 95 % intervals, for the event interval per call and the host completion of one call; hollow "
        f"circles are the replicate runs' event-interval medians. Event-interval medians: {shown}."))
