"""Example A's answer: sentences written from the run's paired ratios and verdicts, with the replicates' figures
where the run has replicates."""
from __future__ import annotations

from launchlab.chapters.example_a_pointwise import CHAPTER
from launchlab.present import tables
from launchlab.present.replicas import joined, replicates_of, spread_sentence


def sizes(run) -> list[int]:
    return list(CHAPTER.parameters_of(run.record).sizes)



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
    places = tables.ci_places(ratio, most=3)
    return (f"At {_n(n)} elements, where {where} ({array_mib:.0f} against {l2_mib:.0f} MiB), the three kernels took "
            f"{ratio['median']:.{places}f} times as long as the fused kernel ({interval(ratio)}), {near} the 3 times "
            "as many logical bytes they move (24 against 8 per element).")


def interval(ratio: dict) -> str:
    """A ratio's 95 % interval at the decimals that tell its ends apart."""
    places = tables.ci_places(ratio, most=3)
    if f"{ratio['ci_low']:.{places}f}" != f"{ratio['ci_high']:.{places}f}":
        return f"95 % interval {ratio['ci_low']:.{places}f} to {ratio['ci_high']:.{places}f}"
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


def spread_at(run, n: int) -> str:
    """How the fused-over-three ratio at `n` elements moved between this run and its replicates."""
    key = f"three_over_fused.graph.{n}"
    others = [r.summaries["ratios"][key]["median"] for r in replicates_of(run) if key in r.summaries["ratios"]]
    return spread_sentence(f"the ratio at {_n(n)} elements", run.summaries["ratios"][key]["median"], others,
                           "{:.2f}".format)


def spread_answer(run) -> str:
    """The largest size's spread, and a short warning where the smallest size's ratio varies between runs."""
    n = sizes(run)[0]
    key = f"three_over_fused.graph.{n}"
    values = [r.summaries["ratios"][key]["median"] for r in (run, *replicates_of(run)) if key in r.summaries["ratios"]]
    varies = len(values) > 1 and max(values) > 1.05 * min(values)
    return spread_at(run, sizes(run)[-1]) + (
        f" At {_n(n)} elements fusion's gain varied between runs, from {min(values):.2f} to {max(values):.2f} times "
        "(below, with the reason)." if varies else "")


def spread_small(run) -> str:
    return spread_at(run, sizes(run)[0]) + host_paced_replay(run, replicates_of(run))


def host_paced_replay(run, replicas) -> str:
    """Runs (this one or a replicate) in which the host set the pace of the fused graph's replays at the smallest
    size: there the ratio compares the host's speed of submission, not the kernels."""
    from launchlab.present.prose import pacer

    n = sizes(run)[0]
    paced = []
    for r in (run, *replicas):
        batch = r.summaries["timing"].get(f"fused.n{n}.graph", {}).get("warm_batch")
        if batch and pacer(batch["event_us"]["median"], batch["enqueue_us"]["median"]) == "the host":
            ratio = r.summaries["ratios"][f"three_over_fused.graph.{n}"]["median"]
            who = "this run" if r is run else f"the replicate that measured {ratio:.2f}"
            paced.append(f"{who} ({tables.fmt_sig(batch['enqueue_us']['median'])} µs of enqueue per replay against "
                         f"{tables.fmt_sig(batch['event_us']['median'])} µs of event interval)")
    if not paced:
        return ""
    return (f" By chapter 1's rule the host set the pace of the fused graph's replays at {_n(n)} elements in "
            + joined(paced) + ": there the ratio is in part a measure of how fast Python submits a replay, which "
            "varies between processes.")


def answer_values(run) -> dict:
    return {"fused_answer": fused_answer(run), "large_answer": large_answer(run), "small_answer": small_answer(run),
            "spread_answer": spread_answer(run), "spread_small": spread_small(run), "sizes_joined": joined([_n(n) for n in sizes(run)])}
