"""Refresh the registry from the accepted runs: `python -m launchlab claims`.

`refresh_registry` rewrites <root>/claims/claims.yaml. C- and R-claims keep their text and verdict and gain,
where `declared.BESIDE` says so, our value and the hashed run files it rests on. The B-claims of
`declared.BOOK_CLAIMS` are regenerated whole, each only if its run passes its guard: a ratio claim holds only
while the whole bootstrap interval of every ratio it names lies on the claimed side of its threshold, and a
claim that reads intervals states a frozen bound (`launchlab.claims.bounds`) that the run must keep.

The guard is checked against every run of the chapter: the accepted run and its replicates
(<root>/replicates.json, {accepted run id: [replicate run ids]}). Every failure of an accepted run is collected
and the refresh stops with one error listing them all. A claim a replicate breaks is restated openly: verdict
"restated", `broken_by` naming the replicate with its value beside the accepted run's, never re-fitted to it.

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
from launchlab.claims import bounds, declared, page, registry
from launchlab.claims.spec import Beside, BookClaim, Value, record_at, show_path
from launchlab.present.tables import decimals_for
from launchlab.store import evidence
from launchlab.store.replicates import REPLICATES_FILE, read_replicates
from launchlab.store.record import RecordError, RunRecord
from launchlab.store.runs import Run




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


def replicate_views(views: dict[str, Run], root: Path = evidence.EVIDENCE_ROOT) -> dict[str, list[Run]]:
    """{chapter: its accepted run's replicates, opened as runs are (manifest checked, summaries recomputed)}."""
    listed = read_replicates(root)
    found = {}
    for chapter, view in views.items():
        found[chapter] = [open_run(evidence.run_dir(run_id, root)) for run_id in listed.get(view.run_id, [])]
        strays = [replicate.run_id for replicate in found[chapter] if replicate.chapter != chapter]
        if strays:
            raise ValueError(f"{REPLICATES_FILE}: {', '.join(strays)} listed as replicates of {view.run_id} "
                             f"({chapter}) but are runs of another chapter")
    return found


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

def guard_failures(claim: BookClaim, view: Run, entry: dict | None = None) -> list[str]:
    """Every way `view` fails to support the claim: its ratios, its test, and its frozen bound (`entry`)."""
    try:
        failed = [ratio.describe(view.summaries) for ratio in claim.ratios if not ratio.holds(view.summaries)]
        if claim.holds is not None and not claim.holds(view):
            failed.append("its test on the run fails")
        return failed + (bounds.broken(entry, claim, view) if entry else [])
    except KeyError as missing:
        return [f"the run has no {missing}"]


def check_guard(claim: BookClaim, view: Run, entry: dict | None = None) -> None:
    """Raise ValueError naming the claim unless its run still supports it."""
    failed = guard_failures(claim, view, entry)
    if failed:
        raise ValueError(f"{claim.id}: run {view.path.name} no longer supports: {claim.statement} "
                         f"({'; '.join(failed)})")


def figure(number: float, digits: int = 3, like: float | None = None) -> str:
    """A number for a sentence: `digits` significant figures of `like` (the median an interval belongs to)."""
    places = decimals_for(abs(like if like is not None else number) or abs(number), digits)
    return f"{number:.{places}f}"


def with_interval(median: float, interval, counts: bool = False) -> str:
    """The median with its 95% interval; `counts`: the claim's values are all whole numbers, counts written as
    the integers they are."""
    if not interval:
        return str(int(median)) if counts else figure(median)
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
    counts = not intervals and all(float(number).is_integer() for number in values.values())
    return claim.statement.format(**{name: with_interval(values[name], intervals.get(name), counts)
                                     for name in names})


def book_record(claim: BookClaim, view: Run, entry: dict | None = None, replicates=(),
                root: Path = evidence.EVIDENCE_ROOT) -> dict:
    """A B-claim its accepted run supports, in the registry's form, with the frozen bound `entry` stated and
    restated where a replicate breaks it; ValueError naming the claim where the accepted run does not support it."""
    missing = missing_reads(view, claim.reads())
    if missing:
        raise ValueError(f"{claim.id}: run {view.run_id} ({claim.chapter}) has no {missing}; the declaration in "
                         "launchlab/claims/declared_book.py must follow the chapter's summary layout")
    try:
        check_guard(claim, view, entry)
        ours = our_value(view, claim.value) if claim.value else None
        files = claim.files(view) if callable(claim.files) else claim.files
        held = entry is not None and (Path(root) / "runs" / entry["run_id"]).is_dir()
        excerpt = statement_of(claim, view, ours) + (bounds.sentence(entry, held) if entry else "")
        broken = [broken_by(claim, replicate, failures) for replicate in replicates
                  if (failures := guard_failures(claim, replicate, entry))]
        record = {"id": claim.id, "section": claim.section, "excerpt": excerpt,
                  "verdict": registry.RESTATED if broken else "retain",
                  "finding": claim.finding + "".join(restatement(view, ours, item) for item in broken),
                  "sources": [], "evidence": _evidence(view, files), "our_value": ours, "broken_by": broken or None}
    except KeyError as missing_key:
        raise ValueError(f"{claim.id}: run {view.run_id} ({claim.chapter}) has no {missing_key}") from None
    return record


def broken_by(claim: BookClaim, replicate: Run, failures: list[str]) -> dict:
    """A replicate that breaks the claim: its id, what it breaks, and its value where it has one."""
    try:
        theirs = our_value(replicate, claim.value) if claim.value else None
    except KeyError:
        theirs = None
    return {"run_id": replicate.run_id, "reason": "; ".join(failures),
            "value": theirs and theirs["value"], "interval": theirs and theirs["interval"]}


def value_text(value, interval) -> str:
    """A registry value as a sentence gives it: the median and its 95% interval, by label for a mapping."""
    if isinstance(value, dict):
        intervals = interval or {}
        return "; ".join(f"{label} {with_interval(number, intervals.get(label))}" for label, number in value.items())
    return with_interval(value, interval)


def restatement(view: Run, ours: dict | None, item: dict) -> str:
    """The sentence a restated claim's finding gains for one replicate that breaks it, with both values."""
    values = ""
    if ours and item["value"] is not None:
        values = (f" Its value: {value_text(item['value'], item['interval'])}; the accepted run's: "
                  f"{value_text(ours['value'], ours['interval'])}.")
    return (f" Restated: run {item['run_id']}, a replicate of the accepted run {view.run_id}, does not support "
            f"the claim as stated ({item['reason']}).{values}")


def pending_book_record(claim: BookClaim) -> dict:
    """A B-claim whose run is not there yet: declared, with what it will read, never dropped."""
    return {"id": claim.id, "section": claim.section, "excerpt": claim.pending_statement(), "verdict": registry.PENDING,
            "finding": claim.finding, "sources": [], "evidence": [], "our_value": None, "broken_by": None,
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


def generated_records(records: list[dict], root: Path = evidence.EVIDENCE_ROOT, views: dict[str, Run] | None = None,
                      replicates: dict[str, list[Run]] | None = None, found: tuple[dict, list] | None = None
                      ) -> list[dict]:
    """The registry with B-claims, our values and pending comparisons regenerated from the accepted runs
    (`views`, default: those of `accepted_views(root)`) and their replicates (default: `replicate_views`), with
    the bounds `found` by `bounds.frozen` (default: from the bounds stored under `root`). Every claim an accepted
    run fails, and every problem setting a bound, is listed in one ValueError."""
    if views is None:
        views, _ = accepted_views(root)
    if replicates is None:
        replicates = replicate_views(views, root)
    entries, problems = found or bounds.frozen(declared.BOOK_CLAIMS, views, bounds.read_bounds(root))
    problems = list(problems)
    beside = {spec.id: spec for spec in declared.BESIDE}
    result = []
    for record in records:
        if record["id"].startswith("B"):
            continue
        record = {**record, "evidence": [], "our_value": None, "awaits": None}
        result.append(beside_record(record, beside[record["id"]], views) if record["id"] in beside else record)
    for claim in declared.BOOK_CLAIMS:
        if claim.chapter not in views:
            result.append(pending_book_record(claim))
            continue
        try:
            result.append(book_record(claim, views[claim.chapter], entries.get(claim.id),
                                      replicates.get(claim.chapter, ()), root))
        except ValueError as problem:
            problems.append(str(problem))
    if problems:
        raise ValueError(f"{len(problems)} book claim problem(s):\n" + "\n".join(problems))
    return result


HEADER = """\
# The claim registry, read and validated by launchlab.claims.registry.
# C01-C71: the audited X article. `section` and `excerpt` quote the article as the audit recorded it; the
#   verdict is the audit's; `finding` is this book's wording; `sources` are keys of sources.yaml.
# R01-R52: the audit's later rechecks (review findings, current article, blog draft). `excerpt` quotes the
#   rechecked statement, `scope` restates its evidence and scope in our words, `article_value` gives the
#   article's own figure; verdict and finding are ours.
# B01, ...: this book's claims, each supported by an accepted run (verdict retain) and stating the frozen bound of
#   bounds.yaml, restated where a replicate run breaks it (verdict restated, `broken_by`), or declared and pending
#   (verdict pending, `awaits`) while its chapter has no accepted run of the current run-record schema.
# Generated by `python -m launchlab claims` (launchlab.claims.book) from the accepted runs, never by hand:
#   the B-claims, and every `evidence`, `our_value` and `awaits` field.
"""


def refresh_registry(root: Path = evidence.EVIDENCE_ROOT, report=print) -> Path:
    """Rewrite <root>/claims/claims.yaml (and add any new bound to <root>/claims/bounds.yaml) from the accepted
    runs of the evidence root `root` and their replicates; where `root` is the repository's own evidence, also
    the claim-audit downloads of the book. `report` is told, per chapter whose claims stay pending, why and which
    claims wait for it, and which claims a replicate restated."""
    root = Path(root)
    path = root / registry.CLAIMS_FILE.relative_to("evidence")
    records = yaml.safe_load(path.read_text(encoding="utf-8"))
    sources = registry.read_sources(root / registry.SOURCES_FILE.relative_to("evidence"))
    views, pending = accepted_views(root)
    found = bounds.frozen(declared.BOOK_CLAIMS, views, bounds.read_bounds(root))
    records = generated_records(records, root, views, replicate_views(views, root), found)
    claims = registry.validate_claims(records, sources)
    for chapter in sorted({claim["awaits"]["chapter"] for claim in claims if claim["awaits"]}):
        waiting = [claim["id"] for claim in claims if claim["awaits"] and claim["awaits"]["chapter"] == chapter]
        why = pending.get(chapter) or ("no accepted run" if chapter not in views else "its accepted run lacks the keys")
        report(f"claims: {chapter}: {why}; {len(waiting)} claim(s) wait for it: {', '.join(waiting)}")
    for claim in claims:
        if claim["broken_by"]:
            report(f"claims: {claim['id']} restated: broken by run(s) "
                   f"{', '.join(item['run_id'] for item in claim['broken_by'])}")
    path.write_text(HEADER + yaml.safe_dump([yaml_record(claim) for claim in claims], sort_keys=False,
                                            allow_unicode=True, width=118), encoding="utf-8")
    bounds.write_bounds(found[0], root)
    if root.resolve() == (evidence.REPO_ROOT / "evidence").resolve():  # the downloads belong to this book alone
        page.publish(claims, sources, evidence.REPO_ROOT)
    return path


def yaml_record(claim: dict) -> dict:
    """A claim as claims.yaml stores it: the optional fields only when they are set."""
    return {field: claim[field] for field in registry.CLAIM_FIELDS
            if field in registry.REQUIRED_FIELDS or claim[field] is not None}
