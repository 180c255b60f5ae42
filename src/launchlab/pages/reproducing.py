"""The Reproducing appendix (book/appendix/reproducing.ipynb): every chapter's accepted run against its replicates.

A replicate is a separate execution of a chapter on the GPU, from committed code, listed in <root>/replicates.json
under the accepted run it repeats. Each replicate is set against its accepted run by `launchlab.compare`, exactly
as `python -m launchlab compare ACCEPTED REPLICATE` prints it: the spread of the headline figures, device-paced and
host-paced apart; the figures that left the accepted run's 95% interval (only figures whose summaries record
holds one can); the figures that are counts or checks and changed; and the book's claims the replicate supports
or breaks. Beside the claims compare finds broken stands what the claim registry (<root>/claims/claims.yaml)
records as `broken_by`, so a registry that was not refreshed after a replicate came in shows.

A chapter without replicates is said to have none; its accepted run is then not opened. Every number on the page
is computed here from the runs; the notebook only glues and displays it.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pandas as pd
import yaml

from launchlab import compare
from launchlab.chapters import chapter
from launchlab.pages.conclusion import CHAPTERS
from launchlab.present import tables
from launchlab.store import evidence
from launchlab.store.record import RecordError, RunRecord
from launchlab.store.runs import Run

CLAIMS_FILE = Path("claims") / "claims.yaml"  # inside the evidence root
NONE_YET = "no replicate yet"


@dataclasses.dataclass(frozen=True)
class Replicate:
    """One replicate run set against its chapter's accepted run (`result`: compare.comparison's dict)."""
    accepted: Run
    run: Run
    result: dict

    @property
    def figures(self) -> pd.DataFrame:
        return self.result["figures"]

    @property
    def moved(self) -> pd.DataFrame:
        """The figures outside the accepted run's 95% interval (`within` is None where there is no interval)."""
        return self.figures[self.figures["within"].map(lambda within: not pd.isna(within) and not bool(within))]

    @property
    def with_interval(self) -> int:
        return int(self.figures["ci_low"].notna().sum())

    @property
    def changed_counts(self) -> pd.DataFrame:
        """Counts, checks and verdicts (untimed figures) that differ: a difference, never noise."""
        untimed = self.figures[self.figures["pacing"] == compare.UNTIMED]
        return untimed[untimed["a"] != untimed["b"]]

    @property
    def parameters_changed(self) -> dict:
        """{name: (accepted run's value, replicate's value)} of the typed parameters that differ."""
        declared = chapter(self.run.chapter)
        a = dataclasses.asdict(declared.parameters_of(self.accepted.record))
        b = dataclasses.asdict(declared.parameters_of(self.run.record))
        return {name: (a.get(name), b.get(name)) for name in sorted(set(a) | set(b)) if a.get(name) != b.get(name)}


@dataclasses.dataclass(frozen=True)
class ChapterReplicates:
    """A chapter of the book: its accepted run id (None: no accepted run), that run's record (None where it has
    none or the current RunRecord cannot read it) and its replicates, in listed order."""
    stem: str
    accepted_id: str | None
    accepted_record: RunRecord | None
    replicates: tuple[Replicate, ...]

    @property
    def name(self) -> str:
        """"Chapter 2: CUDA Graphs"; a title that carries its own label ("Example A: ...") is kept as it is."""
        title = chapter(self.stem).title
        return title if ":" in title else f"{CHAPTERS[self.stem]}: {title}"


def open_chapters(root: Path = evidence.EVIDENCE_ROOT, opener=None) -> list[ChapterReplicates]:
    """Every chapter of the book with its replicates compared, in the book's order. `opener(path) -> Run` opens a
    run (default: analysis.open_run, which checks the manifest and recomputes the summaries)."""
    from launchlab.analysis import open_run
    from launchlab.store.replicates import read_replicates

    opener = opener or open_run
    root = Path(root)
    accepted, listed = evidence.read_accepted(root), read_replicates(root)
    found = []
    for stem in CHAPTERS:
        run_id = accepted.get(stem)
        replicate_ids = listed.get(run_id, []) if run_id else []
        base = opener(evidence.run_dir(run_id, root)) if replicate_ids else None
        replicates = tuple(Replicate(base, run, compare.comparison(base, run, root))
                           for run in (opener(evidence.run_dir(rid, root)) for rid in replicate_ids))
        found.append(ChapterReplicates(stem, run_id, record_or_none(run_id, root), replicates))
    return found


def record_or_none(run_id: str | None, root: Path) -> RunRecord | None:
    if run_id is None:
        return None
    try:
        return RunRecord.read(evidence.run_dir(run_id, root))
    except RecordError:
        return None


def all_replicates(chapters) -> list[tuple[ChapterReplicates, Replicate]]:
    return [(entry, replicate) for entry in chapters for replicate in entry.replicates]


def registry_breaks(root: Path = evidence.EVIDENCE_ROOT) -> dict[str, list[str]]:
    """{replicate run id: [B-claim ids whose `broken_by` names it]} from the claim registry under the root."""
    path = Path(root) / CLAIMS_FILE
    if not path.is_file():
        return {}
    breaks: dict[str, list[str]] = {}
    for record in yaml.safe_load(path.read_text(encoding="utf-8")) or []:
        for entry in record.get("broken_by") or []:
            breaks.setdefault(entry["run_id"], []).append(record["id"])
    return breaks


# --- numbers as the page writes them -------------------------------------------------------------------------------

def percent(value) -> str:
    """A relative change or spread as a percentage with two significant figures: 0.000812 -> "0.081"."""
    return tables.MISSING if value is None or pd.isna(value) else tables.fmt_sig(100 * value, 2)


def signed_percent(value) -> str:
    text = percent(value)
    return text if text == tables.MISSING or value < 0 else f"+{text}"


def figure(value, digits: int = 3) -> str:
    """A headline figure at `digits` significant figures; a count or verdict as it is."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return tables.MISSING
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return tables.fmt_int(value) if float(value).is_integer() else tables.fmt_sig(value, digits)


def apart(a, b) -> int:
    """The fewest significant figures (3 to 6) at which two figures read differently."""
    return next((digits for digits in (3, 4, 5) if figure(a, digits) != figure(b, digits)), 6)


def interval(low, high) -> str:
    """`[low–high]` with the decimals that tell its ends apart."""
    text = tables.median_with_band({"median": low, "ci_low": low, "ci_high": high}, tables.CI, number="sig")
    return text[text.index("["):]


def spread_text(entry: dict) -> str:
    """`0.081 % over 25 figures`, or a plain "none" where the replicate has no figure of that pacing."""
    if not entry["figures"]:
        return "no figure"
    return f"{percent(entry['median_abs_change'])} % over {entry['figures']} figures"


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def joined(items: list[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else ""


# --- the tables ----------------------------------------------------------------------------------------------------

def gpu_of(record) -> str:
    """The GPU a run ran on, with the PCI bus id nvidia-smi gave it."""
    bus = (record.device.get("smi") or {}).get("pci.bus_id")
    return f"{record.device_name} (PCI {bus})" if bus else record.device_name


def seed_of(record) -> int | None:
    return getattr(chapter(record.chapter).parameters_of(record), "fixture_seed", None)


def changed_text(replicate: Replicate) -> str:
    changed = replicate.parameters_changed
    if not changed:
        return "same parameters"
    return "; ".join(f"{name.replace('_', ' ')} {a} → {b}" for name, (a, b) in changed.items())


def run_row(entry: ChapterReplicates, run_id: str, record: RunRecord | None, role: str, differs: str) -> dict:
    row = {"chapter": entry.name, "run": run_id, "role": role, "against the accepted run": differs}
    if record is not None:
        row |= {"git commit": record.git_commit, "GPU": gpu_of(record), "fixture seed": seed_of(record)}
    return row


def runs_table(chapters) -> tables.Table:
    """Every chapter's accepted run and its replicates: commit, GPU, fixture seed, and what differs."""
    rows = []
    for entry in chapters:
        if entry.accepted_id is None:
            rows.append({"chapter": entry.name, "run": "no accepted run"})
            continue
        rows.append(run_row(entry, entry.accepted_id, entry.accepted_record, "accepted",
                            "" if entry.replicates else NONE_YET))
        rows += [run_row(entry, r.run.run_id, r.run.record, "replicate", changed_text(r)) for r in entry.replicates]
    columns = ["chapter", "run", "role", "git commit", "GPU", "fixture seed", "against the accepted run"]
    return tables.page_table(pd.DataFrame(rows, columns=columns), index=["chapter", "run"],
                             formats={"fixture seed": "int", "git commit": "text"},
                             headers={"git commit": "Git commit", "fixture seed": "Fixture seed",
                                      "against the accepted run": "Against the accepted run"},
                             note="The GPU is the device name and PCI bus id recorded in each run's run.json; "
                                  "the parameters are the chapter's typed parameters as run.json records them.")


def claims_broken(replicate: Replicate) -> list[str]:
    return list(replicate.result["claims"]["broken"])


SPREAD_COLUMNS = ("chapter", "replicate", "device-paced", "host-paced", "outside A's 95 % interval",
                  "untimed figures changed", "claims broken")
CLAIMS_COLUMNS = ("chapter", "replicate", "supported", "broken (what compare finds)",
                  "restated in the registry (broken_by)")


def spread_row(entry: ChapterReplicates, replicate: Replicate) -> dict:
    spread = replicate.result["spread"]
    return {"chapter": entry.name, "replicate": replicate.run.run_id,
            "device-paced": paced_spread(spread[compare.DEVICE]),
            "host-paced": paced_spread(spread[compare.HOST]),
            "outside A's 95 % interval": (f"{len(replicate.moved)} of {replicate.with_interval}"
                                         if replicate.with_interval else "none has one"),
            "untimed figures changed": len(replicate.changed_counts),
            "claims broken": ", ".join(claims_broken(replicate)) or "none"}


def paced_spread(entry: dict) -> str:
    """'0.71 % over 25 figures': the median |B/A − 1| over one pacing's figures, and how many figures there are;
    'no such figure' where the chapter has none of that pacing."""
    if not entry["figures"]:
        return "no such figure"
    median = percent(entry["median_abs_change"])
    return median if median == tables.MISSING else f"{median} % over {plural(entry['figures'], 'figure')}"


def spread_table(chapters) -> tables.Table:
    """Per chapter and replicate: the spread per pacing, the figures outside A's interval, the claims broken."""
    rows = []
    for entry in chapters:
        rows += [spread_row(entry, replicate) for replicate in entry.replicates] or [
            {"chapter": entry.name, "replicate": NONE_YET}]
    return tables.page_table(
        pd.DataFrame(rows, columns=SPREAD_COLUMNS), index=["chapter", "replicate"],
        formats={"device-paced": "text", "host-paced": "text", "untimed figures changed": "int"},
        headers={"device-paced": "Device-paced figures: median |B/A − 1|",
                 "host-paced": "Host-paced figures: median |B/A − 1|",
                 "outside A's 95 % interval": "Outside A's 95 % interval (of the figures with one)"},
        note="A is the chapter's accepted run, B the replicate; B/A − 1 is the relative change of one headline "
             "figure. Untimed figures are counts, checks, verdicts and profiler byte ratios: no clock paced them, "
             "so a change in one is a difference, not noise.")


def moved_table(chapters) -> tables.Table:
    """Every headline figure a replicate put outside the accepted run's 95 % interval, with both values."""
    rows = [{"chapter": entry.name, "replicate": replicate.run.run_id, "figure": row.key, "pacing": row.pacing,
             "accepted run (A)": figure(row.a), "replicate (B)": figure(row.b),
             "B/A − 1 (%)": signed_percent(row.change), "A's 95 % interval": interval(row.ci_low, row.ci_high)}
            for entry, replicate in all_replicates(chapters) for row in replicate.moved.itertuples()]
    if not rows:
        rows = [{"chapter": "—", "replicate": "—", "figure": "no figure left the accepted run's interval"}]
    return tables.page_table(rows, index=["chapter", "replicate", "figure"],
                             formats={column: "text" for column in rows[0]},
                             headers={"B/A − 1 (%)": "B/A − 1 (%)", "A's 95 % interval": "A's 95 % interval"})


def counts_table(chapters) -> tables.Table:
    """The untimed figures (counts, checks, verdicts, profiler byte ratios) a replicate changed, at the fewest
    significant figures that tell the two values apart."""
    rows = [{"chapter": entry.name, "replicate": replicate.run.run_id, "figure": row.key,
             "accepted run (A)": figure(row.a, apart(row.a, row.b)), "replicate (B)": figure(row.b, apart(row.a, row.b))}
            for entry, replicate in all_replicates(chapters) for row in replicate.changed_counts.itertuples()]
    if not rows:
        rows = [{"chapter": "—", "replicate": "—", "figure": "no untimed figure changed"}]
    return tables.page_table(rows, index=["chapter", "replicate", "figure"],
                             formats={column: "text" for column in rows[0]})


def claims_row(entry: ChapterReplicates, replicate: Replicate, registry: dict) -> dict:
    claims = replicate.result["claims"]
    return {"chapter": entry.name, "replicate": replicate.run.run_id,
            "supported": ", ".join(claims["supported"]) or "none",
            "broken (what compare finds)": "; ".join(f"{claim_id}: {' '.join(reasons)}"
                                                     for claim_id, reasons in claims["broken"].items()) or "none",
            "restated in the registry (broken_by)": ", ".join(registry.get(replicate.run.run_id, [])) or "none"}


def claims_table(chapters, root: Path = evidence.EVIDENCE_ROOT) -> tables.Table:
    """Per replicate: the chapter's B-claims it supports, those it breaks and why, and what the registry records."""
    registry = registry_breaks(root)
    rows = []
    for entry in chapters:
        rows += [claims_row(entry, replicate, registry) for replicate in entry.replicates] or [
            {"chapter": entry.name, "replicate": NONE_YET}]
    return tables.page_table(pd.DataFrame(rows, columns=CLAIMS_COLUMNS), index=["chapter", "replicate"],
                             formats=dict.fromkeys(CLAIMS_COLUMNS, "text"),
                             headers={"broken (what compare finds)": "Broken (what compare finds)",
                                      "restated in the registry (broken_by)": "Restated in the claim audit"},
                             note="Each claim is checked with the bound frozen for it from the accepted run "
                                  "(evidence/claims/bounds.yaml); a broken claim is restated, never re-fitted.")


# --- the prose's values --------------------------------------------------------------------------------------------

def seeds_text(chapters) -> str:
    """Which replicates ran with another fixture seed than their accepted run, and which with the same: each pair
    of seeds said once."""
    other: dict[tuple, list[str]] = {}
    same: list[tuple] = []
    for _, replicate in all_replicates(chapters):
        a, b = seed_of(replicate.accepted.record), seed_of(replicate.run.record)
        if a != b:
            other.setdefault((a, b), []).append(f"`{replicate.run.run_id}`")
        else:
            same.append((replicate.run.run_id, a))
    parts = [f"{joined(ids)} {'was' if len(ids) == 1 else 'were'} made with fixture seed {b} instead of the accepted "
             f"run's {a}, so {'its inputs differ' if len(ids) == 1 else 'their inputs differ'}"
             for (a, b), ids in other.items()]
    if same:
        parts.append(f"{joined([f'`{rid}`' for rid, _ in same])} used the accepted run's own seed "
                     f"({joined(sorted({str(a) for _, a in same}))}), so their inputs are the same")
    return "; ".join(parts) + "." if parts else "No chapter has a replicate yet."


def gpus_text(chapters) -> str:
    """The GPUs the accepted runs and their replicates ran on."""
    runs = [run for entry in chapters for replicate in entry.replicates for run in (replicate.accepted, replicate.run)]
    gpus = sorted({gpu_of(run.record) for run in runs})
    if not gpus:
        return "No chapter has a replicate yet."
    if len(gpus) == 1:
        return f"Every run compared here recorded the same GPU, as nvidia-smi named it: {gpus[0]}."
    return f"The runs compared here recorded {len(gpus)} GPUs, {joined(gpus)}: the table says which ran where."


def accepted_gpus_text(chapters) -> str:
    """The GPU models the accepted runs ran on (the book's claims are about these)."""
    names = sorted({entry.accepted_record.device_name for entry in chapters if entry.accepted_record})
    return joined(names) or "none recorded"


def without_text(chapters) -> str:
    """The chapters that have no replicate, said plainly."""
    missing = [entry for entry in chapters if not entry.replicates]
    if not missing:
        return "Every chapter has at least one replicate."
    names = joined([f"{entry.name} (accepted run `{entry.accepted_id}`)" if entry.accepted_id
                    else f"{entry.name} (no accepted run)" for entry in missing])
    return (f"{names} {'has' if len(missing) == 1 else 'have'} no replicate yet: nothing on this page says how far "
            f"{'its figures' if len(missing) == 1 else 'their figures'} would move in another execution.")


def range_text(values: list) -> str:
    """"between 0.017 % and 3.4 %" over the replicates' spreads, "at 3.4 %" where they agree."""
    values = sorted(v for v in values if v is not None and not pd.isna(v))
    if not values:
        return "unknown: no replicate has such a figure"
    low, high = percent(values[0]), percent(values[-1])
    return f"at {low} %" if low == high else f"between {low} % and {high} %"


def moved_text(pairs) -> str:
    """How many figure comparisons could be tested against the accepted run's interval, how many left it, and
    what paced those."""
    tested = sum(replicate.with_interval for _, replicate in pairs)
    if not tested:
        return "No figure compared here has a 95 % interval in its accepted run's summaries, so none could leave one."
    moved = pd.concat([replicate.moved for _, replicate in pairs])
    pacings = moved["pacing"].value_counts()
    paced = joined([f"{count} {pacing}-paced" for pacing, count in pacings.items()])
    return (f"Of the figure comparisons, {tested} could be tested against a 95 % interval of the accepted run; "
            f"{len(moved)} of them lay outside it{f' ({paced})' if len(moved) else ''}.")


def notebook_seconds(run_id: str, root: Path) -> float | None:
    """How long a run's notebook took under papermill, from the executed notebook it stores (None: not recorded)."""
    path = evidence.run_dir(run_id, root) / "notebook.ipynb"
    if not path.is_file():
        return None
    return json.loads(path.read_text()).get("metadata", {}).get("papermill", {}).get("duration")


def execution_text(chapters, root: Path = evidence.EVIDENCE_ROOT) -> str:
    """The accepted runs' notebook times under papermill: the shortest, the longest and all of them together."""
    seconds = {entry.name: notebook_seconds(entry.accepted_id, Path(root)) for entry in chapters if entry.accepted_id}
    seconds = {name: value for name, value in seconds.items() if value}
    if not seconds:
        return "No accepted run records how long its notebook took."
    shortest, longest = min(seconds, key=seconds.get), max(seconds, key=seconds.get)
    return (f"On the {accepted_gpus_text(chapters)}, the accepted runs' notebooks took from {seconds[shortest]:.0f} s "
            f"({shortest}) to {seconds[longest]:.0f} s ({longest}) under papermill, "
            f"{sum(seconds.values()) / 60:.1f} minutes for all {len(seconds)}.")


def page_values(chapters, root: Path = evidence.EVIDENCE_ROOT) -> dict[str, str]:
    """The glued values of the page's prose, each a piece of Markdown."""
    pairs = all_replicates(chapters)
    spreads = [replicate.result["spread"] for _, replicate in pairs]
    return {
        "replicate_count": str(len(pairs)),
        "chapters_with_replicates": plural(sum(bool(entry.replicates) for entry in chapters), "chapter"),
        "chapters_without_replicates": without_text(chapters),
        "replicate_seeds": seeds_text(chapters),
        "replicate_gpus": gpus_text(chapters),
        "accepted_gpus": accepted_gpus_text(chapters),
        "device_spread_range": range_text([s[compare.DEVICE]["median_abs_change"] for s in spreads]),
        "host_spread_range": range_text([s[compare.HOST]["median_abs_change"] for s in spreads]),
        "moved_text": moved_text(pairs),
        "execution_time": execution_text(chapters, root),
    }
