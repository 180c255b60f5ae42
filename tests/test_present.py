"""The presentation API (present/tables.py, present/figures.py, present/sphinx_ext.py): CPU only, a few seconds."""
from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from launchlab.present import figures, tables  # noqa: E402

TIME = {"median": 12.3456, "p10": 11.91, "p90": 12.84, "n": 21}
RATIO = {"median": 1.0234, "p10": 0.99, "p90": 1.05, "n": 21, "ci_low": 1.012, "ci_high": 1.031}


# --- tables ----------------------------------------------------------------------------------------------------

def test_median_with_band():
    assert tables.median_with_band(TIME) == "12.3 [11.9–12.8]"
    assert tables.median_with_band(TIME, "p10_p90") == "12.3 [11.9–12.8]"
    assert tables.median_with_band(RATIO, "ci") == "1.02 [1.01–1.03]"
    assert tables.median_with_band(RATIO, "ci", digits=3) == "1.023 [1.012–1.031]"
    assert tables.median_with_band({"median": 1234.5, "p10": 1200.0, "p90": 1300.2}) == "1234 [1200–1300]"
    assert tables.median_with_band({"median": 0.012345, "p10": 0.0119, "p90": 0.013}) == "0.0123 [0.0119–0.0130]"
    assert tables.median_with_band(None) == tables.MISSING


def test_bracket_notes_name_what_the_brackets_are():
    assert tables.bracket_note("p10_p90", 21) == "brackets: p10–p90 over 21 rounds"
    assert tables.bracket_note("ci") == "brackets: 95 % bootstrap interval of the median"
    with pytest.raises(ValueError):
        tables.bracket_note("sd")


@pytest.mark.parametrize("value, kind, text", [
    (20261029, "int", "20261029"), (2.0261029e7, "int", "20261029"), (16.0, "int", "16"),
    (1048576, "count", "1,048,576"), (12.3456, "time", "12.3"), (0.000123456, "time", "0.000123"),
    (123456.7, "time", "123457"), (1.23456, "ratio", "1.23"), (1.23456, "pct", "1.2"), (float("nan"), "time", "—"),
])
def test_numbers(value, kind, text):
    assert tables.fmt_number(value, kind) == text


def test_readable_headers():
    assert tables.readable("event_us") == "Event (µs)"
    assert tables.readable("warm_gbs") == "Warm (GB/s)"
    assert tables.readable("l2_mib") == "L2 (MiB)"
    assert tables.readable("cudnn_over_fused_plain") == "cuDNN over fused plain"
    assert tables.readable("host-bound (warm)") == "Host-bound (warm)"
    assert tables.header("event time", "us") == "event time (µs)"


def _rows():
    return [{"shape": "4096x4096", "variant": "fused", "event_us": TIME, "ratio": RATIO, "blocks": 4096,
             "seed": 2.0261029e7, "share": 0.123456, "host_bound": True},
            {"shape": "4096x4096", "variant": "copy", "event_us": TIME, "ratio": RATIO, "blocks": 4096,
             "seed": 2.0261030e7, "share": float("nan"), "host_bound": False}]


def test_page_table_formats_headers_and_cells():
    table = tables.page_table(_rows(), index=["shape", "variant"], units={"blocks": "blocks", "share": "of total"},
                              caption="Warm-L2 time per invocation.")
    assert table.columns == ["Shape", "Variant", "Event (µs)", "Ratio", "Blocks (blocks)", "Seed",
                             "Share (of total)", "Host bound"]
    assert table.rows[0] == ["4096x4096", "fused", "12.3 [11.9–12.8]", "1.02 [1.01–1.03]", "4096", "20261029",
                             "0.123", "yes"]
    assert table.rows[1][:2] == ["", "copy"]          # a repeated index value is shown once
    assert table.notes == ["Brackets: p10–p90 over 21 rounds.", "Brackets: 95 % bootstrap interval of the median."]
    assert not any("_" in c for c in table.columns)


def test_page_table_shows_each_run_of_equal_index_values_once_at_every_level():
    rows = [{"chapter": c, "run": r, "figure": f, "value": 1.0}
            for c, r, f in [("one", "a", "x"), ("one", "a", "y"), ("one", "b", "x"), ("one", "b", "y"),
                            ("two", "b", "x")]]
    table = tables.page_table(rows, index=["chapter", "run", "figure"])
    assert [row[:2] for row in table.rows] == [["one", "a"], ["", ""], ["", "b"], ["", ""], ["two", "b"]]


def test_page_table_from_a_dataframe_with_a_multiindex():
    frame = pd.DataFrame(_rows()).set_index(["shape", "variant"])
    table = tables.page_table(frame, note="One row per variant.")
    assert table.n_index == 2 and table.columns[:2] == ["Shape", "Variant"]
    assert table.notes[0] == "One row per variant."


def test_html_scrolls_in_its_own_box_and_never_elides():
    rows = [{"seed": 20261029 + i, "time_us": 1.0 + i / 7} for i in range(200)]
    html = tables.html_table(rows, max_rows=30)
    assert html.count('<div class="table-wrapper">') == 1
    assert 'data-show="Show all 200 rows"' in html and 'class="ll-more-toggle"' in html
    # the first rows show, every other row is there too, marked for the toggle to hide
    assert html.count('<tr class="ll-more">') == 200 - tables.PREVIEW_ROWS
    toggle = re.search(r'<input type="checkbox" class="ll-more-toggle" id="([\w-]+)">', html).group(1)
    assert f'<label class="ll-more-label" for="{toggle}"' in html
    assert "ll-more" not in tables.html_table(rows[:30], max_rows=30)
    cells = re.findall(r"<t[dh](?:\s[^>]*)?>(.*?)</t[dh]>", html)
    assert len(cells) == 2 + 2 * 200
    assert not any(tables.looks_elided_or_scientific(c) for c in cells)
    assert "20261228" in cells[-2]


def test_a_band_may_break_before_its_bracket_only():
    html = tables.html_table([{"event_us": TIME}])
    assert '<span class="ll-nb">12.3</span> <span class="ll-nb">[11.9–12.8]</span>' in html


def test_a_long_token_breaks_at_its_joints_and_nowhere_else():
    row = {"key": "stream_over_graph_complete.row4.4096x4096.graph", "note": "a <short> word_pair",
           "call": "(cudaMemcpyAsync)", "version": "2.11.0+cu130.post1", "run": "20261201T153245Z-ch01"}
    html = tables.page_table([row]).to_html()
    assert "stream_<wbr>over_<wbr>graph_<wbr>complete.<wbr>row4.4096x4096.<wbr>graph" in html
    assert "(<wbr>cuda<wbr>Memcpy<wbr>Async)" in html
    assert "2.11.0+cu130.<wbr>post1" in html             # never between a number's digits
    assert "20261201<wbr>T153245Z-ch01" in html
    assert "a &lt;short&gt; word_pair" in html          # short tokens stay as they are, escaped
    assert "<wbr>" not in tables.page_table([{"key": "x" * 40}]).to_html()  # nothing to break at: left whole


def test_table_displays_as_html_in_a_notebook():
    table = tables.page_table([{"a": 1}])
    assert table._repr_html_().startswith('<div class="ll-table-block"><div class="table-wrapper">')


def test_csv_download_is_written_under_static(tmp_path, monkeypatch):
    (tmp_path / "_config.yml").write_text("title: t\n")
    (tmp_path / "book" / "_static").mkdir(parents=True)
    (tmp_path / "book" / "appendix").mkdir()
    monkeypatch.chdir(tmp_path / "book" / "appendix")
    table = tables.page_table([{"seed": 1, "time_us": 2.5}], csv="demo")
    assert table.csv_href == "../../_static/tables/demo.csv"
    assert (tmp_path / "book" / "_static" / "tables" / "demo.csv").read_text().splitlines()[0] == "Seed,Time (µs)"
    assert 'href="../../_static/tables/demo.csv"' in table.to_html()


def test_looks_elided_or_scientific():
    assert tables.looks_elided_or_scientific("2.026102e+07")
    assert tables.looks_elided_or_scientific("…") and tables.looks_elided_or_scientific("...")
    assert not tables.looks_elided_or_scientific("12.3 [11.9–12.8]")
    assert not tables.looks_elided_or_scientific("fused_softmax_b32_r4_u4_m32")


# --- figures ---------------------------------------------------------------------------------------------------

def _summary(m):
    return {"median": m, "p10": 0.9 * m, "p90": 1.1 * m, "n": 21}


def test_house_style_fits_the_column_with_readable_text():
    fig, axes = figures.figure(1, 2, width=11)
    width_px = fig.get_figwidth() * fig.dpi
    assert width_px <= 800
    assert min(matplotlib.rcParams[k] for k in ("xtick.labelsize", "ytick.labelsize", "legend.fontsize")) \
        * fig.dpi / 72 >= 9 / 0.75      # >= 9 px even when the image is shown at 75 % of its size
    assert len(matplotlib.rcParams["axes.prop_cycle"]) == figures.MAX_SERIES
    matplotlib.pyplot.close(fig)


def test_sweep_draws_lines_bands_and_a_ceiling(tmp_path):
    fig, axes = figures.figure(1, 1, layout="constrained")
    ax = axes[0, 0]
    figures.sweep(ax, ["a", "b", "c"], {"fused": [_summary(1), _summary(2), None], "row": [3, 4, 5]},
                  ceiling=0.8, ceiling_label="copy", ylabel="time (µs)")
    assert figures.data_series(ax) == ["fused", "row"]
    figures.finish(fig)
    assert fig.legends and not ax.get_legend()
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == ["fused", "row", "copy"]
    fig.savefig(tmp_path / "s.png")
    matplotlib.pyplot.close(fig)


def test_more_than_six_series_is_refused():
    fig, axes = figures.figure()
    with pytest.raises(ValueError, match="at most 6"):
        figures.sweep(axes[0, 0], [1, 2], {str(i): [1, 2] for i in range(7)})
    ax = axes[0, 0]
    for i in range(7):
        ax.plot([0, 1], [i, i], label=f"s{i}")
    with pytest.raises(ValueError, match="at most 6"):
        figures.finish(fig)
    matplotlib.pyplot.close(fig)


def test_existing_helpers_keep_working_without_warnings(recwarn):
    fig, axes = figures.figure(2, 1, height=3.0)
    groups = {"a": {"x": _summary(3), "y": _summary(5)}, "b": {"x": _summary(4), "y": _summary(6)}}
    figures.quantile_dots(axes[0, 0], groups, {"x": "event", "y": "host"})
    starts = [np.arange(4) * 1e3, np.arange(4) * 1e3 + 5e3]
    figures.block_timeline(axes[1, 0], starts, [s + 900 for s in starts], [np.arange(4)] * 2, ["K1", "K2"], "t")
    assert "µs" in axes[1, 0].get_xlabel()
    legend = axes[0, 0].get_legend()
    assert legend is not None and legend.get_bbox_to_anchor().x0 > axes[0, 0].get_window_extent().x1 - 1
    fig.tight_layout()
    matplotlib.pyplot.close(fig)
    fig, axes = figures.figure(1, 2)
    figures.draw_chain(axes[0, 0], ["a", "b"], "chain")
    matplotlib.pyplot.close(fig)
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]


# --- the Sphinx extension ---------------------------------------------------------------------------------------

def test_inline_scripts_are_unified():
    from types import SimpleNamespace

    from sphinx.builders.html._assets import _JavaScript

    from launchlab.present import sphinx_ext

    body = "const THEBE_JS_URL = 'x'"
    builder = SimpleNamespace(_js_files=[_JavaScript("_static/a.js"), _JavaScript(None, priority=500, body=body)])
    sphinx_ext._unify_inline_scripts(SimpleNamespace(builder=builder), None)
    # What Sphinx's prepare_writing then adds again from the registry is recognised as present.
    assert _JavaScript("", priority=500, body=body) in builder._js_files
    assert len(builder._js_files) == 2


# --- the static page checks (site_check) -------------------------------------------------------------------------

def test_page_checks_find_uncaptioned_figures_and_bad_cells(tmp_path):
    import site_check

    good = ('<figure class="align-default" id="fig-a"><img src="a.png" /><figcaption><p>'
            '<span class="caption-number">Figure 1 </span><span class="caption-text">A.</span></p></figcaption></figure>')
    (tmp_path / "p.html").write_text(
        '<img src="logo.png"><article class="bd-article">' + good +
        '<div class="cell_output"><img src="bare.png"></div>'
        '<figure><img src="nocap.png"></figure>'
        '<figure><img src="nonum.png"><figcaption><p>Words.</p></figcaption></figure>'
        "<table><tr><th>Seed</th><td>2.026102e+07</td><td>1e5</td><td>12.3 [11.9–12.8]</td><td>sha 3e5a</td>"
        "<td>kernel_1 ... kernel_5</td><td>a…</td><td>fused_b32e4</td><td>if […] one kernel</td></tr></table></article>")
    problems = {(r.url, r.problem) for r in site_check.uncaptioned_figures(tmp_path)}
    assert problems == {("bare.png", "not in a <figure>"), ("nocap.png", "figure without a caption"),
                        ("nonum.png", "figure without a number (no :name:?)")}
    cells = {(r.url, r.problem) for r in site_check.bad_table_cells(tmp_path)}
    assert cells == {("2.026102e+07", "scientific notation"), ("1e5", "scientific notation"),
                     ("kernel_1 ... kernel_5", "truncation mark"), ("a…", "truncation mark")}


def test_a_group_label_shows_on_the_first_row_of_its_group_only():
    """An inner label repeats within its outer group: shown once there too, and again where the outer group starts."""
    rows = [{"shape": "4096x4096", "l2": "warm", "variant": v, "time_us": 1.0} for v in ("fused", "copy")]
    rows += [{"shape": "4096x4096", "l2": "cold", "variant": "fused", "time_us": 1.0},
             {"shape": "4096x128", "l2": "cold", "variant": "fused", "time_us": 1.0}]
    table = tables.page_table(rows, index=["shape", "l2", "variant"])
    assert [row[:2] for row in table.rows] == [["4096x4096", "warm"], ["", ""], ["", "cold"], ["4096x128", "cold"]]


def test_a_column_empty_in_every_row_is_left_out():
    rows = [{"variant": "fused", "note": None, "blank": "", "time_us": 1.0},
            {"variant": "copy", "note": float("nan"), "blank": " ", "time_us": 2.0}]
    table = tables.page_table(rows, index="variant")
    assert table.columns == ["Variant", "Time (µs)"]
    assert tables.page_table(rows[:1] + [{**rows[1], "note": "x"}], index="variant").columns[1] == "Note"


def test_csv_holds_numbers_with_units_in_the_headers(tmp_path, monkeypatch):
    """A summary column becomes its median and bounds, each a numeric column; no cell mixes text and numbers."""
    (tmp_path / "_config.yml").write_text("title: t\n")
    (tmp_path / "book" / "_static").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "book")
    tables.page_table(_rows(), index=["shape", "variant"], csv="demo")
    frame = pd.read_csv(tmp_path / "book" / "_static" / "tables" / "demo.csv")
    assert list(frame.columns[:8]) == ["Shape", "Variant", "Event (µs), median", "Event (µs), p10", "Event (µs), p90",
                                       "Ratio, median", "Ratio, 95 % interval, low", "Ratio, 95 % interval, high"]
    for column in frame.columns[2:8]:
        assert frame[column].dtype == float, column
    assert frame["Event (µs), median"][0] == TIME["median"] and frame["Ratio, 95 % interval, high"][1] == RATIO["ci_high"]


def test_the_environment_table_says_how_far_the_sm_clock_moved_and_rounds_the_power_to_watts():
    """glue.environment_rows: the clock verdict carries after ÷ before of the two SM readings and the threshold that
    flags a run; power reads in whole watts."""
    from types import SimpleNamespace

    from launchlab.gpu.device import CLOCK_DROP_TOLERANCE, clocks_dropped
    from launchlab.present.glue import environment_rows

    rng = np.random.default_rng()
    before = int(rng.integers(1500, 2000))
    after = int(before * rng.uniform(0.8, 1.0))
    watts = rng.uniform(100, 700)
    states = {f"measurement {k}": {"smi": {"clocks.sm": str(mhz), "clocks.mem": "3201", "temperature.gpu": "40",
                                           "power.draw": f"{watts:.2f}"}} for k, mhz in ((0, before), (1, after))}
    record = SimpleNamespace(states=states, clocks_dropped=clocks_dropped(*states.values()), host_path="stream",
                             device={"name": "GPU", "compute_capability": "9.0", "sm_count": 132, "l2_bytes": 2**26},
                             environment={}, git_commit="abc", source_tree_sha256="0" * 64)
    rows = dict(environment_rows(SimpleNamespace(record=record, run_id="r")))
    verdict = rows["SM clock dropped during timing"]
    assert verdict.startswith("yes" if after < CLOCK_DROP_TOLERANCE * before else "no")
    assert f"after ÷ before {after / before:.2f}" in verdict and f"below {CLOCK_DROP_TOLERANCE:.2f}" in verdict
    assert rows["clocks before timing"].endswith(f", {watts:.0f} W")


@pytest.mark.parametrize("tally, words", [({"above": 5, "below": 0, "tie": 0}, "all 5 workloads"),
                                          ({"above": 2, "below": 0, "tie": 0}, "both workloads"),
                                          ({"above": 1, "below": 0, "tie": 0}, "the one workload"),
                                          ({"above": 3, "below": 1, "tie": 1}, "3 of 5 workloads (1 slower, 1 tied)"),
                                          ({"above": 1, "below": 0, "tie": 2}, "1 of 3 workloads (2 tied)")])
def test_a_tally_in_words_names_only_the_counts_that_are_not_zero(tally, words):
    from launchlab.present.prose import tally_words

    assert tally_words(tally, "workloads") == words


def test_ci_places_tells_the_ends_apart_and_keeps_each_on_its_side():
    """ci_places: 2 decimals where they tell the truth; more where the ends would print equal or an end would
    print on or across the threshold; never more than `most`."""
    assert tables.ci_places({"ci_low": 1.012, "ci_high": 1.031}) == 2
    assert tables.ci_places({"ci_low": 1.3706, "ci_high": 1.3729}) == 3                 # 1.37 = 1.37
    assert tables.ci_places({"ci_low": 1.37061, "ci_high": 1.37069}) == 4               # capped at 4
    assert tables.ci_places({"ci_low": 1.37061, "ci_high": 1.37069}, most=3) == 3
    assert tables.ci_places({"ci_low": 0.981, "ci_high": 0.9962}) == 3                  # 1.00 would read as a tie
    assert tables.ci_places({"ci_low": 1.0004, "ci_high": 1.04}) == 4                   # 1.000 still reads as 1
    assert tables.ci_places({"ci_low": 1.0976, "ci_high": 1.1185}, threshold=1.10) == 3  # 1.10 would meet 1.10
    assert tables.ci_places({"ci_low": 1.0976, "ci_high": 1.1185}, threshold=None) == 2
    assert tables.ci_places({"ci_low": 1.0, "ci_high": 1.0}) == 2                        # equal ends stay equal
    # a ratio cell applies the same rule: a loss never prints as [0.99–1.00], a win never as [1.00–1.03]
    assert tables.median_with_band({"median": 0.995, "ci_low": 0.9904, "ci_high": 0.9994}, "ci") == "0.995 [0.990–0.999]"
    assert tables.median_with_band({"median": 1.008, "ci_low": 1.0042, "ci_high": 1.028}, "ci") == "1.008 [1.004–1.028]"
    assert tables.median_with_band({"median": 1.02, "ci_low": 1.01, "ci_high": 1.03}, "ci") == "1.02 [1.01–1.03]"
