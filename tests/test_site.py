"""The book renders offline: it builds with zero warnings, no page fetches anything from another site,
internal links resolve, and a real headless browser renders the pages, math included, from the vendored MathJax.

A reader trusts it at a glance: every page of the built book, opened in headless Chromium (driven over the DevTools
protocol, `site_check.Browser`), logs no console error; at a 1400 px and a 1280 px window every table fits the
content column and no figure is shrunk so far that its text falls below 9 px; at 390 px (a phone) the page never scrolls sideways,
tables scrolling inside their own box; at every width no code block scrolls sideways (long lines wrap). Every figure is a numbered `<figure>` with a caption, and no table cell
shows a number in scientific notation or a truncation mark.

The book is built once per test session into a temporary folder, or not at all when LAUNCHLAB_BUILT_HTML names an
HTML tree built already (so CI, which builds the book anyway, need not build it twice).
"""
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import site_check

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = "no chromium on PATH (tools/install_browser.sh installs Debian's)"
VIEWPORTS = {"desktop": (1400, 900), "laptop": (1280, 800), "phone": (390, 844)}
WIDE = ("desktop", "laptop")
# Sphinx's warnings read "<where>: WARNING: ..." (or "WARNING: ...", colour codes around it); a kernel's own log
# lines ("[IPKernelApp] WARNING | ...") are not Sphinx warnings and do not fail the build.
SPHINX_WARNING = "WARNING: "
# A chapter page opens with its question, answer and key figure and keeps its argument; full tables and per-shape
# detail live on the chapter's data page. At a 1400 px window, folded sections closed, a chapter page is at most
# this tall (document.body.scrollHeight).
CHAPTER_PAGES = ("ordinary_launches", "graphs", "fusion", "megakernels", "example_a_pointwise", "example_b_jobs")
MAX_CHAPTER_HEIGHT_PX = 12_000


@pytest.fixture(scope="session")
def book_build(tmp_path_factory):
    """(html root, build log); the log is None when the tree was built elsewhere (LAUNCHLAB_BUILT_HTML)."""
    given = os.environ.get("LAUNCHLAB_BUILT_HTML")
    if given:
        return Path(given).resolve(), None  # a relative folder would not give file:// addresses
    out = tmp_path_factory.mktemp("book")
    # The venv's own jupyter-book first, so the test builds with the interpreter running it.
    jb = shutil.which("jupyter-book", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if jb is None:
        pytest.fail("jupyter-book is not installed (requirements.txt)")
    proc = subprocess.run([jb, "build", "-W", "-n", "--keep-going", "--path-output", str(out), str(REPO)],
                          capture_output=True, text=True, timeout=3600)
    return out / "_build" / "html", (proc.returncode, proc.stdout + proc.stderr)


@pytest.fixture(scope="session")
def html(book_build):
    root, log = book_build
    if log is not None and log[0] != 0:
        pytest.fail(f"book build failed (exit {log[0]}):\n{log[1][-5000:]}")
    return root


@pytest.mark.slow
def test_build_passes_without_warnings(book_build):
    root, log = book_build
    if log is None:
        pytest.skip("LAUNCHLAB_BUILT_HTML is set: the book was built outside this session")
    code, text = log
    assert code == 0, text[-5000:]
    assert SPHINX_WARNING not in text, "\n".join(l for l in text.splitlines() if SPHINX_WARNING in l)
    assert (root / "index.html").is_file()


@pytest.mark.slow
def test_no_external_resources(html):
    assert site_check.external_resources(html) == []


@pytest.mark.slow
def test_internal_links_resolve(html):
    assert site_check.broken_links(html) == []


def test_checker_finds_what_it_should(tmp_path):
    """The two checks above are only worth their empty lists if the checker sees problems when they exist."""
    (tmp_path / "s.css").write_text('@import "//fonts.example/f.css"; .a { background: url(missing.png) }')
    (tmp_path / "b.html").write_text('<h1 id="top">B</h1>')
    (tmp_path / "a.html").write_text(
        '<link rel="stylesheet" href="s.css"><link rel="next" href="https://example.org/n.html">'
        '<script src="https://cdn.example/mathjax.js"></script><img src="data:image/png;base64,AA==">'
        '<a href="https://example.org">outside</a><a href="b.html#top">ok</a><a href="#">button</a>'
        '<a href="b.html#gone">stale</a><a href="c.html">missing</a><img srcset="pic.png 2x">')
    external = {r.url for r in site_check.external_resources(tmp_path)}
    assert external == {"//fonts.example/f.css", "https://cdn.example/mathjax.js"}
    broken = {(r.url, r.problem) for r in site_check.broken_links(tmp_path)}
    assert broken == {("missing.png", "missing file"), ("b.html#gone", "missing anchor"),
                      ("c.html", "missing file"), ("pic.png", "missing file")}


# --- a real browser -------------------------------------------------------------------------------------------

def _chromium(page: Path, work: Path, *action: str) -> subprocess.CompletedProcess:
    """Run headless Chromium on a page. Host resolution is switched off, so nothing is ever fetched from a network
    even if a page asked; the net log still records every request the page made. The virtual-time budget lets
    deferred scripts (MathJax) finish before the DOM is dumped or the screenshot taken."""
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={work / 'profile'}",
         "--virtual-time-budget=10000", "--window-size=1200,900", *action, page.as_uri()],
        capture_output=True, text=True, timeout=120)


def _page_requests(net_log: Path) -> set[str]:
    """http(s) URLs requested by the page. A file:// page's origin is opaque, so its requests carry the initiator
    "null"; the browser's own background requests (update checks) carry none or "not an origin"."""
    events = json.loads(net_log.read_text())["events"]
    return {e["params"]["url"] for e in events
            if e.get("params", {}).get("initiator") == "null" and e["params"].get("url", "").startswith("http")}


def _math_page(root: Path) -> Path:
    """The first page, in reading order of file names, that Sphinx gave math to typeset."""
    for page in sorted(root.rglob("*.html")):
        if "_static" not in page.parts and 'class="math notranslate nohighlight"' in page.read_text():
            return page
    pytest.fail("no page of the book has math, so the vendored MathJax is never exercised")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
@pytest.mark.parametrize("which", ["intro", "math"])
def test_browser_renders_page(html, which, tmp_path):
    page = html / "book" / "intro.html" if which == "intro" else _math_page(html)
    assert page.is_file()
    net_log = tmp_path / "net.json"
    dom = _chromium(page, tmp_path, "--dump-dom", f"--log-net-log={net_log}")
    assert dom.returncode == 0, dom.stderr[-3000:]
    assert "<h1" in dom.stdout  # the theme's layout and the page's content are there
    assert _page_requests(net_log) == set()
    # Every math element Sphinx wrote was typeset by the vendored MathJax, without a TeX error.
    n_math = page.read_text().count('class="math notranslate nohighlight"')
    assert dom.stdout.count("<mjx-container") >= n_math
    assert "data-mjx-error" not in dom.stdout
    if n_math:
        assert 'jax="SVG"' in dom.stdout

    shot = tmp_path / f"{which}.png"
    run = _chromium(page, tmp_path, f"--screenshot={shot}")
    assert run.returncode == 0 and shot.is_file(), run.stderr[-3000:]
    width, height = struct.unpack(">II", shot.read_bytes()[16:24])  # the PNG's IHDR
    assert (width, height) == (1200, 900)
    assert shot.stat().st_size > 10_000  # a blank page compresses to a few hundred bytes


@pytest.mark.slow
def test_every_claim_has_an_anchor_in_the_built_chapter(html):
    """A claim's address (its family's page, #c42) lands on its row, and the chapter's page carries every claim's
    anchor too, so that an address written before the families had pages of their own still finds it."""
    from launchlab.claims import registry as claims
    from launchlab.claims import site

    chapter = (html / site.CHAPTER_PAGE).read_text(encoding="utf-8")
    pages = {family: (html / path).read_text(encoding="utf-8") for family, path in site.FAMILY_PAGES.items()}
    registry = claims.load_claims()
    missing = [c["id"] for c in registry if f'id="{claims.claim_anchor(c["id"])}"' not in chapter]
    assert not missing, f"claims without an anchor in the built chapter page: {missing}"
    rowless = [c["id"] for c in registry if f'<tr id="{claims.claim_anchor(c["id"])}"' not in pages[c["id"][0]]]
    assert not rowless, f"claims without a row on their family's page: {rowless}"


@pytest.mark.slow
def test_every_chapter_page_shows_its_accepted_run(html):
    from launchlab.store import evidence

    for stem, run_id in evidence.read_accepted().items():
        assert run_id in (html / "book" / f"{stem}.html").read_text(encoding="utf-8"), stem


# --- every page in a real browser -----------------------------------------------------------------------------

@pytest.fixture(scope="session")
def visits(html):
    """{(page, viewport): {"errors", "layout"}} for every page of the book at every viewport, one browser."""
    if CHROMIUM is None:
        pytest.skip(NO_CHROMIUM)
    pytest.importorskip("websocket", reason="websocket-client is not installed (requirements.txt)")
    results = {}
    with site_check.Browser(CHROMIUM) as browser:
        for page in site_check.pages(html):
            for name, (width, height) in VIEWPORTS.items():
                results[(page.relative_to(html).as_posix(), name)] = browser.visit(page, width, height)
    assert results, "no pages found in the built book"
    return results


@pytest.mark.slow
def test_every_page_logs_no_console_error(visits):
    errors = {f"{page} at {name}": r["errors"] for (page, name), r in visits.items() if r["errors"]}
    assert not errors, "\n".join(f"{where}: {e}" for where, errs in errors.items() for e in errs)


@pytest.mark.slow
def test_tables_figures_and_code_fit_the_content_column_at_1400_and_1280_px(visits):
    problems = {f"{page} at {VIEWPORTS[name][0]} px": site_check.layout_problems(r["layout"], phone=False)
                for (page, name), r in visits.items() if name in WIDE}
    problems = {page: p for page, p in problems.items() if p}
    assert not problems, "\n".join(f"{page}: {p}" for page, ps in problems.items() for p in ps)


@pytest.mark.slow
def test_phone_pages_never_scroll_sideways_and_tables_scroll_in_their_box(visits):
    problems = {page: site_check.layout_problems(r["layout"], phone=True)
                for (page, name), r in visits.items() if name == "phone"}
    problems = {page: p for page, p in problems.items() if p}
    assert not problems, "\n".join(f"{page}: {p}" for page, ps in problems.items() for p in ps)


@pytest.mark.slow
def test_chapter_pages_are_at_most_12000_px_tall_at_1400_px(visits):
    heights = {page: r["layout"]["height"] for (page, name), r in visits.items()
               if name == "desktop" and page.removeprefix("book/").removesuffix(".html") in CHAPTER_PAGES}
    assert len(heights) == len(CHAPTER_PAGES), f"chapter pages not found: {sorted(heights)}"
    tall = {page: h for page, h in heights.items() if h > MAX_CHAPTER_HEIGHT_PX}
    assert not tall, f"chapter pages taller than {MAX_CHAPTER_HEIGHT_PX} px at 1400 px (move detail to the data " \
                     f"page): {tall}"


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_the_browser_check_sees_what_it_should(tmp_path):
    """A duplicated `const`, a console.error, a wide table without its own scroll box, a word broken inside a
    table cell and a code block that scrolls sideways are all reported; a table in a full-width block may be as wide as the block, not wider."""
    pytest.importorskip("websocket", reason="websocket-client is not installed (requirements.txt)")
    page = tmp_path / "bad.html"
    wide = "<table><tr>" + "".join(f"<td>cell_{i:03d}_wide_content</td>" for i in range(40)) + "</tr></table>"
    boxed = '<div style="overflow-x:auto">' + wide + "</div>"
    # A figure drawn 2000 px wide, shown at the column's width: its text would shrink below 9 px.
    shrunk = ('<img style="max-width:100%" src="data:image/svg+xml,%3Csvg xmlns=%27http://www.w3.org/2000/svg%27 '
              'width=%272000%27 height=%2720%27%3E%3C/svg%3E">')
    spanning = ('<div class="full-width" style="width:1000px"><table style="width:1000px"><tr><td>fits</td></tr>'
                '</table><table style="width:1100px"><tr><td>too wide</td></tr></table></div>')
    # a word forced to break inside a narrow fixed column
    broken = ('<table style="table-layout:fixed;width:60px"><tr><td style="overflow-wrap:anywhere">'
              "incomprehensibilities</td></tr></table>")
    # a code line longer than the column, in a block that scrolls, and the same line wrapped (no problem)
    long_line = "int " + "x" * 300 + ";"
    code = (f'<pre style="overflow-x:auto">{long_line}</pre>'
            f'<pre style="white-space:pre-wrap;overflow-wrap:anywhere">{long_line}</pre>')
    page.write_text('<!doctype html><html><head><meta name="viewport" content="width=device-width">'
                    "<script>const X = 1;</script><script>const X = 2;</script>"
                    "<script>console.error('broken')</script></head><body>"
                    f'<article class="bd-article" style="width:700px">{boxed}{wide}{shrunk}{spanning}{broken}{code}</article>'
                    "</body></html>")
    with site_check.Browser(CHROMIUM) as browser:
        desktop = browser.visit(page, 1400, 900)
        phone = browser.visit(page, 390, 844)
    assert any("Identifier 'X' has already been declared" in e for e in desktop["errors"])
    assert any("broken" in e for e in desktop["errors"])
    problems = site_check.layout_problems(desktop["layout"], phone=False)
    assert sum(p.startswith("table") for p in problems) == 3
    assert sum("the full-width block 1000 px" in p for p in problems) == 1 and not any("'fits'" in p for p in problems)
    assert sum("below 9 px" in p for p in problems) == 1
    assert "1 word(s) of a table break inside: incomprehensibilities" in problems
    assert sum(p.startswith("a code block scrolls sideways") for p in problems) == 1
    assert desktop["layout"]["height"] > 0
    problems = site_check.layout_problems(phone["layout"], phone=True)
    assert any("viewport" in p for p in problems)                       # the unboxed table widens the page
    # on a phone a full-width block is no exception: the two tables of 1000 and 1100 px count as well
    assert sum("does not scroll inside a box" in p for p in problems) == 3


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_the_phone_check_measures_against_the_phone_s_own_width(tmp_path):
    """Content 24 px wider than a 390 px phone widens the emulated layout viewport with it (window.innerWidth
    reads 414): the check still reports it, against the phone's 390 px."""
    pytest.importorskip("websocket", reason="websocket-client is not installed (requirements.txt)")
    page = tmp_path / "wide.html"
    page.write_text('<!doctype html><html><head><meta name="viewport" content="width=device-width"></head><body '
                    'style="margin:0"><article class="bd-article"><div style="width:414px">text</div></article>'
                    "</body></html>")
    with site_check.Browser(CHROMIUM) as browser:
        phone = browser.visit(page, 390, 844)
    assert phone["layout"]["viewport"] == 390 and phone["layout"]["page"] == 414
    assert site_check.layout_problems(phone["layout"], phone=True) == ["page is 414 px wide in a 390 px viewport"]


# --- what every page shows --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_every_figure_is_numbered_and_captioned(html):
    """Figures are glued (`glue(name, fig, display=False)`) and placed with `{glue:figure}` and a `:name:`."""
    found = site_check.uncaptioned_figures(html)
    assert not found, "\n".join(f"{r.file}: {r.problem} ({r.url})" for r in found)


@pytest.mark.slow
def test_every_figure_says_what_it_shows_and_opens_at_full_size(html):
    """Alt text that describes the figure (never its file path), and the image a link to its own file."""
    found = site_check.figure_image_problems(html)
    assert not found, "\n".join(f"{r.file}: {r.problem} ({r.url})" for r in found)


def test_figure_check_finds_what_it_should(tmp_path):
    (tmp_path / "p.html").write_text(
        '<article class="bd-article">'
        '<figure><a href="_images/a.png"><img src="_images/a.png" alt="Device time per call over the copy at six '
        'shapes"></a><figcaption><span class="caption-number">Figure 1 </span>A</figcaption></figure>'
        '<figure><img src="_images/b.png" alt="_images/b.png"><figcaption>B</figcaption></figure>'
        '<figure><a href="_images/x.png"><img src="_images/c.png" alt="GB/s of the copy and the kernels"></a>'
        '</figure></article>')
    found = {(r.url, r.problem.split(":")[0]) for r in site_check.figure_image_problems(tmp_path)}
    assert found == {("_images/b.png", "alt text says nothing of the figure"),
                     ("_images/b.png", "not a link to its own image file"),
                     ("_images/c.png", "not a link to its own image file")}


@pytest.mark.slow
def test_no_table_cell_shows_scientific_notation_or_a_truncation_mark(html):
    found = site_check.bad_table_cells(html)
    assert not found, "\n".join(f"{r.file}: {r.problem}: {r.url!r}" for r in found)
