"""What the claim-audit chapter shows: one HTML table per family of claims, our values beside the claims,
the figures its prose quotes, and the downloads it offers (written afresh whenever the chapter executes)."""
from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from launchlab.claims import exports, registry, site
from launchlab.present.tables import fmt_sig
from launchlab.store.evidence import REPO_ROOT

# The theme styles tables for their content's width; the audit's tables need their own fixed layout to fit the
# content column and keep the finding column readable, hence !important. Run ids and hashes have no break
# opportunity of their own, so every cell may break anywhere, and a hash anywhere between its digits.
TABLE_STYLE = ("<style>table.claim-audit { table-layout: fixed !important; width: 100% !important; "
               "max-width: 100% !important; display: table !important; font-size: 0.9em; }"
               " table.claim-audit td, table.claim-audit th { vertical-align: top; overflow-wrap: anywhere; }"
               " table.claim-audit tbody th { text-align: left; padding-top: 1.2em; }"
               " table.claim-audit .ours { margin-top: 0.4em; font-size: 0.95em; }"
               " table.claim-audit .sha256 { display: block; font-size: 0.8em; word-break: break-all;"
               " margin-bottom: 0.4em; }</style>")
COLUMNS = (("Claim", 7), ("Statement", 25), ("Verdict", 10), ("Finding, and our value", 38),
           ("Sources and evidence", 20))
VALUE_COLUMNS = (("Claim", 9), ("Article (H100)", 27), ("Ours (H200)", 40), ("Basis", 12), ("Run", 12))
SOURCE_COLUMNS = (("Key", 17), ("Title (link)", 47), ("Document", 18), ("Date", 18))
# The audit record shortens some quotations with "..."; shown inside a quotation, that omission is the
# editor's, so the page writes it as an editor's ellipsis in brackets (the registry keeps the record's text).
RECORD_ELLIPSIS = "..."
EDITORIAL_ELLIPSIS = "[…]"


def format_number(value) -> str:
    """A number in plain notation: an integer-valued figure as an integer (grouped from 10,000 on), any other
    with 4 significant figures."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if float(value).is_integer():
        return f"{int(value):,}" if abs(value) >= 10_000 else str(int(value))
    return fmt_sig(value, 4)


def _interval_text(interval) -> str:
    return f"95% interval {format_number(interval[0])} to {format_number(interval[1])}"


def format_value(ours: dict) -> str:
    """Our value as text: the number or the labelled numbers, the unit, and the interval of each that has one."""
    value, interval = ours["value"], ours["interval"]
    if isinstance(value, dict):
        intervals = interval or {}
        parts = [f"{label}: {format_number(number)}" + (f" ({_interval_text(intervals[label])})"
                                                         if label in intervals else "")
                 for label, number in value.items()]
        return f"{ours['unit']} — " + "; ".join(parts)
    text = f"{format_number(value)} {ours['unit']}"
    if interval:
        text += f" ({_interval_text(interval)})"
    return text


def quoted(excerpt: str) -> str:
    """A statement as the table quotes it: escaped, the record's omissions marked as the editor's."""
    return html.escape(excerpt).replace(RECORD_ELLIPSIS, EDITORIAL_ELLIPSIS)


def _table_head(columns) -> list[str]:
    cols = "".join(f'<col style="width:{width}%">' for _, width in columns)
    heads = "".join(f'<th style="width:{width}%">{name}</th>' for name, width in columns)
    return [TABLE_STYLE, '<table class="table claim-audit">', f"<colgroup>{cols}</colgroup>",
            f"<thead><tr>{heads}</tr></thead>"]


def claims_table_html(claims: list[dict], sources: dict, family: str) -> str:
    """The claims of one family (C, R or B) as one table with a row group per section, in order of appearance.

    Each row has an id="c42"-style anchor, so that `claim-audit.html#c42` lands on claim C42.
    """
    by_section: dict[str, list[dict]] = {}
    for claim in claims:
        if claim["id"].startswith(family):
            by_section.setdefault(claim["section"], []).append(claim)
    lines = _table_head(COLUMNS)
    for section, members in by_section.items():
        lines.append(f'<tbody><tr><th colspan="{len(COLUMNS)}" scope="rowgroup">{html.escape(section)}</th></tr>')
        lines.extend(_claim_row(claim, sources) for claim in members)
        lines.append("</tbody>")
    lines.append("</table>")
    return "\n".join(lines)


def _claim_row(claim: dict, sources: dict) -> str:
    anchor = site.claim_anchor(claim["id"])
    statement = f"<q>{quoted(claim['excerpt'])}</q>"
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
        awaits = claim["awaits"]
        reads = ", ".join(f"<code>{html.escape(read)}</code>" for read in awaits["keys"])
        run = f"the next accepted <code>{html.escape(awaits['chapter'])}</code> run of the current run-record schema"
        if claim["id"].startswith("B"):
            text = f"<em>Pending.</em> Decided by {run}" + (f", from {reads}." if reads else ".")
        else:
            text = f"<em>Ours: pending.</em> Filled in from {run}" + (f", from {reads}." if reads else ".")
        parts.append(text)
    return "".join(f'<div class="ours">{part}</div>' for part in parts)


def _support_html(claim: dict, sources: dict) -> str:
    support = [f'<a href="{html.escape(sources[key]["url"])}" title="{html.escape(sources[key]["title"])}">'
               f"{html.escape(key)}</a>" for key in claim["sources"]]
    for entry in claim["evidence"]:
        run_id, inside_run = registry.run_file_parts(entry["path"])
        support.append(f'<a href="{html.escape(site.evidence_link(entry["path"]))}" title="run {run_id}">'
                       f'{html.escape(inside_run)}</a><code class="sha256">sha256 {entry["sha256"]}</code>')
    return "<br>".join(support)


def pending_text(awaits: dict) -> str:
    """What a pending value or claim waits for, in a sentence."""
    reads = "; ".join(awaits["keys"])
    text = f"Filled in from the next accepted {awaits['chapter']} run of the current run-record schema"
    return f"{text}, from {reads}." if reads else f"{text}."


def values_frame(claims: list[dict], families: str = "CR") -> pd.DataFrame:
    """C- and R-claims with an article figure or a value of ours: the two side by side, with the basis."""
    rows = []
    for claim in claims:
        if claim["id"][0] not in families or not (claim["our_value"] or claim["awaits"]):
            continue
        ours = claim["our_value"]
        rows.append({"claim": claim["id"], "article (H100)": claim["article_value"] or "",
                     "ours (H200)": format_value(ours) if ours else f"Pending. {pending_text(claim['awaits'])}",
                     "basis": ours["basis"] if ours else "", "run": ours["run_id"] if ours else ""})
    return pd.DataFrame(rows, columns=["claim", "article (H100)", "ours (H200)", "basis", "run"]).set_index("claim")


def values_table_html(claims: list[dict]) -> str:
    """`values_frame` as an HTML table with every text in full, in the audit's fixed layout (pandas' own HTML
    sizes columns to their longest words and would overflow the content column)."""
    frame = values_frame(claims)
    lines = _table_head(VALUE_COLUMNS) + ["<tbody>"]
    for claim_id, row in frame.iterrows():
        anchor = site.claim_anchor(claim_id)
        cells = [f'<a href="#{anchor}">{claim_id}</a>', *(html.escape(str(text)) for text in row)]
        lines.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    lines += ["</tbody>", "</table>"]
    return "\n".join(lines)


def sources_table_html(sources: dict) -> str:
    """Every source key with its linked title, the document it belongs to and its date: "consulted" where the
    source was consulted that day, "added" where the key was added without opening its page (its access_note)."""
    lines = _table_head(SOURCE_COLUMNS) + ["<tbody>"]
    for key, source in sources.items():
        date = f"added {source['accessed']}" if source["access_note"] else f"consulted {source['accessed']}"
        title = f'<a href="{html.escape(source["url"])}">{html.escape(source["title"])}</a>'
        if source["access_note"]:
            title += f'<br><small>{html.escape(source["access_note"][0].upper() + source["access_note"][1:])}</small>'
        cells = [f"<code>{html.escape(key)}</code>", title, html.escape(source["document"]), date]
        lines.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    lines += ["</tbody>", "</table>"]
    return "\n".join(lines)


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
        "unopened_sources": _listing_of_keys([key for key, source in sources.items() if source["access_note"]]),
        "count_evidence_links": sum(len(claim["evidence"]) for claim in claims),
        "count_pending": sum(claim["awaits"] is not None for claim in claims if claim["id"][0] in "CR"),
        "count_pending_B": sum(claim["awaits"] is not None for claim in claims if claim["id"].startswith("B")),
        "pending_chapters": ", ".join(sorted({claim["awaits"]["chapter"] for claim in claims if claim["awaits"]}))
                            or "none",
        "base_url": f"`{site.base_url(repo_root)}`",  # code, not a bare address: IPython would fetch it
    })
    citation = site.book_citation(repo_root)
    values["book_citation"] = (f"{citation['authors']}. *{citation['title']}*. Version {citation['version']}, "
                               f"released {citation['date']}. {citation['url']}")
    return {name: str(value) for name, value in values.items()}


def _listing_of_keys(keys: list[str]) -> str:
    """Source keys as inline code, "none" when there are none."""
    return ", ".join(f"`{key}`" for key in keys) or "none"


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
