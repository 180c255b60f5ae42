"""Two runs of one chapter side by side: `python -m launchlab compare RUN_A RUN_B`.

Every headline figure of both runs with its relative change (B/A - 1), what paced it (`pacing_of`), and whether
B's figure lies within A's 95% bootstrap interval where A's summaries give one for that figure. The spread
between the runs (median |change|, device-paced and host-paced figures apart) is reported beside the widths of
A's own intervals: a change wider than the intervals says the runs differ by more than either run's sampling.
Last, the B-claims of the chapter that RUN_B supports and those it breaks, by the claims guard with the bounds
frozen under the evidence root.
"""
from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

import pandas as pd

from launchlab.analysis import open_run
from launchlab.store import evidence
from launchlab.store.runs import Run

DEVICE, HOST, UNTIMED, UNKNOWN = "device", "host", "untimed", "unknown"
# Counts, checks, verdicts and profiler bytes: no one paced them, and a change in them is a difference, not noise.
UNTIMED_KEYS = re.compile(r"(kernel_nodes|other_nodes|b_before_last_a|model_b_before_last_a|early_b|exact_checks"
                          r"|trace_checks|jobs|active_ctas_per_sm|dram_over_logical|graph32_device_paced"
                          r"|target_met|sweep_target_met)(\..+)?")
# Per chapter, the first rule whose pattern matches the whole key decides. Stream and native launch batches,
# host enqueue and host completion figures, and graph set-up (host API calls) are host-paced; graph replays,
# single calls queued behind a GPU wait (cold), device time per call and %globaltimer traces within one kernel are
# device-paced. Chapter 1's trace gaps are read from %globaltimer too, but they lie between kernels that Python
# launches one after another with no queue ahead of them: how long the GPU idles there is set by when the host's
# next launch arrives (the chapter shows the gaps following the host's pace), so they count as host-paced.
PACING_RULES = {
    "ordinary_launches": ((r"(enqueue_us_per_launch|cupy_over_native)\..+", HOST), (r"event_us\..+\.stream", HOST),
                          (r"trace_gaps_us\..+", HOST)),
    "graphs": ((r"(node_)?event_us\..+\.graph", DEVICE), (r"(node_)?event_us\..+\.(stream|native)", HOST),
               (r"(stream_over_graph_event|stream_over_graph_complete|setup_us|break_even_replays_event)\..+", HOST)),
    "fusion": ((r"(graph|device_us_per_call|device_logical_gbs|sweep)\..+", DEVICE), (r"stream\..+\.warm", HOST),
               (r"plane\.(floor\.)?points", UNTIMED), (r"plane\..+", DEVICE)),
    "megakernels": ((r"(event_us|speedup_vs_graph3|speedup_vs_coop)\..+\.graph(\.cold)?", DEVICE),
                    (r"(event_us|speedup_vs_graph3|speedup_vs_coop)\..+\.stream", HOST),
                    (r"speedup_vs_graph3\.(best_one_launch|best_tiled_persistent|fused_row)\.[a-z]+(\.cold)?", DEVICE),
                    (r"pdl_saving_us_per_boundary\..+", DEVICE), (r"megakernel_pays_at_k\..+", UNTIMED),
                    (r"(speedup_vs_graph_pdl|speedup_vs_chain_fused)\..+", DEVICE),
                    (r"(handoff_us|handoff_p90_us|model_handoff_us|worker_gap_us|trace_cost_us)\..+", DEVICE)),
    "example_a_pointwise": ((r"event_us\.[a-z]+_graph\..+", DEVICE), (r"event_us\.[a-z]+_stream\..+", HOST)),
    "example_b_jobs": ((r"event_us\.[a-z]+_graph\..+", DEVICE), (r"event_us\.[a-z]+_stream\..+", HOST)),
}
# How an appendix example's headline case becomes its variant's case id: Example A names the size N (`n256`),
# Example B the job mix as it is.
EXAMPLE_CASE_IDS = {"example_a_pointwise": lambda case: f"n{case}", "example_b_jobs": lambda case: case}
COLUMNS = ("key", "pacing", "a", "b", "change", "ci_low", "ci_high", "within")


class CompareError(ValueError):
    """Bad input: a run that is not there, or runs of two chapters."""


def pacing_of(stem: str, key: str) -> str:
    """'device', 'host', 'untimed' (a count, check or verdict) or 'unknown' (no rule of the chapter names it)."""
    if UNTIMED_KEYS.fullmatch(key):
        return UNTIMED
    return next((pacing for pattern, pacing in PACING_RULES.get(stem, ()) if re.fullmatch(pattern, key)), UNKNOWN)


def interval_path(stem: str, key: str) -> tuple[str, ...] | None:
    """Where in the summaries the record ({median, ...}) a headline figure is the median of sits, where the
    chapter keeps one; whether that record holds a 95% interval is `interval_of`'s question."""
    name, _, rest = key.partition(".")
    if stem in ("ordinary_launches", "graphs") and name in ("event_us", "enqueue_us_per_launch"):
        return ("timing", rest, "enqueue" if name == "enqueue_us_per_launch" else "warm_batch", name)
    if stem in EXAMPLE_CASE_IDS and name == "event_us":
        return example_event_path(stem, rest)
    if stem == "graphs" and name in ("stream_over_graph_event", "stream_over_graph_complete"):
        return ("stream_over_graph", rest, name.rsplit("_", 1)[1])
    if stem == "fusion" and name in ("graph", "stream"):
        return ("ratios", name, *rest.split("."))
    if stem != "megakernels":
        return None
    base = rest.removesuffix(".cold")
    suffix = "_cold" if rest.endswith(".cold") else ""
    design, _, case = base.partition(".")
    if name == "speedup_vs_graph3" and design in ("best_one_launch", "best_tiled_persistent"):
        return (f"{design}{suffix}", case)
    if name == "speedup_vs_graph3" and design == "fused_row" and "." not in case:
        return (f"speedup_vs_graph3{suffix}", f"fused_row.{case}.graph")
    if name in ("speedup_vs_graph3", "pdl_saving_us_per_boundary"):
        return (f"{name}{suffix}", base)
    return ("speedup_vs_coop", base) if name == "speedup_vs_coop" else None


def example_event_path(stem: str, rest: str) -> tuple[str, ...] | None:
    """`<target>_<submission>.<case>` of an appendix example's event_us figure -> its timing record: the figure
    is the median event interval of the variant `<target>.<case id>.<submission>`'s warm batches."""
    name, _, case = rest.partition(".")
    target, _, submission = name.rpartition("_")
    if not (target and case):
        return None
    return ("timing", f"{target}.{EXAMPLE_CASE_IDS[stem](case)}.{submission}", "warm_batch", "event_us")


def record_of(run: Run, key: str) -> dict | None:
    """The summaries record of `run` whose median is the headline figure `key` itself, or None."""
    path = interval_path(run.chapter, key)
    record = run.summaries
    for part in path or ():
        record = record.get(part) if isinstance(record, dict) else None
    if not (path and isinstance(record, dict) and key in run.headline and record.get("median") == run.headline[key]):
        return None
    return record


def interval_of(run: Run, key: str) -> tuple[float, float] | None:
    """(ci_low, ci_high) of the figure in `run`'s summaries, where its record holds a 95% interval of its median.
    A plain median (`stats.summarize`) holds p10, p90 and n only: the spread of the rounds, not an interval of the
    median, so such a figure has none."""
    record = record_of(run, key)
    if record is None or "ci_low" not in record or "ci_high" not in record:
        return None
    return record["ci_low"], record["ci_high"]


def relative_change(a, b) -> float | None:
    """B/A - 1 of two figures; 0 where they are equal (counts, verdicts); None where it has no meaning."""
    if a == b:
        return 0.0
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b))
    return b / a - 1 if numbers and a != 0 else None


def figures(run_a: Run, run_b: Run) -> pd.DataFrame:
    """One row per headline key of either run (COLUMNS); a key one run lacks has None on that side."""
    rows = []
    for key in sorted(set(run_a.headline) | set(run_b.headline)):
        a, b = run_a.headline.get(key), run_b.headline.get(key)
        interval = interval_of(run_a, key) if a is not None else None
        within = None if interval is None or b is None else bool(interval[0] <= b <= interval[1])
        rows.append({"key": key, "pacing": pacing_of(run_a.chapter, key), "a": a, "b": b,
                     "change": None if a is None or b is None else relative_change(a, b),
                     "ci_low": interval and interval[0], "ci_high": interval and interval[1], "within": within})
    return pd.DataFrame(rows, columns=COLUMNS)


def spread(table: pd.DataFrame) -> dict:
    """Per pacing: figures, median |change| between the runs, and median relative width of A's intervals."""
    result = {}
    for pacing in (DEVICE, HOST):
        rows = table[table["pacing"] == pacing]
        changes = [abs(c) for c in rows["change"] if c is not None and pd.notna(c)]
        widths = [(row.ci_high - row.ci_low) / abs(row.a) for row in rows.itertuples()
                  if row.ci_low is not None and pd.notna(row.ci_low) and row.a]
        result[pacing] = {"figures": len(rows), "median_abs_change": statistics.median(changes) if changes else None,
                          "median_interval_width": statistics.median(widths) if widths else None}
    return result


def claims_on(run: Run, root: Path) -> dict:
    """{"supported": [ids], "broken": {id: [reasons]}} over the chapter's B-claims, with the frozen bounds."""
    from launchlab.claims import book, bounds, declared

    entries = bounds.read_bounds(root)
    supported, broken = [], {}
    for claim in (c for c in declared.BOOK_CLAIMS if c.chapter == run.chapter):
        missing = book.missing_reads(run, claim.reads())
        failures = [f"the run has no {missing}"] if missing else book.guard_failures(claim, run, entries.get(claim.id))
        if failures:
            broken[claim.id] = failures
        else:
            supported.append(claim.id)
    return {"supported": supported, "broken": broken}


def comparison(run_a: Run, run_b: Run, root: Path = evidence.EVIDENCE_ROOT) -> dict:
    """Everything `compare` reports, as data: the figures (a DataFrame), the spread by pacing, and the claims."""
    if run_a.chapter != run_b.chapter:
        raise CompareError(f"runs {run_a.run_id} ({run_a.chapter}) and {run_b.run_id} ({run_b.chapter}) are of "
                           "different chapters")
    table = figures(run_a, run_b)
    return {"chapter": run_a.chapter, "run_a": run_a.run_id, "run_b": run_b.run_id, "figures": table,
            "spread": spread(table), "claims": claims_on(run_b, root)}


def _shown(value) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "-"
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def print_comparison(result: dict, out=print) -> None:
    """The comparison as text: one line per figure, then the spread and the claims."""
    out(f"{result['chapter']}: A = {result['run_a']}, B = {result['run_b']}")
    out(f"{'figure':<64} {'pacing':<8} {'A':>12} {'B':>12} {'B/A - 1':>9}  within A's 95% interval")
    for row in result["figures"].itertuples():
        change = "-" if row.change is None or pd.isna(row.change) else f"{row.change:+.2%}"
        within = "no interval" if row.within is None or pd.isna(row.within) else ("yes" if row.within else "NO")
        out(f"{row.key:<64} {row.pacing:<8} {_shown(row.a):>12} {_shown(row.b):>12} {change:>9}  {within}")
    for pacing, entry in result["spread"].items():
        change, width = entry["median_abs_change"], entry["median_interval_width"]
        out(f"{pacing}-paced figures ({entry['figures']}): median |B/A - 1| between the runs "
            f"{'-' if change is None else f'{change:.2%}'}; median width of A's 95% intervals "
            f"{'-' if width is None else f'{width:.2%}'} of the figure")
    claims = result["claims"]
    out(f"B-claims run B supports: {', '.join(claims['supported']) or 'none'}")
    for claim_id, reasons in claims["broken"].items():
        out(f"B-claim {claim_id} broken by run B: {'; '.join(reasons)}")


def resolve_run(text: str, root: Path) -> Path:
    """A run folder given as a path, or as a run id under <root>/runs."""
    for path in (Path(text), Path(root) / "runs" / text):
        if (path / "run.json").is_file():
            return path
    raise CompareError(f"run {text!r}: neither a run folder nor a run id under {Path(root) / 'runs'}")


def add_parser(commands) -> None:
    """The `compare` subcommand on the command line's subparsers."""
    sub = commands.add_parser("compare", help="two runs of one chapter side by side: figures, spread, claims")
    sub.add_argument("run_a", help="a run id under the evidence root, or a run folder")
    sub.add_argument("run_b", help="the run set against it")
    sub.set_defaults(handler=command_compare)


def command_compare(args) -> int:
    """Print the comparison; 2, with one line naming the problem, on bad input (a missing or unsealed run, two
    chapters)."""
    try:
        runs = [open_run(resolve_run(text, args.root)) for text in (args.run_a, args.run_b)]
        result = comparison(*runs, root=args.root)
    except (CompareError, evidence.EvidenceError) as problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    print_comparison(result)
    return 0
