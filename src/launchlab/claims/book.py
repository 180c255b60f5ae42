"""Refresh the registry from the accepted runs: `python -m launchlab claims`.

`refresh_registry` rewrites evidence/claims/claims.yaml. C- and R-claims keep their text and verdict and gain,
where `declared.BESIDE` says so, our value and the hashed run files it rests on. The B-claims of
`declared.BOOK_CLAIMS` are regenerated whole, each only if its run passes its guard: a ratio claim holds only
while the whole bootstrap interval of every ratio it names lies on the claimed side of its bound. A claim its
run no longer supports stops the refresh, naming it.

No declared claim is ever dropped. Where a chapter has no accepted run, or its accepted run predates the
current run record (`RunRecord.read` raises RecordError: the chapter awaits re-execution), every claim and
comparison tied to it is recorded as pending (`awaits`: the chapter and what the claim reads), B-claims with
the verdict "pending". An R-comparison whose current run lacks what it reads stays pending too; a C- or
B-claim whose current run lacks it stops the refresh, since its declaration no longer follows the run.
"""
from __future__ import annotations

import json
import string
from pathlib import Path

import yaml

from launchlab.analysis import open_run
from launchlab.claims import declared, page, registry
from launchlab.claims.spec import Beside, BookClaim, Value, record_at, show_path
from launchlab.present.tables import decimals_for
from launchlab.store import evidence
from launchlab.store.record import RecordError, RunRecord
from launchlab.store.runs import Run


def run_view(chapter: str, root: Path = evidence.EVIDENCE_ROOT) -> Run:
    """The accepted run of `chapter` (manifest checked, summaries recomputed): the one place claims open a run."""
    return open_run(evidence.accepted_run(chapter, root))


def accepted_views(root: Path = evidence.EVIDENCE_ROOT) -> tuple[dict[str, Run], dict[str, str]]:
    """(the accepted runs of the current record schema by chapter, {chapter: why its claims are pending}).

    Only an accepted run whose run.json the current RunRecord cannot read counts as awaiting re-execution; any
    other problem opening an accepted run (a broken manifest, summaries that do not recompute) stops the refresh.
    """
    views, pending = {}, {}
    for chapter, run_id in evidence.read_accepted(root).items():
        path = evidence.accepted_run(chapter, root)
        try:
            RunRecord.read(path)
        except RecordError as problem:
            why = str(problem).replace(f"{path}/", "")
            pending[chapter] = f"pending re-execution: accepted run {run_id} has an older run record ({why})"
            continue
        views[chapter] = open_run(path)
    return views, pending


# --- what a declaration reads from a run ---------------------------------------------------------------------------

def shown(read) -> str:
    """A headline key as it is, a summaries path as 'a/b/c'."""
    return read if isinstance(read, str) else show_path(read)


def has(view: Run, read) -> bool:
    if isinstance(read, str):
        return read in view.headline
    try:
        record_at(view.summaries, read)
    except (KeyError, TypeError):
        return False
    return True


def missing_reads(view: Run, reads) -> list[str]:
    return [shown(read) for read in reads if not has(view, read)]


def _evidence(view: Run, files) -> list[dict]:
    manifest = json.loads((view.path / evidence.MANIFEST).read_text())["files"]
    unsealed = [name for name in files if name not in manifest]
    if unsealed:
        raise KeyError(f"files {unsealed} (not in its {evidence.MANIFEST})")
    return [{"path": f"evidence/runs/{view.path.name}/{name}", "sha256": manifest[name]["sha256"]}
            for name in files]


def _rounded(value):
    if isinstance(value, dict):
        return {label: _rounded(number) for label, number in value.items()}
    if isinstance(value, list):
        return [_rounded(number) for number in value]
    return round(float(value), 4)


def our_value(view: Run, value: Value) -> dict:
    """Our value in the registry's form, read from the run as `value` declares."""
    interval = None
    if value.ratio is not None:
        record = value.ratio.record(view.summaries)
        number, interval = record["median"], [record["ci_low"], record["ci_high"]]
    elif value.intervals:
        records = {label: record_at(view.summaries, path) for label, path in value.intervals}
        number = {label: record["median"] for label, record in records.items()}
        interval = {label: [record["ci_low"], record["ci_high"]] for label, record in records.items()}
    else:
        readings = {key: view.headline[key] for key in value.keys}
        number = (value.formula(view, readings) if value.formula
                  else readings if len(readings) > 1 else next(iter(readings.values())))
    return {"value": _rounded(number), "unit": value.unit, "basis": value.basis, "technique": value.technique,
            "note": value.note, "interval": _rounded(interval) if interval else None, "device": view.device,
            "run_id": view.path.name}


# --- book claims -----------------------------------------------------------------------------------------------

def check_guard(claim: BookClaim, view: Run) -> None:
    """Raise ValueError naming the claim unless its run still supports it."""
    failed = [ratio.describe(view.summaries) for ratio in claim.ratios if not ratio.holds(view.summaries)]
    if claim.holds is not None and not claim.holds(view):
        failed.append("its test on the run fails")
    if failed:
        raise ValueError(f"{claim.id}: run {view.path.name} no longer supports: {claim.statement} "
                         f"({'; '.join(failed)})")


def figure(number: float, digits: int = 3, like: float | None = None) -> str:
    """A number for a sentence: `digits` significant figures of `like` (the median an interval belongs to)."""
    places = decimals_for(abs(like if like is not None else number) or abs(number), digits)
    return f"{number:.{places}f}"


def with_interval(median: float, interval) -> str:
    if not interval:
        return figure(median)
    low, high = interval
    return f"{figure(median)} [{figure(low, like=median)}, {figure(high, like=median)}]"


def statement_of(claim: BookClaim, view: Run, ours: dict | None) -> str:
    """The claim's statement for this run: a decided claim's wording for where its interval lies, and any
    {label} of a measurement filled with our value ("0.41 [0.38, 0.44]": median and 95% interval)."""
    if claim.decided:
        decided = claim.decided
        record = record_at(view.summaries, decided.path)
        fields = {name: text for name, text in record.items() if isinstance(text, str)}
        fields.update({name: figure(record[name], like=record["median"]) for name in ("median", "ci_low", "ci_high")})
        if decided.describe:
            fields.update(decided.describe(record))
        wordings = {"above": decided.above, "below": decided.below, "neither": decided.neither}
        template = wordings[decided.side(view.summaries)]
        return template.format(**fields)
    names = [name for _, name, _, _ in string.Formatter().parse(claim.statement) if name]
    if not names:
        return claim.statement
    values = ours["value"] if ours and isinstance(ours["value"], dict) else {}
    intervals = (ours or {}).get("interval") or {}
    unknown = sorted(set(names) - set(values))
    if unknown:
        raise ValueError(f"{claim.id}: its statement names {unknown}, which its value does not label")
    return claim.statement.format(**{name: with_interval(values[name], intervals.get(name)) for name in names})


def book_record(claim: BookClaim, view: Run) -> dict:
    """A B-claim its run supports, in the registry's form; ValueError naming it otherwise."""
    missing = missing_reads(view, claim.reads())
    if missing:
        raise ValueError(f"{claim.id}: run {view.run_id} ({claim.chapter}) has no {missing}; the declaration in "
                         "launchlab/claims/declared.py must follow the chapter's summary layout")
    try:
        check_guard(claim, view)
        ours = our_value(view, claim.value) if claim.value else None
        files = claim.files(view) if callable(claim.files) else claim.files
        record = {"id": claim.id, "section": claim.section, "excerpt": statement_of(claim, view, ours),
                  "verdict": "retain", "finding": claim.finding, "sources": [], "evidence": _evidence(view, files),
                  "our_value": ours}
    except KeyError as missing_key:
        raise ValueError(f"{claim.id}: run {view.run_id} ({claim.chapter}) has no {missing_key}") from None
    return record


def pending_book_record(claim: BookClaim) -> dict:
    """A B-claim whose run is not there yet: declared, with what it will read, never dropped."""
    return {"id": claim.id, "section": claim.section, "excerpt": claim.pending_statement(), "verdict": registry.PENDING,
            "finding": claim.finding, "sources": [], "evidence": [], "our_value": None,
            "awaits": {"chapter": claim.chapter, "keys": [shown(read) for read in claim.reads()]}}


# --- comparisons beside C- and R-claims --------------------------------------------------------------------------

def beside_record(record: dict, spec: Beside, views: dict[str, Run]) -> dict:
    """`record` with our value, its evidence, or what it awaits, as `spec` declares."""
    reads = spec.value.reads() if spec.value else []
    view = views.get(spec.chapter)
    awaiting = {**record, "awaits": {"chapter": spec.chapter, "keys": [shown(read) for read in reads]}}
    if view is None:
        return awaiting
    missing = missing_reads(view, reads)
    if missing and record["id"].startswith("R"):
        return awaiting
    if missing:
        raise ValueError(f"{record['id']}: run {view.path.name} has no headline keys or summaries paths {missing}")
    try:
        return {**record, "evidence": _evidence(view, spec.files),
                "our_value": our_value(view, spec.value) if spec.value else None}
    except KeyError as missing_key:
        raise ValueError(f"{record['id']}: run {view.run_id} ({spec.chapter}) has no {missing_key}") from None


def generated_records(records: list[dict], root: Path = evidence.EVIDENCE_ROOT,
                      views: dict[str, Run] | None = None) -> list[dict]:
    """The registry with B-claims, our values and pending comparisons regenerated from the accepted runs
    (`views`, default: those of `accepted_views(root)`)."""
    if views is None:
        views, _ = accepted_views(root)
    beside = {spec.id: spec for spec in declared.BESIDE}
    result = []
    for record in records:
        if record["id"].startswith("B"):
            continue
        record = {**record, "evidence": [], "our_value": None, "awaits": None}
        result.append(beside_record(record, beside[record["id"]], views) if record["id"] in beside else record)
    result.extend(book_record(claim, views[claim.chapter]) if claim.chapter in views else pending_book_record(claim)
                  for claim in declared.BOOK_CLAIMS)
    return result


HEADER = """\
# The claim registry, read and validated by launchlab.claims.registry.
# C01-C71: the audited X article. `section` and `excerpt` quote the article as the audit recorded it; the
#   verdict is the audit's; `finding` is this book's wording; `sources` are keys of sources.yaml.
# R01-R52: the audit's later rechecks (review findings, current article, blog draft). `excerpt` quotes the
#   rechecked statement, `scope` restates its evidence and scope in our words, `article_value` gives the
#   article's own figure; verdict and finding are ours.
# B01, ...: this book's claims, each supported by an accepted run (verdict retain), or declared and pending
#   (verdict pending, `awaits`) while its chapter has no accepted run of the current run-record schema.
# Generated by `python -m launchlab claims` (launchlab.claims.book) from the accepted runs, never by hand:
#   the B-claims, and every `evidence`, `our_value` and `awaits` field.
"""


def refresh_registry(repo_root: Path = evidence.REPO_ROOT, report=print) -> Path:
    """Rewrite claims.yaml and the chapter's downloads from the accepted runs; `report` is told, per chapter
    whose claims stay pending, why and which claims wait for it."""
    path = Path(repo_root) / registry.CLAIMS_FILE
    records = yaml.safe_load(path.read_text(encoding="utf-8"))
    sources = registry.load_sources(repo_root)
    views, pending = accepted_views(Path(repo_root) / "evidence")
    claims = registry.validate_claims(generated_records(records, Path(repo_root) / "evidence", views), sources)
    for chapter in sorted({claim["awaits"]["chapter"] for claim in claims if claim["awaits"]}):
        waiting = [claim["id"] for claim in claims if claim["awaits"] and claim["awaits"]["chapter"] == chapter]
        why = pending.get(chapter) or ("no accepted run" if chapter not in views else "its accepted run lacks the keys")
        report(f"claims: {chapter}: {why}; {len(waiting)} claim(s) wait for it: {', '.join(waiting)}")
    path.write_text(HEADER + yaml.safe_dump([yaml_record(claim) for claim in claims], sort_keys=False,
                                            allow_unicode=True, width=118), encoding="utf-8")
    page.publish(claims, sources, repo_root)
    return path


def yaml_record(claim: dict) -> dict:
    """A claim as claims.yaml stores it: the optional fields only when they are set."""
    return {field: claim[field] for field in registry.CLAIM_FIELDS
            if field in registry.REQUIRED_FIELDS or claim[field] is not None}
