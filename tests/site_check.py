"""Checks on a built HTML tree (`_build/html`): the book must render offline.

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


# --- what a reader sees: figures, table cells (static), and a real browser (console, widths) ----------------------

class _ContentParser(HTMLParser):
    """The images of a page's article with whether each sits in a numbered, captioned <figure>, and the text of
    every table cell. The article is the theme's `<article class="bd-article">` (the page's own content)."""

    VOID = {"img", "br", "hr", "meta", "link", "input", "source", "wbr", "area", "col", "embed", "param", "track"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, set[str]]] = []
        self.images: list[tuple[str, int]] = []          # (src, index of the enclosing <figure> or -1)
        self.image_details: list[dict] = []              # {"src", "alt" (None: no attribute), "link": <a href> or None}
        self._links: list[str | None] = []                # hrefs of the open <a> elements
        self.figures: list[dict] = []                    # {"caption": bool, "number": bool}
        self.cells: list[str] = []
        self._cell: list[str] | None = None
        self._figure_stack: list[int] = []

    def _in_article(self) -> bool:
        return any(tag == "article" and "bd-article" in classes for tag, classes in self.stack)

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        classes = set(a.get("class", "").split())
        if tag not in self.VOID:
            self.stack.append((tag, classes))
        if tag == "a":
            self._links.append(a.get("href"))
        if not self._in_article():
            return
        if tag == "figure":
            self.figures.append({"caption": False, "number": False})
            self._figure_stack.append(len(self.figures) - 1)
        elif tag == "figcaption" and self._figure_stack:
            self.figures[self._figure_stack[-1]]["caption"] = True
        elif tag == "span" and "caption-number" in classes and self._figure_stack:
            self.figures[self._figure_stack[-1]]["number"] = True
        elif tag == "img":
            self.images.append((a.get("src", ""), self._figure_stack[-1] if self._figure_stack else -1))
            self.image_details.append({"src": a.get("src", ""), "alt": dict(attrs).get("alt"),
                                       "link": self._links[-1] if self._links else None})
        elif tag in ("td", "th") and self._cell is None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append(" ".join("".join(self._cell).split()))
            self._cell = None
        if tag == "a" and self._links:
            self._links.pop()
        if tag in self.VOID or tag not in (t for t, _ in self.stack):
            return                          # <img ... /> ends nothing; a stray end tag neither
        if tag == "figure" and self._figure_stack and self._in_article():
            self._figure_stack.pop()
        while self.stack:
            open_tag, _ = self.stack.pop()
            if open_tag == tag:
                break

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def pages(root: str | Path) -> list[Path]:
    """Every page of a built book: not the search and index pages, nor a redirect (Sphinx's index.html sends the
    reader to the root page), which have no article of their own, nor myst-nb's execution reports."""
    root = Path(root)
    return [p for p in _pages(root) if p.name not in ("search.html", "genindex.html", "py-modindex.html")
            and p.relative_to(root).parts[0] != "reports"
            and not any(where == "meta refresh" for where, _ in _parse(p).links)]


def _content(page: Path) -> _ContentParser:
    parser = _ContentParser()
    parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    return parser


def uncaptioned_figures(root: str | Path) -> list[Ref]:
    """Images in a page's article that are not in a numbered `<figure>` with a `<figcaption>` (should be empty).
    Sphinx writes a named figure as <figure><img><figcaption><p><span class="caption-number">Figure 3 </span>..."""
    root = Path(root)
    found = []
    for page in pages(root):
        parsed = _content(page)
        for src, index in parsed.images:
            if index < 0:
                problem = "not in a <figure>"
            elif not parsed.figures[index]["caption"]:
                problem = "figure without a caption"
            elif not parsed.figures[index]["number"]:
                problem = "figure without a number (no :name:?)"
            else:
                continue
            found.append(Ref(page.relative_to(root).as_posix(), "img src", src[:80], problem))
    return found


FILE_NAME = re.compile(r"\.(?:png|svg|jpe?g|gif|webp)\b", re.I)   # a file name ends so; "GB/s" in a sentence is fine
MIN_ALT_WORDS = 5


def figure_image_problems(root: str | Path) -> list[Ref]:
    """Images in a page's article whose alt text does not say what they show (missing, too short, or a file name
    or path, which is what Sphinx writes when a figure has none) or that are not a link to their own file (the
    link opens a figure at full size when a phone reader taps it). Should be empty."""
    root = Path(root)
    found = []
    for page in pages(root):
        rel = page.relative_to(root).as_posix()
        for image in _content(page).image_details:
            alt = (image["alt"] or "").strip()
            if not alt or FILE_NAME.search(alt) or len(alt.split()) < MIN_ALT_WORDS:
                found.append(Ref(rel, "img alt", image["src"][-60:], f"alt text says nothing of the figure: {alt[:60]!r}"))
            if image["link"] is None or urlsplit(image["link"]).path != urlsplit(image["src"]).path:
                found.append(Ref(rel, "img src", image["src"][-60:], "not a link to its own image file"))
    return found


SCIENTIFIC = re.compile(r"(?<![\w.])[+-]?\d+(?:\.\d+)?[eE][+-]?\d+(?![\w.])")
TRUNCATION = ("…", "...")
# An editor's ellipsis inside a quotation, in square brackets, marks words the quoted source has and the quote
# leaves out: that is not a cell cut short.
EDITORIAL_ELLIPSIS = re.compile(r"\[(?:…|\.\.\.)\]")


def bad_table_cells(root: str | Path) -> list[Ref]:
    """Table cells showing a number in scientific notation or a truncation mark (should be empty); "[…]" in a
    quotation is an editor's ellipsis, allowed."""
    root = Path(root)
    found = []
    for page in pages(root):
        for cell in _content(page).cells:
            if SCIENTIFIC.search(cell):
                found.append(Ref(page.relative_to(root).as_posix(), "table cell", cell[:80], "scientific notation"))
            elif any(mark in EDITORIAL_ELLIPSIS.sub("", cell) for mark in TRUNCATION):
                found.append(Ref(page.relative_to(root).as_posix(), "table cell", cell[:80], "truncation mark"))
    return found


# The flags every headless run uses: nothing is fetched from a network (host resolution fails), no background
# traffic, a fresh profile.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--host-resolver-rules=MAP * ~NOTFOUND")

# Run in the page after it loaded (and MathJax typeset): the widths the layout checks need.
_LAYOUT_JS = r"""
(async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const article = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
  const style = getComputedStyle(article);
  const column = article.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  const scroller = (el) => {
    for (let p = el.parentElement; p && p !== article; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll') return p;
    }
    return null;
  };
  const tables = [...article.querySelectorAll('table')].map((t, i) => {
    const box = scroller(t);
    const wide = t.closest('.full-width');  // the theme's full-width block, which spans the margin too
    return {index: i, width: t.getBoundingClientRect().width,
            text: (t.querySelector('caption, th, td') || t).textContent.trim().slice(0, 60),
            box: box ? box.getBoundingClientRect().width : null,
            room: wide ? wide.getBoundingClientRect().width : null};
  });
  // words of a table broken inside (across two lines): every word of three letters or more in a cell, where the
  // page shows it (not folded away) and it is not code or a hash (which may break anywhere)
  const split = [];
  for (const cell of article.querySelectorAll('th, td')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.parentElement.closest('details:not([open]), code, .sha256')) continue;
      for (const m of node.data.matchAll(/[A-Za-z]{3,}/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (tops.size > 1) split.push(m[0]);
      }
    }
  }
  // code blocks that scroll sideways (a line end hidden off the block's edge), where the page shows them
  const code = [...article.querySelectorAll('pre')].filter(pre => !pre.closest('details:not([open])')
    && pre.scrollWidth > pre.clientWidth + 1).map(pre => pre.textContent.trim().split('\n')[0].slice(0, 60));
  const images = [...article.querySelectorAll('img')].filter(im => im.naturalWidth > 0).map(im => ({
    src: im.getAttribute('src').slice(-40), natural: im.naturalWidth, shown: im.getBoundingClientRect().width}));
  return {column, tables, images, split, code, viewport: window.innerWidth,
          page: Math.max(document.documentElement.scrollWidth, document.body.scrollWidth),
          height: document.body.scrollHeight};
})()
"""


class Browser:
    """Headless Chromium driven over the DevTools protocol (the `websocket-client` package): open a page at a
    window size and get its console errors, uncaught exceptions and layout widths. One browser serves many pages.

        with Browser("/usr/bin/chromium") as browser:
            result = browser.visit(Path("_build/html/book/intro.html"), width=1400, height=900)
            result["errors"], result["layout"]
    """

    def __init__(self, executable: str, timeout: float = 60.0) -> None:
        self.executable = executable
        self.timeout = timeout

    def __enter__(self) -> "Browser":
        import subprocess
        import tempfile
        import time

        import websocket

        self._profile = Path(tempfile.mkdtemp(prefix="launchlab-chromium-"))
        self._proc = subprocess.Popen(
            [self.executable, *CHROMIUM_FLAGS, "--remote-debugging-port=0", "--remote-allow-origins=*",
             f"--user-data-dir={self._profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        active = self._profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while not (active.is_file() and len(active.read_text().split()) >= 2):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError(f"chromium did not start: {self._proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.05)
        port, path = active.read_text().split()[:2]
        self._ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}", timeout=self.timeout,
                                               suppress_origin=True)
        self._id = 0
        return self

    def __exit__(self, *exc) -> None:
        ws = getattr(self, "_ws", None)
        if ws is not None:
            try:
                self._send("Browser.close")
            except Exception:
                pass
            ws.close()
        try:
            self._proc.wait(5)  # Browser.close lets it exit on its own, profile written
        except Exception:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except Exception:
                self._proc.kill()
        # Chromium's helper processes may still write into the profile for a moment after the browser exits
        # (a race seen as "Directory not empty: 'Default'"): retry, then leave the temporary folder behind.
        import shutil
        import time

        for _ in range(20):
            shutil.rmtree(self._profile, ignore_errors=True)
            if not self._profile.exists():
                break
            time.sleep(0.1)

    def _send(self, method: str, params: dict | None = None, session: str | None = None, events: list | None = None):
        """Send one command and return its result; events that arrive meanwhile go to `events`."""
        import json
        import time

        self._id += 1
        message = {"id": self._id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._ws.send(json.dumps(message))
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            reply = json.loads(self._ws.recv())
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if events is not None and "method" in reply:
                events.append(reply)
        raise TimeoutError(method)

    def _wait_for(self, name: str, session: str, events: list) -> None:
        import json
        import time

        if any(e["method"] == name and e.get("sessionId") == session for e in events):
            return
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            event = json.loads(self._ws.recv())
            if "method" in event:
                events.append(event)
                if event["method"] == name and event.get("sessionId") == session:
                    return
        raise TimeoutError(name)

    def visit(self, page: Path | str, width: int = 1400, height: int = 900, mobile: bool | None = None) -> dict:
        """Load a page in a fresh tab at width x height (a phone's viewport when mobile, default: width < 600) and
        return {"errors": [console errors and uncaught exceptions], "layout": widths from _LAYOUT_JS}."""
        url = page.resolve().as_uri() if isinstance(page, Path) else page
        events: list = []
        target = self._send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self._send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        try:
            for domain in ("Page", "Runtime", "Log"):
                self._send(f"{domain}.enable", session=session, events=events)
            self._send("Emulation.setDeviceMetricsOverride",
                       {"width": width, "height": height, "deviceScaleFactor": 1,
                        "mobile": width < 600 if mobile is None else mobile}, session=session, events=events)
            self._send("Page.navigate", {"url": url}, session=session, events=events)
            self._wait_for("Page.loadEventFired", session, events)
            layout = self._send("Runtime.evaluate", {"expression": _LAYOUT_JS, "awaitPromise": True,
                                                     "returnByValue": True}, session=session, events=events)
            value = layout.get("result", {}).get("value")
            if value is not None:
                # A phone's emulated layout viewport grows to fit content wider than the device (window.innerWidth
                # then reads 414 on a 390 px phone), so the page is measured against the device's own width.
                value["layout_viewport"], value["viewport"] = value["viewport"], width
        finally:
            self._send("Target.closeTarget", {"targetId": target}, events=events)
        return {"errors": _console_errors(e for e in events if e.get("sessionId") == session), "layout": value}


def _console_errors(events) -> list[str]:
    """The errors a reader's console would show: uncaught exceptions, console.error, and error log entries (a
    failed load, a blocked request)."""
    errors = []
    for event in events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = (details.get("exception") or {}).get("description") or details.get("text", "")
            errors.append(f"exception: {text.splitlines()[0] if text else details} ({details.get('url', '')}:"
                          f"{details.get('lineNumber', '?')})")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            args = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            errors.append(f"console.{params['type']}: {args}")
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            errors.append(f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}".rstrip())
    return errors


# Figures are drawn 780 px wide with 9 pt (12.5 px) as their smallest text (present/figures.py): shown at less than
# this fraction of their drawn width, that text falls below 9 px.
MIN_FIGURE_SCALE = 9 / 12.5


def layout_problems(layout: dict, phone: bool) -> list[str]:
    """What is wrong with a page's widths. On a desktop window every table fits the content column (one in a
    full-width block, that block) and no figure is shrunk so far that its text falls below 9 px; on a phone the
    page never scrolls sideways, and a table wider than the column scrolls inside its own box. On both, no word of
    a table breaks inside itself, and no code block scrolls sideways."""
    problems = []
    for first_line in layout.get("code", []):
        problems.append(f"a code block scrolls sideways (it starts {first_line!r})")
    if layout.get("split"):
        words = sorted(set(layout["split"]))
        problems.append(f"{len(layout['split'])} word(s) of a table break inside: {', '.join(words[:8])}")
    if not phone:
        for image in layout.get("images", []):
            if image["shown"] < MIN_FIGURE_SCALE * image["natural"]:
                problems.append(f"figure ...{image['src']} is drawn {image['natural']} px wide but shown at "
                                f"{image['shown']:.0f} px: its text is below 9 px (figures.figure() draws 780 px)")
    column = layout["column"]
    if phone and layout["page"] > layout["viewport"] + 1:
        problems.append(f"page is {layout['page']:.0f} px wide in a {layout['viewport']} px viewport")
    for table in layout["tables"]:
        room = max(column, table.get("room") or 0) if not phone else column
        if table["width"] <= room + 1:
            continue
        if not phone:
            problems.append(f"table {table['index']} ({table['text']!r}) is {table['width']:.0f} px wide, "
                            f"the {'full-width block' if room > column else 'column'} {room:.0f} px")
        elif table["box"] is None or table["box"] > column + 1:
            problems.append(f"table {table['index']} ({table['text']!r}) is {table['width']:.0f} px wide and "
                            f"does not scroll inside a box of the column's width ({column:.0f} px)")
    return problems
