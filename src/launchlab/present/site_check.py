"""Checks on a built HTML tree (`_build/html`): the book must render offline (SPEC §7).

Two questions, answered from the files alone (standard library only):
- `external_resources`: what would a browser fetch from another site while rendering a page?  Scripts,
  stylesheets, icons, preloads, images, frames, media and CSS `url(...)`/`@import` count; an `<a href>` to
  another site is navigation, which the reader chooses, so it is allowed.
- `broken_links`: which local references point nowhere?  An `<a href>` to a missing file or to a `#fragment`
  no element of the target page carries, and a local resource (script, stylesheet, image, CSS url) that is
  missing.

Pages are every `*.html` outside `_static/` (which holds theme templates such as `webpack-macros.html`,
never served as pages) and `_sources/`; stylesheets are every `*.css` in the tree.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# <link rel> values that make the browser fetch the target; others (next, prev, index, search, canonical,
# alternate) only describe a relation.
FETCHING_RELS = {"stylesheet", "icon", "shortcut", "apple-touch-icon", "mask-icon", "preload", "modulepreload",
                 "prefetch", "preconnect", "dns-prefetch", "manifest", "prerender"}
# Attributes whose URL is fetched on any element that has them (src: script, img, iframe, source, embed...).
FETCHING_ATTRS = {"src", "poster"}
CSS_URL = re.compile(r"""url\(\s*(['"]?)(.*?)\1\s*\)|@import\s+(['"])(.*?)\3""", re.I | re.S)
SKIPPED_DIRS = {"_static", "_sources"}


@dataclass(frozen=True)
class Ref:
    """One reference found in the tree: the file it is in (relative to the root), what holds it, the URL and,
    for a broken one, what is wrong ("missing file" or "missing anchor")."""
    file: str
    where: str
    url: str
    problem: str = ""


def is_external(url: str) -> bool:
    """http(s), any other scheme with a host, or protocol-relative `//host/...`; not data:, mailto:, javascript:."""
    return bool(urlsplit(url.strip()).netloc)


def is_local(url: str) -> bool:
    """A path in the tree (relative or absolute), possibly with a fragment; no scheme and no host."""
    parts = urlsplit(url.strip())
    return not parts.scheme and not parts.netloc


class _PageParser(HTMLParser):
    """Collects a page's ids, its links (<a href>), the URLs it fetches and the CSS it carries inline."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []      # (where, url)
        self.fetches: list[tuple[str, str]] = []    # (where, url)
        self.css: list[tuple[str, str]] = []        # (where, css text)
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v for k, v in attrs if v is not None}
        # Fragments resolve to an element id, or to the name of an <a> (older anchors).
        self.ids.update(a[k] for k in ("id", "name") if k in a and (k == "id" or tag == "a"))
        if tag == "a" and "href" in a:
            self.links.append(("a href", a["href"]))
        if tag == "link" and "href" in a and FETCHING_RELS & set(a.get("rel", "").lower().split()):
            self.fetches.append((f"link rel={a.get('rel')}", a["href"]))
        for key in FETCHING_ATTRS & a.keys():
            self.fetches.append((f"{tag} {key}", a[key]))
        if "srcset" in a:
            self.fetches += [(f"{tag} srcset", c.split()[0]) for c in a["srcset"].split(",") if c.strip()]
        if tag == "object" and "data" in a:
            self.fetches.append(("object data", a["data"]))
        if tag == "meta" and a.get("http-equiv", "").lower() == "refresh":
            # Sphinx's index.html is such a redirect; its target must exist.
            target = re.search(r"url\s*=\s*(\S+)", a.get("content", ""), re.I)
            if target:
                self.links.append(("meta refresh", target.group(1).strip("'\"")))
        if "style" in a:
            self.css.append((f"{tag} style", a["style"]))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.css.append(("style", data))


def _parse(path: Path) -> _PageParser:
    parser = _PageParser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser


def _css_urls(css: str) -> list[str]:
    """The URLs of a stylesheet's url(...) and @import "..." (empty url() left out)."""
    return [url for m in CSS_URL.finditer(css) if (url := m.group(2) or m.group(4))]


def _pages(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.html") if p.relative_to(root).parts[0] not in SKIPPED_DIRS)


def _fetched(root: Path) -> list[Ref]:
    """Every URL a browser would fetch while rendering the pages, with the stylesheets' own url()s."""
    refs = []
    for page in _pages(root):
        parsed = _parse(page)
        rel = page.relative_to(root).as_posix()
        refs += [Ref(rel, where, url) for where, url in parsed.fetches]
        refs += [Ref(rel, f"{where} url()", url) for where, css in parsed.css for url in _css_urls(css)]
    for sheet in sorted(root.rglob("*.css")):
        rel = sheet.relative_to(root).as_posix()
        refs += [Ref(rel, "css url()", url) for url in _css_urls(sheet.read_text(encoding="utf-8", errors="replace"))]
    return refs


def external_resources(root: str | Path) -> list[Ref]:
    """References to resources on other sites that rendering a page would fetch (should be empty)."""
    return [r for r in _fetched(Path(root)) if is_external(r.url)]


def _resolve(root: Path, file: str, url: str) -> tuple[Path, str]:
    """The file a local URL names, seen from `file`, and its fragment (both percent-decoded)."""
    parts = urlsplit(url.strip())
    base = root if parts.path.startswith("/") else (root / file).parent
    target = (base / unquote(parts.path).lstrip("/")) if parts.path else root / file
    return target, unquote(parts.fragment)


def broken_links(root: str | Path) -> list[Ref]:
    """Local links and resources that point to a missing file, or to a fragment missing from its page."""
    root = Path(root)
    ids: dict[Path, set[str]] = {}   # each target page parsed once
    broken = []
    for r in _fetched(root):
        if is_local(r.url) and urlsplit(r.url).path and not _resolve(root, r.file, r.url)[0].is_file():
            broken.append(Ref(r.file, r.where, r.url, "missing file"))
    for page in _pages(root):
        rel = page.relative_to(root).as_posix()
        for where, url in _parse(page).links:
            if not is_local(url):
                continue
            target, fragment = _resolve(root, rel, url)
            if target.is_dir():
                target = target / "index.html"
            if not target.is_file():
                broken.append(Ref(rel, where, url, "missing file"))
                continue
            # An empty fragment ("#") is a theme's button, not a link to an anchor.
            if fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target] = _parse(target).ids
                if fragment not in ids[target]:
                    broken.append(Ref(rel, where, url, "missing anchor"))
    return broken
