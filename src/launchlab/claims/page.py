"""What the claim-audit chapter shows: one HTML table per family of claims, our values beside the claims,
the figures its prose quotes, and the downloads it offers (written afresh whenever the chapter executes)."""
from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from launchlab.claims import exports, registry, site
from launchlab.store.evidence import REPO_ROOT

# The theme styles tables for their content's width; the claim table needs its own fixed layout to keep the
# finding column readable, hence !important.
TABLE_STYLE = ("<style>table.claim-audit { table-layout: fixed !important; width: 100% !important; "
               "display: table !important; font-size: 0.9em; }"
               " table.claim-audit td { vertical-align: top; overflow-wrap: anywhere; }"
               " table.claim-audit tbody th { text-align: left; padding-top: 1.2em; }"
               " table.claim-audit .ours { margin-top: 0.4em; font-size: 0.95em; }</style>")
COLUMNS = (("Claim", 7), ("Statement", 25), ("Verdict", 10), ("Finding, and our value", 40),
           ("Sources and evidence", 18))


def format_number(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def format_value(ours: dict) -> str:
    """Our value as text: the number or the labelled numbers, the unit, and the interval when there is one."""
    value = ours["value"]
    if isinstance(value, dict):
        return f"{ours['unit']}: " + "; ".join(f"{label} {format_number(number)}" for label, number in value.items())
    text = f"{format_number(value)} {ours['unit']}"
    if ours["interval"]:
        text += f" (95% interval {format_number(ours['interval'][0])} to {format_number(ours['interval'][1])})"
    return text


def claims_table_html(claims: list[dict], sources: dict, family: str) -> str:
    """The claims of one family (C, R or B) as one table with a row group per section, in order of appearance.

    Each row has an id="c42"-style anchor, so that `claim-audit.html#c42` lands on claim C42.
    """
    by_section: dict[str, list[dict]] = {}
    for claim in claims:
        if claim["id"].startswith(family):
            by_section.setdefault(claim["section"], []).append(claim)
    cols = "".join(f'<col style="width:{width}%">' for _, width in COLUMNS)
    heads = "".join(f'<th style="width:{width}%">{name}</th>' for name, width in COLUMNS)
    lines = [TABLE_STYLE, '<table class="table claim-audit">', f"<colgroup>{cols}</colgroup>",
             f"<thead><tr>{heads}</tr></thead>"]
    for section, members in by_section.items():
        lines.append(f'<tbody><tr><th colspan="{len(COLUMNS)}" scope="rowgroup">{html.escape(section)}</th></tr>')
        lines.extend(_claim_row(claim, sources) for claim in members)
        lines.append("</tbody>")
    lines.append("</table>")
    return "\n".join(lines)


def _claim_row(claim: dict, sources: dict) -> str:
    anchor = site.claim_anchor(claim["id"])
    statement = f"<q>{html.escape(claim['excerpt'])}</q>"
    if claim["scope"]:
        statement += f'<div class="ours"><em>Scope:</em> {html.escape(claim["scope"])}</div>'
    cells = [f'<a href="#{anchor}">{claim["id"]}</a>', statement, claim["verdict"],
             html.escape(claim["finding"]) + _values_html(claim), _support_html(claim, sources)]
    return f'<tr id="{anchor}">' + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def _values_html(claim: dict) -> str:
    parts = []
    if claim["article_value"]:
        parts.append(f"<em>Article (H100):</em> {html.escape(claim['article_value'])}")
    ours = claim["our_value"]
    if ours:
        label = f"Ours ({ours['basis']}, {ours['device']}, run {ours['run_id']})"
        note = f" {html.escape(ours['note'])}" if ours["note"] else ""
        parts.append(f"<em>{html.escape(label)}:</em> {html.escape(format_value(ours))}.{note}")
    if claim["awaits"]:
        keys = ", ".join(f"<code>{html.escape(key)}</code>" for key in claim["awaits"]["keys"])
        chapter = html.escape(claim["awaits"]["chapter"])
        parts.append(f"<em>Ours: pending.</em> Filled in when an accepted <code>{chapter}</code> run has {keys}.")
    return "".join(f'<div class="ours">{part}</div>' for part in parts)


def _support_html(claim: dict, sources: dict) -> str:
    support = [f'<a href="{html.escape(sources[key]["url"])}" title="{html.escape(sources[key]["title"])}">'
               f"{html.escape(key)}</a>" for key in claim["sources"]]
    for entry in claim["evidence"]:
        run_id, inside_run = registry.run_file_parts(entry["path"])
        support.append(f'<a href="{html.escape(site.evidence_link(entry["path"]))}" title="run {run_id}">'
                       f"{html.escape(inside_run)}</a> (sha256 {entry['sha256'][:12]}…)")
    return "<br>".join(support)


def values_frame(claims: list[dict], families: str = "CR") -> pd.DataFrame:
    """C- and R-claims with an article figure or a value of ours: the two side by side, with the basis."""
    rows = []
    for claim in claims:
        if claim["id"][0] not in families or not (claim["our_value"] or claim["awaits"]):
            continue
        ours = claim["our_value"]
        rows.append({"claim": claim["id"], "article (H100)": claim["article_value"] or "",
                     "ours (H200)": format_value(ours) if ours else "pending",
                     "basis": ours["basis"] if ours else "", "run": ours["run_id"] if ours else ""})
    return pd.DataFrame(rows, columns=["claim", "article (H100)", "ours (H200)", "basis", "run"]).set_index("claim")


def values_table_html(claims: list[dict]) -> str:
    """`values_frame` as an HTML table with every text in full (pandas would cut long cells short)."""
    with pd.option_context("display.max_colwidth", None):
        return values_frame(claims).to_html(classes="table", escape=True, border=0)


def page_values(claims: list[dict], sources: dict, repo_root: Path = REPO_ROOT) -> dict[str, str]:
    """The figures the chapter's prose quotes, as Markdown text for myst-nb glue."""
    counts = registry.verdict_counts(claims)
    values = {f"count_{verdict}": count for verdict, count in counts.items()}
    for family in "CRB":
        family_counts = registry.verdict_counts(claims, family)
        values[f"count_{family}"] = sum(family_counts.values())
        values[f"verdicts_{family}"] = ", ".join(f"{verdict} {n}" for verdict, n in family_counts.items() if n)
    values.update({
        "count_sections": len({claim["section"] for claim in claims if claim["id"].startswith("C")}),
        "count_source_keys": len(sources),
        "count_documents": registry.distinct_documents(sources),
        "count_evidence_links": sum(len(claim["evidence"]) for claim in claims),
        "count_pending": sum(claim["awaits"] is not None for claim in claims),
        "base_url": f"`{site.base_url(repo_root)}`",  # code, not a bare address: IPython would fetch it
    })
    citation = site.book_citation(repo_root)
    values["book_citation"] = (f"{citation['authors']}. *{citation['title']}*. Version {citation['version']}, "
                               f"released {citation['date']}. {citation['url']}")
    return {name: str(value) for name, value in values.items()}


def prepare(repo_root: Path = REPO_ROOT) -> tuple[list[dict], dict]:
    """The registry and its sources, after checking every evidence link and publishing the downloads."""
    sources = registry.load_sources(repo_root)
    claims = registry.load_claims(repo_root)
    problems = registry.check_evidence_links(repo_root, claims)
    if problems:
        raise ValueError("broken evidence links:\n" + "\n".join(problems))
    publish(claims, sources, repo_root)
    return claims, sources


def publish(claims: list[dict], sources: dict, repo_root: Path = REPO_ROOT) -> tuple[Path, Path]:
    """Write claims.csv, claims.json (absolute URLs from the base URL) and the evidence copies for the site."""
    directory = Path(repo_root) / site.DOWNLOAD_DIRECTORY
    directory.mkdir(parents=True, exist_ok=True)
    citation = site.book_citation(repo_root)
    base = site.base_url(repo_root)
    if citation["url"] != base:
        raise ValueError(f"CITATION.cff url {citation['url']!r} differs from html.baseurl {base!r}")
    exports.write_claims_csv(claims, directory / "claims.csv", base)
    exports.write_claims_json(claims, sources, directory / "claims.json", citation)
    site.publish_evidence(claims, repo_root)
    return directory / "claims.csv", directory / "claims.json"
