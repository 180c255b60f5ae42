"""The claim-audit registry (SPEC §6): the audited article's claims C01-C71 and the book's own B01, B02, ...

`evidence/claims/claims.yaml` holds one record per claim; `evidence/claims/sources.yaml` maps each source key
to a title and an address. This module validates both, checks that every evidence file a claim cites is the
very file its run's manifest sealed, exports the registry as CSV and as schema.org ClaimReview JSON (both read
back to the same records), and renders the HTML table of the claim-audit chapter.

A claim in normal form is a dict with the keys of `CLAIM_FIELDS`: `sources` a list of keys, `evidence` a list
of {path, sha256} (paths relative to the repository root, inside evidence/runs/<RUN_ID>/), and `measured`
either None or {value, unit, device, run_id}.
"""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pandas as pd
import yaml

from launchlab.store.evidence import MANIFEST, REPO_ROOT, RUN_ID_PATTERN, sha256_file

CLAIMS_FILE = Path("evidence") / "claims" / "claims.yaml"
SOURCES_FILE = Path("evidence") / "claims" / "sources.yaml"
CHAPTER_PAGE = "book/claim-audit.html"  # the chapter's address relative to the root of the built book
DOWNLOAD_DIRECTORY = Path("book") / "_static" / "claims"  # CSV and JSON that the chapter offers
VERDICTS = ("retain", "qualify", "correct", "judgment")
CLAIM_FIELDS = ("id", "section", "excerpt", "verdict", "finding", "sources", "evidence", "measured")
MEASURED_FIELDS = ("value", "unit", "device", "run_id")
CSV_COLUMNS = (*CLAIM_FIELDS[:-1], *(f"measured_{field}" for field in MEASURED_FIELDS))
CLAIM_ID = re.compile(r"[CB]\d\d")
SHA256_HEX = re.compile(r"[0-9a-f]{64}")


# --- loading and validation ---------------------------------------------------------------------------------

def load_sources(repo_root: Path = REPO_ROOT) -> dict[str, dict]:
    """sources.yaml as {key: {title, url}}; every entry needs a title and an https address."""
    sources = yaml.safe_load((Path(repo_root) / SOURCES_FILE).read_text(encoding="utf-8"))
    for key, entry in sources.items():
        if not (isinstance(entry, dict) and entry.get("title") and str(entry.get("url", "")).startswith("https://")):
            raise ValueError(f"source {key!r}: needs a title and an https url")
    return sources


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
        raise ValueError(f"claim {claim_id!r}: id must be C or B followed by two digits")
    try:
        return _normal_form(record, source_keys)
    except ValueError as problem:
        raise ValueError(f"{claim_id}: {problem}") from None


def _require(condition, problem: str) -> None:
    if not condition:
        raise ValueError(problem)


def _normal_form(record: dict, source_keys) -> dict:
    missing = [field for field in CLAIM_FIELDS[:-1] if field not in record]
    unknown = sorted(set(record) - set(CLAIM_FIELDS))
    _require(not missing and not unknown, f"missing fields {missing}, unknown fields {unknown}")
    for field in ("section", "excerpt", "finding"):
        _require(isinstance(record[field], str) and record[field].strip(), f"{field} must be non-empty text")
    _require(record["verdict"] in VERDICTS, f"verdict {record['verdict']!r} is not one of {', '.join(VERDICTS)}")
    _require(isinstance(record["sources"], list) and all(isinstance(key, str) for key in record["sources"]),
             "sources must be a list of keys")
    unknown_keys = [key for key in record["sources"] if key not in source_keys]
    _require(not unknown_keys, f"unknown source keys {unknown_keys} (add them to sources.yaml)")
    _require(isinstance(record["evidence"], list), "evidence must be a list of {path, sha256}")
    for entry in record["evidence"]:
        _check_evidence_entry(entry)
    _require(record["sources"] or record["evidence"], "cites neither a source nor an evidence file")
    if record.get("measured") is not None:
        _check_measured(record["measured"])
    return {
        **{field: record[field] for field in ("id", "section", "excerpt", "verdict", "finding")},
        "sources": list(record["sources"]),
        "evidence": [dict(entry) for entry in record["evidence"]],
        "measured": dict(record["measured"]) if record.get("measured") is not None else None,
    }


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


def _check_measured(measured) -> None:
    _require(isinstance(measured, dict) and set(measured) == set(MEASURED_FIELDS),
             f"measured must have exactly the fields {', '.join(MEASURED_FIELDS)}")
    value = measured["value"]
    _require(isinstance(value, (int, float)) and not isinstance(value, bool),
             f"measured value {value!r} is not a number")
    _require(all(isinstance(measured[field], str) and measured[field] for field in ("unit", "device")),
             "measured unit and device must be non-empty text")
    _require(isinstance(measured["run_id"], str) and RUN_ID_PATTERN.match(measured["run_id"]),
             f"measured run_id {measured['run_id']!r} is not a run id")


def verdict_counts(claims: list[dict], id_prefix: str = "C") -> dict[str, int]:
    """How many claims whose id starts with `id_prefix` carry each verdict (the audit's C-claims by default)."""
    counts = dict.fromkeys(VERDICTS, 0)
    for claim in claims:
        if claim["id"].startswith(id_prefix):
            counts[claim["verdict"]] += 1
    return counts


# --- evidence links -----------------------------------------------------------------------------------------

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
    run_file = run_file_parts(entry["path"])
    if run_file is None:
        return "does not lie under evidence/runs/<RUN_ID>/"
    run_id, inside_run = run_file
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


# --- exports: CSV, ClaimReview JSON, HTML ---------------------------------------------------------------------

def claim_anchor(claim_id: str) -> str:
    """The HTML anchor of a claim: C42 -> 'c42', so that claim-audit.html#c42 lands on it."""
    return claim_id.lower()


def claims_frame(claims: list[dict]) -> pd.DataFrame:
    """One row per claim: source keys space-separated, evidence as JSON text, `measured` in four columns."""
    rows = []
    for claim in claims:
        measured = claim["measured"]
        rows.append({
            **{field: claim[field] for field in ("id", "section", "excerpt", "verdict", "finding")},
            "sources": " ".join(claim["sources"]),
            "evidence": json.dumps(claim["evidence"]),
            "measured_value": json.dumps(measured["value"]) if measured else "",
            **{f"measured_{field}": measured[field] if measured else "" for field in ("unit", "device", "run_id")},
        })
    return pd.DataFrame(rows, columns=CSV_COLUMNS)


def write_claims_csv(claims: list[dict], path: Path) -> None:
    claims_frame(claims).to_csv(path, index=False, lineterminator="\n")


def read_claims_csv(path: Path) -> list[dict]:
    """The claims of a CSV written by `write_claims_csv`, in normal form."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    claims = []
    for row in frame.to_dict("records"):
        measured = None
        if row["measured_run_id"]:
            measured = {field: row[f"measured_{field}"] for field in MEASURED_FIELDS}
            measured["value"] = json.loads(measured["value"])
        claims.append({
            **{field: row[field] for field in ("id", "section", "excerpt", "verdict", "finding")},
            "sources": row["sources"].split(),
            "evidence": json.loads(row["evidence"]),
            "measured": measured,
        })
    return claims


def claim_review(claim: dict, sources: dict, *, author: str, date_published: str) -> dict:
    """One claim as a schema.org ClaimReview.

    Beyond the rating, `reviewBody` holds the finding, `citation` the primary sources, and `isBasedOn` the
    evidence files (MediaObject with sha256) plus, for a measured claim, the run as a Dataset whose
    `variableMeasured` is the value (its `measurementTechnique` names the device).
    """
    based_on = [{"@type": "MediaObject", "contentUrl": entry["path"], "sha256": entry["sha256"]}
                for entry in claim["evidence"]]
    if claim["measured"]:
        measured = claim["measured"]
        based_on.append({"@type": "Dataset", "identifier": measured["run_id"],
                         "measurementTechnique": measured["device"],
                         "variableMeasured": {"@type": "PropertyValue", "value": measured["value"],
                                              "unitText": measured["unit"]}})
    return {
        "@context": "https://schema.org",
        "@type": "ClaimReview",
        "identifier": claim["id"],
        "url": f"{CHAPTER_PAGE}#{claim_anchor(claim['id'])}",
        "claimReviewed": claim["excerpt"],
        "itemReviewed": {"@type": "Claim", "text": claim["excerpt"],
                         "appearance": {"@type": "Article", "articleSection": claim["section"]}},
        "reviewRating": {"@type": "Rating", "alternateName": claim["verdict"]},
        "reviewBody": claim["finding"],
        "citation": [{"@type": "CreativeWork", "identifier": key, "name": sources[key]["title"],
                      "url": sources[key]["url"]} for key in claim["sources"]],
        "isBasedOn": based_on,
        "author": {"@type": "Organization", "name": author},
        "datePublished": date_published,
    }


def write_claims_json(claims: list[dict], sources: dict, path: Path, *, author: str, date_published: str) -> None:
    reviews = [claim_review(claim, sources, author=author, date_published=date_published) for claim in claims]
    Path(path).write_text(json.dumps(reviews, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def read_claims_json(path: Path) -> list[dict]:
    """The claims of a ClaimReview JSON file written by `write_claims_json`, in normal form."""
    return [_claim_from_review(review) for review in json.loads(Path(path).read_text(encoding="utf-8"))]


def _claim_from_review(review: dict) -> dict:
    based_on = review["isBasedOn"]
    runs = [item for item in based_on if item["@type"] == "Dataset"]
    measured = None
    if runs:
        run = runs[0]
        measured = {"value": run["variableMeasured"]["value"], "unit": run["variableMeasured"]["unitText"],
                    "device": run["measurementTechnique"], "run_id": run["identifier"]}
    return {
        "id": review["identifier"],
        "section": review["itemReviewed"]["appearance"]["articleSection"],
        "excerpt": review["itemReviewed"]["text"],
        "verdict": review["reviewRating"]["alternateName"],
        "finding": review["reviewBody"],
        "sources": [work["identifier"] for work in review["citation"]],
        "evidence": [{"path": item["contentUrl"], "sha256": item["sha256"]}
                     for item in based_on if item["@type"] == "MediaObject"],
        "measured": measured,
    }


# Class "table" takes the theme's table style; fixed layout makes the column widths hold.
# The theme styles tables for their content's width; the claim table needs its own fixed layout to keep the
# finding column readable, hence !important.
TABLE_STYLE = ("<style>table.claim-audit { table-layout: fixed !important; width: 100% !important; "
               "display: table !important; font-size: 0.9em; }"
               " table.claim-audit td { vertical-align: top; overflow-wrap: anywhere; }"
               " table.claim-audit tbody th { text-align: left; padding-top: 1.2em; }</style>")


def claims_table_html(claims: list[dict], sources: dict) -> str:
    """The registry as one HTML table with a row group per section (in order of first appearance).

    Each claim's row has id="c42"-style anchors, so `claim-audit.html#c42` lands on claim C42.
    """
    by_section: dict[str, list[dict]] = {}
    for claim in claims:
        by_section.setdefault(claim["section"], []).append(claim)
    lines = [TABLE_STYLE, '<table class="table claim-audit">',
             '<colgroup><col style="width:7%"><col style="width:25%"><col style="width:12%"><col style="width:41%">'
             '<col style="width:15%"></colgroup>',
             '<thead><tr><th style="width:7%">Claim</th><th style="width:25%">Original excerpt</th>'
             '<th style="width:12%">Verdict</th><th style="width:41%">Finding</th>'
             '<th style="width:15%">Sources and evidence</th></tr></thead>']
    for section, members in by_section.items():
        lines.append(f'<tbody><tr><th colspan="5" scope="rowgroup">{html.escape(section)}</th></tr>')
        lines.extend(_claim_row(claim, sources) for claim in members)
        lines.append("</tbody>")
    lines.append("</table>")
    return "\n".join(lines)


def _claim_row(claim: dict, sources: dict) -> str:
    anchor = claim_anchor(claim["id"])
    support = [f'<a href="{html.escape(sources[key]["url"])}" title="{html.escape(sources[key]["title"])}">'
               f"{html.escape(key)}</a>" for key in claim["sources"]]
    support += [f"<code>{html.escape(entry['path'])}</code> (sha256 {entry['sha256'][:12]}…)"
                for entry in claim["evidence"]]
    if claim["measured"]:
        measured = claim["measured"]
        support.append(f"measured: {html.escape(str(measured['value']))} {html.escape(measured['unit'])} "
                       f"on {html.escape(measured['device'])}, run {html.escape(measured['run_id'])}")
    cells = [f'<a href="#{anchor}">{claim["id"]}</a>', f"<q>{html.escape(claim['excerpt'])}</q>",
             claim["verdict"], html.escape(claim["finding"]), "<br>".join(support)]
    return f'<tr id="{anchor}">' + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def write_downloads(claims: list[dict], sources: dict, repo_root: Path = REPO_ROOT) -> tuple[Path, Path]:
    """Write claims.csv and claims.json (ClaimReview, authored and dated as CITATION.cff says) for download."""
    directory = Path(repo_root) / DOWNLOAD_DIRECTORY
    directory.mkdir(parents=True, exist_ok=True)
    citation = book_citation(repo_root)
    write_claims_csv(claims, directory / "claims.csv")
    write_claims_json(claims, sources, directory / "claims.json", author=citation["authors"],
                      date_published=citation["date"])
    return directory / "claims.csv", directory / "claims.json"


def book_citation(repo_root: Path = REPO_ROOT) -> dict[str, str]:
    """Title, authors, version and release date of the book, as CITATION.cff states them."""
    cff = yaml.safe_load((Path(repo_root) / "CITATION.cff").read_text(encoding="utf-8"))
    authors = ", ".join(author.get("name") or f"{author['given-names']} {author['family-names']}"
                        for author in cff["authors"])
    return {"title": cff["title"], "authors": authors, "version": str(cff["version"]),
            "date": str(cff["date-released"])}


def measurements_frame(claims: list[dict], id_prefix: str = "C") -> pd.DataFrame:
    """Claims that carry a measured value: the excerpt beside our value, unit, device and run."""
    rows = [{"claim": claim["id"], "excerpt": claim["excerpt"], "our value": claim["measured"]["value"],
             "unit": claim["measured"]["unit"], "device": claim["measured"]["device"],
             "run": claim["measured"]["run_id"]}
            for claim in claims if claim["id"].startswith(id_prefix) and claim["measured"]]
    return pd.DataFrame(rows).set_index("claim")
