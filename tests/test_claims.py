"""CPU tests of the claim registry (launchlab.claims: registry, site, exports, page) and of its fidelity to the
audit record, which tests/fixtures/audit_seed.txt holds as data."""
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml

from launchlab.claims import exports, page, registry, site

RUN_ID = "20261129T120000Z-fake"
RUN_FILE = f"evidence/runs/{RUN_ID}/headline.json"
SEED = Path(__file__).parent / "fixtures" / "audit_seed.txt"
RECHECK_TABLES = ("Review finding", "Claim or design choice", "Current claim or assumption")
QUALIFIERS = ("may", "not", "some", "neither", "only")
BASE = "https://example.org/book/"


def seed_tables() -> dict[str, list[list[str]]]:
    """The audit record's tables: first header cell -> rows of cells."""
    tables, current = {}, None
    for line in SEED.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ") or line.startswith("|---"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        if cells[0] in (*RECHECK_TABLES, "ID"):
            current = cells[0]
            tables[current] = []
        else:
            tables[current].append(cells)
    return tables


@pytest.fixture(scope="module")
def sources():
    return registry.load_sources()


@pytest.fixture(scope="module")
def claims():
    return registry.load_claims()


@pytest.fixture(scope="module")
def by_id(claims):
    return {claim["id"]: claim for claim in claims}


def qualifiers(text: str) -> set[str]:
    return {word for word in QUALIFIERS if re.search(rf"\b{word}\b", text, re.IGNORECASE)}


# --- fidelity to the audit record --------------------------------------------------------------------------------

def test_c_claims_reproduce_the_audit_table_row_by_row(claims):
    rows = seed_tables()["ID"]
    audited = [claim for claim in claims if claim["id"].startswith("C")]
    assert [claim["id"] for claim in audited] == [row[0] for row in rows] == [f"C{n:02d}" for n in range(1, 72)]
    for claim, (_, section_and_excerpt, verdict, _, evidence) in zip(audited, rows):
        assert f"{claim['section']}: {claim['excerpt']}" == section_and_excerpt, claim["id"]
        assert claim["verdict"] == verdict, claim["id"]
        assert claim["sources"] == evidence.split(", "), claim["id"]


def test_verdict_counts_match_the_audit(claims):
    stated = re.search(r"Counts: correct (\d+), judgment (\d+), qualify (\d+), retain (\d+)\.", SEED.read_text())
    expected = dict(zip(("correct", "judgment", "qualify", "retain"), map(int, stated.groups())))
    assert registry.verdict_counts(claims) == expected == {"correct": 11, "judgment": 1, "qualify": 38, "retain": 21}


def test_findings_keep_the_audits_qualifiers(by_id):
    """A finding says 'may', 'not', 'some', 'neither' or 'only' exactly where the audit's finding does."""
    differing = {row[0]: (sorted(qualifiers(row[3])), sorted(qualifiers(by_id[row[0]]["finding"])))
                 for row in seed_tables()["ID"] if qualifiers(row[3]) != qualifiers(by_id[row[0]]["finding"])}
    assert not differing, f"(audit, ours) qualifiers differ: {differing}"


def test_findings_are_not_the_audits_sentences(by_id):
    same = [row[0] for row in seed_tables()["ID"] if row[3].strip() == by_id[row[0]]["finding"].strip()]
    assert not same


def test_retained_findings_state_what_holds_without_a_verdict_word(claims):
    assert not [c["id"] for c in claims if c["finding"].lower().startswith(("correct", "incorrect"))]


def test_c14_c06_c37_keep_the_audits_scope(by_id):
    assert qualifiers(by_id["C14"]["finding"]) == {"may", "not"}
    assert "because" not in by_id["C06"]["finding"].lower()  # two facts, not a cause
    assert "neither every fused kernel nor every persistent kernel" in by_id["C37"]["finding"]


def test_every_recheck_row_is_an_r_claim_in_order(claims):
    rows = [row for table in RECHECK_TABLES for row in seed_tables()[table]]
    rechecks = [claim for claim in claims if claim["id"].startswith("R")]
    assert [claim["id"] for claim in rechecks] == [f"R{n:02d}" for n in range(1, len(rows) + 1)]
    assert [claim["excerpt"] for claim in rechecks] == [row[0] for row in rows]
    assert len(rechecks) == 11 + 16 + 25


def test_every_r_claim_has_scope_verdict_finding_and_a_source(claims):
    for claim in (c for c in claims if c["id"].startswith("R")):
        assert claim["verdict"] in registry.VERDICTS and claim["scope"] and claim["finding"], claim["id"]
        assert claim["sources"] or claim["evidence"], claim["id"]


def test_article_figures_are_the_records_own(by_id):
    """Every number in an R-claim's article_value appears in its row of the recheck tables."""
    rows = [row for table in RECHECK_TABLES for row in seed_tables()[table]]
    number = re.compile(r"\d[\d,.]*\d|\d")
    for n, row in enumerate(rows, start=1):
        claim = by_id[f"R{n:02d}"]
        if claim["article_value"]:
            assert set(number.findall(claim["article_value"])) <= set(number.findall(" ".join(row))), claim["id"]


# --- sources -------------------------------------------------------------------------------------------------

def test_every_source_has_title_address_document_and_access_date(claims, sources):
    assert {key for claim in claims for key in claim["sources"]} <= set(sources)
    for key, entry in sources.items():
        assert entry["title"].strip() and entry["document"], key
        assert entry["url"].startswith("https://"), key
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", entry["accessed"]), key


def test_a_date_that_is_not_a_reading_says_so_in_the_exports(sources):
    """Sources added without opening their page carry an access_note; the exports then say "Added on", never
    "Consulted on"."""
    from launchlab.claims import exports

    noted = {key for key, entry in sources.items() if entry["access_note"]}
    assert noted == {"mathfunctions", "intrinsics", "ptx"}
    for key, entry in sources.items():
        text = exports.access_text(entry)
        assert text.startswith("Added on" if key in noted else "Consulted on") and entry["accessed"] in text


@pytest.mark.parametrize("extra, problem", [({"access_note": " "}, "must say something"),
                                            ({"opened": False}, "no others")])
def test_a_source_with_an_empty_note_or_an_unknown_field_is_refused(extra, problem):
    entry = {"title": "A guide", "url": "https://example.org/guide", "document": "guide", "accessed": "2026-11-30"}
    assert registry._checked_source("k", entry)["access_note"] is None
    with pytest.raises(ValueError, match=problem):
        registry._checked_source("k", entry | extra)


def test_the_page_lists_every_source_with_its_date_and_what_the_date_means(sources):
    from launchlab.claims import page

    table = page.sources_table_html(sources)
    assert table.count("<tr>") == len(sources) + 1  # the head row, then one per key
    for key, entry in sources.items():
        assert f"<code>{key}</code>" in table
        assert ("added " if entry["access_note"] else "consulted ") + entry["accessed"] in table


def test_cuda_documentation_is_cited_in_a_versioned_release(sources):
    cuda = {key: entry["url"] for key, entry in sources.items() if entry["url"].startswith("https://docs.nvidia.com/")}
    assert cuda and all("/cuda/archive/12.8.1/" in url for url in cuda.values())


def test_documents_are_counted_once_however_many_keys_cite_them(sources):
    assert registry.distinct_documents(sources) < len(sources)
    assert registry.distinct_documents({"a": {"document": "guide"}, "b": {"document": "guide"}}) == 1


# --- the registry as committed --------------------------------------------------------------------------------

def test_committed_evidence_links_hold():
    assert registry.check_evidence_links() == []


def test_published_downloads_match_the_registry(claims):
    """book/_static/claims is regenerated by executing book/claim-audit.ipynb; it must not go stale."""
    downloads = registry.REPO_ROOT / site.DOWNLOAD_DIRECTORY
    assert exports.read_claims_csv(downloads / "claims.csv") == claims
    assert exports.read_claims_json(downloads / "claims.json") == claims


# --- validation ------------------------------------------------------------------------------------------------

def good_record(**changes):
    record = {"id": "C01", "section": "Opening", "excerpt": "an excerpt", "verdict": "qualify",
              "finding": "a finding", "sources": ["graphs"], "evidence": []}
    return {**record, **changes}


def our_value(**changes):
    value = {"value": 1.25, "unit": "us", "basis": "measured", "technique": "CUDA events", "note": "",
             "interval": [1.2, 1.3], "device": "NVIDIA H200", "run_id": RUN_ID}
    return {**value, **changes}


def book_claim(sha256="0" * 64):
    """A B-claim as the refresh writes it: evidence inside a run, and a measured value with its interval."""
    return {"id": "B01", "section": "Graphs", "excerpt": "Replay costs less than stream launches here.",
            "verdict": "retain", "finding": "Measured in one accepted run.", "sources": [],
            "evidence": [{"path": RUN_FILE, "sha256": sha256}], "scope": None, "article_value": None,
            "our_value": our_value(), "awaits": None, "broken_by": None}


def restated_claim(**changes):
    """A B-claim a replicate breaks, as the refresh writes it: its replicate with its value beside ours."""
    broken = [{"run_id": "20261129T130000Z-fake", "reason": "x / y is 1.1 [1.0, 1.2], stated above 1.15",
               "value": 1.1, "interval": [1.0, 1.2]}]
    return {**book_claim(), "id": "B05", "verdict": "restated", "broken_by": broken, **changes}


def recheck_claim(**changes):
    claim = {**good_record(id="R01", section="Blog draft recheck"), "scope": "its scope", "article_value": "126 of 128",
             "our_value": None, "awaits": {"chapter": "example_b_jobs", "keys": ["jobs"]}, "broken_by": None}
    return {**claim, **changes}


def pending_book_claim(**changes):
    """A B-claim declared for a chapter whose run awaits re-execution, as the refresh writes it."""
    claim = {**book_claim(), "verdict": "pending", "evidence": [], "our_value": None,
             "awaits": {"chapter": "fusion", "keys": ["ratios/graph/x_over_y/4096x4096/warm"]}}
    return {**claim, **changes}


def test_book_and_recheck_claims_are_accepted_in_normal_form(sources):
    claims = [book_claim(), recheck_claim(), pending_book_claim(id="B02"), restated_claim()]
    assert registry.validate_claims(claims, sources) == claims


def test_restated_is_the_verdict_of_a_b_claim_a_replicate_breaks_and_only_of_one(sources):
    with pytest.raises(ValueError, match="^B05: a B-claim a replicate breaks is restated"):
        registry.validate_claims([restated_claim(verdict="retain")], sources)
    with pytest.raises(ValueError, match="^B05: verdict 'restated'"):
        registry.validate_claims([restated_claim(broken_by=None)], sources)
    with pytest.raises(ValueError, match="^R01: broken_by is a non-empty list, of a B-claim only"):
        registry.validate_claims([recheck_claim(broken_by=restated_claim()["broken_by"])], sources)
    with pytest.raises(ValueError, match="^B05: broken_by needs the reason"):
        registry.validate_claims([restated_claim(broken_by=[{**restated_claim()["broken_by"][0], "reason": ""}])],
                                 sources)


def test_pending_is_a_status_of_b_claims_awaiting_their_run_only(sources):
    with pytest.raises(ValueError, match="^B01: verdict 'pending'"):
        registry.validate_claims([pending_book_claim(awaits=None)], sources)
    with pytest.raises(ValueError, match="^B01: a B-claim awaiting its run is pending"):
        registry.validate_claims([pending_book_claim(verdict="retain")], sources)
    with pytest.raises(ValueError, match="^R01: verdict 'pending'"):
        registry.validate_claims([recheck_claim(verdict="pending")], sources)


def test_labelled_values_carry_an_interval_per_label(sources):
    labelled = our_value(value={"warm": 1.2, "cold": 0.9}, interval={"warm": [1.1, 1.3], "cold": [0.8, 1.0]})
    assert registry.validate_claims([book_claim() | {"our_value": labelled}], sources)
    for interval in ({"hot": [1.0, 2.0]}, {"warm": [1.0]}, [1.1, 1.3]):
        with pytest.raises(ValueError, match="interval"):
            registry.validate_claims([book_claim() | {"our_value": {**labelled, "interval": interval}}], sources)


@pytest.mark.parametrize("record, problem", [
    (good_record(verdict="maybe"), "verdict 'maybe'"),
    (good_record(sources=["graphs", "nowhere"]), "unknown source keys ['nowhere']"),
    (good_record(finding=""), "finding must be non-empty text"),
    ({key: value for key, value in good_record().items() if key != "evidence"}, "missing fields ['evidence']"),
    (good_record(note="extra"), "unknown fields ['note']"),
    (good_record(scope="a scope"), "scope is required text for an R-claim"),
    (good_record(evidence=[{"path": "evidence/claims/claims.yaml", "sha256": "0" * 64}]), "evidence/runs/<RUN_ID>/"),
    (good_record(evidence=[{"path": f"evidence/runs/{RUN_ID}/../x", "sha256": "0" * 64}]), "evidence/runs/<RUN_ID>/"),
    (good_record(evidence=[{"path": RUN_FILE, "sha256": "ABC"}]), "sha256 must be 64 lower-case hex digits"),
    (good_record(evidence=[{"path": RUN_FILE}]), "is not {path, sha256}"),
    (good_record(our_value=our_value(value="fast")), "is not a number"),
    (good_record(our_value=our_value(basis="guessed")), "basis 'guessed'"),
    (good_record(our_value=our_value(basis="related")), "needs a note"),
    (good_record(our_value=our_value(interval=[1])), "interval must be None or [low, high]"),
])
def test_a_broken_record_is_rejected_naming_the_claim_and_the_problem(sources, record, problem):
    with pytest.raises(ValueError) as raised:
        registry.validate_claims([record], sources)
    assert str(raised.value).startswith("C01: ")
    assert problem in str(raised.value)


def test_an_r_claim_needs_its_scope(sources):
    with pytest.raises(ValueError, match="^R01: scope is required"):
        registry.validate_claims([recheck_claim(scope=None)], sources)


def test_a_duplicate_id_is_rejected_naming_it(sources):
    with pytest.raises(ValueError, match="^C01: duplicate id$"):
        registry.validate_claims([good_record(), good_record(section="Elsewhere")], sources)


@pytest.mark.parametrize("claim_id", ["C1", "D01", "c01", "C001", None])
def test_a_malformed_id_is_rejected(sources, claim_id):
    with pytest.raises(ValueError, match="id must be C, R or B followed by two digits"):
        registry.validate_claims([good_record(id=claim_id)], sources)


# --- evidence links against a fake run --------------------------------------------------------------------------

@pytest.fixture
def fake_repository(tmp_path):
    """A repository root holding one sealed run with one file, and a registry whose B01 cites that file."""
    content = b'{"replay_speedup": 1.25}\n'
    digest = hashlib.sha256(content).hexdigest()
    run_directory = tmp_path / "evidence" / "runs" / RUN_ID
    run_directory.mkdir(parents=True)
    (run_directory / "headline.json").write_bytes(content)
    manifest = {"files": {"headline.json": {"sha256": digest, "bytes": len(content)}}}
    (run_directory / "manifest.json").write_text(json.dumps(manifest))
    claims_directory = tmp_path / "evidence" / "claims"
    claims_directory.mkdir()
    source = {"title": "t", "url": "https://x", "document": "x", "accessed": "2026-10-18"}
    (claims_directory / "sources.yaml").write_text(yaml.safe_dump({"graphs": source}))
    (claims_directory / "claims.yaml").write_text(yaml.safe_dump([book_claim(digest)]))
    return tmp_path, digest


def test_a_good_evidence_link_passes(fake_repository):
    root, _ = fake_repository
    assert registry.check_evidence_links(root) == []


def test_a_changed_byte_is_reported_naming_claim_and_path(fake_repository):
    root, _ = fake_repository
    (root / RUN_FILE).write_bytes(b'{"replay_speedup": 1.26}\n')
    assert registry.check_evidence_links(root) == [f"B01: {RUN_FILE}: file content no longer matches its sha256"]


def test_a_wrong_registry_hash_is_reported_naming_claim_and_path(fake_repository):
    root, _ = fake_repository
    problems = registry.check_evidence_links(root, [book_claim("f" * 64)])
    assert problems == [f"B01: {RUN_FILE}: registry sha256 differs from manifest.json"]


def test_a_file_missing_from_disk_or_manifest_is_reported(fake_repository):
    root, digest = fake_repository
    (root / "evidence" / "runs" / RUN_ID / "manifest.json").write_text(json.dumps({"files": {}}))
    assert registry.check_evidence_links(root) == [f"B01: {RUN_FILE}: not listed in manifest.json of run {RUN_ID}"]
    (root / RUN_FILE).unlink()
    assert registry.check_evidence_links(root) == [f"B01: {RUN_FILE}: no such file"]


# --- exports -----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def citation():
    return {**site.book_citation(), "url": BASE}


def test_csv_and_json_round_trip_equal_the_registry(tmp_path, claims, sources, citation):
    labelled = book_claim() | {"id": "B02", "our_value": our_value(value={"warm": 1.0, "cold": 2.0}, interval=None,
                                                                        basis="related", note="A neighbour.")}
    with_intervals = book_claim() | {"id": "B03", "our_value": our_value(value={"warm": 1.0, "cold": 2.0},
                                                                        interval={"cold": [1.5, 2.5]})}
    everything = claims + [book_claim(), labelled, with_intervals, recheck_claim(), pending_book_claim(id="B04"),
                           restated_claim()]
    exports.write_claims_csv(everything, tmp_path / "claims.csv", BASE)
    assert exports.read_claims_csv(tmp_path / "claims.csv") == everything
    exports.write_claims_json(everything, sources, tmp_path / "claims.json", citation)
    assert exports.read_claims_json(tmp_path / "claims.json") == everything


def addresses(node):
    """Every value of a key that holds an address, anywhere in a JSON document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("url", "contentUrl", "@id", "website"):
                yield value
            yield from addresses(value)
    elif isinstance(node, list):
        for item in node:
            yield from addresses(item)


def test_claim_reviews_are_valid_json_ld_with_absolute_addresses(claims, sources):
    downloads = registry.REPO_ROOT / site.DOWNLOAD_DIRECTORY
    reviews = json.loads((downloads / "claims.json").read_text(encoding="utf-8"))
    base = site.base_url()
    for review in reviews:
        assert review["@context"] == "https://schema.org" and review["@type"] == "ClaimReview"
        for field in ("url", "claimReviewed", "itemReviewed", "reviewRating", "author", "datePublished"):
            assert review[field], (review["identifier"], field)
        page_of = {"B": "claim-audit", "C": "claim-audit-article", "R": "claim-audit-rechecks"}[review["identifier"][0]]
        assert review["url"] == f"{base}book/{page_of}.html#{review['identifier'].lower()}"
        assert all(address.startswith("https://") for address in addresses(review)), review["identifier"]
    csv_text = (downloads / "claims.csv").read_text(encoding="utf-8")
    assert "evidence/runs/" in csv_text and f'{base}_static/claims/evidence/' in csv_text


def test_claim_reviews_identify_the_article_the_author_and_the_technique(claims, sources, citation):
    review = exports.claim_review(claims[41], sources, citation)
    appearance = review["itemReviewed"]["appearance"]
    assert appearance["@type"] == "SocialMediaPosting" and appearance["articleSection"] == claims[41]["section"]
    for fact in ("posted on X", "February 22 without a year", "opening question"):
        assert fact in appearance["description"]
    assert review["author"] == {"@type": "Organization", "name": "Launchlab", "url": BASE}
    editions = {claim["section"]: exports.claim_review(claim, sources, citation)["itemReviewed"]["appearance"]
                for claim in claims if claim["id"].startswith("R")}
    assert len(editions) == 3 and {a["@type"] for a in editions.values()} == {"Article", "BlogPosting"}
    for section, appearance in editions.items():
        assert section[:section.index(" (")] in exports.EDITIONS and section[section.index("(") + 1:-1] in appearance["description"]
    with pytest.raises(ValueError, match="no article edition"):
        exports.edition("Some other table")
    measured = exports.claim_review(book_claim(), sources, citation)["isBasedOn"][-1]
    assert measured["measurementTechnique"] == "CUDA events" and measured["about"]["name"] == "NVIDIA H200"
    assert measured["variableMeasured"][0]["measurementMethod"] == "measured"


# --- the site: base URL, citation file, licence, evidence links ----------------------------------------------------

def test_the_base_url_is_set_once_and_citation_cff_repeats_it():
    base = site.base_url()
    assert base.startswith("https://") and base.endswith("/")
    assert site.book_citation()["url"] == base


def test_citation_cff_has_what_a_citation_needs():
    cff = yaml.safe_load((registry.REPO_ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    for field in ("preferred-citation", "url", "version", "date-released", "license", "authors"):
        assert cff[field], field
    assert set(cff["license"]) == {"CC-BY-4.0", "MIT"}
    assert "placeholder" not in json.dumps(cff, default=str).lower() and cff["authors"][0]["name"] == "Launchlab"


def test_citation_cff_validates_against_the_cff_schema():
    cffconvert = pytest.importorskip("cffconvert", reason="the CFF validator (cffconvert) is not installed")
    text = (registry.REPO_ROOT / "CITATION.cff").read_text(encoding="utf-8")
    cffconvert.Citation(cffstr=text).validate()


def test_licence_names_one_licence_for_prose_and_data_and_one_for_code():
    text = (registry.REPO_ROOT / "LICENSE").read_text(encoding="utf-8")
    assert "Prose and data: Creative Commons Attribution 4.0" in text and "Code: MIT License" in text


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        self.hrefs.extend(value for name, value in attrs if tag == "a" and name == "href")


def local_links(html_text: str) -> list[str]:
    parser = Links()
    parser.feed(html_text)
    return [href for href in parser.hrefs if not href.startswith(("https://", "http://", "#", "mailto:"))]


def test_every_evidence_link_of_the_table_opens_its_file_in_the_site(tmp_path, claims, sources):
    """Lay the published copies out as the built site has them and follow every link from the chapter's page."""
    site.publish_evidence(claims, directory=tmp_path / site.SITE_DIRECTORY)
    chapter = tmp_path / site.CHAPTER_PAGE
    links = [href for family in "CRB" for href in local_links(page.claims_table_html(claims, sources, family))]
    assert len(links) == sum(len(claim["evidence"]) for claim in claims)
    for href in links:
        target = (chapter.parent / href).resolve()
        assert target.is_file(), href
        original = registry.REPO_ROOT / "evidence" / "runs" / target.relative_to(
            (tmp_path / site.SITE_DIRECTORY / site.PUBLISHED_EVIDENCE).resolve())
        assert target.read_bytes() == original.read_bytes(), href


def test_every_local_link_of_the_built_page_resolves():
    built = registry.REPO_ROOT / "_build" / "html" / site.CHAPTER_PAGE
    if not built.is_file():
        pytest.skip("the book has not been built (make book)")
    text = built.read_text(encoding="utf-8")
    if "_static/claims/evidence/" not in text:
        pytest.skip("the built page predates the published evidence links; rebuild the book")
    missing = [href for href in local_links(text)
               if not (built.parent / href.split("#")[0].split("?")[0]).resolve().exists()]
    assert not missing


def test_html_tables_group_by_section_and_anchor_every_claim(claims, sources):
    tables = {family: page.claims_table_html(claims, sources, family) for family in "CRB"}
    for family, table in tables.items():
        members = [claim for claim in claims if claim["id"].startswith(family)]
        assert table.count("<tbody>") == len({claim["section"] for claim in members})
        for claim in members:
            assert f'<tr id="{claim["id"].lower()}"' in table
    assert tables["C"].index('id="c41"') < tables["C"].index('id="c42"') < tables["C"].index('id="c43"')


def article_page(tmp_path: Path, claims: list[dict], sources: dict) -> Path:
    """The chapter's tables inside the theme's article element, as the site checker reads a built page."""
    tables = [page.values_table_html(claims)] + [page.claims_table_html(claims, sources, f) for f in "CRB"]
    (tmp_path / "claim-audit.html").write_text('<article class="bd-article">' + "".join(tables) + "</article>",
                                               encoding="utf-8")
    return tmp_path


def test_table_cells_show_no_truncation_mark_and_no_scientific_notation(tmp_path, claims, sources):
    """Hashes in full; the audit record's "..." inside a quotation shown as the editor's "[…]"."""
    import site_check

    assert site_check.bad_table_cells(article_page(tmp_path, claims, sources)) == []
    shortened = [claim["id"] for claim in claims if "..." in claim["excerpt"]]
    assert shortened and all(claim["id"].startswith("C") for claim in claims if claim["id"] in shortened)
    assert "[…]" in page.claims_table_html(claims, sources, "C")


def test_every_hash_is_shown_in_full_beside_its_file(claims, sources):
    tables = "".join(page.claims_table_html(claims, sources, family) for family in "CRB")
    for claim in claims:
        for entry in claim["evidence"]:
            assert f"sha256 {entry['sha256']}</code>" in tables, (claim["id"], entry["path"])


def test_tables_fit_their_column_by_a_fixed_layout(claims, sources):
    """Every table of the chapter has the fixed layout whose columns share the content column's width."""
    for html_text in [page.values_table_html(claims)] + [page.claims_table_html(claims, sources, f) for f in "CRB"]:
        assert '<table class="table claim-audit">' in html_text and "table-layout: fixed" in html_text
        for table in html_text.split("<table")[1:]:
            widths = [int(w) for w in re.findall(r'<col style="width:(\d+)%">', table)]
            assert sum(widths) == 100


def test_article_and_recheck_sections_are_folded_and_name_their_verdicts(claims, sources):
    html_text = page.claims_table_html(claims, sources, "C")
    sections = list(dict.fromkeys(claim["section"] for claim in claims if claim["id"].startswith("C")))
    assert html_text.count('<details class="claim-section">') == len(sections)
    assert "<summary>CUDA Graph: 12 claims; " in html_text
    assert page.REVEAL_SCRIPT in html_text  # a link to a row inside a closed section opens it


def test_a_restated_book_claim_is_marked_with_each_replicate_that_broke_it(claims, sources):
    html_text = page.claims_table_html(claims, sources, "B")
    restated = [claim for claim in claims if claim["broken_by"]]
    assert restated and all(claim["verdict"] == registry.RESTATED for claim in restated)
    assert html_text.count('class="restated"') == len(restated)
    for claim in restated:
        row = html_text[html_text.index(f'<tr id="{claim["id"].lower()}"'):]
        row = row[:row.index("</tr>")]
        assert "<strong>restated</strong>" in row
        for item in claim["broken_by"]:
            assert f"Replicate run {item['run_id']}</strong> breaks it" in row and page.quoted(item["reason"]) in row
            if item["value"] is not None:  # the replicate's value is shown, as the page promises
                assert page.replicate_value(item, claim["our_value"]) and \
                    page.html.escape(page.replicate_value(item, claim["our_value"])) in row


def test_the_chapter_page_keeps_an_anchor_for_every_article_and_recheck_claim(claims):
    index = page.claim_index_html(claims)
    for claim in claims:
        if claim["id"][0] in "CR":
            assert f'<a id="{claim["id"].lower()}" href="{site.claim_link(claim["id"])}">' in index
    assert site.claim_link("C42") == "claim-audit-article.html#c42"
    assert site.claim_link("R17") == "claim-audit-rechecks.html#r17" and site.claim_link("B06") == "claim-audit.html#b06"


def test_article_figures_are_quoted_from_their_statements(claims):
    assert page.figures_not_in_statement(claims) == {}
    frame = page.values_frame(claims)
    assert frame.loc["C12", "article (H100)"] == page.ARTICLE_FIGURES["C12"]
    assert frame.loc["R03", "article (H100)"] == next(c for c in claims if c["id"] == "R03")["article_value"]
    invented = [dict(claim, excerpt="no figure here") if claim["id"] == "C13" else claim for claim in claims]
    assert page.figures_not_in_statement(invented) == {"C13": ["38"]}


def test_verdict_table_counts_every_claim_once(claims):
    table = page.verdict_table(claims)
    total = table.rows[-1]
    assert total[0] == "all" and [int(n) for n in total[-3:]] == [sum(c["id"].startswith(f) for c in claims)
                                                                for f in "CRB"]
    restated = next(row for row in table.rows if row[0] == "restated")
    assert int(restated[-1]) == sum(bool(c["broken_by"]) for c in claims)


@pytest.mark.parametrize("value, text", [(611328.0, "611,328"), (596.0, "596"), (0.50051, "0.5005"),
                                         (3871.63, "3872"), (1.0e-05, "0.00001000"), (-0.0123, "-0.01230")])
def test_numbers_are_written_in_plain_notation(value, text):
    assert page.format_number(value) == text


def test_page_values_count_each_family_and_the_documents(claims, sources):
    values = page.page_values(claims, sources)
    assert (values["count_C"], values["count_R"], values["count_qualify"]) == ("71", "52", "38")
    assert int(values["count_documents"]) < int(values["count_source_keys"])
    assert values["base_url"] == f"`{site.base_url()}`"


def test_run_ids_in_the_values_table_break_only_after_their_date(claims):
    table = page.values_table_html(claims)
    runs = re.findall(r"\d{8}(?:<wbr>)?T\d{6}Z-\w+", table)
    assert runs and all("<wbr>T" in run for run in runs)
