"""The bound each book claim states, set once from its accepted run and frozen in <root>/claims/bounds.yaml.

A claim that reads interval records (`BookClaim.bounded`) states a bound on each: the edge of the accepted run's
95% bootstrap interval on the claimed side, moved outward by the margin of the claim's pacing and rounded
outward to four significant figures, never looser than the threshold the claim states in words. A record the
claim takes no side on (a measurement, a decided question whose interval holds its threshold) is bounded on
both sides. Every run of the chapter, the accepted run and its replicates, must then lie on the claimed side of
the bound: its whole interval, or its median for a two-sided bound.

The bound is frozen: a refresh keeps the stored one whatever runs come in, and sets a new one only where the
claim has none yet or its declaration raised `version`. A changed statement under the same version stops the
refresh, since the stored bound was set for other words.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import yaml

from launchlab.claims.spec import BookClaim, Edge, record_at, show_path
from launchlab.present.tables import fmt_sig

# Device-paced figures (graph replays, single calls queued behind a GPU wait) moved by under 1% between
# executions of the same code: 3% leaves three times that observed spread.
DEVICE_MARGIN = 0.03
# Host-paced figures (stream-launch batches, host enqueue) moved by up to 37%. A margin that wide would put most
# host-paced bounds at or under the threshold the claim already states in words, so the bound would add nothing;
# 15% covers the usual spread, and a replicate at the far end of it breaks the claim openly (it is restated)
# instead of the bound being widened until no run could break it.
HOST_MARGIN = 0.15
MARGINS = {"device": DEVICE_MARGIN, "host": HOST_MARGIN}
BOUNDS_FILE = Path("claims") / "bounds.yaml"  # inside the evidence root
HEADER = """\
# The bounds the book's claims state (launchlab.claims.bounds): each set once, from the accepted run named here,
# as the edge of its 95% interval moved outward by the margin of the claim's pacing. Frozen: `python -m launchlab
# claims` keeps every entry while the claim's declared version stands, and adds entries, never re-fits them.
"""


def read_bounds(root: Path) -> dict:
    """The stored bounds by claim id ({} where the file does not exist yet)."""
    path = Path(root) / BOUNDS_FILE
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path.exists() else {}


def write_bounds(entries: dict, root: Path) -> Path:
    path = Path(root) / BOUNDS_FILE
    path.write_text(HEADER + yaml.safe_dump(dict(sorted(entries.items())), sort_keys=False, allow_unicode=True,
                                            width=118), encoding="utf-8")
    return path


def named_edges(claim: BookClaim, view) -> dict[str, tuple[str, Edge]]:
    """{key: (name shown in the statement, Edge)} of every interval record the claim reads from `view`."""
    value = claim.value
    names = {path: label for label, path in value.intervals} if value else {}
    if value and value.ratio:
        names[value.ratio.path] = value.unit
    found = {}
    for ratio in claim.ratios:
        found[show_path(ratio.path)] = (names.get(ratio.path, show_path(ratio.path)),
                                        Edge(ratio.record(view.summaries), ratio.side, ratio.bound))
    if claim.decided:
        decided = claim.decided
        side = decided.side(view.summaries)
        edge = Edge(record_at(view.summaries, decided.path), "within", None) if side == "neither" else \
            Edge(record_at(view.summaries, decided.path), side, decided.bound)
        found[show_path(decided.path)] = (names.get(decided.path, show_path(decided.path)), edge)
    for label, path in value.intervals if value else ():
        found.setdefault(show_path(path), (label, Edge(record_at(view.summaries, path), "within")))
    for label, edge in (claim.edges(view) if claim.edges else {}).items():
        found[label] = (label, edge)
    return found


def _outward(number: float, down: bool) -> float:
    """`number` rounded to four significant figures, down or up: a rounded bound is never tighter."""
    if number == 0:
        return 0.0
    step = 10.0 ** (math.floor(math.log10(abs(number))) - 3)
    steps = round(number / step, 6)  # 1.4 * 0.97 is 1.3579999...: a float's last bits decide no step
    return round((math.floor if down else math.ceil)(steps) * step, 12)


def bound_of(edge: Edge, margin: float):
    """The bound on one record: its interval's edge on the claimed side moved outward by `margin` (relative),
    never looser than the edge's floor; [low, high] for a two-sided bound."""
    low, high = edge.record["ci_low"], edge.record["ci_high"]
    if edge.side == "within":
        return [_outward(low - margin * abs(low), True), _outward(high + margin * abs(high), False)]
    if edge.side == "above":
        bound = _outward(low - margin * abs(low), True)
        return bound if edge.floor is None else max(bound, edge.floor)
    bound = _outward(high + margin * abs(high), False)
    return bound if edge.floor is None else min(bound, edge.floor)


def set_bound(claim: BookClaim, view) -> dict:
    """A new entry of bounds.yaml for `claim`, from `view` alone."""
    margin = MARGINS[claim.pacing]
    bounds = {}
    for key, (name, edge) in named_edges(claim, view).items():
        record = edge.record
        at_edge = {"above": record["ci_low"], "below": record["ci_high"]}.get(edge.side,
                                                                              [record["ci_low"], record["ci_high"]])
        bounds[key] = {"name": name, "side": edge.side, "edge": at_edge, "bound": bound_of(edge, margin)}
    return {"version": claim.version, "statement": claim.statement, "pacing": claim.pacing, "margin": margin,
            "run_id": view.run_id, "bounds": bounds}


def frozen(claims, views: dict, stored: dict) -> tuple[dict, list[str]]:
    """({claim id: entry}, problems): the stored entry of every bounded claim whose declared version it matches,
    a new one from the accepted run (`views` by chapter) where there is none or the version was raised."""
    entries, problems = {}, []
    for claim in claims:
        if not claim.bounded():
            continue
        kept = stored.get(claim.id)
        if kept and kept["version"] > claim.version:
            problems.append(f"{claim.id}: declared version {claim.version} is below that of its stored bound "
                            f"({kept['version']})")
        elif kept and kept["version"] == claim.version:
            entries[claim.id] = kept
            if kept["statement"] != claim.statement:
                problems.append(f"{claim.id}: its statement changed since its bound was set; raise its version "
                                "to set a new bound for the new words")
        elif claim.chapter in views:
            try:
                entries[claim.id] = set_bound(claim, views[claim.chapter])
            except KeyError as missing:
                problems.append(f"{claim.id}: run {views[claim.chapter].run_id} has no {missing} to set its bound")
    return entries, problems


def _holds(stored: dict, record: dict) -> bool:
    bound = stored["bound"]
    if stored["side"] == "within":
        return bound[0] <= record["median"] <= bound[1]
    return record["ci_low"] > bound if stored["side"] == "above" else record["ci_high"] < bound


def _stated(stored: dict) -> str:
    bound = stored["bound"]
    if stored["side"] == "within":
        return f"between {fmt_sig(bound[0], 4)} and {fmt_sig(bound[1], 4)}"
    return f"{stored['side']} {fmt_sig(bound, 4)}"


# A bound named by its summaries key (chapter 4's persistent kernels against the three-kernel graph) is shown to a
# reader in words: speedup_vs_graph3/coop.balanced.stream -> three-kernel graph time / cooperative-stream time,
# balanced.
KEY_NAME = re.compile(r"^speedup_vs_graph3/(?P<design>\w+)\.(?P<case>\w+)\.(?P<submission>stream|graph)$")
DESIGN_WORDS = {"coop": "cooperative", "queue": "queue"}


def shown_name(name: str) -> str:
    """A bound's name as a reader reads it: a summaries key in words, any other name as it is."""
    match = KEY_NAME.match(name)
    if not match:
        return name
    design = DESIGN_WORDS.get(match["design"], match["design"])
    return f"three-kernel graph time / {design}-{match['submission']} time, {match['case']}"


def broken(entry: dict, claim: BookClaim, view) -> list[str]:
    """How `view` breaks the frozen bounds of `entry` (empty: it keeps them all). KeyError where the run lacks
    a record the bound is set on."""
    edges = named_edges(claim, view)
    problems = []
    for key, stored in entry["bounds"].items():
        record = edges[key][1].record
        if not _holds(stored, record):
            problems.append(f"{stored['name']} is {fmt_sig(record['median'], 4)} [{fmt_sig(record['ci_low'], 4)}, "
                            f"{fmt_sig(record['ci_high'], 4)}], stated {_stated(stored)}")
    return problems


def sentence(entry: dict, held: bool = True) -> str:
    """The bound as the claim's statement gives it: what paced the figures it rests on, the run it was set from
    (`held`: whether that run is in the evidence store; a bound set from an earlier accepted run names that run as
    one kept only in the git history), and what a run must do to keep it: lie with its whole 95% interval on the
    stated side of a one-sided bound, with its median between the two of a two-sided one."""
    stored = list(entry["bounds"].values())
    sides = {item["side"] == "within" for item in stored}
    test = ("A run keeps it when" if len(sides) > 1 else
            "A run keeps it when the median of each figure lies between its two bounds:" if sides == {True} else
            "A run keeps it when the whole 95% interval of each figure lies on the stated side:")

    def item_text(item: dict) -> str:
        if len(sides) == 1:
            return f"{shown_name(item['name'])} {_stated(item)}"
        what = "median" if item["side"] == "within" else "95% interval"
        return f"{shown_name(item['name'])}, its {what} {_stated(item)}"

    kept = "" if held else "; that earlier accepted run is kept in the git history, not in evidence/runs"
    return (f" Stated bound ({entry['pacing']}-paced figures, set from the 95% intervals of run {entry['run_id']} "
            f"moved outward by {round(100 * entry['margin'])}%{kept}). {test} "
            f"{'; '.join(item_text(item) for item in stored)}.")
