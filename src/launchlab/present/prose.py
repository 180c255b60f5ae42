"""How two measured times stand against each other, in the words the pages use (chapter 1 and the conclusion)."""
from __future__ import annotations

PACE_TOLERANCE = 0.05   # two per-call times this close (relative) are "the same pace"


def comparison(value: float, reference: float, tolerance: float = PACE_TOLERANCE) -> str:
    """How `value` stands against `reference`, in words: "larger than", "smaller than" or "within 5 % of"."""
    if abs(value - reference) <= tolerance * reference:
        return f"within {tolerance * 100:.0f} % of"
    return "larger than" if value > reference else "smaller than"


def pacer(event_us: float, enqueue_us: float, tolerance: float = PACE_TOLERANCE) -> str:
    """Who set the pace of a batch: the GPU ran the calls no slower than the host submitted them when the event
    interval per call is within `tolerance` of the host's enqueue time per call ("the host"); else "the GPU"."""
    return "the host" if abs(event_us - enqueue_us) <= tolerance * enqueue_us else "the GPU"


def tally_words(tally: dict, noun: str) -> str:
    """A tally of paired ratios ({"above", "below", "tie"}) in words: "all 5 workloads" ("both cases") where every
    ratio was above 1, else "3 of 5 workloads (1 slower, 1 tied)", naming only the counts that are not zero."""
    total = sum(tally.values())
    if tally["above"] == total:
        return f"the one {noun.rstrip('s')}" if total == 1 else f"both {noun}" if total == 2 else f"all {total} {noun}"
    rest = [f"{tally[key]} {words}" for key, words in (("below", "slower"), ("tie", "tied")) if tally[key]]
    return f"{tally['above']} of {total} {noun}" + (f" ({', '.join(rest)})" if rest else "")
