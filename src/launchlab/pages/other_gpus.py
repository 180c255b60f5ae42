"""The page on runs made on another GPU model: which book claims carry over (`claims.other_gpus`), and how the
fusion plane's figures move between the two GPUs."""
from __future__ import annotations

from launchlab.claims import other_gpus
from launchlab.claims.other_gpus import Carried, short_name
from launchlab.present import tables
from launchlab.present.replicas import NUMBER_WORDS, counted, joined
from launchlab.store import evidence

# The fusion plane's figures, as the fusion chapter's headline states them: (headline key without the L2 state,
# what it is, how it is written).
PLANE_FIGURES = (
    ("device_logical_gbs.copy.4096x16384", "copy ceiling at 4096×16384, GB/s", "{:,.0f}"),
    ("plane.fused_plain_over_copy.geomean", "bandwidth regime: fused plain ÷ copy, geometric mean", "{:.3f}"),
    ("plane.fused_plain_over_copy.p90", "bandwidth regime: fused plain ÷ copy, p90", "{:.3f}"),
    ("plane.fused_plain_over_copy.max", "bandwidth regime: fused plain ÷ copy, max", "{:.3f}"),
    ("plane.fused_plain_minus_copy_us.median", "latency regime: fused plain − copy, median, µs", "{:.2f}"),
    ("plane.fused_plain_minus_copy_us.p90", "latency regime: fused plain − copy, p90, µs", "{:.2f}"),
    ("plane.faster_than.cudnn.share", "points where fused plain is faster than cuDNN", "pct"),
    ("plane.faster_than.torch.share", "points where fused plain is faster than torch.softmax", "pct"),
    ("plane.faster_than.triton.share", "points where fused plain is faster than Triton", "pct"),
    ("plane.model_error.median", "cost model's median error", "pct1"),
)
KEPT = (other_gpus.HOLDS, other_gpus.SAME_ANSWER)            # the verdicts the page's answer counts together
BROKEN = (other_gpus.FAILS, other_gpus.OTHER_ANSWER)          # those that contradict a claim


def _written(value, style: str) -> str:
    if value is None:
        return tables.MISSING
    if style.startswith("pct"):
        return f"{100 * value:.{1 if style == 'pct1' else 0}f} %"
    return style.format(value)


def plane_table(accepted, other):
    """The fusion plane's figures on both GPUs, warm and cold."""
    first, second = short_name(accepted.device), short_name(other.device)
    rows = []
    for key, what, style in PLANE_FIGURES:
        row = {"figure": what}
        for l2 in ("warm", "cold"):
            row[f"{first}, {l2}"] = _written(accepted.headline.get(f"{key}.{l2}"), style)
            row[f"{second}, {l2}"] = _written(other.headline.get(f"{key}.{l2}"), style)
        rows.append(row)
    return tables.page_table(rows, index="figure", formats={c: "text" for c in rows[0] if c != "figure"},
                             caption=f"The fusion plane's figures on the {first} (run {accepted.run_id}) and the "
                                     f"{second} (run {other.run_id}).")


def verdict_counts(items: list[Carried]) -> str:
    """The page's answer: "Of their 15 claims, 9 hold there or give the same answer, 4 are measurements taken
    again and 2 are undecided (B10 and B21), because the run fails a condition their figures need. None is
    contradicted there." Every claim of a verdict other than those three is named."""
    by_verdict: dict[str, list[str]] = {}
    for item in items:
        by_verdict.setdefault(item.verdict, []).append(item.claim.id)
    kept = sum(len(by_verdict.get(verdict, [])) for verdict in KEPT)
    words = {other_gpus.MEASURED: ("is a measurement taken again", "are measurements taken again", ""),
             other_gpus.OUTSIDE_BOUND: ("holds as worded", "hold as worded", " but not within the bound set on the "
                                        "accepted GPU"),
             other_gpus.FAILS: ("does not hold", "do not hold", ""),
             other_gpus.OTHER_ANSWER: ("answers its question the other way", "answer their questions the other way",
                                       ""),
             other_gpus.TEST_FAILS: ("is undecided", "are undecided", ", because the run fails a condition "
                                     "{whose} figures need")}
    parts = [f"{kept} hold there or give the same answer"] if kept else []
    for verdict, (one, many, tail) in words.items():
        ids = by_verdict.get(verdict)
        if ids:
            named = "" if verdict == other_gpus.MEASURED else f" ({joined(ids)})"
            parts.append(f"{len(ids)} {one if len(ids) == 1 else many}{named}"
                         + tail.format(whose="its" if len(ids) == 1 else "their"))
    broken = sum(len(by_verdict.get(verdict, [])) for verdict in BROKEN)
    return f"Of their {len(items)} claims, {joined(parts)}." + (" None is contradicted there." if not broken else "")


def plane_sentence(accepted, other) -> str:
    """How the fusion plane's distance from the copy, and the cost model's error, move between the two GPUs."""
    first, second = short_name(accepted.device), short_name(other.device)
    copy = "device_logical_gbs.copy.4096x16384.warm"
    gap = "plane.fused_plain_over_copy.geomean"
    error = "plane.model_error.median"
    closer = {l2: other.headline[f"{gap}.{l2}"] < accepted.headline[f"{gap}.{l2}"] for l2 in ("warm", "cold")}
    moved = ("closer" if all(closer.values()) else "no closer" if not any(closer.values()) else
             f"closer with a {'warm' if closer['warm'] else 'cold'} L2 only")
    return (f"The {second} copies a large matrix at {other.headline[copy]:,.0f} GB/s, the {first} at "
            f"{accepted.headline[copy]:,.0f} GB/s (4096×16384, warm L2). Against its own copy, the fused plain "
            f"softmax comes {moved} on the {second}: over the plane's bandwidth "
            f"regime its time is {other.headline[f'{gap}.warm']:.3f} times the copy's warm and "
            f"{other.headline[f'{gap}.cold']:.3f} cold, against {accepted.headline[f'{gap}.warm']:.3f} and "
            f"{accepted.headline[f'{gap}.cold']:.3f} on the {first}. The launch policy was not refitted: its cost "
            f"model, whose constants come from the {first}, misses the {second}'s times by a median of "
            f"{100 * other.headline[f'{error}.warm']:.1f} % warm and {100 * other.headline[f'{error}.cold']:.1f} % "
            f"cold, against {100 * accepted.headline[f'{error}.warm']:.1f} % and "
            f"{100 * accepted.headline[f'{error}.cold']:.1f} % on the {first}.")


def cold_pacing_counts(run) -> tuple[int, int]:
    """(cold single-call samples the host paced, cold single-call samples) over a run's variants."""
    pacing = run.summaries.get("cold_pacing", {}).values()
    return sum(r["host_enqueue_exceeded_wait"] for r in pacing), sum(r["samples"] for r in pacing)


def pacing_sentence(accepted, other, undecided: int) -> str:
    """How often each host, not its GPU, set the pace of a cold single call, and what that left undecided."""
    first, second = short_name(accepted.device), short_name(other.device)
    (ours, total), (theirs, their_total) = cold_pacing_counts(accepted), cold_pacing_counts(other)
    because = (f" That is why {counted(undecided, 'claim')} {'is' if undecided == 1 else 'are'} undecided there."
               if undecided else "")
    return (f"The host changed too. A cold sample is one call queued behind a GPU wait; the host sets its pace when "
            f"it takes longer to enqueue the call than the wait lasts. With the {second}, the host paced {theirs:,} "
            f"of the fusion run's {their_total:,} cold samples; with the {first}, {ours:,} of {total:,}.{because}")


def fusion_pair(items: list[Carried]):
    """(the fusion chapter's accepted run, its run on the other GPU), or None."""
    return next(((item.accepted, item.other) for item in items if item.claim.chapter == "fusion"), None)


def page_values(items: list[Carried]) -> dict[str, str]:
    """The page's figures and sentences; ValueError where no chapter has a run on another GPU model."""
    if not items:
        raise ValueError("no accepted run has a run on another GPU model listed in evidence/other_gpus.json")
    runs = {item.other.run_id: item for item in items}
    devices = sorted({short_name(item.other.device) for item in items})
    # "Example A: a pointwise chain" -> "Example A", in the items' order (carried_claims gives the book's)
    parts = list(dict.fromkeys(item.claim.section.split(":")[0] for item in items))
    total = len(evidence.read_accepted(items[0].accepted.path.parents[1]))  # the evidence root the runs came from
    share = (f"all {NUMBER_WORDS.get(total, total)} of its parts" if len(parts) == total
             else f"{NUMBER_WORDS.get(len(parts), len(parts))} of its {counted(total, 'part')}")
    chapters = f"{share} ({joined(parts)})"
    pair = fusion_pair(items)
    accepted = sorted({short_name(item.accepted.device) for item in items})
    return {"other_gpu": joined(devices), "accepted_gpu": joined(accepted),
            "other_chapters": chapters, "other_runs": joined(list(runs)),
            "other_counts": verdict_counts(items),
            "other_plane": plane_sentence(*pair) if pair else "The fusion chapter has no run on another GPU.",
            "other_pacing": pacing_sentence(*pair, undecided=sum(
                item.verdict == other_gpus.TEST_FAILS and bool(other_gpus.pacing_words(item)) for item in items))
            if pair else "The fusion chapter has no run on another GPU, so no host's pacing is compared."}
