"""The pages outside the chapter packages' own tests: chapter 1's computed findings, the methods appendix's tables and
the conclusion, on synthetic runs (fusion and megakernels) and on the accepted runs that exist (CPU only)."""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from launchlab.pages import conclusion
from launchlab.present import methods, tables
from launchlab.present.prose import comparison, pacer
from launchlab.store import evidence
from launchlab.store.record import RecordError

REPO_ROOT = Path(__file__).resolve().parents[1]
SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")


def accepted_or_skip(stem: str):
    """The accepted run of `stem`, or a skip while it is of the old schema (it is re-executed on the GPU)."""
    from launchlab.analysis import accepted_run

    try:
        return accepted_run(stem)
    except (RecordError, evidence.EvidenceError) as error:
        pytest.skip(f"the accepted {stem} run cannot be read by this code yet: {error}")


# --- chapter 1's computed findings --------------------------------------------------------------------------------

@pytest.mark.parametrize("event, enqueue, who", [(26.1, 26.0, "the host"), (27.4, 26.1, "the host"),
                                                 (27.5, 26.1, "the GPU"), (115.0, 26.5, "the GPU")])
def test_pacer_names_the_host_within_five_percent(event, enqueue, who):
    assert pacer(event, enqueue) == who


def test_comparison_words():
    assert comparison(30.5, 26.1) == "larger than"
    assert comparison(20.0, 26.1) == "smaller than"
    assert comparison(26.5, 26.1) == "within 5 % of"


def test_chapter_1_values_are_computed_and_plain():
    from launchlab.chapters.ordinary_launches import page

    run = accepted_or_skip("ordinary_launches")
    values = page.page_values(run)
    for shape in run.record.parameters["shapes"].split(","):
        m = run.summaries["timing"][f"row4.{shape}.stream"]
        assert values[f"pace_{shape}"] == pacer(m["warm_batch"]["event_us"]["median"],
                                                m["warm_batch"]["enqueue_us"]["median"])
        assert values[f"single_vs_batch_enqueue_{shape}"] in ("larger than", "smaller than", "within 5 % of")
    assert all(value.strip() and not SCIENTIFIC.search(value) for value in values.values())


def test_chapter_1_notebook_places_figures_and_the_kernel():
    notebook = json.loads((REPO_ROOT / "book/ordinary_launches.ipynb").read_text())
    text = "".join("".join(cell["source"]) for cell in notebook["cells"])
    glued = set(re.findall(r'glue_figure\("([^"]+)"', text))
    placed = set(re.findall(r"```\{glue:figure\} (\S+)\n:name: fig-", text))
    assert glued and glued == placed
    assert ":start-after: docs:begin row-exp-sum" in text and ":end-before: docs:end row-exp-sum" in text
    kernel = (REPO_ROOT / "kernels/row_softmax.cu").read_text()
    assert "docs:begin row-exp-sum" in kernel and "docs:end row-exp-sum" in kernel
    data = json.loads((REPO_ROOT / "book/data/ordinary_launches-data.ipynb").read_text())
    codes = [("".join(c["source"])) for c in data["cells"] if c["cell_type"] == "code"]
    assert 'environment_table(run)' in codes[1] and codes[-1] == "data.save()"


# --- every chapter: the answer first, its data on a page of its own ------------------------------------------------

ANSWER_FIRST = ("ordinary_launches", "graphs", "example_a_pointwise", "example_b_jobs", "fusion", "megakernels")


@pytest.mark.parametrize("stem", ANSWER_FIRST)
def test_a_chapter_opens_with_its_question_answer_and_key_figure_and_links_its_data_page(stem):
    """The first Markdown cells hold the question and the answer, the first figure placed is the key figure, and the
    chapter links its data page, which the table of contents lists under it."""
    notebook = json.loads((REPO_ROOT / f"book/{stem}.ipynb").read_text())
    markdown = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "markdown"]
    opening = "\n".join(markdown[:2])
    assert "**The question.**" in markdown[0] and "**The answer" in opening
    first_section = "\n".join(markdown).split("\n## ")[0]
    assert "```{glue:figure}" in first_section, "the key figure comes before the first section"
    assert f"data/{stem}-data" in "".join(markdown)
    assert f"file: book/data/{stem}-data" in (REPO_ROOT / "_toc.yml").read_text()
    data = json.loads((REPO_ROOT / f"book/data/{stem}-data.ipynb").read_text())
    assert "".join(data["cells"][-1]["source"]) == "data.save()"


DOUBLED = re.compile(r"\b(\w+) \1\b", re.IGNORECASE)


@pytest.mark.parametrize("stem", ("ordinary_launches", "graphs", "example_a_pointwise", "example_b_jobs"))
def test_page_sentences_never_double_a_word_or_name_one_pacer_twice(stem):
    import importlib

    run = accepted_or_skip(stem)
    values = importlib.import_module(f"launchlab.chapters.{stem}.page").page_values(run)
    doubled = {name: DOUBLED.search(text).group(0) for name, text in values.items()
               if DOUBLED.search(text) and not DOUBLED.search(text).group(1).isdigit()}
    assert not doubled, doubled
    for name, text in values.items():
        for pacer_name in ("the host set", "the GPU set"):
            assert text.lower().count(pacer_name) <= 1, (name, text)


def test_a_finding_that_varies_between_runs_says_so():
    from launchlab.present.replicas import spread_sentence

    assert "not measured" in spread_sentence("the ratio", 2.0, [], "{:.2f}".format)
    assert "the same within 5 %" in spread_sentence("the ratio", 2.0, [2.05], "{:.2f}".format)
    varied = spread_sentence("the ratio", 2.42, [1.74, 1.88], "{:.2f}".format)
    assert "two replicates" in varied and "at 1.74 and 1.88, against 2.42 here: it varies between runs." in varied


# --- one number per quantity ------------------------------------------------------------------------------------------

def test_the_launch_cost_is_chapter_1_s_figure_wherever_the_book_gives_it():
    """The conclusion states chapter 1's launch cost; chapter 2 sets its own per-launch figure against it and says in
    the same sentence why the two measurements differ."""
    from launchlab.chapters.graphs.page_answer import launch_cost_sentence
    from launchlab.chapters.ordinary_launches import page as first_page

    first, graphs = accepted_or_skip("ordinary_launches"), accepted_or_skip("graphs")
    cost = first_page.page_values(first)["launch_cost_us"]
    runs = {stem: accepted_or_skip(stem) for stem in conclusion.CHAPTERS}
    assert conclusion.page_values(runs)["cupy_launch_us"] == cost
    sentence = launch_cost_sentence(graphs)
    assert f"the book's launch cost of {cost} µs, measured in chapter 1" in sentence
    assert "one launch per invocation" in sentence     # why chapter 2's figure is another measurement
    conclusion_page = "".join("".join(c["source"]) for c in
                              json.loads((REPO_ROOT / "book/conclusion.ipynb").read_text())["cells"])
    assert "{glue:md}`cupy_launch_us` µs from Python, the book's\n  launch cost" in conclusion_page


def test_the_graph_payback_is_written_the_same_on_chapter_2_and_the_conclusion():
    from launchlab.chapters.graphs import page as graphs_page

    runs = {stem: accepted_or_skip(stem) for stem in conclusion.CHAPTERS}
    replays = graphs_page.page_values(runs["graphs"])["breakeven_row4_128x8192_event"]
    row = conclusion.short_kernels_row(runs)
    assert f"repaid after {replays} replays" in row.cost_short and f"repaid after {replays} replays" in row.cost


# --- the methods appendix ---------------------------------------------------------------------------------------

def test_methods_tables_show_integers_as_integers():
    protocol = methods.protocol_table()
    cells = [cell for row in protocol.rows for cell in row] + [c for r in methods.sample_table().rows for c in r]
    assert not any(tables.looks_elided_or_scientific(cell) for cell in cells)
    values = {row[0]: row[1] for row in protocol.rows}
    assert values["host_seed"] == "20261018" and values["rounds"] == "21" and values["batch"] == "128"


# --- the conclusion ---------------------------------------------------------------------------------------------

def ratio(median, low, high, measurement="warm_batch"):
    return {"median": median, "ci_low": low, "ci_high": high, "p10": low, "p90": high, "n": 21,
            "measurement": measurement, "metric": "event_us"}


class FakeRun:
    """What the conclusion reads of a Run: run_id, headline (through value()), summaries and record."""

    def __init__(self, run_id, headline, summaries, record=None):
        self.run_id, self.headline, self.summaries, self.record = run_id, headline, summaries, record

    def value(self, key):
        if key not in self.headline:
            raise KeyError(f"run {self.run_id} has no headline figure {key!r}")
        return self.headline[key]


FUSION_RATIOS = {("row4_over_fused_rms", "4096x4096", "warm"): ratio(2.6, 2.5, 2.7),
                 ("row4_over_fused_rms", "4096x4096", "cold"): ratio(2.4, 2.3, 2.5, "cold"),
                 ("fused_rms_over_copy", "4096x4096", "warm"): ratio(1.05, 1.04, 1.06),
                 ("cudnn_over_fused_plain", "4096x4096", "warm"): ratio(1.3, 1.2, 1.4),
                 ("cudnn_over_fused_plain", "4096x128", "cold"): ratio(0.9, 0.85, 0.95, "cold")}


def fake_fusion(record=None) -> FakeRun:
    headline, graph = {}, {}
    for (name, shape, l2), r in FUSION_RATIOS.items():
        headline[f"graph.{name}.{shape}.{l2}"] = r["median"]
        graph.setdefault(name, {}).setdefault(shape, {})[l2] = r
    return FakeRun("20990101T000000Z-ch03", headline, {"ratios": {"graph": graph}}, record)


def fake_megakernels(record=None) -> FakeRun:
    speedups = {"coop.ragged.graph": ratio(0.8, 0.78, 0.82), "queue.ragged.graph": ratio(0.9, 0.88, 1.02),
                "depend.ragged.graph": ratio(1.1, 1.05, 1.15), "fused_row.balanced.graph": ratio(1.3, 1.2, 1.4)}
    best = {"ragged": {"variant": "depend.ragged.graph", **speedups["depend.ragged.graph"]},
            "balanced": {"variant": "fused_row.balanced.graph", **speedups["fused_row.balanced.graph"]}}
    headline = {f"speedup_vs_graph3.{v}": r["median"] for v, r in speedups.items()}
    headline.update({f"speedup_vs_graph3.best_one_launch.{case}": b["median"] for case, b in best.items()})
    speedups.update({"flow.ragged.graph": ratio(1.02, 1.0, 1.04), "flow.balanced.graph": ratio(1.12, 1.1, 1.14)})
    tiled = {case: {"variant": f"flow.{case}.graph", **speedups[f"flow.{case}.graph"]} for case in ("ragged", "balanced")}
    headline.update({f"speedup_vs_graph3.{v}": speedups[v]["median"] for v in ("flow.ragged.graph", "flow.balanced.graph")})
    headline.update({f"speedup_vs_graph3.best_tiled_persistent.{case}": b["median"] for case, b in tiled.items()})
    chain = {case: {"k16": {"chain_flow": {"vs_pdl": ratio(1.3, 1.28, 1.32), "vs_fused": ratio(0.9, 0.88, 0.92)}}}
             for case in ("balanced", "ragged")}
    for case in chain:
        headline[f"speedup_vs_graph_pdl.chain_flow.{case}.k16"] = 1.3
        headline[f"speedup_vs_chain_fused.chain_flow.{case}.k16"] = 0.9
    return FakeRun("20990101T000000Z-ch04", headline,
                   {"speedup_vs_graph3": speedups, "best_one_launch": best, "best_tiled_persistent": tiled,
                    "chain": chain, "megakernel_pays_at_k": {"balanced": 0, "ragged": 0}}, record)


def test_ratio_names_the_faster_side_only_outside_one():
    assert conclusion.Ratio("a", "b", "x", ratio(2.0, 1.5, 2.5)).faster == "b"
    assert conclusion.Ratio("a", "b", "x", ratio(0.9, 0.8, 0.95)).faster == "a"
    assert conclusion.Ratio("a", "b", "x", ratio(1.01, 0.99, 1.03)).faster == conclusion.NEITHER


def test_synthetic_fusion_and_megakernel_rows():
    runs = {"fusion": fake_fusion(), "megakernels": fake_megakernels()}
    memory = conclusion.memory_bound_row(runs | {"graphs": FakeRun("g", {
        "stream_over_graph_event.row4.4096x4096.graph": 1.05},
        {"stream_over_graph": {"row4.4096x4096.graph": {"event": ratio(1.05, 1.04, 1.06)}}})})
    assert memory.faster == "fused" and [r.text for r in memory.ratios] == ["2.60 [2.50–2.70]", "2.40 [2.30–2.50]"]
    library = conclusion.library_row(runs)
    assert library.faster == "depends on the case: fused or cuDNN"
    tiles = conclusion.dependent_tiles_row(runs)
    verdicts = [r.faster for r in tiles.ratios]
    assert verdicts == ["3-kernel graph", conclusion.NEITHER, "dependency-driven kernel",
                        "fused row kernel (chapter 3)", conclusion.NEITHER, "flow kernel (B in C)"]
    # a few words: the fastest one-launch design per case, then the persistent kernels against the graph
    assert tiles.faster == ("fused row kernel (balanced), dependency-driven kernel (ragged); persistent: "
                            "cooperative slower than the 3-kernel graph")  # the flow kernel's interval holds 1
    chain = conclusion.dependent_chain_row(runs)
    assert chain.faster == ("k = 16, balanced: beats the PDL graph, not the chained fused kernel; ragged: beats the "
                            "PDL graph, not the chained fused kernel")
    table = conclusion.decision_markdown([memory, library, tiles])
    assert table.count("\n") == 4 and 'href="claim-audit.html#b12"' in table


def test_the_ratios_of_a_row_share_their_decimals():
    narrow = conclusion.Ratio("a", "b", "x", ratio(1.18702, 1.18681, 1.18723))
    wide = conclusion.Ratio("a", "b", "y", ratio(0.96, 0.95, 0.98))
    row = conclusion.same_places(conclusion.Row("r", "s", (narrow, wide), "c", "c", ()))
    assert [r.text for r in row.ratios] == ["1.1870 [1.1868–1.1872]", "0.9600 [0.9500–0.9800]"]


def test_a_missing_headline_key_or_a_disagreeing_summary_stops_the_page():
    fusion = fake_fusion()
    del fusion.headline["graph.cudnn_over_fused_plain.4096x128.cold"]
    with pytest.raises(KeyError, match="graph.cudnn_over_fused_plain.4096x128.cold"):
        conclusion.library_row({"fusion": fusion})
    fusion = fake_fusion()
    fusion.headline["graph.cudnn_over_fused_plain.4096x4096.warm"] = 1.31
    with pytest.raises(ValueError, match="summaries"):
        conclusion.library_row({"fusion": fusion})
    megakernels = fake_megakernels()
    del megakernels.summaries["best_one_launch"]["balanced"]
    with pytest.raises(KeyError, match="best_one_launch/balanced"):
        conclusion.dependent_tiles_row({"megakernels": megakernels})


def test_every_linked_claim_is_a_book_claim():
    from launchlab.claims.declared import BOOK_CLAIMS

    source = (REPO_ROOT / "src/launchlab/pages/conclusion.py").read_text()
    linked = set(re.findall(r'claim\("(B\d+)"\)', source))
    assert linked and linked <= {c.id for c in BOOK_CLAIMS}


def test_conclusion_on_the_accepted_runs_with_synthetic_fusion_and_megakernels():
    real = {stem: accepted_or_skip(stem) for stem in ("ordinary_launches", "graphs", "example_a_pointwise",
                                                      "example_b_jobs")}
    runs = {**real, "fusion": fake_fusion(real["graphs"].record),
            "megakernels": fake_megakernels(real["graphs"].record)}
    values = conclusion.page_values({stem: runs[stem] for stem in conclusion.CHAPTERS})
    assert all(isinstance(v, str) and v.strip() for v in values.values())
    graphs = real["graphs"]
    figure = graphs.value("stream_over_graph_event.row4.128x8192.graph")
    assert f"**{figure:.2f} [" in values["decision_table"]
    assert values["decision_table"].count("\n") == 1 + len(conclusion.ROWS)
    assert values["run_graphs"] == graphs.run_id
    assert len(conclusion.same_variant_table(runs).rows) == len(conclusion.READINGS)


@pytest.mark.slow
def test_conclusion_notebook_executes(tmp_path):
    import papermill

    for stem in conclusion.CHAPTERS:
        accepted_or_skip(stem)
    out = tmp_path / "conclusion.ipynb"
    papermill.execute_notebook(str(REPO_ROOT / "book/conclusion.ipynb"), str(out), cwd=str(REPO_ROOT / "book"),
                               kernel_name="python3", progress_bar=False)


# --- re-execution on a GPU ----------------------------------------------------------------------------------------

def test_execute_starts_its_kernel_on_an_encrypted_transport(monkeypatch, tmp_path):
    """`python -m launchlab execute` sets the kernel-transport policy before papermill starts the kernel, so
    ipykernel has no plain-TCP channel to warn about (present/sphinx_ext.encrypt_kernel_transport)."""
    import argparse

    import papermill
    import zmq
    from jupyter_client.manager import KernelManager

    from launchlab import __main__ as cli
    from launchlab.gpu import device

    if not zmq.has("curve"):
        pytest.skip("this pyzmq has no CurveZMQ support")
    trait = KernelManager.class_traits()["transport_encryption"]
    monkeypatch.setattr(trait, "default_value", "disabled")
    seen = {}

    def record_policy(*args, **kwargs):
        seen["policy"] = KernelManager.class_traits()["transport_encryption"].default_value
        raise RuntimeError("stop before executing")

    monkeypatch.setattr(papermill, "execute_notebook", record_policy)
    monkeypatch.setattr(device, "gpu_status", lambda: (True, "Test GPU"))  # execute checks for one first
    monkeypatch.setenv("LAUNCHLAB_EVIDENCE_ROOT", str(tmp_path))  # command_execute sets it; restored afterwards
    args = argparse.Namespace(stem="ordinary_launches", mode="gpu", parameter=None, root=tmp_path, kernel="python3",
                              archive=None, accept=False)
    with pytest.raises(cli.ExecutionFailed, match="stop before executing"):
        cli.command_execute(args)
    assert seen["policy"] == "auto"


# --- the intro: the answer at a glance ------------------------------------------------------------------------------

def test_the_intro_states_the_numbers_of_the_conclusion():
    """Every speed-up the intro's answer and figure quote is a ratio of the conclusion's decision table, written
    the same way; each regime links to the section that measured it."""
    from launchlab.pages import intro

    runs = {stem: accepted_or_skip(stem) for stem in conclusion.CHAPTERS}
    rows = conclusion.decision_rows(runs)
    answer = intro.page_values(runs)["answer"]
    table = conclusion.decision_markdown(list(rows.values()))
    bars = intro.bars(rows)
    for bar in bars:
        assert f"**{bar.ratio.text}**" in table
        median, _, band = bar.ratio.text.partition(" ")
        assert f"**{median}×** {band}" in answer
    for regime in {bar.regime for bar in bars}:
        page, anchor = conclusion.SECTIONS[regime]
        assert f'href="{page}.html#{anchor}"' in answer
    assert answer.startswith("**CUDA Graph, fused kernel, or megakernel?**")
    first, *items = [line for line in answer.split("\n") if line]
    assert "A speed-up is the usual path's time over the technique's" in first  # the definition before any figure
    assert [line[:3] for line in items[:4]] == ["* *"] * 4 and "**" not in first.replace("**CUDA Graph, fused kernel, or megakernel?**", "")
    figure = intro.decision_figure(rows)
    assert len(figure.axes[0].patches) == len(bars)


def test_the_intro_gives_advice_only_where_the_run_found_it():
    """A technique whose interval holds 1 gets no advice, and the megakernel clause follows its two ratios."""
    from launchlab.pages import intro

    runs = {stem: accepted_or_skip(stem) for stem in conclusion.CHAPTERS}
    rows = conclusion.decision_rows(runs)
    short = rows["short_kernels"]
    tied = conclusion.Ratio("stream", "graph", "x", ratio(1.01, 0.99, 1.03))
    rows["short_kernels"] = dataclasses.replace(short, ratios=(tied, short.ratios[1]))
    answer = intro.answer_markdown(rows, "GPU")
    assert "replay them as a **CUDA graph**" not in answer and "**1.01×** [0.99–1.03]" in answer
    tiles = rows["dependent_tiles"]
    faster = conclusion.Ratio("3-kernel graph", "cooperative", "x", ratio(1.2, 1.1, 1.3))
    rows["dependent_tiles"] = dataclasses.replace(tiles, ratios=(faster,) + tiles.ratios[1:])
    answer = intro.answer_markdown(rows, "GPU")
    assert "the grid-barrier **megakernel** beat the three kernels replayed as a graph" in answer
    assert "a dataflow persistent kernel" in answer  # the persistent kernel that won is named beside those that lost


def test_the_single_call_sentence_names_a_shared_finding_once():
    def run(single, batch):
        timing = {"warm_single": {"enqueue_us": {"median": single}}, "warm_batch": {"enqueue_us": {"median": batch}}}
        return FakeRun("r", {}, {"timing": {"row4.128x8192.stream": timing}})

    both = conclusion.same_variant_values({"ordinary_launches": run(44.0, 33.0), "graphs": run(56.0, 29.0)})
    sentence = both["single_vs_batch_sentence"]
    assert sentence.count("larger than") == 1 and "in both runs" in sentence and "1.33 times" in sentence
    differ = conclusion.same_variant_values({"ordinary_launches": run(44.0, 33.0), "graphs": run(29.0, 29.0)})
    assert "larger than" in differ["single_vs_batch_sentence"] and "within 5 % of" in differ["single_vs_batch_sentence"]


def test_a_finding_the_run_does_not_support_gives_a_visible_note_instead():
    """Flip a finding in a copy of an accepted run's summaries: the sentence that rested on it gives way to a note."""
    import copy

    from launchlab.chapters.example_b_jobs import page_answer as jobs
    from launchlab.chapters.graphs import page_answer as graphs
    from launchlab.chapters.ordinary_launches import page_answer as first

    run = accepted_or_skip("graphs")
    flipped = dataclasses.replace(run, summaries=copy.deepcopy(run.summaries))
    for pace in flipped.summaries["pace"].values():
        pace["paced_by"] = "the GPU" if pace["paced_by"] == "the host" else "the host"
    assert "gained most where the host set the pace" in graphs.ratios_answer(run)
    assert graphs.ratios_answer(flipped).count("Note:") == 1

    run = accepted_or_skip("ordinary_launches")
    flipped = dataclasses.replace(run, summaries=copy.deepcopy(run.summaries))
    for pace in flipped.summaries["pace"].values():
        pace["paced_by"] = "the GPU" if pace["paced_by"] == "the host" else "the host"
    assert first.gap_pace(run).startswith("The gaps are larger") and first.gap_pace(flipped).startswith("Note:")

    run = accepted_or_skip("example_b_jobs")
    flipped = dataclasses.replace(run, summaries=copy.deepcopy(run.summaries))
    flipped.summaries["verdicts"]["separate_over_fused.graph.ragged"] = "above"
    assert jobs.ragged_explanation(run).startswith("Why two kernels beat the fused kernel")
    assert "beat" not in jobs.ragged_explanation(flipped)


def test_example_b_answer_says_what_its_replicates_did_not_repeat():
    """The answer's gap between schedules covers every pair of them, and its sentence on the replicates names the
    traced counts that changed and every claim the registry records a replicate breaking."""
    from launchlab.chapters.example_b_jobs import page_answer as jobs
    from launchlab.present.replicas import replicates_of

    run = accepted_or_skip("example_b_jobs")
    timing = run.summaries["timing"]
    medians = {key: record["warm_batch"]["event_us"]["median"] for key, record in timing.items()}
    pairs = [medians[a] / medians[b] - 1 for a in medians for b in medians if a.split(".")[1:] == b.split(".")[1:]]
    assert f"at most {max(pairs) * 100:.1f} % longer" in jobs.size_answer(run)
    replicas = replicates_of(run)
    changed = [key for key in run.headline if key.startswith(jobs.EARLY_B)
               and any(r.headline[key] != run.headline[key] for r in replicas)]
    text = jobs.spread_answer(run)
    assert ("did not all repeat" in text) == bool(changed)
    for claim_id in jobs.claims_broken_by(run, replicas):
        assert f">{claim_id}</a> as stated" in text
    assert "(" not in jobs.schedule_answer(run)  # the ratios are worded, not put in brackets


def test_example_a_states_each_figure_once_at_the_decimals_its_interval_needs():
    from launchlab.chapters.example_a_pointwise import page, page_answer

    run = accepted_or_skip("example_a_pointwise")
    dram = page.dram_sentence(run)
    ratios = {f"{p['dram_over_logical']:.2f}" for p in run.summaries["dram"]["paths"].values()}
    for ratio in ratios:
        assert dram.count(f"{ratio} times") == 1, dram
    n = page_answer.sizes(run)[-1]
    ratio = run.summaries["ratios"][f"three_over_fused.graph.{n}"]
    places = tables.ci_places(ratio, most=3)
    assert f"took {ratio['median']:.{places}f} times" in page_answer.large_answer(run)
    assert f"{ratio['ci_low']:.{places}f} to" in page_answer.large_answer(run)


def test_the_conclusions_chain_verdict_names_a_win_under_two_percent_as_narrow():
    """conclusion.chain_verdict: a contender beaten by less than 2 % (a tie by chapter 4's rule) is named with its
    margin, so the row never reads 'beats both' on such a win; a clear win on both sides does."""
    from launchlab.pages.conclusion import Ratio, chain_verdict

    def ratio(case, numerator, median):
        return Ratio(numerator, "whole chain", f"{case} rows, 16 stages",
                     {"median": median, "ci_low": median - 0.001, "ci_high": median + 0.001})

    narrow = (ratio("balanced", "PDL graph", 1.37), ratio("balanced", "chained fused kernel", 0.47),
              ratio("ragged", "PDL graph", 1.28), ratio("ragged", "chained fused kernel", 1.013))
    text = chain_verdict(narrow, 16)
    assert text == ("k = 16, balanced: beats the PDL graph, not the chained fused kernel; ragged: beats the PDL graph, "
                    "and the chained fused kernel only by 1.3 %")
    clear = narrow[:3] + (ratio("ragged", "chained fused kernel", 1.05),)
    assert chain_verdict(clear, 16).endswith("ragged: beats both")
