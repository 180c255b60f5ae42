"""What every chapter page shares: glued values (a missing one fails the build), the run's
environment, and the validation summary."""
from __future__ import annotations


class MissingPageValue(KeyError):
    """A page asked for a value its run does not hold; the build fails rather than print a blank."""


def glue_values(values: dict) -> None:
    """Glue each value as Markdown, for `{glue:md}` in the chapter's prose."""
    from IPython.display import Markdown
    from myst_nb import glue

    for name, text in values.items():
        if text is None or (isinstance(text, str) and not text.strip()):
            raise MissingPageValue(f"page value {name!r} is missing")
        glue(name, Markdown(str(text)), display=False)


def cuda_version(number) -> str:
    """CUDA's integer version (1000 × major + 10 × minor, e.g. 13020) as `13.2`."""
    if not isinstance(number, int):
        return "not recorded"
    return f"{number // 1000}.{number % 1000 // 10}"


def _clocks(state: dict | None) -> str:
    smi = (state or {}).get("smi") or {}
    if "clocks.sm" not in smi:
        return "not read"
    return (f"SM {smi['clocks.sm']} MHz, memory {smi.get('clocks.mem', '?')} MHz, {smi.get('temperature.gpu', '?')} °C, "
            f"{_watts(smi.get('power.draw'))} W")


def _watts(value) -> str:
    """nvidia-smi's power draw to whole watts ("272.68" -> "273"); anything else as it came."""
    try:
        return f"{float(value):.0f}"
    except (TypeError, ValueError):
        return str(value or "?")


def _dropped(run) -> str:
    """Whether the SM clock dropped during timing, with the ratio of the two readings and the run's threshold."""
    from launchlab.gpu.device import CLOCK_DROP_TOLERANCE

    measured = [v for k, v in run.record.states.items() if k.startswith("measurement")]
    try:
        share = float(measured[-1]["smi"]["clocks.sm"]) / float(measured[0]["smi"]["clocks.sm"])
    except (IndexError, KeyError, TypeError, ValueError, ZeroDivisionError):
        share = None
    words = {True: "yes: the run is flagged", False: "no", None: "not known"}[run.record.clocks_dropped]
    if share is None or run.record.clocks_dropped is None:
        return words
    return (f"{words} (after ÷ before {share:.2f}; below {CLOCK_DROP_TOLERANCE:.2f} flags a run)")


def environment_rows(run) -> list[tuple[str, str]]:
    """(what, value) pairs describing the GPU, software, host and clocks of a run."""
    record, device, env = run.record, run.record.device, run.record.environment
    measured = [v for k, v in record.states.items() if k.startswith("measurement")]
    libraries = ", ".join(f"{name} {version}" for name, version in sorted(env.get("libraries", {}).items()) if version)
    return [
        ("run", run.run_id),
        ("GPU", f"{device['name']} (compute capability {device['compute_capability']}, {device['sm_count']} SMs, "
                f"{device['l2_bytes'] / 2**20:.0f} MiB L2)"),
        ("driver", f"{env.get('driver')} (supports CUDA {cuda_version(env.get('driver_api_version'))})"),
        ("CUDA runtime", cuda_version(env.get("cuda_runtime_version"))),
        ("CuPy / NumPy / Python", f"{env.get('cupy')} / {env.get('numpy')} / {env.get('python')}"),
        ("libraries", libraries or "none used"),
        ("host CPU", f"{env.get('cpu_model')} ({env.get('cpu_count')} logical CPUs)"),
        ("host path measured", record.host_path),
        ("clocks before timing", _clocks(measured[0] if measured else None)),
        ("clocks after timing", _clocks(measured[-1] if measured else None)),
        ("SM clock dropped during timing", _dropped(run)),
        ("code", f"git {record.git_commit}, source tree SHA-256 {record.source_tree_sha256[:16]} (first 16 hex digits)"),
    ]


def environment_table(run):
    """The run behind a page: GPU, software, host, clocks and code, as a two-column table."""
    from launchlab.present import tables

    return tables.page_table([{"what": what, "value": value} for what, value in environment_rows(run)],
                             index="what", formats={"value": "text"}, headers={"what": "", "value": ""})


def pace_sentence(paced: dict[str, str]) -> str:
    """Who set the pace of each named batch, as one sentence that names each pacer once: {"Python's batch": "the
    host", "the C++ loop's batch": "the host"} -> "The host set the pace of Python's batch and the C++ loop's
    batch." (a pacer is "the host" or "the GPU", from a run's summaries)."""
    by_pacer: dict[str, list[str]] = {}
    for batch, pacer in paced.items():
        by_pacer.setdefault(pacer, []).append(batch)
    def joined(items):
        return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"

    parts = [f"{pacer} set the pace of {joined(batches)}" for pacer, batches in by_pacer.items()]
    text = "; ".join(parts)
    return text[0].upper() + text[1:] + "." if text else ""


SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(value: float) -> str:
    """A small or large number as `1.6 × 10⁻⁶` (never the `1.6e-06` of scientific notation)."""
    if value == 0:
        return "0"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(SUPERSCRIPT)}"


def validation_summary(run):
    """Checks per phase: how many, how many passed, and the largest error of the tolerance checks."""
    from launchlab.present import tables

    rows = {}
    for check in run.json("validation.json"):
        row = rows.setdefault(check["phase"], {"phase": check["phase"], "checks": 0, "passed": 0, "exact": 0,
                                                "largest": None})
        row["checks"] += 1
        row["passed"] += int(bool(check["passed"]))
        row["exact"] += int(bool(check.get("exact")))
        error = check.get("max_abs_error")
        if error is not None:
            row["largest"] = error if row["largest"] is None else max(row["largest"], error)
    table = [{"phase": r["phase"], "checks": r["checks"], "passed": r["passed"], "bit-exact checks": r["exact"],
              "largest |error| against the oracle": "exact comparison only" if r["largest"] is None
              else power_of_ten(r["largest"])}
             for r in rows.values()]
    return tables.page_table(table, index="phase", formats={"largest |error| against the oracle": "text"},
                             headers={"largest |error| against the oracle": "Largest |error| against the oracle"},
                             note="A check of an output compares it with the float64 (or bit-exact) oracle, the "
                                  "output poisoned before every checked invocation; a check of a count (occupancy, "
                                  "graph nodes, a trace's rules) compares it with what the design requires.")


class DataPage:
    """A chapter's data page: its full tables, shown one by one and written together as one CSV download.

        data = DataPage("fusion")                # _static/tables/fusion-data.csv
        data.link()                              # a cell showing the download link (the file is written by save)
        data.show("Device time per call", chapter.device_table(run))   # a cell's last expression: the table
        data.save()                              # the last cell: writes the CSV, every table shown in it
    The CSV has one row per table row: a "table" column naming the table, then the table's own headers (units in
    them), summaries as `median [low–high]` as on the page."""

    def __init__(self, stem: str):
        self.stem = stem
        self.name = f"{stem}-data"
        self.shown: list[tuple[str, object]] = []

    def href(self) -> str:
        from launchlab.present import tables

        return f"{tables.static_dir()[1]}/tables/{self.name}.csv"

    def link(self):
        from IPython.display import HTML

        return HTML(f'<p class="ll-download"><a href="{self.href()}" download>All tables of this page as one CSV '
                    f"file</a> ({self.name}.csv)</p>")

    def show(self, title: str, table):
        self.shown.append((title, table))
        return table

    def frame(self):
        """The tables shown so far as one DataFrame (a `table` column, then the union of their headers)."""
        import pandas as pd

        return pd.concat([_readable_frame(table).assign(table=title) for title, table in self.shown],
                         ignore_index=True).pipe(lambda f: f[["table", *[c for c in f.columns if c != "table"]]])

    def save(self):
        from launchlab.present import tables

        folder, _ = tables.static_dir()
        target = folder / "tables" / f"{self.name}.csv"
        target.parent.mkdir(parents=True, exist_ok=True)
        self.frame().to_csv(target, index=False)
        return self.link()


def _readable_frame(table):
    """A shown table as a DataFrame with its page headers: a page_table's raw frame (summaries formatted as on the
    page), or a DataFrame as it is."""
    from collections.abc import Mapping

    import pandas as pd

    from launchlab.present import tables

    if isinstance(table, pd.DataFrame):
        return table.reset_index() if not isinstance(table.index, pd.RangeIndex) else table.copy()
    frame = table.raw.copy()
    for column in frame.columns:
        frame[column] = frame[column].map(lambda v: tables.median_with_band(v, tables.CI if "ci_low" in v else tables.BAND)
                                          if isinstance(v, Mapping) and "median" in v else v)
    frame.columns = list(table.columns)
    return frame
