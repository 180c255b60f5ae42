"""What the claim-audit pages show: the verdict counts, the book's own claims (with what replicates broke), the
article's and the rechecks' claims on pages of their own, our values beside the claims, the sources, and the
downloads (written afresh whenever the chapter executes)."""
from __future__ import annotations

import html
import re
from pathlib import Path

import pandas as pd

from launchlab.claims import exports, registry, site
from launchlab.present import tables
from launchlab.present.tables import fmt_sig
from launchlab.store.evidence import REPO_ROOT

# The theme styles tables for their content's width; the audit's tables need their own fixed layout to fit the
# content column and keep the finding column readable, hence !important. On a narrow screen (a phone) a table keeps
# a width of 44rem and scrolls in its output's box rather than break its words; from 1200 px (a laptop) it takes the
# column's width, which holds its words. A long key or run id breaks at the joints
# `tables.breakable` marks, a hash anywhere between its digits; so may inline code in the prose (a module path is
# wider than a phone). A restated claim's row is marked.
TABLE_STYLE = ("<style>table.claim-audit { table-layout: fixed !important; width: 100% !important; "
               "max-width: 100% !important; min-width: 44rem; display: table !important; font-size: 0.9em; }"
               " @media (min-width: 1200px) { table.claim-audit { min-width: 0; } }"
               " table.claim-audit td, table.claim-audit th { vertical-align: top; overflow-wrap: anywhere; }"
               " table.claim-audit tbody th { text-align: left; padding-top: 1.2em; }"
               " table.claim-audit .ours { margin-top: 0.4em; font-size: 0.95em; }"
               " table.claim-audit .sha256 { display: block; font-size: 0.8em; word-break: break-all;"
               " margin-bottom: 0.4em; }"
               " table.claim-audit tr.restated td { background: rgba(213, 94, 0, 0.08); }"
               " table.claim-audit tr.restated td:first-child { border-left: 4px solid #D55E00; }"
               " table.claim-audit .replicate { margin-top: 0.4em; font-size: 0.95em; }"
               " table.claim-audit details summary, details.claim-section > summary { cursor: pointer; }"
               " details.claim-section { margin: 0.2em 0 0.6em; }"
               " details.claim-section > summary { font-weight: 600; padding: 0.3em 0; }"
               " .bd-article code.literal, .bd-article code.literal span.pre { white-space: pre-wrap;"
               " overflow-wrap: anywhere; }"
               " .claim-index a { margin-right: 0.35em; white-space: nowrap; }</style>")
# A folded section holding the claim a link names opens when the page is opened at that claim (browsers that do
# not open a closed <details> for a fragment themselves).
REVEAL_SCRIPT = ("<script>(function () { function reveal() { var id = decodeURIComponent(location.hash.slice(1));"
                 " var target = id && document.getElementById(id); if (!target) return; var opened = false;"
                 " for (var p = target.parentElement; p; p = p.parentElement) { if (p.tagName === 'DETAILS' &&"
                 " !p.open) { p.open = true; opened = true; } } if (opened) target.scrollIntoView(); }"
                 " window.addEventListener('hashchange', reveal); if (document.readyState === 'loading')"
                 " { document.addEventListener('DOMContentLoaded', reveal); } else { reveal(); } })();</script>")
# Widths in percent; the claim and verdict columns hold their longest word ("Claim", "judgment", "restated") at the
# book's column width, so that it does not break inside.
COLUMNS = (("Claim", 10), ("Statement", 24), ("Verdict", 13), ("Finding, and our value", 35),
           ("Sources and evidence", 18))
BOOK_COLUMNS = (("Claim", 10), ("Statement, finding and evidence", 39), ("Verdict", 13),
                ("Our value, and replicates that broke it", 38))
VALUE_COLUMNS = (("Claim", 10), ("Article (H100 unless noted)", 24), ("Ours (H200)", 34), ("Basis", 14), ("Run", 18))
# The article's own figure for a claim whose statement holds it and whose record has no article_value: each
# figure as the statement quotes it (a test checks that every number here stands in the claim's statement).
ARTICLE_FIGURES = {
    "C12": "about 2.1 µs on a regular stream, about 1.3 µs with CUDA Graph replay",
    "C13": "38% decrease",
    "C24": "1.3–2.1 µs of scheduling overhead",
    "C26": "68 of 148 SMs active, 80 idle, in the final wave of 512 blocks (B200)",
    "C30": "about 130 µs of launch overhead per forward pass",
    "C35": "about 100 boundaries removed (16-layer Llama-1B)",
}
# What each verdict says, in the order the counts table lists them.
VERDICT_MEANINGS = {
    "retain": "It holds as written, within the scope it states.",
    "qualify": "It points the right way but says more than its sources support; the finding narrows it.",
    "correct": "It generalises in a way that is false or misleading; the finding replaces it.",
    "judgment": "It is advice or presentation, not an empirical statement; the finding separates the two.",
    "restated": "A book claim that a replicate run does not support as stated: kept as stated, with the "
                "replicate's value beside it.",
    "pending": "A book claim whose chapter has no accepted run of the current run record yet: a status, not a "
               "verdict on wording.",
}
FAMILY_HEADERS = {"C": "Article (C)", "R": "Rechecks (R)", "B": "This book (B)"}
SOURCE_COLUMNS = (("Key", 17), ("Title (link)", 44), ("Document", 21), ("Date", 18))
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


PLURAL_NOUNS = re.compile(r"\b(blocks|jobs|tasks|kernels|nodes|launches)\b")


def unit_for(number, unit: str) -> str:
    """The unit as it reads after `number`: "1 active block per SM", "8 active blocks per SM"."""
    if number == 1:
        return PLURAL_NOUNS.sub(lambda m: m[1][:-2] if m[1].endswith("hes") else m[1][:-1], unit, count=1)
    return unit


def format_value(ours: dict) -> str:
    """Our value as text: the number or the labelled numbers, the unit, and the interval of each that has one."""
    value, interval = ours["value"], ours["interval"]
    if not isinstance(value, dict) and ours["unit"].startswith("%"):  # a percentage at the three figures it can bear
        return f"{fmt_sig(value, 3)} {ours['unit']}" + (f" ({_interval_text(interval)})" if interval else "")
    if isinstance(value, dict):
        intervals = interval or {}
        parts = [f"{label}: {format_number(number)}" + (f" ({_interval_text(intervals[label])})"
                                                         if label in intervals else "")
                 for label, number in value.items()]
        return f"{ours['unit']} — " + "; ".join(parts)
    text = f"{format_number(value)} {unit_for(value, ours['unit'])}"
    if interval:
        text += f" ({_interval_text(interval)})"
    return text


def quoted(excerpt: str) -> str:
    """A statement as the table quotes it: escaped, the record's omissions marked as the editor's, a long key
    breakable at its joints (`tables.breakable`)."""
    return tables.breakable(excerpt.replace(RECORD_ELLIPSIS, EDITORIAL_ELLIPSIS))


def table_head(columns) -> list[str]:
    """The opening lines of a claim-audit table: its style, and a column group and header row of (name, width %)
    pairs; the names go in as given (HTML), so a caller escapes what needs it."""
    cols = "".join(f'<col style="width:{width}%">' for _, width in columns)
    heads = "".join(f'<th style="width:{width}%">{name}</th>' for name, width in columns)
    return [TABLE_STYLE, '<table class="table claim-audit">', f"<colgroup>{cols}</colgroup>",
            f"<thead><tr>{heads}</tr></thead>"]


def claims_table_html(claims: list[dict], sources: dict, family: str) -> str:
    """The claims of one family as HTML, one row group per section in order of appearance; every row has an
    id="c42"-style anchor, so that the family's page (`site.FAMILY_PAGES`) opened at #c42 lands on claim C42.

    The book's claims (B) are one table whose finding and evidence fold into each row. The article's (C) and the
    rechecks' (R) claims are one table per section, each folded under a line that names the section and counts
    its verdicts."""
    members = [claim for claim in claims if claim["id"].startswith(family)]
    if family == "B":
        return book_claims_html(members)
    by_section: dict[str, list[dict]] = {}
    for claim in members:
        by_section.setdefault(claim["section"], []).append(claim)
    lines = [REVEAL_SCRIPT]
    for section, rows in by_section.items():
        lines.append(f'<details class="claim-section"><summary>{html.escape(section)}: '
                     f"{_count_words(rows)}</summary>")
        lines += table_head(COLUMNS) + ["<tbody>"]
        lines.extend(_claim_row(claim, sources) for claim in rows)
        lines += ["</tbody>", "</table>", "</details>"]
    return "\n".join(lines)


def _count_words(rows: list[dict]) -> str:
    """'6 claims: 4 retain, 2 qualify' (verdicts in order of first appearance)."""
    counts: dict[str, int] = {}
    for claim in rows:
        counts[claim["verdict"]] = counts.get(claim["verdict"], 0) + 1
    noun = "claim" if len(rows) == 1 else "claims"
    return f"{len(rows)} {noun}; " + ", ".join(f"{verdict} {n}" for verdict, n in counts.items())


def book_claims_html(members: list[dict]) -> str:
    """The book's claims as one table, a row group per chapter: the statement with its finding and evidence
    folded under it, the verdict, and our value with every replicate that broke the claim as stated (a restated
    claim's row is marked)."""
    lines = table_head(BOOK_COLUMNS)
    sections: dict[str, list[dict]] = {}
    for claim in members:
        sections.setdefault(claim["section"], []).append(claim)
    for section, rows in sections.items():
        lines.append(f'<tbody><tr><th colspan="{len(BOOK_COLUMNS)}" scope="rowgroup">{html.escape(section)}</th></tr>')
        lines.extend(_book_row(claim) for claim in rows)
        lines.append("</tbody>")
    lines.append("</table>")
    return "\n".join(lines)


RESTATED_MARK = " Restated: "  # where a restated claim's finding starts to repeat what its replicates found


def _book_row(claim: dict) -> str:
    anchor = site.claim_anchor(claim["id"])
    finding = claim["finding"].split(RESTATED_MARK, 1)[0] if claim["broken_by"] else claim["finding"]
    files = len(claim["evidence"])
    evidence = _support_html(claim, {})
    folded = (f"<details><summary>Finding and evidence ({files} {'file' if files == 1 else 'files'}, SHA-256)"
              f"</summary><div class=\"ours\">{html.escape(finding)}</div>"
              + (f'<div class="ours">{evidence}</div>' if evidence else "") + "</details>")
    statement = f"<q>{quoted(claim['excerpt'])}</q>{folded}"
    verdict = f"<strong>{claim['verdict']}</strong>" if claim["broken_by"] else claim["verdict"]
    values = _values_html(claim) + "".join(
        f'<div class="replicate"><strong>Replicate run {html.escape(item["run_id"])}</strong> breaks it '
        f"({html.escape(item['reason'])}){html.escape(replicate_value(item, claim['our_value']))}.</div>"
        for item in claim["broken_by"] or ())
    cells = [f'<a href="#{anchor}">{claim["id"]}</a>', statement, verdict, values or tables.MISSING]
    mark = ' class="restated"' if claim["broken_by"] else ""
    return f'<tr id="{anchor}"{mark}>' + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def replicate_value(item: dict, ours: dict | None) -> str:
    """What a replicate that breaks a claim measured, beside the accepted run's value: a labelled value by the
    labels where the two differ ("" where the replicate has no value)."""
    value = item["value"]
    if value is None:
        return ""
    if isinstance(value, dict) and ours and isinstance(ours["value"], dict):
        differ = [label for label, number in value.items() if ours["value"].get(label) != number]
        if differ:
            same = "" if len(differ) == len(value) else "; every other figure as in the accepted run"
            return ": " + "; ".join(f"{label} {format_number(value[label])} against {format_number(ours['value'][label])}"
                                    " in the accepted run" for label in differ) + same
    shown = format_value({"value": value, "interval": item["interval"], "unit": ours["unit"] if ours else ""})
    return f": its value {shown.strip()}"


def claim_index_html(claims: list[dict], families: str = "CR") -> str:
    """Every claim of `families` by identifier, each a link to its row on its family's page and carrying its
    anchor here too, so that an address of this page written before the families had pages of their own
    (claim-audit.html#c42) still leads to the claim."""
    lines = []
    for family in families:
        links = " ".join(f'<a id="{site.claim_anchor(c["id"])}" href="{site.claim_link(c["id"])}">{c["id"]}</a>'
                         for c in claims if c["id"].startswith(family))
        lines.append(f'<p class="claim-index"><strong>{html.escape(registry.FAMILIES[family].capitalize())}:'
                     f"</strong> {links}</p>")
    return TABLE_STYLE + "".join(lines)


def verdict_table(claims: list[dict]):
    """How many claims of each family carry each verdict, with what the verdict says about the wording."""
    rows = []
    for verdict, meaning in VERDICT_MEANINGS.items():
        row = {"verdict": verdict, "what it says": meaning}
        for family, column in FAMILY_HEADERS.items():
            row[column] = sum(1 for c in claims if c["id"].startswith(family) and c["verdict"] == verdict)
        rows.append(row)
    total = {"verdict": "all", "what it says": ""}
    total.update({column: sum(1 for c in claims if c["id"].startswith(family))
                  for family, column in FAMILY_HEADERS.items()})
    return tables.page_table(rows + [total], index="verdict", formats={"what it says": "text"},
                             headers={"what it says": "What it says about the wording"},
                             caption="Claims by verdict and family (counts).")


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
               f"{html.escape(sources[key]['title'])}</a>" for key in claim["sources"]]
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
        rows.append({"claim": claim["id"], "article (H100)": article_figure(claim),
                     "ours (H200)": format_value(ours) if ours else f"Pending. {pending_text(claim['awaits'])}",
                     "basis": ours["basis"] if ours else "", "run": ours["run_id"] if ours else ""})
    return pd.DataFrame(rows, columns=["claim", "article (H100)", "ours (H200)", "basis", "run"]).set_index("claim")


def article_figure(claim: dict) -> str:
    """The article's own figure for a claim: the record's article_value, or the figure its statement quotes
    (ARTICLE_FIGURES); empty where the statement gives no number."""
    return claim["article_value"] or ARTICLE_FIGURES.get(claim["id"], "")


NUMBER = re.compile(r"\d+(?:\.\d+)?")


def figures_not_in_statement(claims: list[dict]) -> dict[str, list[str]]:
    """{claim id: numbers of its declared ARTICLE_FIGURES entry that its statement does not hold} (empty: every
    declared figure is quoted from its statement)."""
    by_id = {claim["id"]: claim for claim in claims}
    missing = {}
    for claim_id, figure in ARTICLE_FIGURES.items():
        statement = NUMBER.findall(by_id[claim_id]["excerpt"]) if claim_id in by_id else []
        absent = [number for number in NUMBER.findall(figure) if number not in statement]
        if absent or claim_id not in by_id:
            missing[claim_id] = absent or ["no such claim"]
    return missing


def values_table_html(claims: list[dict]) -> str:
    """`values_frame` as an HTML table with every text in full, in the audit's fixed layout (pandas' own HTML
    sizes columns to their longest words and would overflow the content column)."""
    frame = values_frame(claims)
    lines = table_head(VALUE_COLUMNS) + ["<tbody>"]
    for claim_id, row in frame.iterrows():
        cells = [f'<a href="{site.claim_link(claim_id)}">{claim_id}</a>',
                 *(tables.breakable(str(text)) if str(text) else tables.MISSING for text in row)]
        lines.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    lines += ["</tbody>", "</table>"]
    return "\n".join(lines)


def sources_table_html(sources: dict) -> str:
    """Every source key with its linked title, the document it belongs to and its date: "consulted" where the
    source was consulted that day, "added" where the key was added without opening its page (its access_note)."""
    lines = table_head(SOURCE_COLUMNS) + ["<tbody>"]
    for key, source in sources.items():
        date = f"added {source['accessed']}" if source["access_note"] else f"consulted {source['accessed']}"
        # a title such as owner/repository may break after its slash, and nowhere inside a word
        title = f'<a href="{html.escape(source["url"])}">{html.escape(source["title"]).replace("/", "/<wbr>")}</a>'
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
    restated = [claim for claim in claims if claim["broken_by"]]
    links = _listing([f'<a href="#{site.claim_anchor(claim["id"])}">{claim["id"]}</a>' for claim in restated])
    values["restated_sentence"] = {0: "No claim is restated at this build.",
                                   1: f"One claim is restated at this build: {links}."}.get(
        len(restated), f"{len(restated)} claims are restated at this build: {links}.")
    values["lead_sentence"] = lead_sentence(claims)
    values["count_article_figures"] = sum(bool(article_figure(claim)) for claim in claims
                                          if claim["id"][0] in "CR" and (claim["our_value"] or claim["awaits"]))
    citation = site.book_citation(repo_root)
    values["book_citation"] = (f"{citation['authors']}. *{citation['title']}*. Version {citation['version']}, "
                               f"released {citation['date']}. {citation['url']}")
    return {name: str(value) for name, value in values.items()}


# What each verdict says of a statement, as the opening sentence counts them.
VERDICT_PHRASES = {"retain": ("holds as written", "hold as written"),
                   "qualify": ("says more than its sources support", "say more than their sources support"),
                   "correct": ("is wrong or misleading", "are wrong or misleading"),
                   "judgment": ("is advice rather than a measurement", "are advice rather than measurements")}


def _counted(n: int, phrases: tuple[str, str]) -> str:
    return f"{n} {phrases[0] if n == 1 else phrases[1]}"


def lead_sentence(claims: list[dict]) -> str:
    """The audit's answer in two sentences: how the article's statements fared, and the book's own claims."""
    article = registry.verdict_counts(claims, "C")
    book = registry.verdict_counts(claims, "B")
    parts = [_counted(n, VERDICT_PHRASES[verdict]) for verdict, n in article.items() if n]
    held, restated, pending = book["retain"], book[registry.RESTATED], book[registry.PENDING]
    text = (f"Of the {sum(article.values())} statements of the audited article, {_listing(parts)}. "
            f"Of this book's own {sum(book.values())} claims, {held} held in every run of their chapter")
    if restated:
        text += (f", and {restated} {'is' if restated == 1 else 'are'} restated, {'' if restated == 1 else 'each '}"
                 "because a second run of its chapter did not support it as stated; its row shows that run's value "
                 "beside ours")
    if pending:
        text += f"; {pending} wait for a run of their chapter"
    return text + "."


def _listing(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else ""


def _listing_of_keys(keys: list[str]) -> str:
    """Source keys as inline code, "none" when there are none."""
    return ", ".join(f"`{key}`" for key in keys) or "none"


def load(repo_root: Path = REPO_ROOT) -> tuple[list[dict], dict]:
    """The registry and its sources, after checking every evidence link (the pages of one family of claims: the
    chapter's page publishes the downloads and the evidence copies)."""
    sources = registry.load_sources(repo_root)
    claims = registry.load_claims(repo_root)
    problems = registry.check_evidence_links(repo_root, claims)
    if problems:
        raise ValueError("broken evidence links:\n" + "\n".join(problems))
    return claims, sources


def prepare(repo_root: Path = REPO_ROOT) -> tuple[list[dict], dict]:
    """The registry and its sources, after checking every evidence link and publishing the downloads."""
    claims, sources = load(repo_root)
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
