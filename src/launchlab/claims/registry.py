"""The claim registry: load, validate and check `evidence/claims/claims.yaml` and `sources.yaml`.

Three families of claims share one record shape:

* C01-C71, the audited article's claims, with the audit's verdict and our wording of its finding;
* R01, ..., the later rechecks of the article (review findings, current article, blog draft): the article's
  statement, its scope in our words, our verdict and finding;
* B01, ..., the book's own claims, generated from accepted runs (`launchlab.claims.book`).

A claim in normal form has every key of `CLAIM_FIELDS`. `sources` is a list of keys of sources.yaml;
`evidence` a list of {path, sha256} inside evidence/runs/<RUN_ID>/; `scope` (R-claims only) and
`article_value` (the article's own figure, as text) are text or None; `our_value` is None or a dict with the
keys of `OUR_VALUE_FIELDS`; `awaits` is None or {chapter, keys}: the accepted run, and the headline keys or
summaries paths ("ratios/graph/...") a pending comparison or B-claim waits for. A B-claim awaiting its run has
the verdict "pending" and no evidence yet; it is declared, never dropped. `broken_by` (B-claims only) is None or
the replicate runs that break the claim as stated, each {run_id, reason, value, interval}: its verdict is then
"restated", and its finding says so with both values.

`our_value.value` is a number or a mapping of labels to numbers; `interval` is None, [low, high] for a number, or
{label: [low, high]} for labels of a mapping.

`our_value.basis` says how our value relates to the claim: *measured* (our run measures the quantity the claim
states), *computed* (a formula applied to recorded facts) or *related* (a different quantity, named in `unit`);
for the last two, `note` says the difference in one sentence.
"""
from __future__ import annotations

import datetime
import json
import re
from pathlib import Path

import yaml

from launchlab.store.evidence import MANIFEST, REPO_ROOT, RUN_ID_PATTERN, sha256_file

CLAIMS_FILE = Path("evidence") / "claims" / "claims.yaml"
SOURCES_FILE = Path("evidence") / "claims" / "sources.yaml"
VERDICTS = ("retain", "qualify", "correct", "judgment")
PENDING = "pending"  # the verdict of a B-claim whose run has not been (re-)executed yet; not a judgment of wording
RESTATED = "restated"  # the verdict of a B-claim that a replicate run breaks: stated as it was, and said so
BASES = ("measured", "computed", "related")
FAMILIES = {"C": "audited article", "R": "later rechecks", "B": "this book"}
REQUIRED_FIELDS = ("id", "section", "excerpt", "verdict", "finding", "sources", "evidence")
OPTIONAL_FIELDS = ("scope", "article_value", "our_value", "awaits", "broken_by")
BROKEN_BY_FIELDS = ("run_id", "reason", "value", "interval")
CLAIM_FIELDS = (*REQUIRED_FIELDS, *OPTIONAL_FIELDS)
OUR_VALUE_FIELDS = ("value", "unit", "basis", "technique", "note", "interval", "device", "run_id")
SOURCE_FIELDS = ("title", "url", "document", "accessed")
SOURCE_OPTIONAL_FIELDS = ("access_note",)  # what `accessed` means where the page was not opened on that date
CLAIM_ID = re.compile(r"[CRB]\d\d")
SHA256_HEX = re.compile(r"[0-9a-f]{64}")


# --- sources --------------------------------------------------------------------------------------------------

def load_sources(repo_root: Path = REPO_ROOT) -> dict[str, dict]:
    """sources.yaml as {key: {title, url, document, accessed, access_note}}, validated (access_note None
    unless the source says why its date is not a date the page was opened)."""
    return read_sources(Path(repo_root) / SOURCES_FILE)


def read_sources(path: Path) -> dict[str, dict]:
    """`load_sources` from the sources file at `path`."""
    sources = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    return {key: _checked_source(key, entry) for key, entry in sources.items()}


def _checked_source(key: str, entry) -> dict:
    if not (isinstance(entry, dict) and set(SOURCE_FIELDS) <= set(entry) <= {*SOURCE_FIELDS, *SOURCE_OPTIONAL_FIELDS}):
        raise ValueError(f"source {key!r}: needs the fields {', '.join(SOURCE_FIELDS)} "
                         f"(and may have {', '.join(SOURCE_OPTIONAL_FIELDS)}), no others")
    if "access_note" in entry and not str(entry["access_note"] or "").strip():
        raise ValueError(f"source {key!r}: an access_note must say something")
    if not (entry["title"] and entry["document"] and str(entry["url"]).startswith("https://")):
        raise ValueError(f"source {key!r}: needs a title, a document and an https url")
    accessed = entry["accessed"]
    if not isinstance(accessed, datetime.date):
        accessed = datetime.date.fromisoformat(str(accessed))
    return {**entry, "accessed": accessed.isoformat(), "access_note": entry.get("access_note")}


def distinct_documents(sources: dict[str, dict]) -> int:
    """How many documents the source keys cite: several keys may name sections or versions of one document."""
    return len({entry["document"] for entry in sources.values()})


# --- claims ---------------------------------------------------------------------------------------------------

def load_claims(repo_root: Path = REPO_ROOT) -> list[dict]:
    """claims.yaml, validated against the keys of sources.yaml, in normal form."""
    records = yaml.safe_load((Path(repo_root) / CLAIMS_FILE).read_text(encoding="utf-8"))
    return validate_claims(records, load_sources(repo_root))


def validate_claims(records: list, source_keys) -> list[dict]:
    """Validate every record and the uniqueness of ids; a problem raises ValueError naming the claim."""
    claims, seen = [], set()
    for record in records:
        claim = validate_claim(record, source_keys)
        if claim["id"] in seen:
            raise ValueError(f"{claim['id']}: duplicate id")
        seen.add(claim["id"])
        claims.append(claim)
    return claims


def validate_claim(record, source_keys) -> dict:
    """One record in normal form, or ValueError("<id>: <problem>")."""
    claim_id = record.get("id") if isinstance(record, dict) else None
    if not (isinstance(claim_id, str) and CLAIM_ID.fullmatch(claim_id)):
        raise ValueError(f"claim {claim_id!r}: id must be C, R or B followed by two digits")
    try:
        return _normal_form(record, source_keys)
    except ValueError as problem:
        raise ValueError(f"{claim_id}: {problem}") from None


def _require(condition, problem: str) -> None:
    if not condition:
        raise ValueError(problem)


def _is_text(value) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _normal_form(record: dict, source_keys) -> dict:
    missing = [field for field in REQUIRED_FIELDS if field not in record]
    unknown = sorted(set(record) - set(CLAIM_FIELDS))
    _require(not missing and not unknown, f"missing fields {missing}, unknown fields {unknown}")
    for field in ("section", "excerpt", "finding"):
        _require(_is_text(record[field]), f"{field} must be non-empty text")
    pending_book_claim = record["id"].startswith("B") and record.get("awaits") is not None
    restated = record["id"].startswith("B") and bool(record.get("broken_by"))
    _require(record["verdict"] in VERDICTS or (record["verdict"] == PENDING and pending_book_claim)
             or (record["verdict"] == RESTATED and restated),
             f"verdict {record['verdict']!r} is not one of {', '.join(VERDICTS)}"
             + (f" (or {PENDING!r} for a B-claim awaiting its run, {RESTATED!r} for one a replicate breaks)"
                if record["id"].startswith("B") else ""))
    _require(not pending_book_claim or record["verdict"] == PENDING, "a B-claim awaiting its run is pending")
    _require(not restated or record["verdict"] == RESTATED, "a B-claim a replicate breaks is restated")
    _check_sources(record["sources"], source_keys)
    _require(isinstance(record["evidence"], list), "evidence must be a list of {path, sha256}")
    for entry in record["evidence"]:
        _check_evidence_entry(entry)
    _require(record["sources"] or record["evidence"] or pending_book_claim,
             "cites neither a source nor an evidence file")
    claim = {field: record.get(field) for field in CLAIM_FIELDS}
    _check_optional(claim)
    claim["sources"] = list(claim["sources"])
    claim["evidence"] = [dict(entry) for entry in claim["evidence"]]
    return claim


def _check_sources(keys, source_keys) -> None:
    _require(isinstance(keys, list) and all(isinstance(key, str) for key in keys), "sources must be a list of keys")
    unknown_keys = [key for key in keys if key not in source_keys]
    _require(not unknown_keys, f"unknown source keys {unknown_keys} (add them to sources.yaml)")


def _check_optional(claim: dict) -> None:
    is_recheck = claim["id"].startswith("R")
    _require(_is_text(claim["scope"]) if is_recheck else claim["scope"] is None,
             "scope is required text for an R-claim and absent otherwise")
    _require(claim["article_value"] is None or _is_text(claim["article_value"]), "article_value must be text")
    if claim["our_value"] is not None:
        _check_our_value(claim["our_value"])
        claim["our_value"] = {field: claim["our_value"][field] for field in OUR_VALUE_FIELDS}
    if claim["awaits"] is not None:
        awaits = claim["awaits"]
        _require(isinstance(awaits, dict) and set(awaits) == {"chapter", "keys"} and _is_text(awaits["chapter"])
                 and isinstance(awaits["keys"], list) and all(map(_is_text, awaits["keys"])),
                 "awaits must be {chapter, keys} with keys a list of text")
        _require(claim["our_value"] is None, "a claim awaiting a run has no value yet")
        claim["awaits"] = {"chapter": awaits["chapter"], "keys": list(awaits["keys"])}
    if claim["broken_by"] is not None:
        _require(claim["id"].startswith("B") and isinstance(claim["broken_by"], list) and claim["broken_by"],
                 "broken_by is a non-empty list, of a B-claim only")
        claim["broken_by"] = [_checked_break(item) for item in claim["broken_by"]]


def _checked_break(item) -> dict:
    _require(isinstance(item, dict) and set(item) == set(BROKEN_BY_FIELDS),
             f"each broken_by entry has exactly the fields {', '.join(BROKEN_BY_FIELDS)}")
    _require(isinstance(item["run_id"], str) and RUN_ID_PATTERN.match(item["run_id"]),
             f"broken_by run_id {item['run_id']!r} is not a run id")
    _require(_is_text(item["reason"]), "broken_by needs the reason its run breaks the claim")
    if item["value"] is not None:
        _check_value_and_interval(item["value"], item["interval"])
    return {field: item[field] for field in BROKEN_BY_FIELDS}


def run_file_parts(path: str) -> tuple[str, str] | None:
    """(RUN_ID, path inside the run) for 'evidence/runs/<RUN_ID>/<file>', else None."""
    parts = path.split("/")
    if (len(parts) < 4 or parts[:2] != ["evidence", "runs"] or not RUN_ID_PATTERN.match(parts[2])
            or any(part in ("", ".", "..") for part in parts)):
        return None
    return parts[2], "/".join(parts[3:])


def _check_evidence_entry(entry) -> None:
    _require(isinstance(entry, dict) and set(entry) == {"path", "sha256"},
             f"evidence {entry!r} is not {{path, sha256}}")
    _require(isinstance(entry["path"], str) and run_file_parts(entry["path"]),
             f"evidence path {entry['path']!r} does not lie under evidence/runs/<RUN_ID>/")
    _require(isinstance(entry["sha256"], str) and SHA256_HEX.fullmatch(entry["sha256"]),
             f"evidence {entry['path']}: sha256 must be 64 lower-case hex digits")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_pair(interval) -> bool:
    return isinstance(interval, list) and len(interval) == 2 and all(map(_is_number, interval))


def _check_our_value(ours) -> None:
    _require(isinstance(ours, dict) and set(ours) == set(OUR_VALUE_FIELDS),
             f"our_value must have exactly the fields {', '.join(OUR_VALUE_FIELDS)}")
    _check_value_and_interval(ours["value"], ours["interval"])
    _require(ours["basis"] in BASES, f"our_value basis {ours['basis']!r} is not one of {', '.join(BASES)}")
    _require(all(_is_text(ours[field]) for field in ("unit", "technique", "device")),
             "our_value unit, technique and device must be non-empty text")
    _require(_is_text(ours["note"]) or (ours["basis"] == "measured" and ours["note"] == ""),
             "a computed or related value needs a note saying how it differs from the claim")
    _require(isinstance(ours["run_id"], str) and RUN_ID_PATTERN.match(ours["run_id"]),
             f"our_value run_id {ours['run_id']!r} is not a run id")


def _check_value_and_interval(value, interval) -> None:
    _require(_is_number(value) or (isinstance(value, dict) and value and all(map(_is_number, value.values()))),
             f"our_value {value!r} is not a number or a mapping of labels to numbers")
    if isinstance(interval, dict):
        _require(isinstance(value, dict) and interval and set(interval) <= set(value)
                 and all(map(_is_pair, interval.values())),
                 "our_value intervals by label need a mapping value with those labels and [low, high] each")
    else:
        _require(interval is None or (_is_pair(interval) and _is_number(value)),
                 "our_value interval must be None or [low, high] (for a single number)")


def claim_anchor(claim_id: str) -> str:
    """The HTML anchor of a claim: C42 -> 'c42', so that claim-audit.html#c42 lands on it."""
    return claim_id.lower()


def verdict_counts(claims: list[dict], id_prefix: str = "C") -> dict[str, int]:
    """How many claims whose id starts with `id_prefix` carry each verdict (the audit's C-claims by default);
    the B-claims are counted as pending and restated too."""
    counts = dict.fromkeys(VERDICTS + ((PENDING, RESTATED) if id_prefix == "B" else ()), 0)
    for claim in claims:
        if claim["id"].startswith(id_prefix):
            counts[claim["verdict"]] += 1
    return counts


# --- evidence links -------------------------------------------------------------------------------------------

def check_evidence_links(repo_root: Path = REPO_ROOT, claims: list[dict] | None = None) -> list[str]:
    """One line per broken evidence link, naming claim and path; empty when every link holds.

    A link holds when the file lies inside its run directory, the run's manifest.json lists it, and the
    manifest's hash, the file's actual SHA-256 and the registry's hash are one and the same.
    `claims` defaults to the registry under `repo_root`.
    """
    repo_root = Path(repo_root)
    claims = load_claims(repo_root) if claims is None else claims
    problems = []
    for claim in claims:
        for entry in claim["evidence"]:
            problem = _evidence_link_problem(repo_root, entry)
            if problem:
                problems.append(f"{claim['id']}: {entry['path']}: {problem}")
    return problems


def _evidence_link_problem(repo_root: Path, entry: dict) -> str | None:
    run_id, inside_run = run_file_parts(entry["path"]) or (None, None)
    if run_id is None:
        return "does not lie under evidence/runs/<RUN_ID>/"
    run_directory = repo_root / "evidence" / "runs" / run_id
    path = repo_root / entry["path"]
    if not path.is_file():
        return "no such file"
    if not path.resolve().is_relative_to(run_directory.resolve()):
        return "resolves to a file outside its run directory"
    manifest_path = run_directory / MANIFEST
    if not manifest_path.is_file():
        return f"run {run_id} has no {MANIFEST}"
    sealed = json.loads(manifest_path.read_text(encoding="utf-8"))["files"].get(inside_run)
    if sealed is None:
        return f"not listed in {MANIFEST} of run {run_id}"
    if sealed["sha256"] != entry["sha256"]:
        return f"registry sha256 differs from {MANIFEST}"
    if sha256_file(path) != entry["sha256"]:
        return "file content no longer matches its sha256"
    return None
