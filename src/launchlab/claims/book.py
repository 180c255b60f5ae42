"""Refresh the registry from the accepted runs: `python -m launchlab claims`.

`refresh_registry` rewrites evidence/claims/claims.yaml. C- and R-claims keep their text and verdict and gain,
where `declared.BESIDE` says so, our value and the hashed run files it rests on; an R-comparison whose chapter
has no accepted run yet, or whose run lacks the named headline keys, is recorded as `awaits` instead. The
B-claims of `declared.BOOK_CLAIMS` are regenerated whole, each only if its run passes its guard: a ratio claim
holds only while the whole bootstrap interval of every ratio it names lies on the claimed side of its bound.
A claim its run no longer supports stops the refresh, naming it.
"""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from launchlab.claims import declared, page, registry
from launchlab.claims.spec import Beside, BookClaim, Value
from launchlab.store import evidence
from launchlab.store.runs import Run


def run_view(chapter: str, root: Path = evidence.EVIDENCE_ROOT) -> Run:
    """The accepted run of `chapter` (manifest checked, summaries recomputed): the one place claims open a run."""
    return Run.open(evidence.accepted_run(chapter, root))


def _device(view: Run) -> str:
    return view.device


def _evidence(view: Run, files) -> list[dict]:
    manifest = json.loads((view.path / evidence.MANIFEST).read_text())["files"]
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
    else:
        readings = {key: view.headline[key] for key in value.keys}
        number = (value.formula(view, readings) if value.formula
                  else readings if len(readings) > 1 else next(iter(readings.values())))
    return {"value": _rounded(number), "unit": value.unit, "basis": value.basis, "technique": value.technique,
            "note": value.note, "interval": _rounded(interval) if interval else None, "device": _device(view),
            "run_id": view.path.name}


def check_guard(claim: BookClaim, view: Run) -> None:
    """Raise ValueError naming the claim unless its run still supports it."""
    failed = [ratio.describe(view.summaries) for ratio in claim.ratios if not ratio.holds(view.summaries)]
    if claim.holds is not None and not claim.holds(view):
        failed.append("its test on the run fails")
    if failed:
        raise ValueError(f"{claim.id}: run {view.path.name} no longer supports: {claim.statement} "
                         f"({'; '.join(failed)})")


def book_record(claim: BookClaim, view: Run) -> dict:
    check_guard(claim, view)
    return {"id": claim.id, "section": claim.section, "excerpt": claim.statement, "verdict": "retain",
            "finding": claim.finding, "sources": [], "evidence": _evidence(view, claim.files),
            "our_value": our_value(view, claim.value) if claim.value else None}


def beside_record(record: dict, spec: Beside, views: dict[str, Run]) -> dict:
    """`record` with our value, its evidence, or what it awaits, as `spec` declares."""
    keys = list(spec.value.keys) if spec.value else []
    view = views.get(spec.chapter)
    missing = [key for key in keys if view is None or key not in view.headline]
    if missing and record["id"].startswith("R"):
        return {**record, "awaits": {"chapter": spec.chapter, "keys": keys}}
    if view is None:
        return record
    if missing:
        raise ValueError(f"{record['id']}: run {view.path.name} has no headline keys {missing}")
    return {**record, "evidence": _evidence(view, spec.files),
            "our_value": our_value(view, spec.value) if spec.value else None}


def generated_records(records: list[dict], root: Path = evidence.EVIDENCE_ROOT) -> list[dict]:
    """The registry with B-claims, our values and pending comparisons regenerated from the accepted runs."""
    views = {chapter: run_view(chapter, root) for chapter in evidence.read_accepted(root)}
    beside = {spec.id: spec for spec in declared.BESIDE}
    result = []
    for record in records:
        if record["id"].startswith("B"):
            continue
        record = {**record, "evidence": [], "our_value": None, "awaits": None}
        result.append(beside_record(record, beside[record["id"]], views) if record["id"] in beside else record)
    result.extend(book_record(claim, views[claim.chapter]) for claim in declared.BOOK_CLAIMS
                  if claim.chapter in views)
    return result


HEADER = """\
# The claim registry, read and validated by launchlab.claims.registry.
# C01-C71: the audited X article. `section` and `excerpt` quote the article as the audit recorded it; the
#   verdict is the audit's; `finding` is this book's wording; `sources` are keys of sources.yaml.
# R01-R52: the audit's later rechecks (review findings, current article, blog draft). `excerpt` quotes the
#   rechecked statement, `scope` restates its evidence and scope in our words, `article_value` gives the
#   article's own figure; verdict and finding are ours.
# Generated by `python -m launchlab claims` (launchlab.claims.book) from the accepted runs, never by hand:
#   the B-claims, and every `evidence`, `our_value` and `awaits` field.
"""


def refresh_registry(repo_root: Path = evidence.REPO_ROOT) -> Path:
    """Rewrite claims.yaml and the chapter's downloads from the accepted runs."""
    path = Path(repo_root) / registry.CLAIMS_FILE
    records = yaml.safe_load(path.read_text(encoding="utf-8"))
    sources = registry.load_sources(repo_root)
    claims = registry.validate_claims(generated_records(records, Path(repo_root) / "evidence"), sources)
    path.write_text(HEADER + yaml.safe_dump([yaml_record(claim) for claim in claims], sort_keys=False,
                                            allow_unicode=True, width=118), encoding="utf-8")
    page.publish(claims, sources, repo_root)
    return path


def yaml_record(claim: dict) -> dict:
    """A claim as claims.yaml stores it: the optional fields only when they are set."""
    return {field: claim[field] for field in registry.CLAIM_FIELDS
            if field in registry.REQUIRED_FIELDS or claim[field] is not None}
