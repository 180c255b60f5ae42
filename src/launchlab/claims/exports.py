"""The registry as CSV and as schema.org ClaimReview JSON-LD; both read back to the same records.

Every address in both files is absolute, built from the site's base URL (`launchlab.claims.site`): the row of
each claim, and each evidence file as published with the site.
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from launchlab.claims import site
from launchlab.claims.registry import OUR_VALUE_FIELDS

TEXT_FIELDS = ("id", "section", "excerpt", "scope", "verdict", "finding", "article_value")
OUR_COLUMNS = {field: "our_value" if field == "value" else f"our_{field}" for field in OUR_VALUE_FIELDS}
CSV_COLUMNS = ("id", "url", "section", "excerpt", "scope", "verdict", "finding", "sources", "evidence",
               "article_value", *OUR_COLUMNS.values(), "awaits", "broken_by")
ARTICLE = {  # what the audit record says about the reviewed article, as far as it goes
    "C": "A short article posted on X that compares CUDA Graphs with megakernels. The post shows the date "
         "February 22 without a year, so no year is given here. The audit record does not quote its opening "
         "question; in the corrected edition that question asks whether one host call means one GPU kernel.",
}
EDITIONS = {  # the R-claims' tables, by the start of their section: (schema.org type, the edition each rechecks)
    "Review findings": ("Article", "The corrected three-part edition of the same article (CUDA Graphs, fusion and "
                        "megakernels after an ordinary-launch baseline), as reviewed on October 19, 2026. It keeps the "
                        "February 22 date without a year, and its opening question asks whether one host call means "
                        "one GPU kernel."),
    "Current article recheck": ("Article", "The current draft of the corrected article, rechecked on October 19, "
                                "2026: an ordinary-launch baseline, then CUDA Graphs, fusion and megakernels. It labels "
                                "the February 22 date, given without a year, apart from the October measurements."),
    "Blog draft recheck": ("BlogPosting", "The shortened site edition of the article, a blog post rechecked on "
                           "October 18, 2026. Its opening explains the common goal of the approaches and what "
                           "'one launch' can mean."),
}


# --- CSV ------------------------------------------------------------------------------------------------------

def _json_or_empty(value) -> str:
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def _csv_row(claim: dict, base: str) -> dict:
    ours = claim["our_value"] or {}
    row = {field: claim[field] or "" for field in TEXT_FIELDS}
    row.update({
        "url": site.claim_url(base, claim["id"]),
        "sources": " ".join(claim["sources"]),
        "evidence": json.dumps([{**entry, "url": site.evidence_url(base, entry["path"])}
                                for entry in claim["evidence"]]),
        "awaits": _json_or_empty(claim["awaits"]),
        "broken_by": _json_or_empty(claim["broken_by"]),
    })
    for field, column in OUR_COLUMNS.items():
        value = ours.get(field)
        row[column] = _json_or_empty(value) if field in ("value", "interval") else (value if ours else "")
    return row


def write_claims_csv(claims: list[dict], path: Path, base: str) -> None:
    frame = pd.DataFrame([_csv_row(claim, base) for claim in claims], columns=CSV_COLUMNS)
    frame.to_csv(path, index=False, lineterminator="\n")


def read_claims_csv(path: Path) -> list[dict]:
    """The claims of a CSV written by `write_claims_csv`, in normal form."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    return [_claim_from_row(row) for row in frame.to_dict("records")]


def _claim_from_row(row: dict) -> dict:
    ours = None
    if row["our_run_id"]:
        ours = {field: row[column] for field, column in OUR_COLUMNS.items()}
        ours["value"] = json.loads(ours["value"])
        ours["interval"] = json.loads(ours["interval"]) if ours["interval"] else None
    claim = {field: row[field] or None for field in TEXT_FIELDS}
    claim.update({
        "sources": row["sources"].split(),
        "evidence": [{"path": entry["path"], "sha256": entry["sha256"]} for entry in json.loads(row["evidence"])],
        "our_value": ours,
        "awaits": json.loads(row["awaits"]) if row["awaits"] else None,
        "broken_by": json.loads(row["broken_by"]) if row["broken_by"] else None,
    })
    return claim


# --- ClaimReview JSON-LD ----------------------------------------------------------------------------------------

def claim_review(claim: dict, sources: dict, citation: dict) -> dict:
    """One claim as a schema.org ClaimReview.

    The verdict is `reviewRating.alternateName`, the finding `reviewBody`, the primary sources `citation`, and
    `isBasedOn` holds the evidence files (MediaObject with sha256) and, when our runs give a value, a Dataset
    whose `variableMeasured` carries it with its basis (`measurementMethod`: measured, computed or related).
    """
    base = citation["url"]
    return {
        "@context": "https://schema.org",
        "@type": "ClaimReview",
        "@id": site.claim_url(base, claim["id"]),
        "identifier": claim["id"],
        "url": site.claim_url(base, claim["id"]),
        "claimReviewed": claim["excerpt"],
        "itemReviewed": _item_reviewed(claim),
        "reviewRating": {"@type": "Rating", "alternateName": claim["verdict"]},
        "reviewBody": claim["finding"],
        "citation": [_cited_source(key, sources[key]) for key in claim["sources"]],
        "isBasedOn": _based_on(claim, base),
        "author": {"@type": "Organization", "name": citation["authors"], "url": base},
        "datePublished": citation["date"],
        "isPartOf": {"@type": "Book", "name": citation["title"], "url": base, "version": citation["version"]},
    }


def _item_reviewed(claim: dict) -> dict:
    family = claim["id"][0]
    if family == "B":
        appearance = {"@type": "Book", "description": "This book: a claim its accepted runs support, stating a bound "
                                                      "frozen when it was first supported."}
    elif family == "C":
        appearance = {"@type": "SocialMediaPosting", "description": ARTICLE[family]}
    else:
        kind, description = edition(claim["section"])
        appearance = {"@type": kind, "description": description}
    appearance["articleSection"] = claim["section"]
    item = {"@type": "Claim", "text": claim["excerpt"], "appearance": appearance}
    if claim["scope"]:
        item["description"] = claim["scope"]
    if claim["article_value"]:
        item["about"] = {"@type": "PropertyValue", "name": "figure stated in the article (H100)",
                         "value": claim["article_value"]}
    return item


def edition(section: str) -> tuple[str, str]:
    """(schema.org type, description) of the edition an R-claim's table rechecks, from the table's section."""
    for start, found in EDITIONS.items():
        if section.startswith(start):
            return found
    raise ValueError(f"no article edition is known for the recheck section {section!r}")


def _cited_source(key: str, source: dict) -> dict:
    return {"@type": "CreativeWork", "identifier": key, "name": source["title"], "url": source["url"],
            "isPartOf": {"@type": "CreativeWork", "identifier": source["document"]},
            "description": access_text(source)}


def access_text(source: dict) -> str:
    """When the source was consulted, or, where its page was not opened on that date, what the date is."""
    if source["access_note"]:
        return f"Added on {source['accessed']}: {source['access_note']}"
    return f"Consulted on {source['accessed']}."


def _based_on(claim: dict, base: str) -> list[dict]:
    items = [{"@type": "MediaObject", "name": entry["path"], "contentUrl": site.evidence_url(base, entry["path"]),
              "sha256": entry["sha256"]} for entry in claim["evidence"]]
    if claim["our_value"]:
        items.append(_dataset(claim["our_value"], base))
    items.extend(_breaking_dataset(item, base) for item in claim["broken_by"] or ())
    if claim["awaits"]:
        awaits = claim["awaits"]
        items.append({"@type": "Dataset", "creativeWorkStatus": "pending", "identifier": awaits["chapter"],
                      "variableMeasured": list(awaits["keys"]),
                      "description": f"Waits for an accepted {awaits['chapter']} run with these headline keys."})
    return items


def _dataset(ours: dict, base: str) -> dict:
    return {"@type": "Dataset", "creativeWorkStatus": "published", "identifier": ours["run_id"],
            "name": f"Evidence run {ours['run_id']}", "about": {"@type": "Product", "name": ours["device"]},
            "url": site.manifest_url(base, ours["run_id"]), "measurementTechnique": ours["technique"],
            "variableMeasured": _property_values(ours)}


def _breaking_dataset(item: dict, base: str) -> dict:
    """A replicate run that breaks the claim as stated: the reason, and its value (JSON, as the registry keeps it)."""
    return {"@type": "Dataset", "creativeWorkStatus": "contradicting", "identifier": item["run_id"],
            "name": f"Evidence run {item['run_id']}", "url": site.manifest_url(base, item["run_id"]),
            "description": item["reason"],
            "variableMeasured": {"@type": "PropertyValue", "name": "value and 95% interval",
                                 "value": json.dumps({"value": item["value"], "interval": item["interval"]})}}


def _break_from_dataset(dataset: dict) -> dict:
    measured = json.loads(dataset["variableMeasured"]["value"])
    return {"run_id": dataset["identifier"], "reason": dataset["description"], **measured}


def _property_values(ours: dict) -> list[dict]:
    common = {"@type": "PropertyValue", "unitText": ours["unit"], "measurementMethod": ours["basis"],
              "description": ours["note"]}
    if isinstance(ours["value"], dict):
        intervals = ours["interval"] or {}
        values = []
        for label, value in ours["value"].items():
            entry = {**common, "name": f"{ours['unit']}: {label}", "propertyID": label, "value": value}
            if label in intervals:
                entry["minValue"], entry["maxValue"] = intervals[label]
            values.append(entry)
        return values
    single = {**common, "name": ours["unit"], "value": ours["value"]}
    if ours["interval"]:
        single["minValue"], single["maxValue"] = ours["interval"]
    return [single]


def write_claims_json(claims: list[dict], sources: dict, path: Path, citation: dict) -> None:
    reviews = [claim_review(claim, sources, citation) for claim in claims]
    Path(path).write_text(json.dumps(reviews, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def read_claims_json(path: Path) -> list[dict]:
    """The claims of a ClaimReview JSON file written by `write_claims_json`, in normal form."""
    return [_claim_from_review(review) for review in json.loads(Path(path).read_text(encoding="utf-8"))]


def _claim_from_review(review: dict) -> dict:
    item, based_on = review["itemReviewed"], review["isBasedOn"]
    datasets = {entry["creativeWorkStatus"]: entry for entry in based_on if entry["@type"] == "Dataset"}
    breaking = [_break_from_dataset(entry) for entry in based_on if entry.get("creativeWorkStatus") == "contradicting"]
    pending = datasets.get("pending")
    return {
        "id": review["identifier"],
        "section": item["appearance"]["articleSection"],
        "excerpt": item["text"],
        "scope": item.get("description"),
        "verdict": review["reviewRating"]["alternateName"],
        "finding": review["reviewBody"],
        "sources": [work["identifier"] for work in review["citation"]],
        "evidence": [{"path": entry["name"], "sha256": entry["sha256"]}
                     for entry in based_on if entry["@type"] == "MediaObject"],
        "article_value": item["about"]["value"] if "about" in item else None,
        "our_value": _our_value(datasets["published"]) if "published" in datasets else None,
        "awaits": {"chapter": pending["identifier"], "keys": pending["variableMeasured"]} if pending else None,
        "broken_by": breaking or None,
    }


def _our_value(dataset: dict) -> dict:
    values = dataset["variableMeasured"]
    first = values[0]
    labelled = "propertyID" in first
    if labelled:
        interval = {v["propertyID"]: [v["minValue"], v["maxValue"]] for v in values if "minValue" in v} or None
    else:
        interval = [first["minValue"], first["maxValue"]] if "minValue" in first else None
    return {"value": {v["propertyID"]: v["value"] for v in values} if labelled else first["value"],
            "unit": first["unitText"], "basis": first["measurementMethod"],
            "technique": dataset["measurementTechnique"], "note": first["description"], "interval": interval,
            "device": dataset["about"]["name"], "run_id": dataset["identifier"]}
