"""The book's claims read again on runs made on another GPU model (evidence/other_gpus.json).

A book claim is stated for the GPU its accepted run used. A run of the same chapter, from committed code, on another
GPU model (`python -m launchlab other-gpu`) is checked against each of the chapter's claims the way a replicate is,
but a failure is not a restatement of the claim: it says how far the claim carries to that GPU. Each check keeps its
three parts apart, because they mean different things there:

* the claim's ratios: whether the statement's own words (a side of 1, a threshold) hold on the other GPU;
* the claim's test: a precondition such as "the GPU, not the host, set the pace of every sample" (or, for a claim
  stated by its test alone, the claim itself);
* the frozen bound, set from a run on the accepted run's GPU: a figure no other GPU is expected to keep.

A decided claim (a question whose answer follows where the interval lies) is compared by its answer instead, and a
measurement (a statement the run fills in with its figures) is measured again: its figures stand beside the
accepted run's.
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from launchlab.analysis import open_run
from launchlab.claims import bounds, declared, site
from launchlab.claims.book import accepted_views, our_value, statement_of, value_text
from launchlab.claims.spec import BookClaim, record_at
from launchlab.store import evidence
from launchlab.store.replicates import read_other_gpus
from launchlab.store.runs import Run

HOLDS, OUTSIDE_BOUND, TEST_FAILS, FAILS, SAME_ANSWER, OTHER_ANSWER, MEASURED = (
    "holds", "holds as worded, outside the bound", "undecided", "does not hold", "same answer", "answers otherwise",
    "measured again")


@dataclass(frozen=True)
class Carried:
    """One book claim checked on a run from another GPU model."""
    claim: BookClaim
    accepted: Run
    other: Run
    ratio_failures: tuple[str, ...]
    test_failed: bool
    bound_failures: tuple[str, ...]
    bounded: bool  # whether the claim has a frozen bound to keep

    @property
    def statement(self) -> str:
        """What the claim says: its wording on the accepted run for a decided claim, its question for a statement
        the run fills in with figures (the value columns give them)."""
        if self.claim.decided:
            return self.answer(self.accepted)
        return self.claim.question if self.measurement else self.claim.statement

    @property
    def verdict(self) -> str:
        if self.claim.decided:
            return SAME_ANSWER if self.answer(self.accepted) == self.answer(self.other) else OTHER_ANSWER
        if self.ratio_failures or (self.test_failed and self.test_is_claim):
            return FAILS
        if self.test_failed:
            return TEST_FAILS
        if self.bound_failures:
            return OUTSIDE_BOUND
        return MEASURED if self.measurement else HOLDS

    @property
    def measurement(self) -> bool:
        return "{" in self.claim.statement

    @property
    def test_is_claim(self) -> bool:
        """A claim stated by its test alone (no ratio, no question, no measurement): its test failing breaks it,
        where elsewhere a test is a condition its figures need."""
        return not (self.claim.ratios or self.claim.decided or self.measurement)

    def answer(self, run: Run) -> str:
        """A decided claim's statement as the run words it."""
        return statement_of(self.claim, run, None)

    def value(self, run: Run) -> str:
        if self.claim.decided:
            found = record_at(run.summaries, self.claim.decided.path)
            return value_text(found["median"], (found["ci_low"], found["ci_high"]))
        if not self.claim.value:
            return ""
        ours = our_value(run, self.claim.value)
        numbers = ours["value"].values() if isinstance(ours["value"], dict) else [ours["value"]]
        if not ours["interval"] and all(float(n).is_integer() for n in numbers):  # counts, as the integers they are
            return ("; ".join(f"{label} {int(n)}" for label, n in ours["value"].items())
                    if isinstance(ours["value"], dict) else str(int(ours["value"])))
        return value_text(ours["value"], ours["interval"])


def check(claim: BookClaim, accepted: Run, other: Run, entry: dict | None) -> Carried:
    """`claim` (of `accepted`'s chapter, with its frozen bound `entry`) checked on `other`."""
    try:
        ratios = tuple(r.describe(other.summaries) for r in claim.ratios if not r.holds(other.summaries))
        test_failed = claim.holds is not None and not claim.holds(other)
        broken = tuple(bounds.broken(entry, claim, other)) if entry else ()
    except KeyError as missing:
        raise ValueError(f"{claim.id}: run {other.run_id} on the {other.device} has no {missing}") from None
    return Carried(claim, accepted, other, ratios, test_failed, broken, entry is not None)


def carried_claims(root: Path = evidence.EVIDENCE_ROOT) -> list[Carried]:
    """Every book claim of every chapter that has a run on another GPU model, checked on each such run, in the order
    the book declares its claims (a chapter's runs in the order they are listed)."""
    views, _ = accepted_views(root)
    listed = read_other_gpus(root)
    stored = bounds.read_bounds(Path(root))
    found = []
    for chapter, accepted in views.items():
        for run_id in listed.get(accepted.run_id, []):
            other = open_run(evidence.run_dir(run_id, root))
            if other.chapter != chapter:
                raise ValueError(f"other_gpus.json: {run_id} is listed beside {accepted.run_id} ({chapter}) but is "
                                 f"a run of {other.chapter}")
            found.extend(check(claim, accepted, other, stored.get(claim.id))
                         for claim in declared.BOOK_CLAIMS if claim.chapter == chapter)
    order = {claim.id: k for k, claim in enumerate(declared.BOOK_CLAIMS)}
    return sorted(found, key=lambda item: order[item.claim.id])


def host_paced_samples(run: Run) -> list[tuple[str, int, int]]:
    """(variant, samples the host paced, samples) of every cold variant whose host enqueue outlasted the GPU wait
    queued ahead of it at least once."""
    pacing = run.summaries.get("cold_pacing", {})
    return [(variant, record["host_enqueue_exceeded_wait"], record["samples"])
            for variant, record in sorted(pacing.items()) if record["host_enqueue_exceeded_wait"]]


def cold_variants(claim: BookClaim) -> set[str]:
    """The single-call variants a claim's cold ratios compare: ('ratios', 'graph', 'a_over_b', shape, 'cold') ->
    a.<shape>.stream and b.<shape>.stream."""
    found = set()
    for ratio in claim.ratios:
        path = ratio.path
        if isinstance(path, tuple) and path[-1] == "cold" and "_over_" in path[-3]:
            found.update(f"{name}.{path[-2]}.stream" for name in path[-3].split("_over_"))
    return found


def pacing_words(item: Carried) -> str:
    """Which of the claim's cold samples the host paced on the other run ("" where none of them was)."""
    mine = [(variant, paced, samples) for variant, paced, samples in host_paced_samples(item.other)
            if variant in cold_variants(item.claim)]
    parts = [f"{paced} of the {samples} cold samples of {variant.rsplit('.', 1)[0]}"
             for variant, paced, samples in mine]
    return f": the host, not the GPU, paced {' and '.join(parts)}" if parts else ""


def why(item: Carried) -> str:
    """The verdict's reason in a sentence or two."""
    here = short_name(item.accepted.device)
    if item.verdict == SAME_ANSWER:
        return "This run gives the same answer."
    if item.verdict == OTHER_ANSWER:
        return f"This run answers: {item.answer(item.other)}"
    if item.verdict == FAILS:
        if item.ratio_failures:
            return f"{'; '.join(item.ratio_failures)}."
        return "This run fails the claim's test, which is the claim itself; the values show where."
    if item.verdict == TEST_FAILS:
        bound = f" It also misses the bound set on the {here}: {'; '.join(item.bound_failures)}." \
            if item.bound_failures else ""
        ratios = " Its ratios lie on the stated side." if item.claim.ratios else ""
        return f"This run fails the claim's test{pacing_words(item)}.{ratios}{bound}"
    if item.verdict == OUTSIDE_BOUND:
        lead = "Its figures" if item.measurement else "Its ratios lie on the stated side, but its figures"
        return f"{lead} fall outside the bound set on the {here}: {'; '.join(item.bound_failures)}."
    if item.verdict == MEASURED:
        kept = f", within the bound set on the {here}" if item.bounded else ""
        return f"A measurement: this run's figures stand beside the accepted run's{kept}."
    parts = [part for part, has in (("its ratios", item.claim.ratios), ("its test", item.claim.holds is not None),
                                    (f"the bound set on the {here}", item.bounded)) if has]
    text = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
    return f"{text[0].upper()}{text[1:]} {'holds' if len(parts) == 1 else 'all hold'}."


def short_name(device: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'H100 80GB HBM3'."""
    return device.removeprefix("NVIDIA ").strip()


COLUMNS = (("Claim", 10), ("Statement", 25), ("{accepted}", 18), ("{other}", 18), ("Verdict", 29))


def carried_table_html(items: list[Carried]) -> str:
    """One row per claim and run: the statement, the value on each GPU, and the verdict with its reason."""
    from launchlab.claims.page import table_head

    def gpus(runs) -> str:
        names = sorted({short_name(run.device) for run in runs})
        return html.escape(f"On the {names[0]}" if len(names) == 1 else "On its GPU")

    named = {"accepted": gpus(item.accepted for item in items), "other": gpus(item.other for item in items)}
    lines = table_head(tuple((name.format(**named), width) for name, width in COLUMNS))
    chapters: dict[str, list[Carried]] = {}
    for item in items:
        chapters.setdefault(item.claim.section, []).append(item)
    for section, rows in chapters.items():
        lines.append(f'<tbody><tr><th colspan="{len(COLUMNS)}" scope="rowgroup">{html.escape(section)}</th></tr>')
        for item in rows:
            link = f'<a href="{site.claim_link(item.claim.id)}">{item.claim.id}</a>'
            verdict = f"<strong>{html.escape(item.verdict)}</strong><div class=\"ours\">{html.escape(why(item))}</div>"
            mark = "" if item.verdict in (HOLDS, SAME_ANSWER, MEASURED) else ' class="restated"'
            cells = [link, f"<q>{html.escape(item.statement)}</q>",
                     html.escape(item.value(item.accepted)) or "—", html.escape(item.value(item.other)) or "—",
                     verdict]
            lines.append(f"<tr{mark}>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
        lines.append("</tbody>")
    lines.append("</table>")
    return "\n".join(lines)
