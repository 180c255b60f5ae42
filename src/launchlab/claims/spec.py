"""The kinds of declaration that tie claims to accepted runs (the declarations themselves are in `declared`).

* `BookClaim`: a claim of this book, the chapter whose accepted run supports it, the run files it rests on, and
  the guard the run must pass: every `Ratio` with its whole 95% interval on the claimed side of its bound, and
  any further test in `holds`.
* `Beside`: our value beside an audited (C) or rechecked (R) claim, read from one chapter's accepted run.
* `Value`: how that value is read (headline keys, a ratio record, or a formula) and how it relates to the
  claim: measured, computed or related, with a sentence saying the difference for the last two.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

# How a value was obtained: ClaimReview JSON names it as `measurementTechnique`.
HOST_ENQUEUE = "host clock around launch calls; median over 21 rounds of 128 launches"
EVENT_BATCH = "CUDA events around a batch of back-to-back invocations; median over 21 rounds"
EVENT_RATIO = ("within-round ratio of CUDA event intervals over batches of back-to-back invocations; median over "
               "21 rounds with a 95% bootstrap interval")
COLD_RATIO = ("within-round ratio of single invocations after an L2 flush, each queued behind a GPU wait kernel; "
              "median over 21 rounds with a 95% bootstrap interval")
WARM_AND_COLD_RATIO = f"{EVENT_RATIO} (warm L2); {COLD_RATIO} (cold L2)"
GRAPH_DOT = "kernel nodes counted in the DOT text CUDA printed for the captured graph"
TRACE = "per-task %globaltimer and %smid records written by an instrumented build"
DEVICE_QUERY = "CUDA device attributes recorded in the run"
ORACLE = "exact comparison of every output with an independent CPU oracle"
ARITHMETIC = "arithmetic on values the run recorded"


@dataclasses.dataclass(frozen=True)
class Ratio:
    """A ratio record in a run's summaries.json ({median, ci_low, ci_high, ...}) and the side of `bound` on which
    a claim needs its whole 95% bootstrap interval: 'above' (ci_low > bound) or 'below' (ci_high < bound)."""
    path: tuple[str, ...]
    side: str
    bound: float = 1.0

    def __post_init__(self):
        if self.side not in ("above", "below"):
            raise ValueError(f"ratio {'/'.join(self.path)}: side must be 'above' or 'below'")

    def record(self, summaries: dict) -> dict:
        record = summaries
        for key in self.path:
            record = record[key]
        return record

    def holds(self, summaries: dict) -> bool:
        record = self.record(summaries)
        return record["ci_low"] > self.bound if self.side == "above" else record["ci_high"] < self.bound

    def describe(self, summaries: dict) -> str:
        record = self.record(summaries)
        return (f"{'/'.join(self.path)} has median {record['median']:.4g} and interval "
                f"[{record['ci_low']:.4g}, {record['ci_high']:.4g}], claimed {self.side} {self.bound:g}")


@dataclasses.dataclass(frozen=True)
class Value:
    """How our value is read from a run: the median and interval of `ratio`, else `formula(view, readings)`,
    else the headline `keys` themselves (one number, or a mapping from each key to its number). `keys` are
    also what a pending comparison waits for."""
    unit: str
    technique: str
    keys: tuple[str, ...] = ()
    ratio: Ratio | None = None
    formula: Callable | None = None
    basis: str = "measured"
    note: str = ""

    def __post_init__(self):
        if self.basis != "measured" and not self.note:
            raise ValueError(f"a {self.basis} value ({self.unit}) needs a note saying how it differs from the claim")


@dataclasses.dataclass(frozen=True)
class BookClaim:
    id: str
    chapter: str
    section: str
    statement: str
    finding: str
    files: tuple[str, ...]
    ratios: tuple[Ratio, ...] = ()
    holds: Callable | None = None
    value: Value | None = None

    def __post_init__(self):
        if not (self.ratios or self.holds):
            raise ValueError(f"{self.id}: a book claim needs a guard (ratios or holds)")


@dataclasses.dataclass(frozen=True)
class Beside:
    """Our value (and the run files it rests on) beside claim `id`; `value` None attaches the files alone."""
    id: str
    chapter: str
    value: Value | None
    files: tuple[str, ...] = ("headline.json",)
