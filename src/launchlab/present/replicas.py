"""Whether a finding holds between runs: a run's replicates (listed in its evidence root's replicates.json) read
from their saved summaries, and sentences that say how far a quantity moved between them.

A page states a figure from its own run; where the run has replicates, the sentence after it gives the replicates'
figures too, so that a reader sees which findings vary between runs. A run without replicates (a reader's own run,
say) gets a sentence saying that its variation between runs was not measured."""
from __future__ import annotations

from collections.abc import Callable

NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
                10: "ten"}


def replicates_of(run) -> list:
    """The runs listed as replicates of `run` in its evidence root, as saved (record, summaries, headline)."""
    from launchlab.store import evidence
    from launchlab.store.replicates import read_replicates
    from launchlab.store.runs import Run

    root = run.path.parents[1]
    return [Run.read(evidence.run_dir(run_id, root)) for run_id in read_replicates(root).get(run.run_id, [])]


def counted(n: int, noun: str) -> str:
    """'two replicates', 'one replicate'."""
    return f"{NUMBER_WORDS.get(n, str(n))} {noun}{'' if n == 1 else 's'}"


def replicates_subject(n: int) -> str:
    """A sentence's subject for a run's `n` replicates: "This run's replicate", "This run's two replicates"."""
    return "This run's replicate" if n == 1 else f"This run's {counted(n, 'replicate')}"


def joined(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def spread_sentence(quantity: str, here: float, others: list[float], fmt: Callable[[float], str],
                    unit: str = "") -> str:
    """One sentence on how `quantity` (`here` in this run) came out in the replicates (`others`).

    spread_sentence("the stream-over-graph ratio", 2.42, [1.74, 1.88], "{:.2f}".format) ->
    "This run's two replicates measured the stream-over-graph ratio at 1.74 and 1.88, against 2.42 here: it varies
    between runs." A change of at most 5 % either way reads as the same figure."""
    if not others:
        return f"This run has no replicate, so how much {quantity} varies between runs was not measured."
    shown = joined([f"{fmt(v)}{unit}" for v in others])
    values = [here, *others]
    low, high = min(values), max(values)
    who = replicates_subject(len(others))
    lead = f"{who} measured {quantity} at {shown}, against {fmt(here)}{unit} here"
    if high <= 1.05 * low:
        return f"{lead}: the same within 5 %."
    return f"{lead}: it varies between runs."

