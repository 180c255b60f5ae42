"""Tables for chapter pages: readable headers with units, numbers at a sensible precision, no elision.

How a chapter uses it (the notebook cell's last expression is the returned `Table`; myst-nb shows its HTML):

    from launchlab.present import tables
    rows = [{"shape": "4096x4096", "variant": "fused", "event_us": summary, "blocks": 4096}, ...]
    tables.page_table(rows, index=["shape", "variant"], units={"blocks": "blocks"},
                      caption="Warm-L2 time per invocation.")

- A column of summary dicts ({"median", "p10", "p90", "n"}; a ratio adds "ci_low", "ci_high") renders as
  `12.3 [11.9–12.8]`; the note under the table says what the brackets are ("brackets: p10–p90 over 21 rounds"
  or "brackets: 95 % bootstrap interval of the median").  `median_with_band(summary, kind)` formats one cell.
- Headers: snake_case becomes words, a unit suffix becomes a unit in parentheses ("event_us" -> "Event (µs)");
  `units={"column": "unit"}` adds one; `headers={"column": "Exact header"}` overrides.
- Integers (counts, seeds, ids) print as integers; times keep 3 significant figures; ratios 2 decimals.
- Nothing is elided: a table longer than `max_rows` is all in the page, its first PREVIEW_ROWS rows shown and a
  toggle under it for the rest; `csv="name"` also writes
  the full table as numbers to `_static/tables/name.csv` (a summary column as its median and bounds, each a
  column with the unit in its header) and links it under the table.
- A column empty in every row is left out; a group label (an index column before the last) shows on the first
  row of its group only.
- The HTML is wrapped in `<div class="table-wrapper">` (book/_static/launchlab.css), which scrolls on a phone.
"""
from __future__ import annotations

import hashlib
import html
import math
import numbers
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

BAND = "p10_p90"          # the spread of the rounds: p10 and p90
CI = "ci"                 # the 95 % bootstrap interval of the median (a ratio summary's ci_low, ci_high)
MISSING = "—"            # a cell with no value (not a truncation mark)
EN_DASH = "–"

# Suffixes of snake_case names that are units: "event_us" -> "Event (µs)".
UNIT_SUFFIXES = {"us": "µs", "ns": "ns", "ms": "ms", "s": "s", "gbs": "GB/s", "mb": "MB", "mib": "MiB",
                 "kib": "KiB", "gib": "GiB", "bytes": "bytes", "pct": "%", "ghz": "GHz", "mhz": "MHz"}
# Words kept as written when they start a header (capitalising them would misspell a name).
KEEP_CASE = {"cupy", "numpy", "nvcc", "ptxas", "sm", "ncu", "torch"}
# Words whose spelling in a header is fixed.
SPELLING = {"gbs": "GB/s", "us": "µs", "l2": "L2", "sm": "SM", "sms": "SMs", "cudnn": "cuDNN", "id": "ID",
            "cuda": "CUDA", "dram": "DRAM", "gpu": "GPU", "cpu": "CPU", "ci": "CI", "p10": "p10", "p90": "p90"}


# --- numbers ---------------------------------------------------------------------------------------------------

def _is_missing(value) -> bool:
    if value is None:
        return True
    try:
        return bool(isinstance(value, numbers.Real) and math.isnan(value))
    except TypeError:
        return False


def _is_empty(value) -> bool:
    """No value at all: missing, or an empty string (a cell left blank)."""
    return _is_missing(value) or (isinstance(value, str) and not value.strip())


def decimals_for(value: float, digits: int = 3) -> int:
    """Decimals that give `digits` significant figures, never fewer than 0 (1234.5 -> 0, 12.34 -> 1, 0.0123 -> 4)."""
    if value == 0 or not math.isfinite(value):
        return 0
    return max(0, digits - 1 - math.floor(math.log10(abs(value))))


def fmt_sig(value, digits: int = 3) -> str:
    """`digits` significant figures in plain notation; an integer part is never rounded away (1234.5 -> "1235")."""
    if _is_missing(value):
        return MISSING
    value = float(value)
    return f"{value:.{decimals_for(value, digits)}f}"


def fmt_int(value, grouping: bool = False) -> str:
    """An integer as an integer: 20261029 -> "20261029" (a seed), with grouping "1,048,576" (a count)."""
    if _is_missing(value):
        return MISSING
    if isinstance(value, float) and not value.is_integer():
        raise ValueError(f"{value!r} is not an integer")
    return f"{int(value):,}" if grouping else str(int(value))


def fmt_fixed(value, decimals: int = 2) -> str:
    """A fixed number of decimals (ratios: 2 or 3)."""
    if _is_missing(value):
        return MISSING
    return f"{float(value):.{decimals}f}"


def fmt_number(value, kind: str = "sig", digits: int | None = None) -> str:
    """One number by kind: "time"/"sig" (3 significant figures, `digits` overrides), "ratio" (2 decimals),
    "pct" (1 decimal), "int" (plain integer, seeds and ids), "count" (integer with thousands grouping)."""
    if kind in ("time", "sig"):
        return fmt_sig(value, digits or 3)
    if kind == "ratio":
        return fmt_fixed(value, 2 if digits is None else digits)
    if kind == "pct":
        return fmt_fixed(value, 1 if digits is None else digits)
    if kind == "int":
        return fmt_int(value)
    if kind == "count":
        return fmt_int(value, grouping=True)
    raise ValueError(f"unknown number kind {kind!r}")


def median_with_band(summary: Mapping, kind: str = BAND, digits: int | None = None, number: str | None = None) -> str:
    """`12.3 [11.9–12.8]`: the median and, in brackets, p10–p90 (kind="p10_p90") or the 95 % bootstrap interval of
    the median (kind="ci", a ratio summary's ci_low/ci_high). All three share the median's decimals: 3 significant
    figures for a time (number="time", the default for kind p10_p90), 2 decimals for a ratio (number="ratio", the
    default for kind ci); `digits` overrides the figures or decimals. Without `digits`, a ratio's interval gets the
    decimals that keep its ends apart and each on its side of 1 (`ci_places`)."""
    if summary is None or _is_missing(summary.get("median")):
        return MISSING
    low_key, high_key = {BAND: ("p10", "p90"), CI: ("ci_low", "ci_high")}[kind]
    number = number or ("time" if kind == BAND else "ratio")
    median = float(summary["median"])
    if number in ("time", "sig"):
        places = decimals_for(median, digits or 3)
    else:
        places = {"ratio": 2, "pct": 1}.get(number, 2) if digits is None else digits
    low, high = summary.get(low_key), summary.get(high_key)
    if _is_missing(low) or _is_missing(high):
        return f"{median:.{places}f}"
    low, high = float(low), float(high)
    if digits is None:  # a narrow interval gets the decimals that tell its ends apart, never "1.05 [1.05–1.05]"
        threshold = 1.0 if kind == CI and number == "ratio" else None   # a ratio's interval keeps its side of 1
        places = _places_that_read_true(low, high, places, most=max(places, 4), threshold=threshold)
    return f"{median:.{places}f} [{low:.{places}f}{EN_DASH}{high:.{places}f}]"


def ci_places(summary: Mapping, threshold: float | None = 1.0, most: int = 4) -> int:
    """The decimals (2 up to `most`) at which a ratio's 95 % interval reads true: its two ends print apart
    (never "[1.05–1.05]") and, against `threshold`, an end strictly on one side of it never prints on it or
    beyond it (a low end of 1.0976 is not "1.10" against 1.10; 0.9996 is not "1.00" against 1)."""
    return _places_that_read_true(float(summary["ci_low"]), float(summary["ci_high"]), 2, most, threshold)


def _places_that_read_true(low: float, high: float, places: int, most: int, threshold: float | None) -> int:
    """From `places` up to `most`: the first number of decimals at which low and high print apart (unless equal)
    and neither prints on or across `threshold` when it lies strictly on one side of it."""
    def misleads(places: int) -> bool:
        apart = low == high or f"{low:.{places}f}" != f"{high:.{places}f}"
        crosses = threshold is not None and any(
            (end < threshold) != (round(end, places) < threshold) or (end > threshold) != (round(end, places) > threshold)
            for end in (low, high))
        return not apart or crosses

    while places < most and misleads(places):
        places += 1
    return places


def bracket_note(kind: str = BAND, rounds: int | None = None) -> str:
    """What the brackets of a table mean, for its caption or footnote."""
    if kind == BAND:
        return f"brackets: p10{EN_DASH}p90 over {rounds} rounds" if rounds else f"brackets: p10{EN_DASH}p90 of the rounds"
    if kind == CI:
        return "brackets: 95 % bootstrap interval of the median"
    raise ValueError(f"unknown bracket kind {kind!r}")


# --- headers ---------------------------------------------------------------------------------------------------

def readable(name) -> str:
    """A column name for readers: "event_us" -> "Event (µs)", "warm_gbs" -> "Warm (GB/s)", "cudnn_over_fused" ->
    "cuDNN over fused". A name already written for readers (spaces, no underscore) keeps its words; its first letter
    is capitalised unless the first word is a name spelled in lower case (cuDNN, ptxas)."""
    if isinstance(name, tuple):          # a MultiIndex column: its levels joined
        return ", ".join(readable(part) for part in name if str(part))
    text = str(name)
    unit = None
    if "_" in text:
        words = text.split("_")
        if len(words) > 1 and words[-1].lower() in UNIT_SUFFIXES:
            unit = UNIT_SUFFIXES[words.pop().lower()]
        words = [SPELLING.get(w.lower(), w) for w in words]
        text = " ".join(words)
    first = text.split(" ", 1)[0]
    if first and first.islower() and first not in KEEP_CASE and first.lower() not in SPELLING:
        text = text[0].upper() + text[1:]
    return header(text, unit)


def header(text: str, unit: str | None = None) -> str:
    """`text (unit)`; "us" as a unit is written µs."""
    if not unit:
        return text
    unit = {"us": "µs"}.get(unit, unit)
    return f"{text} ({unit})"


# --- tables ----------------------------------------------------------------------------------------------------

Formatter = Callable[[object], str]


PREVIEW_ROWS = 8   # a table longer than its max_rows shows this many rows until the reader asks for all
DENSE_COLUMNS = 8  # a table of this many columns or more is set in smaller type (ll-dense), to fit the column


@dataclass
class Table:
    """A formatted table for a page: every cell a string, headers for readers. Display it (last expression of a
    cell) or `glue` it; `to_html()` is the same HTML."""
    columns: list[str]
    rows: list[list[str]]
    numeric: list[bool]
    n_index: int = 0
    caption: str | None = None
    notes: list[str] = field(default_factory=list)
    max_rows: int = 30
    csv_href: str | None = None
    raw: object = None                # the unformatted DataFrame (for tests and downloads)

    def _table_html(self, folded: bool = False) -> str:
        """The table; folded: the rows past PREVIEW_ROWS carry the class the page's toggle hides."""
        dense = " ll-dense" if len(self.columns) >= DENSE_COLUMNS else ""
        out = [f'<table class="ll-table{dense}">']
        if self.caption:
            out.append(f"<caption>{html.escape(self.caption)}</caption>")
        out.append("<thead><tr>")
        for i, column in enumerate(self.columns):
            cls = ' class="num"' if self.numeric[i] else ""
            out.append(f'<th scope="col"{cls}>{html.escape(column)}</th>')
        out.append("</tr></thead><tbody>")
        for number, row in enumerate(self.rows):
            out.append('<tr class="ll-more">' if folded and number >= PREVIEW_ROWS else "<tr>")
            for i, cell in enumerate(row):
                cls = ' class="num"' if self.numeric[i] else ""
                tag = "th" if i < self.n_index else "td"
                scope = ' scope="row"' if tag == "th" else ""
                out.append(f"<{tag}{scope}{cls}>{_cell_html(cell)}</{tag}>")
            out.append("</tr>")
        out.append("</tbody></table>")
        return "".join(out)

    def to_html(self) -> str:
        folded = len(self.rows) > self.max_rows
        table = f'<div class="table-wrapper">{self._table_html(folded)}</div>'
        if folded:   # its first rows show; a checkbox (styled as a link, no script) shows the rest
            key = "ll-more-" + hashlib.sha256(table.encode()).hexdigest()[:12]
            table = (f'<input type="checkbox" class="ll-more-toggle" id="{key}">{table}'
                     f'<label class="ll-more-label" for="{key}" data-show="Show all {len(self.rows)} rows" '
                     f'data-hide="Show the first {PREVIEW_ROWS} rows only"></label>')
        notes = list(self.notes)
        if self.csv_href:
            notes.append(f'<a href="{html.escape(self.csv_href)}" download>Full table as CSV</a>')
        footer = "".join(f'<p class="ll-table-note">{n}</p>' for n in notes)
        return f'<div class="ll-table-block">{table}{footer}</div>'

    def _repr_html_(self) -> str:
        return self.to_html()

    def __len__(self) -> int:
        return len(self.rows)


_BANDED = re.compile(r"^(\S+) (\[[^\]]*\])$")
_LONG_TOKEN = re.compile(r"\S{14,}")          # a key, a module or a call: longer than a column may be wide
# where such a token may break: after an underscore, slash, bracket, comma or equals sign, after a dot that a letter
# follows (a key's parts, not a number's decimals), inside camelCase and after a run id's date
_TOKEN_JOINT = re.compile(r"(?<=[_/(,=])(?=.)|(?<=\.)(?=[A-Za-z])|(?<=[a-z])(?=[A-Z])|(?<=\d{8})(?=T\d{6}Z)")


def breakable(text: str) -> str:
    """Escaped HTML of a text cell in which a long token (a headline key, a build's module name, a call) may break
    at its joints (`_TOKEN_JOINT`), and words break nowhere else."""
    parts, last = [], 0
    for match in _LONG_TOKEN.finditer(text):
        parts.append(html.escape(text[last:match.start()]))
        parts.append("<wbr>".join(html.escape(piece) for piece in _TOKEN_JOINT.split(match.group())))
        last = match.end()
    parts.append(html.escape(text[last:]))
    return "".join(parts)


def _cell_html(cell: str) -> str:
    """A cell's HTML: `12.3 [11.9–12.8]` may break before its bracket when the column is narrow (a phone), never
    inside a number or inside the bracket; a long token may break at its joints (`breakable`)."""
    match = _BANDED.match(cell)
    if not match:
        return breakable(cell)
    return f'<span class="ll-nb">{html.escape(match.group(1))}</span> <span class="ll-nb">{html.escape(match.group(2))}</span>'


def _infer(values: list) -> str:
    """The format of a column from its values: summaries, ints, floats or text."""
    present = [v for v in values if not _is_missing(v)]
    if not present:
        return "text"
    if all(isinstance(v, Mapping) and "median" in v for v in present):
        return CI if all("ci_low" in v for v in present) else BAND
    if all(isinstance(v, (bool, np.bool_)) for v in present):
        return "text"
    # Integers, and floats that all hold integers (a seed or a count that went through a float column).
    if all(isinstance(v, numbers.Real) and math.isfinite(v) and float(v).is_integer() for v in present):
        return "int"
    if all(isinstance(v, numbers.Real) for v in present):
        return "sig"
    return "text"


def _cell(value, fmt) -> str:
    if callable(fmt):
        return str(fmt(value))
    if _is_missing(value):
        return MISSING
    if fmt in (BAND, CI):
        return median_with_band(value, fmt)
    if fmt == "text":
        if isinstance(value, (bool, np.bool_)):
            return "yes" if value else "no"
        if isinstance(value, numbers.Integral):
            return str(int(value))
        if isinstance(value, float):
            return fmt_sig(value)
        return str(value)
    return fmt_number(value, fmt)


def _frame(data):
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, Mapping):
        return pd.DataFrame.from_dict(data, orient="index")
    return pd.DataFrame(list(data))


def static_dir(start: Path | None = None) -> tuple[Path, str]:
    """(the book's _static source folder, its URL relative to the page being executed). A chapter executes in its
    notebook's folder; the built page sits at the same place under _build/html, and _static at the root."""
    here = (start or Path.cwd()).resolve()
    for root in (here, *here.parents):
        if (root / "_config.yml").is_file() and (root / "book" / "_static").is_dir():
            rel = Path(*[".."] * len(here.relative_to(root).parts)) if here != root else Path(".")
            return root / "book" / "_static", (rel / "_static").as_posix()
    raise FileNotFoundError(f"no book root (with _config.yml and book/_static) above {here}")


def page_table(data, *, index: Iterable[str] | str | None = None, units: Mapping[str, str] | None = None,
               formats: Mapping[str, str | Formatter] | None = None, headers: Mapping[str, str] | None = None,
               caption: str | None = None, note: str | None = None, rounds: int | None = None,
               max_rows: int = 30, csv: str | None = None) -> Table:
    """A table for a page from a DataFrame, a list of row dicts or {row label: row dict}.

    index: columns shown as row headers, first (a DataFrame's own index, unless a RangeIndex, always is).
    formats: {column: "time" | "sig" | "ratio" | "pct" | "int" | "count" | "text" | "p10_p90" | "ci" | callable};
    a column without one is inferred (summary dicts -> p10_p90 or ci, integers -> int, floats -> 3 significant
    figures). units: {column: unit} appended as "(unit)"; headers: {column: header} replaces the readable name.
    caption: above the table; note: under it, with the bracket notes of its summary columns (`rounds` names the
    number of rounds, else taken from the summaries' "n"). max_rows: a longer table shows its first PREVIEW_ROWS rows
    and, under it, a toggle for the rest (all of them are in the page). csv: also write the full table as numbers (`csv_frame`) to _static/tables/<csv>.csv and
    link it. A column with no value in any row is left out.
    """
    import pandas as pd

    frame = _frame(data)
    index_names: list = []
    if not isinstance(frame.index, pd.RangeIndex):
        index_names = [n if n is not None else f"level_{i}" if frame.index.nlevels > 1 else "index"
                       for i, n in enumerate(frame.index.names)]
        frame = frame.reset_index()
    if isinstance(index, str):
        index = [index]
    index_names += [name for name in index or [] if name not in index_names]
    frame = frame[index_names + [c for c in frame.columns if c not in index_names]]
    units, formats, headers = dict(units or {}), dict(formats or {}), dict(headers or {})

    # A column empty in every row says nothing: it is left out (an index column stays, it names the rows).
    frame = frame[[c for c in frame.columns if c in index_names or not all(_is_empty(v) for v in frame[c])]]

    columns, numeric, cells, notes = [], [], [], []
    kinds_seen, formats_used = {}, {}
    for column in frame.columns:
        values = list(frame[column])
        fmt = formats.get(column) or _infer(values)
        formats_used[column] = fmt
        if fmt in (BAND, CI):
            kinds_seen.setdefault(fmt, [v.get("n") for v in values if isinstance(v, Mapping)])
        title = headers.get(column) or readable(column)
        if column in units:
            title = header(title, units[column])
        columns.append(title)
        numeric.append(fmt != "text" and not callable(fmt))
        cells.append([_cell(v, fmt) for v in values])
    # A group label (an index column before the last) is shown on the first row of its group only, as pandas
    # sparsifies a MultiIndex: a row starts a group where this label or any label before it changes.
    shown = [list(column) for column in cells]
    for i in range(len(index_names) - 1):
        shown[i] = [v if r == 0 or any(cells[j][r] != cells[j][r - 1] for j in range(i + 1)) else ""
                    for r, v in enumerate(cells[i])]
    cells = shown
    for kind, ns in kinds_seen.items():
        counts = {n for n in ns if n}
        notes.append(bracket_note(kind, rounds or (counts.pop() if len(counts) == 1 else None)))
    notes = ([note] if note else []) + [n[0].upper() + n[1:] + "." for n in notes]
    notes = [html.escape(n) for n in notes]
    for i in range(len(index_names)):
        numeric[i] = False
    csv_href = None
    if csv:
        folder, url = static_dir()
        target = folder / "tables" / f"{csv}.csv"
        target.parent.mkdir(parents=True, exist_ok=True)
        csv_frame(frame, columns, formats_used).to_csv(target, index=False)
        csv_href = f"{url}/tables/{csv}.csv"

    rows = [list(r) for r in zip(*cells)] if cells else []
    return Table(columns=columns, rows=rows, numeric=numeric, n_index=len(index_names), caption=caption,
                 notes=notes, max_rows=max_rows, csv_href=csv_href, raw=frame)


# The numbers a summary column gives the CSV, each a column of its own: (summary key, header suffix).
CSV_SUMMARY_PARTS = {BAND: (("median", "median"), ("p10", "p10"), ("p90", "p90")),
                     CI: (("median", "median"), ("ci_low", "95 % interval, low"), ("ci_high", "95 % interval, high"))}


def csv_frame(frame, titles: list[str], formats_used: Mapping):
    """The table as numbers for a CSV: each column under its page header (units included); a summary column
    becomes one numeric column per figure (median, p10 and p90, or the median and its 95 % interval), so that no
    cell mixes text with numbers; other values stay as the summaries hold them, unrounded."""
    import pandas as pd

    out = {}
    for column, title in zip(frame.columns, titles):
        values = list(frame[column])
        fmt = formats_used.get(column)
        if fmt in CSV_SUMMARY_PARTS:
            for key, suffix in CSV_SUMMARY_PARTS[fmt]:
                out[f"{title}, {suffix}"] = [v.get(key) if isinstance(v, Mapping) else None for v in values]
        else:
            out[title] = values
    return pd.DataFrame(out)


def html_table(data, **kwargs) -> str:
    """`page_table(...).to_html()`: the table as HTML inside `<div class="table-wrapper">`."""
    return page_table(data, **kwargs).to_html()


_SCI = re.compile(r"(?<![\w.])[+-]?\d+(?:\.\d+)?[eE][+-]?\d+(?![\w.])")   # as SCIENTIFIC in tests/site_check.py


def looks_elided_or_scientific(cell: str) -> bool:
    """True for a cell showing a truncation mark or a number in scientific notation (what tables must avoid)."""
    return "…" in cell or "..." in cell or bool(_SCI.search(cell))
