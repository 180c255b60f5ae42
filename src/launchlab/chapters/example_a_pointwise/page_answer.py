"""Example A's answer: sentences written from the run's paired ratios and verdicts, with the replicates' figures
where the run has replicates."""
from __future__ import annotations

from launchlab.chapters.example_a_pointwise.page import sizes
from launchlab.present import tables
from launchlab.present.replicas import joined, replicates_of, spread_sentence


def _n(n: int) -> str:
    return f"{n:,}"


def fused_answer(run) -> str:
    """How often one kernel beat three, from the stream and from graphs."""
    tallies, parts = run.summaries["tallies"], []
    for submission, words in (("graph", "replayed from graphs"), ("stream", "launched from the stream")):
        tally = tallies[f"three_over_fused.{submission}"]
        total = sum(tally.values())
        if tally["above"] == total:
            parts.append(f"at all {total} sizes {words}")
        else:
            parts.append(f"at {tally['above']} of {total} sizes {words} (slower at {tally['below']}, "
                         f"{tally['tie']} tied)")
    return "The fused kernel was faster than the three kernels " + " and ".join(parts) + "."


def large_answer(run) -> str:
    """At the largest size: the ratio against the ratio of logical bytes, and whether the arrays fit the L2."""
    n = sizes(run)[-1]
    ratio = run.summaries["ratios"][f"three_over_fused.graph.{n}"]
    array_mib, l2_mib = 4 * n / 2**20, run.record.device["l2_bytes"] / 2**20
    where = ("each array is larger than the L2" if array_mib > l2_mib else "each array still fits in the L2")
    near = "close to" if abs(ratio["median"] / 3 - 1) <= 0.1 else "against"
    return (f"At {_n(n)} elements, where {where} ({array_mib:.0f} against {l2_mib:.0f} MiB), the three kernels took "
            f"{ratio['median']:.2f} times as long as the fused kernel ({interval(ratio)}), {near} the 3 times as many "
            "logical bytes they move (24 against 8 per element).")


def interval(ratio: dict) -> str:
    """A ratio's 95 % interval at the decimals that tell its ends apart."""
    for places in (2, 3):
        if f"{ratio['ci_low']:.{places}f}" != f"{ratio['ci_high']:.{places}f}":
            return f"95 % interval {ratio['ci_low']:.{places}f}–{ratio['ci_high']:.{places}f}"
    return f"95 % interval within ±0.0005 of {ratio['median']:.3f}"


def small_answer(run) -> str:
    """At the smallest size: whether a graph mattered more than fusion, from the two ratios."""
    n = sizes(run)[0]
    ratios, timing = run.summaries["ratios"], run.summaries["timing"]
    replay = ratios[f"stream_over_graph.three.{n}"]["median"]
    fusion = ratios[f"three_over_fused.graph.{n}"]["median"]
    event = {f"{row}.{submission}": timing[f"{row}.n{n}.{submission}"]["warm_batch"]["event_us"]["median"]
             for row, submission in (("three", "stream"), ("three", "graph"), ("fused", "graph"))}
    figures = (f"the three kernels took {tables.fmt_sig(event['three.stream'])} µs per call from the stream and "
               f"{tables.fmt_sig(event['three.graph'])} µs replayed from a graph, the fused kernel "
               f"{tables.fmt_sig(event['fused.graph'])} µs replayed")
    if replay > fusion:
        return (f"At {_n(n)} elements, where launching is most of the cost, a graph gained more than fusion: "
                f"{figures} (a gain of {replay:.2f} times from replay, {fusion:.2f} more from fusion).")
    return (f"At {_n(n)} elements {figures}: fusion gained {fusion:.2f} times and replay {replay:.2f}, so here "
            "fusion gained more than a graph.")


def spread_answer(run) -> str:
    """How the smallest and the largest size's fused-over-three ratio moved between runs."""
    replicas = replicates_of(run)
    parts = []
    for n in (sizes(run)[-1], sizes(run)[0]):
        key = f"three_over_fused.graph.{n}"
        others = [r.summaries["ratios"][key]["median"] for r in replicas if key in r.summaries["ratios"]]
        parts.append(spread_sentence(f"the ratio at {_n(n)} elements", run.summaries["ratios"][key]["median"],
                                     others, "{:.2f}".format))
    return " ".join(dict.fromkeys(parts))


def answer_values(run) -> dict:
    return {"fused_answer": fused_answer(run), "large_answer": large_answer(run), "small_answer": small_answer(run),
            "spread_answer": spread_answer(run), "sizes_joined": joined([_n(n) for n in sizes(run)])}
