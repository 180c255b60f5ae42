"""Where the claim audit lives on the published site, and the evidence files it carries there.

The site's public address is `html.baseurl` in `_config.yml`, the one place to change it. Every absolute URL
of the exports is built from it: the address of a claim's row, and of each evidence file. The evidence files a
claim cites are copied (with their run's manifest.json) under `book/_static/claims/evidence/<RUN_ID>/`, which
Sphinx copies into the built site's `_static/`, so every evidence link of the table opens the very file. The
copies are regenerated whenever the chapter executes and are not committed.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from launchlab.claims.registry import claim_anchor, run_file_parts
from launchlab.store.evidence import MANIFEST, REPO_ROOT

CONFIG_FILE = Path("_config.yml")
CITATION_FILE = Path("CITATION.cff")
CHAPTER_PAGE = "book/claim-audit.html"  # the chapter's address relative to the root of the built site
# The page that holds each family's table, beside the chapter's page: the book's own claims on the chapter's page,
# the article's and the rechecks' on pages of their own. The chapter's page also lists every claim by identifier,
# with its anchor, so that an address written before the split (claim-audit.html#c42) still finds the claim.
FAMILY_PAGES = {"B": CHAPTER_PAGE, "C": "book/claim-audit-article.html", "R": "book/claim-audit-rechecks.html"}
DOWNLOAD_DIRECTORY = Path("book") / "_static" / "claims"  # the chapter's CSV and JSON, and the evidence copies
SITE_DIRECTORY = "_static/claims"  # where Sphinx puts DOWNLOAD_DIRECTORY in the built site
PUBLISHED_EVIDENCE = "evidence"  # evidence copies, inside DOWNLOAD_DIRECTORY
IGNORE_COPIES = "# evidence copies written when the claim-audit chapter executes; never committed\n*\n!.gitignore\n"


def base_url(repo_root: Path = REPO_ROOT) -> str:
    """The site's public address (html.baseurl of _config.yml): https, ending in '/'."""
    config = yaml.safe_load((Path(repo_root) / CONFIG_FILE).read_text(encoding="utf-8"))
    url = str((config.get("html") or {}).get("baseurl") or "")
    if not (url.startswith("https://") and url.endswith("/")):
        raise ValueError(f"html.baseurl in {CONFIG_FILE} must be an https address ending in '/', not {url!r}")
    return url


def claim_page(claim_id: str) -> str:
    """The page that holds a claim's row, relative to the root of the built site."""
    return FAMILY_PAGES[claim_id[0]]


def claim_url(base: str, claim_id: str) -> str:
    return f"{base}{claim_page(claim_id)}#{claim_anchor(claim_id)}"


def claim_link(claim_id: str) -> str:
    """The link from any page of the book (they sit side by side in book/) to a claim's row."""
    return f"{claim_page(claim_id).rsplit('/', 1)[-1]}#{claim_anchor(claim_id)}"


def published_path(evidence_path: str) -> str:
    """'evidence/runs/<RUN_ID>/<file>' -> 'evidence/<RUN_ID>/<file>', its place inside DOWNLOAD_DIRECTORY."""
    run_id, inside_run = run_file_parts(evidence_path)
    return f"{PUBLISHED_EVIDENCE}/{run_id}/{inside_run}"


def evidence_url(base: str, evidence_path: str) -> str:
    return f"{base}{SITE_DIRECTORY}/{published_path(evidence_path)}"


def manifest_url(base: str, run_id: str) -> str:
    return f"{base}{SITE_DIRECTORY}/{PUBLISHED_EVIDENCE}/{run_id}/{MANIFEST}"


def page_relative(site_path: str) -> str:
    """A link from the chapter's page to a path relative to the site root."""
    depth = CHAPTER_PAGE.count("/")
    return "../" * depth + site_path


def evidence_link(evidence_path: str) -> str:
    """The link the chapter's table gives an evidence file (relative, so it works on any host and offline)."""
    return page_relative(f"{SITE_DIRECTORY}/{published_path(evidence_path)}")


def cited_files(claims: list[dict]) -> list[str]:
    """Every evidence path the claims cite, and the manifest.json of each run they cite, sorted."""
    paths = {entry["path"] for claim in claims for entry in claim["evidence"]}
    runs = {run_file_parts(path)[0] for path in paths}
    return sorted(paths | {f"evidence/runs/{run_id}/{MANIFEST}" for run_id in runs})


def publish_evidence(claims: list[dict], repo_root: Path = REPO_ROOT, directory: Path | None = None) -> Path:
    """Copy every cited evidence file (and its run's manifest) under `directory`/evidence, afresh.

    `directory` defaults to the repository's DOWNLOAD_DIRECTORY, whose contents Sphinx copies to SITE_DIRECTORY.
    """
    target = Path(directory or Path(repo_root) / DOWNLOAD_DIRECTORY) / PUBLISHED_EVIDENCE
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    (target / ".gitignore").write_text(IGNORE_COPIES, encoding="utf-8")
    for path in cited_files(claims):
        copy = target.parent / published_path(path)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(repo_root) / path, copy)
    return target


def book_citation(repo_root: Path = REPO_ROOT) -> dict:
    """Title, authors, version, release date, address and licences of the book, as CITATION.cff states them."""
    cff = yaml.safe_load((Path(repo_root) / CITATION_FILE).read_text(encoding="utf-8"))
    authors = ", ".join(author.get("name") or f"{author['given-names']} {author['family-names']}"
                        for author in cff["authors"])
    licences = cff["license"] if isinstance(cff["license"], list) else [cff["license"]]
    return {"title": cff["title"], "authors": authors, "version": str(cff["version"]),
            "date": str(cff["date-released"]), "url": cff["url"], "licenses": licences}
