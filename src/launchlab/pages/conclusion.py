"""The conclusion page (book/conclusion.ipynb): CUDA Graph, fused kernel or megakernel? What the accepted runs say.

Every figure on the page is read from an accepted run (`analysis.accepted_run`): a ratio's median by its exact
headline key (`Run.value`, which raises on a missing key) and its 95 % bootstrap interval from the same paired
ratio in the run's summaries; the two medians must agree. Appendix A and B keep their ratios in the summaries
only. A key or entry an accepted run lacks stops the page, so the build fails rather than print a blank.

A ratio keeps the direction its chapter measured: `a ÷ b` is a's time over b's, paired within each round. When
its whole interval lies above 1, b is faster; below 1, a is; an interval that holds 1 names neither.
"""
from __future__ import annotations

import dataclasses
import math

from launchlab.present import tables
from launchlab.present.prose import comparison, pacer

CHAPTERS = {"ordinary_launches": "Chapter 1", "graphs": "Chapter 2", "fusion": "Chapter 3",
            "megakernels": "Chapter 4", "example_a_pointwise": "Appendix A", "example_b_jobs": "Appendix B"}
NEITHER = "neither"
# What a paired ratio compares, by the (measurement, metric) its summary records (stats.paired_ratio).
MEASURED = {("warm_batch", "event_us"): "event intervals of warm batches",
            ("cold", "event_us"): "event intervals of single invocations after an L2 flush"}


def open_runs(stems=tuple(CHAPTERS)) -> dict:
    """{stem: the accepted Run} for every chapter the page reads."""
    from launchlab.analysis import accepted_run

    return {stem: accepted_run(stem) for stem in stems}


def summary_at(run, path: tuple) -> dict:
    """The summaries entry at `path`; a missing one is an error that names the run and the path."""
    node = run.summaries
    for part in path:
        if not isinstance(node, dict) or part not in node:
            raise KeyError(f"run {run.run_id} has no summaries entry {'/'.join(path)}")
        node = node[part]
    return node


@dataclasses.dataclass(frozen=True)
class Ratio:
    """A paired ratio of two times: the numerator's time over the denominator's, per round."""
    numerator: str
    denominator: str
    where: str
    summary: dict         # median, ci_low, ci_high (and p10, p90, n)
    places: int | None = None   # decimals shared with the other ratios of its row (None: its own)

    @property
    def text(self) -> str:
        return tables.median_with_band(self.summary, tables.CI, digits=self.places)

    @property
    def own_places(self) -> int:
        """The decimals (2 to 4) that tell this ratio's interval ends apart and keep each on its side of 1."""
        return tables.ci_places(self.summary)

    @property
    def measured(self) -> str:
        return MEASURED[(self.summary["measurement"], self.summary["metric"])]

    @property
    def faster(self) -> str:
        if self.summary["ci_low"] > 1:
            return self.denominator
        if self.summary["ci_high"] < 1:
            return self.numerator
        return NEITHER


def headline_ratio(run, key: str, path: tuple, numerator: str, denominator: str, where: str) -> Ratio:
    """The ratio named by headline `key`, with its interval from the summaries at `path`."""
    median = run.value(key)
    summary = summary_at(run, path)
    if not math.isclose(summary["median"], median, rel_tol=1e-9):
        raise ValueError(f"run {run.run_id}: headline {key} = {median} but summaries {'/'.join(path)} hold "
                         f"{summary['median']}")
    return Ratio(numerator, denominator, where, summary)


def summary_ratio(run, path: tuple, numerator: str, denominator: str, where: str) -> Ratio:
    return Ratio(numerator, denominator, where, summary_at(run, path))


def link(page: str, anchor: str, text: str) -> str:
    """A link to a section of another page of the book (the built pages sit side by side)."""
    return f'<a href="{page}.html#{anchor}">{text}</a>'


# The chapter section that measured each regime: (page, anchor), for the decision table and the intro.
SECTIONS = {"short_kernels": ("graphs", "stream-against-graph-round-by-round"),
            "memory_bound": ("fusion", "what-fusion-removes-the-four-kernel-path"),
            "library": ("fusion", "library-softmax"),
            "dependent_tiles": ("megakernels", "time-per-invocation"),
            "dependent_chain": ("megakernels", "the-chain-where-boundaries-add-up"),
            "pointwise": ("example_a_pointwise", "latency-across-sizes"),
            "jobs": ("example_b_jobs", "time-per-call")}


def section_link(regime: str, text: str) -> str:
    return link(*SECTIONS[regime], text)


def claim(claim_id: str) -> str:
    """A link to a claim's row in the claim audit (its family's page, anchor B06 -> #b06)."""
    from launchlab.claims.site import claim_link

    return f'<a href="{claim_link(claim_id)}">{claim_id}</a>'


@dataclasses.dataclass(frozen=True)
class Row:
    """One workload regime of the decision table."""
    regime: str                      # short, for the table
    setting: str                     # what was measured, for the list under the table
    ratios: tuple[Ratio, ...]        # the contenders compared: they decide what is faster
    cost_short: str                  # what it costs to build, for the table
    cost: str                        # the same, in full
    links: tuple[str, ...]
    references: tuple[Ratio, ...] = ()   # shown for scale (a device copy), never a contender
    verdict: str | None = None           # for rows whose comparisons do not share one contender pair

    @property
    def faster(self) -> str:
        """What is faster in every comparison of the row, or, where the cases disagree, the candidates (each
        ratio says which one it found)."""
        if self.verdict:
            return self.verdict
        verdicts = list(dict.fromkeys(ratio.faster for ratio in self.ratios))
        if len(verdicts) == 1:
            return verdicts[0]
        return "depends on the case: " + " or ".join(verdicts)


def _shape(name: str) -> str:
    return name.replace("x", "×")


# --- the rows ----------------------------------------------------------------------------------------------------

def short_kernels_row(runs) -> Row:
    graphs, first = runs["graphs"], runs["ordinary_launches"]
    batch = first.summaries["timing"]["row4.128x8192.stream"]["warm_batch"]
    paced_by = pacer(batch["event_us"]["median"], batch["enqueue_us"]["median"])
    ratios = (headline_ratio(graphs, "stream_over_graph_event.row4.128x8192.graph",
                             ("stream_over_graph", "row4.128x8192.graph", "event"), "stream", "graph",
                             "row path, 128×8192"),
              headline_ratio(graphs, "stream_over_graph_event.empty.n1024.graph",
                             ("stream_over_graph", "empty.n1024.graph", "event"), "stream", "graph",
                             "1,024 empty kernels"))
    setup = tables.fmt_sig(graphs.value("setup_us.row4.128x8192.graph"))
    from launchlab.chapters.graphs.page_names import replays_text

    replays = replays_text(graphs.value("break_even_replays_event.row4.128x8192.graph"))
    return Row("Many short kernels launched from Python",
               f"The four-kernel row path at 128×8192, where {paced_by} sets the pace ({CHAPTERS['ordinary_launches']}"
               "), and graphs of up to 1,024 empty kernels, each launched from Python on a stream (stream) or "
               "replayed as a captured CUDA graph (graph).",
               ratios,
               f"capture once: {setup} µs, repaid after {replays} replays",
               f"Capture once: {setup} µs of set-up at 128×8192, repaid after {replays} replays. Kernels, buffers "
               "and arguments stay as they are; new inputs are written into the captured buffers.",
               (section_link("short_kernels", "Ch. 2"),
                link("graphs", "what-setting-a-graph-up-costs", "set-up"), claim("B06"), claim("B07")))


def fusion_ratio(fusion, a: str, b: str, shape: str, l2: str, numerator: str, denominator: str) -> Ratio:
    return headline_ratio(fusion, f"graph.{a}_over_{b}.{shape}.{l2}", ("ratios", "graph", f"{a}_over_{b}", shape, l2),
                          numerator, denominator, f"{_shape(shape)}, {l2} L2")


def memory_bound_row(runs) -> Row:
    fusion, graphs = runs["fusion"], runs["graphs"]
    ratios = tuple(fusion_ratio(fusion, "row4", "fused_rms", "4096x4096", l2, "row path", "fused")
                   for l2 in ("warm", "cold"))
    references = (headline_ratio(graphs, "stream_over_graph_event.row4.4096x4096.graph",
                                 ("stream_over_graph", "row4.4096x4096.graph", "event"), "stream", "graph",
                                 "row path, 4096×4096"),
                  fusion_ratio(fusion, "fused_rms", "copy", "4096x4096", "warm", "fused", "copy"))
    return Row("One large memory-bound row operation",
               "The RMS-scaled softmax of a 4096×4096 matrix: the four-kernel row path (row path), which passes the "
               "array e through global memory, against one fused kernel per row (fused).",
               ratios, "a new kernel; a configuration per range of row lengths",
               "A new kernel that keeps each row in registers or shared memory, with one configuration per range of "
               "row lengths. For scale: what graph replay alone gains at this shape, and the fused kernel against a "
               "device copy of the same bytes (copy).",
               (section_link("memory_bound", "Ch. 3"),
                link("fusion", "device-time-and-bandwidth-against-the-copy", "the copy"), claim("B08"),
                claim("B10")),
               references)


def library_row(runs) -> Row:
    fusion = runs["fusion"]
    ratios = (fusion_ratio(fusion, "cudnn", "fused_plain", "4096x4096", "warm", "cuDNN", "fused"),
              fusion_ratio(fusion, "cudnn", "fused_plain", "4096x128", "cold", "cuDNN", "fused"))
    return Row("A plain softmax a library provides",
               "cuDNN's softmax (cuDNN) against the fused kernel in its plain-softmax mode (fused) on the same matrix.",
               ratios, "none to write; a library dependency",
               "No kernel to write: a library call, and the library as a dependency of the program.",
               (section_link("library", "Ch. 3"), claim("B11")))


def megakernel_ratio(megakernels, variant: str, where: str) -> Ratio:
    from launchlab.chapters.megakernels import DESIGN
    from launchlab.measure.variant import VariantId

    return headline_ratio(megakernels, f"speedup_vs_graph3.{variant}", ("speedup_vs_graph3", variant),
                          "3-kernel graph", DESIGN[VariantId.parse(variant).target].label, where)


def best_one_launch(megakernels, case: str) -> Ratio:
    """The one-launch design the run found fastest for `case`, against the three-kernel graph."""
    best = summary_at(megakernels, ("best_one_launch", case))
    ratio = megakernel_ratio(megakernels, best["variant"], f"{case} rows, best one-launch design")
    if not math.isclose(megakernels.value(f"speedup_vs_graph3.best_one_launch.{case}"), ratio.summary["median"],
                        rel_tol=1e-9):
        raise ValueError(f"run {megakernels.run_id}: best_one_launch.{case} is not {best['variant']}'s ratio")
    return ratio


def best_tiled_persistent(megakernels, case: str) -> Ratio:
    """The persistent design running A, B and C tasks in one launch that the run found fastest for `case`."""
    best = summary_at(megakernels, ("best_tiled_persistent", case))
    ratio = megakernel_ratio(megakernels, best["variant"], f"{case} rows, best tiled persistent design")
    if not math.isclose(megakernels.value(f"speedup_vs_graph3.best_tiled_persistent.{case}"), ratio.summary["median"],
                        rel_tol=1e-9):
        raise ValueError(f"run {megakernels.run_id}: best_tiled_persistent.{case} is not {best['variant']}'s ratio")
    return ratio


def dependent_tiles_row(runs) -> Row:
    megakernels = runs["megakernels"]
    ratios = (megakernel_ratio(megakernels, "coop.ragged.graph", "ragged rows"),
              megakernel_ratio(megakernels, "queue.ragged.graph", "ragged rows"),
              best_one_launch(megakernels, "ragged"), best_one_launch(megakernels, "balanced"),
              best_tiled_persistent(megakernels, "ragged"), best_tiled_persistent(megakernels, "balanced"))
    return Row("Dependent tiles across blocks",
               "The tiled softmax, whose tiles wait for their row's statistics, as three kernels replayed in a graph "
               "(3-kernel graph) against one-launch designs replayed in a graph: a cooperative kernel with grid "
               "barriers, a persistent task queue, and the best one-launch design the run found for each case.",
               ratios, "a persistent kernel, and traces to check its order",
               "A persistent kernel: every block resident at once for grid barriers (cooperative launch), or a task "
               "queue with dependency counters reset before each invocation; traces and compute-sanitizer to trust "
               "its ordering.",
               (section_link("dependent_tiles", "Ch. 4"),
                link("megakernels", "designs-that-try-to-win", "designs"), claim("B12"), claim("B14")),
               verdict=dependent_tiles_verdict(ratios))


def short_name(label: str) -> str:
    """A design's label without its parenthesis, for a table cell: 'flow kernel (B in C)' -> 'flow kernel'."""
    import re

    return re.sub(r" \(.*?\)", "", label)


def dependent_tiles_verdict(ratios) -> str:
    """A few words: the fastest one-launch design of each case, then the persistent kernels faster and slower than
    the 3-kernel graph on ragged rows."""
    cooperative, queue, best_ragged, best_balanced, tiled_ragged, _ = ratios
    best = {case: short_name(r.denominator) for case, r in (("balanced", best_balanced), ("ragged", best_ragged))}
    words = [best["balanced"] if len(set(best.values())) == 1 else
             f"{best['balanced']} (balanced), {best['ragged']} (ragged)"]
    faster = [short_name(r.denominator) for r in (tiled_ragged, cooperative, queue) if r.faster == r.denominator]
    slower = [short_name(r.denominator) for r in (tiled_ragged, cooperative, queue) if r.faster == r.numerator]
    persistent = ", ".join(part for part in (f"{' and '.join(faster)} faster" if faster else "",
                                             f"{' and '.join(slower)} slower" if slower else "") if part)
    if persistent:
        words.append(f"persistent: {persistent} than the 3-kernel graph")
    return "; ".join(words)


def chain_ratio(megakernels, case: str, stages: int, key: str, numerator: str) -> Ratio:
    """The whole-chain megakernel against a chain contender at `stages` stages (summaries chain/...)."""
    from launchlab.chapters.megakernels import DESIGN

    figure = {"vs_pdl": "speedup_vs_graph_pdl", "vs_fused": "speedup_vs_chain_fused"}[key]
    return headline_ratio(megakernels, f"{figure}.chain_flow.{case}.k{stages}",
                          ("chain", case, f"k{stages}", "chain_flow", key), numerator, DESIGN["chain_flow"].label,
                          f"{case} rows, {stages} stages")


def dependent_chain_row(runs) -> Row:
    megakernels = runs["megakernels"]
    stages = max(int(k[1:]) for k in summary_at(megakernels, ("chain", "ragged")))
    ratios = tuple(chain_ratio(megakernels, case, stages, key, numerator) for case in ("balanced", "ragged")
                   for key, numerator in (("vs_pdl", "PDL graph"), ("vs_fused", "chained fused kernel")))
    verdict = chain_verdict(ratios, stages)
    return Row("A chain of dependent tiled steps",
               "The tiled step repeated as k dependent stages, each stage's output in global memory: 3 kernels a "
               "stage replayed in one graph with programmatic dependent launch (PDL graph), the fused row kernel "
               "chained k times (chained fused kernel), and one persistent kernel running the whole chain.",
               ratios, "a persistent kernel with per-row flags, and traces to check it",
               "A persistent kernel whose workers hand rows over through release/acquire flags, co-resident by "
               "the occupancy API; traces and compute-sanitizer to trust its ordering.",
               (link("megakernels", "the-chain-where-boundaries-add-up", "Ch. 4, the chain"),), verdict=verdict)


NARROW = 0.02   # a win by less than this share is a tie by chapter 4's rule


def chain_verdict(ratios, stages: int) -> str:
    """Per case, at the longest chain: which contenders the whole-chain megakernel beats and which it does not."""
    words = []
    for case in ("balanced", "ragged"):
        mine = [r for r in ratios if r.where.startswith(case)]
        # a margin under NARROW is named as such: chapter 4 counts it a tie
        beats = [r.numerator + (f" only by {100 * (r.summary['median'] - 1):.1f} %"
                                if r.summary["median"] - 1 < NARROW else "")
                 for r in mine if r.faster == r.denominator]
        not_beaten = [r.numerator for r in mine if r.faster != r.denominator]
        parts = ["beats both" if beats and not not_beaten and not any(" only by " in b for b in beats) else f"beats the {', and the '.join(beats)}" if beats else "",
                 f"not the {' or the '.join(not_beaten)}" if not_beaten else ""]
        words.append(f"{case}: {', '.join(p for p in parts if p)}")
    return f"k = {stages}, " + "; ".join(words)


def pointwise_row(runs) -> Row:
    example = runs["example_a_pointwise"]
    ratios = tuple(summary_ratio(example, ("ratios", f"three_over_fused.graph.{size}"), "3 kernels", "fused",
                                 f"{tables.fmt_int(size, grouping=True)} elements")
                   for size in (256, 16777216))
    return Row("A chain of pointwise kernels",
               "Three element-wise kernels (3 kernels) against one kernel that applies the three steps (fused), both "
               "replayed as graphs.",
               ratios, "one kernel of a few lines",
               "One kernel that applies the three steps to each element: a few lines.",
               (section_link("pointwise", "App. A"),))


def jobs_row(runs) -> Row:
    example = runs["example_b_jobs"]
    ratios = (summary_ratio(example, ("ratios", "separate_over_fused.graph.ragged"), "2 kernels", "fused",
                            "ragged jobs"),
              summary_ratio(example, ("ratios", "separate_over_fused.graph.balanced"), "2 kernels", "fused",
                            "balanced jobs"),
              summary_ratio(example, ("ratios", "queue_over_fused.graph.ragged"), "queue", "fused", "ragged jobs"))
    return Row("Jobs of two dependent stages",
               "Jobs whose second stage reads their own first stage's results, with even (balanced) or uneven "
               "(ragged) work: two kernels (2 kernels), one fused kernel with a block per job (fused), or a "
               "persistent task queue (queue), all replayed as graphs.",
               ratios, "one block per job, or a queue reset per call",
               "A fused kernel runs both stages of a job in one block, a barrier between them; a queue adds a "
               "counter reset (a memset) to every invocation.",
               (section_link("jobs", "App. B"),))


ROWS = {"short_kernels": short_kernels_row, "memory_bound": memory_bound_row, "library": library_row,
        "dependent_tiles": dependent_tiles_row, "dependent_chain": dependent_chain_row, "pointwise": pointwise_row,
        "jobs": jobs_row}


def decision_rows(runs) -> dict[str, Row]:
    """{regime: its row of the decision table}, in the table's order (the intro reads the same rows). The ratios
    of a row share one number of decimals: enough to tell the narrowest interval's ends apart."""
    return {regime: same_places(build(runs)) for regime, build in ROWS.items()}


def same_places(row: Row) -> Row:
    places = max(ratio.own_places for ratio in row.ratios)
    return dataclasses.replace(row, ratios=tuple(dataclasses.replace(r, places=places) for r in row.ratios))


def _ratio_short(ratio: Ratio) -> str:
    return f"**{ratio.text}** {ratio.numerator} ÷ {ratio.denominator}, {ratio.where}"


def _ratio_line(ratio: Ratio) -> str:
    return f"{ratio.numerator} ÷ {ratio.denominator}, {ratio.where}: **{ratio.text}**"


def _checked(cells: list[str]) -> list[str]:
    if any("|" in cell or "\n" in cell for cell in cells):
        raise ValueError(f"a cell of the decision table holds '|' or a line break: {cells}")
    return cells


def decision_markdown(rows: list[Row]) -> str:
    """The decision table as MyST Markdown (glued with `{glue:md}` and `:format: myst`): links stay links."""
    lines = ["| Workload regime | Faster | Time ratio [95 % interval] | Cost to build |", "| --- | --- | --- | --- |"]
    for row in rows:
        cells = _checked([f"{row.regime} ({', '.join(row.links)})", row.faster,
                          "<br>".join(_ratio_short(r) for r in row.ratios), row.cost_short])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def details_markdown(rows: list[Row]) -> str:
    """What each row of the table rests on that the table does not show, as a numbered MyST list: the setting,
    what was compared, the figures shown for scale and the cost in full."""
    items = []
    for number, row in enumerate(rows, 1):
        measured = "; ".join(dict.fromkeys(r.measured for r in row.ratios + row.references))
        lines = [f"{number}. **{row.regime}.** {row.setting} Compared: {measured}."]
        lines += [f"   * for scale: {_ratio_line(r)}" for r in row.references]
        lines.append(f"   * **Cost to build.** {row.cost} Where: {', '.join(row.links)}.")
        items.append("\n".join(lines))
    return "\n\n".join(items)


# --- the page ------------------------------------------------------------------------------------------------------

READINGS = (("warm_single", "enqueue_us", "host enqueue, 1 synchronised call", "host clock"),
            ("warm_batch", "enqueue_us", "host enqueue per call, batch", "host clock"),
            ("warm_batch", "event_us", "event interval per call, batch", "CUDA events (GPU)"))


def same_variant_table(runs, variant: str = "row4.128x8192.stream"):
    """One stream variant measured in chapter 1's run and again in chapter 2's: the same readings side by side."""
    rows = []
    for measurement, metric, reading, clock in READINGS:
        row = {"reading": reading, "clock": clock}
        for stem in ("ordinary_launches", "graphs"):
            row[f"{CHAPTERS[stem]} (µs)"] = summary_at(runs[stem], ("timing", variant, measurement, metric))
        rows.append(row)
    return tables.page_table(rows, index="reading", formats={"clock": "text"},
                             caption=f"The stream variant {variant} in two runs, per invocation.")


def runs_table(runs):
    rows = [{"part": CHAPTERS[stem], "run": run.run_id, "GPU": run.record.device_name,
             "code": str(run.record.git_commit),
             "SM clock dropped": {True: "yes", False: "no", None: "not known"}[run.record.clocks_dropped]}
            for stem, run in runs.items()]
    return tables.page_table(rows, index="part", formats={c: "text" for c in ("run", "GPU", "code", "SM clock dropped")},
                             headers={"GPU": "GPU", "code": "Code (git commit)"})


def page_values(runs) -> dict:
    """The decision table and the figures of the prose, all from the accepted runs."""
    first, graphs = runs["ordinary_launches"], runs["graphs"]
    devices = sorted({run.record.device_name for run in runs.values()})
    rows = list(decision_rows(runs).values())
    values = {"decision_table": decision_markdown(rows), "decision_details": details_markdown(rows),
              "devices": " and ".join(devices),
              "run_count": str(len(runs))}
    values.update({f"run_{stem}": run.run_id for stem, run in runs.items()})
    from launchlab.chapters.ordinary_launches.page_answer import launch_cost

    values["cupy_launch_us"] = launch_cost(first)   # the book's launch cost, as chapter 1 states it
    values["native_launch_us"] = tables.fmt_sig(first.value("enqueue_us_per_launch.empty.1x1.native"))
    values["graph_node_us"] = tables.fmt_sig(graphs.value("node_event_us.empty.n1024.graph"))
    values["row4_large_event_us"] = tables.fmt_sig(first.value("event_us.row4.4096x4096.stream"))
    batch = first.summaries["timing"]["row4.4096x4096.stream"]["warm_batch"]
    values["row4_large_enqueue_us"] = tables.fmt_sig(batch["enqueue_us"]["median"])
    values["pace_large"] = pacer(first.value("event_us.row4.4096x4096.stream"), batch["enqueue_us"]["median"])
    values.update(same_variant_values(runs))
    return values


def same_variant_values(runs, variant: str = "row4.128x8192.stream") -> dict:
    """How the single call's host enqueue stands against the batch's per-call enqueue in each of the two runs, as one
    sentence that names a finding once where both runs share it."""
    found = {}
    for stem in ("ordinary_launches", "graphs"):
        timing = summary_at(runs[stem], ("timing", variant))
        single, batch = (timing[m]["enqueue_us"]["median"] for m in ("warm_single", "warm_batch"))
        found[stem] = (comparison(single, batch), single / batch)
    words = {stem: f"{CHAPTERS[stem].lower()}'s run ({ratio:.2f} times)" for stem, (_, ratio) in found.items()}
    if found["ordinary_launches"][0] == found["graphs"][0]:
        sentence = (f"The single synchronised call's host enqueue was {found['graphs'][0]} the batch's enqueue per call "
                    f"in both runs: {words['ordinary_launches']} and {words['graphs']}.")
    else:
        sentence = ("The single synchronised call's host enqueue was "
                    + " and ".join(f"{relation} the batch's enqueue per call in {words[stem]}"
                                   for stem, (relation, _) in found.items()) + ".")
    return {"single_vs_batch_sentence": sentence, "batch_sentence": batch_sentence(runs, variant)}


def batch_sentence(runs, variant: str) -> str:
    """Whether the two runs' batch enqueue per call agree, and where they do not, how far the same variant moves
    between replicate runs of one chapter (the reason a second run's figure differs)."""
    from launchlab.present.replicas import replicates_of

    batch = {stem: summary_at(runs[stem], ("timing", variant, "warm_batch", "enqueue_us"))["median"]
             for stem in ("ordinary_launches", "graphs")}
    first, second = batch["ordinary_launches"], batch["graphs"]
    if abs(first - second) <= 0.05 * first:
        return f"The batch readings, the steady cost of a call, agree within 5 % ({tables.fmt_sig(first)} and " \
               f"{tables.fmt_sig(second)} µs)."
    runs_of_2 = [runs["graphs"], *(replicates_of(runs["graphs"]) if hasattr(runs["graphs"], "path") else [])]
    seen = [r.summaries["timing"][variant]["warm_batch"]["enqueue_us"]["median"] for r in runs_of_2
            if variant in r.summaries.get("timing", {})]
    spread = (f", and chapter 2's own replicate runs put the same reading between {tables.fmt_sig(min(seen))} and "
              f"{tables.fmt_sig(max(seen))} µs" if len(seen) > 1 else "")
    return (f"Even the batch readings, the steady cost of a call, differ: {tables.fmt_sig(first)} µs of enqueue per "
            f"call in chapter 1's run against {tables.fmt_sig(second)} µs in chapter 2's. Each run's host process "
            f"submits at its own speed{spread}; the book therefore compares readings within one run, and the "
            "launch cost it cites is chapter 1's.")
