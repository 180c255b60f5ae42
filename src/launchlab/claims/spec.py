"""The kinds of declaration that tie claims to accepted runs (the declarations themselves are in `declared`).

* `BookClaim`: a claim of this book, the chapter whose accepted run supports it, the run files it rests on, and
  the guard every run of its chapter must pass: every `Ratio` with its whole 95% interval on the claimed side of
  its bound, any further test in `holds`, and the bound the claim states (`launchlab.claims.bounds`), set once
  from the interval records it reads (its ratios, its decided record, its value's intervals and its `edges`).
  A claim whose answer the run decides (`Decided`) has a statement for each side of its bound and a
  measurement's wording for an interval that contains the bound. A measurement's statement may name our
  value's labels in braces, `{ragged}`, filled with the value and its interval.
* `Beside`: our value beside an audited (C) or rechecked (R) claim, read from one chapter's accepted run.
* `Value`: how that value is read (headline keys, ratio or interval records of summaries.json, or a formula)
  and how it relates to the claim: measured, computed or related, with a sentence saying the difference for
  the last two.

What a declaration reads from a run (`reads`) is a list of headline keys ("kernel_nodes.row4.128x8192.graph")
and summaries.json paths (tuples, shown as "ratios/graph/cudnn_over_fused_plain"); a pending claim waits for them.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

# How a value was obtained: ClaimReview JSON names it as `measurementTechnique`.
HOST_ENQUEUE = "host clock around launch calls; median over 21 rounds of 128 launches"
HOST_COMPLETION = ("host clock from submitting one invocation to the end of its stream synchronisation; median over "
                   "21 rounds")
EVENT_BATCH = "CUDA events around a batch of back-to-back invocations; median over 21 rounds"
EVENT_RATIO = ("within-round ratio of CUDA event intervals over batches of back-to-back invocations; median over "
               "21 rounds with a 95% bootstrap interval")
DEVICE_WARM_RATIO = ("within-round ratio of device time per call with a warm L2: CUDA event intervals over replays of "
                     "a graph of 32 back-to-back calls, which the host enqueues faster than the GPU runs them; median "
                     "over 21 rounds with a 95% bootstrap interval")
COLD_RATIO = ("within-round ratio of single invocations after an L2 flush, each queued behind a GPU wait kernel; "
              "median over 21 rounds with a 95% bootstrap interval")
WARM_AND_COLD_RATIO = f"{EVENT_RATIO} (warm L2); {COLD_RATIO} (cold L2)"
DEVICE_WARM_AND_COLD_RATIO = f"{DEVICE_WARM_RATIO} (warm L2); {COLD_RATIO} (cold L2)"
PLANE_RATIO = ("within-round ratio of device time per call at every point of a seeded random plane of shapes: warm "
               "L2 from replays of a graph of up to 32 back-to-back calls (as many as move about 256 MiB), cold L2 "
               "from single calls after an L2 flush, each queued behind a GPU wait kernel; the copy ceiling at a point "
               "is the faster of cudaMemcpyAsync and a 16-byte copy kernel there; medians over the plane's rounds, "
               "each with a 95% bootstrap interval; a statistic over the points")
DEVICE_PER_CALL = ("device time per call with a warm L2: CUDA event interval over replays of a graph of 32 "
                   "back-to-back calls, divided by 32; median over 21 rounds")
EVENT_DIFFERENCE = ("within-round difference of CUDA event intervals over batches of back-to-back graph replays; "
                    "median over 21 rounds with a 95% bootstrap interval")
GRAPH_DOT = "kernel nodes counted in the DOT text CUDA printed for the captured graph"
TRACE = "per-task %globaltimer and %smid records written by an instrumented build"
DEVICE_QUERY = "CUDA device attributes recorded in the run"
OCCUPANCY = "CUDA occupancy API, queried by the run for every kernel with and without its shared-memory reservation"
NCU_DRAM = ("Nsight Compute's dram__bytes_read.sum and dram__bytes_write.sum over a path's kernels, one profiled "
            "invocation, over the path's logical bytes")
ORACLE = "exact comparison of every output with an independent CPU oracle"
ARITHMETIC = "arithmetic on values the run recorded"
PACINGS = ("device", "host")  # what set the pace of the figures a bounded claim reads: the GPU, or the host
SIDES = ("above", "below", "within")


def record_at(summaries: dict, path: tuple[str, ...]):
    """The entry of summaries.json at `path` (KeyError when the run has none)."""
    record = summaries
    for key in path:
        record = record[key]
    return record


def show_path(path: tuple[str, ...]) -> str:
    return "/".join(path)


@dataclasses.dataclass(frozen=True)
class Ratio:
    """A ratio record in a run's summaries.json ({median, ci_low, ci_high, ...}) and the side of `bound` on which
    a claim needs its whole 95% bootstrap interval: 'above' (ci_low > bound) or 'below' (ci_high < bound)."""
    path: tuple[str, ...]
    side: str
    bound: float = 1.0

    def __post_init__(self):
        if self.side not in ("above", "below"):
            raise ValueError(f"ratio {show_path(self.path)}: side must be 'above' or 'below'")

    def record(self, summaries: dict) -> dict:
        return record_at(summaries, self.path)

    def holds(self, summaries: dict) -> bool:
        record = self.record(summaries)
        return record["ci_low"] > self.bound if self.side == "above" else record["ci_high"] < self.bound

    def describe(self, summaries: dict) -> str:
        record = self.record(summaries)
        return (f"{show_path(self.path)} has median {record['median']:.4g} and interval "
                f"[{record['ci_low']:.4g}, {record['ci_high']:.4g}], claimed {self.side} {self.bound:g}")


@dataclasses.dataclass(frozen=True)
class Decided:
    """A question declared before its run and answered by it: the statement `above` when the whole 95% interval
    of the record at `path` lies above `bound`, `below` when it lies below, and `neither`, a measurement's
    wording that takes no side, when the interval contains the bound. Each statement may name {median},
    {ci_low}, {ci_high}, any text field of the record, and the fields `describe(record)` adds."""
    path: tuple[str, ...]
    above: str
    below: str
    neither: str
    bound: float = 1.0
    describe: Callable | None = None

    def side(self, summaries: dict) -> str:
        record = record_at(summaries, self.path)
        if record["ci_low"] > self.bound:
            return "above"
        return "below" if record["ci_high"] < self.bound else "neither"


@dataclasses.dataclass(frozen=True)
class Edge:
    """An interval record ({median, ci_low, ci_high}) that a claim's bound is set on, the side of it the claim
    states ('above', 'below', or 'within' for a measurement that takes no side), and the threshold the claim
    states in words (`floor`), past which the bound is never loosened."""
    record: dict
    side: str
    floor: float | None = None

    def __post_init__(self):
        if self.side not in SIDES:
            raise ValueError(f"an edge's side must be one of {', '.join(SIDES)}, not {self.side!r}")


@dataclasses.dataclass(frozen=True)
class Value:
    """How our value is read from a run, first that applies: the median and interval of `ratio`; the labelled
    medians and intervals of `intervals` ((label, summaries path), ...); `formula(view, readings)`; else the
    headline `keys` themselves (one number, or a mapping from each key to its number). `keys` and `needs`
    (summaries paths the formula reads) are also what a pending comparison waits for."""
    unit: str
    technique: str
    keys: tuple[str, ...] = ()
    ratio: Ratio | None = None
    intervals: tuple[tuple[str, tuple[str, ...]], ...] = ()
    formula: Callable | None = None
    needs: tuple[tuple[str, ...], ...] = ()
    basis: str = "measured"
    note: str = ""

    def __post_init__(self):
        if self.basis != "measured" and not self.note:
            raise ValueError(f"a {self.basis} value ({self.unit}) needs a note saying how it differs from the claim")

    def reads(self) -> list:
        paths = [self.ratio.path] if self.ratio else []
        return [*self.keys, *paths, *(path for _, path in self.intervals), *self.needs]


@dataclasses.dataclass(frozen=True)
class BookClaim:
    """`files`: paths inside the run, or a function of the run giving them (when the run decides their names).
    `needs`: headline keys or summaries paths the guard reads besides those of its ratios and value.
    `question`: what the claim asks, shown while its run is pending; required for a measurement whose
    statement names {labels} of our value. A decided claim's `statement` is its question.
    `edges`: a function of the run giving {label: Edge}, the interval records a bound is set on beyond those
    the declaration names (an extreme over a sweep, a ratio recomputed from raw samples).
    `pacing`: 'device' or 'host', what paced the figures of a claim that states a bound; it picks the margin.
    `version`: raised to ask for a new bound (the stored one is frozen while the version stands)."""
    id: str
    chapter: str
    section: str
    statement: str
    finding: str
    files: tuple[str, ...] | Callable
    ratios: tuple[Ratio, ...] = ()
    holds: Callable | None = None
    value: Value | None = None
    decided: Decided | None = None
    needs: tuple = ()
    question: str = ""
    edges: Callable | None = None
    pacing: str | None = None
    version: int = 1

    def __post_init__(self):
        if not (self.ratios or self.holds or self.decided):
            raise ValueError(f"{self.id}: a book claim needs a guard (ratios, holds or a decided question)")
        if self.bounded() and self.pacing not in PACINGS:
            raise ValueError(f"{self.id}: a claim that states a bound declares its pacing ({' or '.join(PACINGS)})")
        if not self.bounded() and self.pacing is not None:
            raise ValueError(f"{self.id}: pacing picks a bound's margin; this claim reads no interval to bound")
        if "{" in self.statement and not self.question:
            raise ValueError(f"{self.id}: a statement the run fills in needs a question to show while it is pending")

    def reads(self) -> list:
        """Everything the claim reads from its run, headline keys and summaries paths, each once."""
        found = [ratio.path for ratio in self.ratios] + ([self.decided.path] if self.decided else [])
        found += [*(self.value.reads() if self.value else []), *self.needs]
        return list(dict.fromkeys(found))

    def bounded(self) -> bool:
        """Whether the claim reads interval records, and so states a bound."""
        return bool(self.ratios or self.decided or self.edges or (self.value and self.value.intervals))

    def pending_statement(self) -> str:
        """The statement shown while the claim's run is pending."""
        return self.question or self.statement


@dataclasses.dataclass(frozen=True)
class Beside:
    """Our value (and the run files it rests on) beside claim `id`; `value` None attaches the files alone."""
    id: str
    chapter: str
    value: Value | None
    files: tuple[str, ...] = ("headline.json",)
