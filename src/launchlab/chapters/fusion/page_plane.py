"""Chapter 3's random plane on the page: its maps, distribution, bandwidth and model figures, read from the run's
summaries ("plane", summary_plane.py); its words, tables and interactive map are in page_plane_text.py. A run
without a plane gets figures that say so."""
from __future__ import annotations

import math

from launchlab.chapters.fusion import L2_STATES, LIBRARIES, label
from launchlab.chapters.fusion.page_format import design_label, summaries_of
from launchlab.chapters.fusion.plane import BANDWIDTH_COPY_US

CMAP = "PuOr_r"                 # ColorBrewer's purple-orange: diverging and readable with every common colour blindness
DESIGN_MARKERS = {"row": "o", "narrow": "s", "cluster": "^", "split": "D"}
OTHER_MARKERS = ("v", "P", "X", "h")
RATIO_SPAN = (1.25, 2.0)        # the colour scale reaches at least 1.25x either side of 1; past 2x it saturates
NICE_RATIOS = (1.25, 1.5, 2.0, 3.0, 4.0)   # colour-bar ticks above 1 (their inverses below)


def plane_of(run) -> dict:
    return summaries_of(run).get("plane") or {"points": [], "rounds": None, "targets": [],
                                              **{l2: None for l2 in L2_STATES}}


def no_plane_figure(what: str):
    """The figure of a run without a plane (made before the plane existed): two panels that say so."""
    from launchlab.present import figures

    fig, axes = figures.figure(1, 2, height=1.6, layout="constrained")
    for column, l2 in enumerate(L2_STATES):
        ax = axes[0, column]
        ax.text(0.5, 0.5, "this run has no random plane", transform=ax.transAxes, ha="center", va="center")
        ax.set_axis_off()
        ax.set_title(f"{what}, {l2} L2", fontsize=figures.FONT_PT)
    return figures.describe(fig, f"Two empty panels: the run holds no random plane, so there is no {what} to draw.")


def marker(design: str, designs: list[str]) -> str:
    if design in DESIGN_MARKERS:
        return DESIGN_MARKERS[design]
    others = [d for d in designs if d not in DESIGN_MARKERS]
    return OTHER_MARKERS[others.index(design) % len(OTHER_MARKERS)]


def best_library_ratio(point: dict, l2: str) -> float | None:
    """Fused plain ÷ the fastest library that ran at the point (None where none did)."""
    values = [point["ratios"][f"{lib}_over_fused_plain"][l2]["median"] for lib in LIBRARIES
              if l2 in point["ratios"].get(f"{lib}_over_fused_plain", {})]
    return 1 / min(values) if values else None


def copy_ratio(point: dict, l2: str, key: str = "fused_plain_over_copy") -> float | None:
    ratio = point["ratios"].get(key, {}).get(l2)
    return None if ratio is None else ratio["median"]


def _norm(values):
    """A logarithmic norm symmetric about 1 (1/span .. span): a ratio and its inverse get colours equally far from
    white. span covers the values' extremes within RATIO_SPAN; a value beyond saturates (the bar shows an arrow)."""
    from matplotlib.colors import LogNorm

    return LogNorm(vmin=1 / _span(values), vmax=_span(values))


def _span(values) -> float:
    finite = [v for v in values if v is not None and v > 0]
    return min(max([RATIO_SPAN[0]] + [max(v, 1 / v) for v in finite]), RATIO_SPAN[1])


def ratio_ticks(span: float) -> list[float]:
    """Colour-bar ticks symmetric about 1 on the ratio scale (1/span .. span): the NICE_RATIOS inside it, their
    inverses, 1, and both ends rounded inwards to two decimals (a tick outside the norm's range breaks the bar)."""
    ticks = {1.0, math.floor(100 * span) / 100, math.ceil(100 / span) / 100}
    ticks |= {r for r in NICE_RATIOS if r <= span} | {math.ceil(100 / r) / 100 for r in NICE_RATIOS if r <= span}
    return sorted(ticks)


def ratio_map(run, value_of, colour_label: str, what: str):
    """Rows against row length on log axes, one dot per plane point, its colour the ratio `value_of(point, l2)`
    (a diverging scale centred on 1), its marker the design; a floor-class point is ringed. Warm L2 left, cold
    right, one colour bar."""
    from matplotlib.lines import Line2D

    from launchlab.present import figures

    points = plane_of(run)["points"]
    if not points:
        return no_plane_figure(what)
    fig, axes = figures.figure(1, 2, height=3.3, layout="constrained", sharey=True)
    values = [value_of(p, l2) for p in points for l2 in L2_STATES]
    norm = _norm(values)
    designs = list(dict.fromkeys(p["design"] for p in points))
    mappable = None
    for column, l2 in enumerate(L2_STATES):
        ax = axes[0, column]
        for design in designs:
            chosen = [p for p in points if p["design"] == design and value_of(p, l2) is not None]
            if chosen:
                mappable = ax.scatter([p["cols"] for p in chosen], [p["rows"] for p in chosen],
                                      c=[value_of(p, l2) for p in chosen], cmap=CMAP, norm=norm, s=34,
                                      marker=marker(design, designs), edgecolors="#333333", linewidths=0.4)
        floor = [p for p in points if p["floor"] and value_of(p, l2) is not None]
        if floor:
            ax.scatter([p["cols"] for p in floor], [p["rows"] for p in floor], s=150, facecolors="none",
                       edgecolors="black", linewidths=1.0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("row length (floats)")
        if column == 0:
            ax.set_ylabel("rows")
        ax.set_title(f"{what}, {l2} L2", fontsize=figures.FONT_PT)
    if mappable is not None:
        # the bar from the shared norm, not from the last scatter: a scatter whose ratios all lie on one side of 1
        # gives the bar a degenerate range
        from matplotlib.cm import ScalarMappable
        from matplotlib.ticker import FuncFormatter, NullFormatter

        beyond = [v for v in values if v is not None and v > 0 and max(v, 1 / v) > norm.vmax]
        bar = fig.colorbar(ScalarMappable(norm=norm, cmap=CMAP), ax=axes[0, :].tolist(), shrink=0.9, pad=0.02,
                           extend="both" if beyond else "neither")
        bar.set_ticks(ratio_ticks(norm.vmax))
        bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        bar.ax.yaxis.set_minor_formatter(NullFormatter())
        bar.set_label(colour_label)
    handles = [Line2D([], [], linestyle="none", marker=marker(d, designs), color="#777777", markersize=6,
                      label=design_label(d)) for d in designs]
    handles += [Line2D([], [], linestyle="none", marker="o", markersize=10, markerfacecolor="none",
                       markeredgecolor="black", label="floor class")] if any(p["floor"] for p in points) else []
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=min(3, len(handles)), fontsize=figures.SMALL_PT)
    return fig


def plane_map_figure(run):
    """Fused plain ÷ the copy ceiling over the plane."""
    from launchlab.present import figures

    if not plane_of(run)["points"]:
        return no_plane_figure("fused plain ÷ copy")
    fig = ratio_map(run, copy_ratio, "fused plain ÷ copy ceiling", "fused plain ÷ copy")
    return figures.describe(fig, (
        "Two scatter maps of the random plane, rows against row length on log axes, warm L2 left and cold right: each "
        "point's colour is the fused plain kernel's device time over the copy ceiling's (purple below 1, white at 1, "
        "orange above), its marker the design the launch policy chose; ringed points are in the floor class."))


def library_map_figure(run):
    """Fused plain ÷ the fastest library at each point."""
    from launchlab.present import figures

    if not plane_of(run)["points"]:
        return no_plane_figure("fused plain ÷ best library")
    fig = ratio_map(run, best_library_ratio, "fused plain ÷ fastest library", "fused plain ÷ best library")
    return figures.describe(fig, (
        "Two scatter maps of the random plane, rows against row length, warm L2 left and cold right: each point's "
        "colour is the fused plain kernel's device time over the fastest library's at that point (purple: fused plain "
        "faster), its marker the design."))


def _ecdf(ax, values, label_text: str, colour: str):
    ordered = sorted(values)
    ax.step(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], where="post", color=colour,
            label=label_text)


def distribution_figure(run):
    """Top: the share of bandwidth-regime points at or below each ratio over the copy, fused plain and fused RMS, with
    the geometric mean and p90 and their bootstrap intervals; bottom: fused plain − copy over the latency-regime
    points. Warm L2 left, cold right."""
    from launchlab.present import figures

    plane = plane_of(run)
    if not plane["points"]:
        return no_plane_figure("distribution")
    fig, axes = figures.figure(2, 2, height=2.6, layout="constrained")
    for column, l2 in enumerate(L2_STATES):
        top, bottom = axes[0, column], axes[1, column]
        chosen = [p for p in plane["points"] if p["regime"].get(l2) == "bandwidth"]
        for key, colour in (("fused_plain_over_copy", figures.COLOURS[0]), ("fused_rms_over_copy", figures.COLOURS[1])):
            values = [copy_ratio(p, l2, key) for p in chosen if copy_ratio(p, l2, key) is not None]
            if values:
                _ecdf(top, values, label(key.removesuffix("_over_copy")), colour)
                stats = plane[l2][key]
                for which, style in (("geomean", "-"), ("p90", ":")):
                    if stats.get(which):
                        top.axvspan(stats[which]["ci_low"], stats[which]["ci_high"], color=colour, alpha=0.15)
                        top.axvline(stats[which]["value"], color=colour, linestyle=style, linewidth=1.0)
        top.axvline(1.0, color="black", linestyle="--", linewidth=0.8, gid=figures.REFERENCE_GID)
        top.set_xscale("log")
        top.xaxis.set_major_formatter(plain_formatter())
        top.xaxis.set_minor_formatter(plain_formatter(minor=True))
        top.set_title(f"copy ≥ {BANDWIDTH_COPY_US:g} µs, {l2} L2", fontsize=figures.FONT_PT)
        top.set_xlabel("device time ÷ copy ceiling")
        latency = [p["minus_copy_us"][l2] for p in plane["points"]
                   if p["regime"].get(l2) == "latency" and l2 in p["minus_copy_us"] and not p["floor"]]
        if latency:
            _ecdf(bottom, latency, label("fused_plain"), figures.COLOURS[0])
        bottom.axvline(0.0, color="black", linestyle="--", linewidth=0.8, gid=figures.REFERENCE_GID)
        bottom.set_title(f"copy < {BANDWIDTH_COPY_US:g} µs, {l2} L2", fontsize=figures.FONT_PT)
        bottom.set_xlabel("fused plain − copy ceiling (µs)")
        for ax in (top, bottom):
            ax.set_ylim(0, 1.02)
            if column == 0:
                ax.set_ylabel("share of points")
    fig = figures.finish(fig, legend_where="below")
    return figures.describe(fig, (
        "Cumulative distributions over the plane's points, warm L2 left and cold right: on top, over the points whose "
        "copy ceiling takes 10 µs or more, the fused kernels' device time over the copy's (log scale), the geometric "
        "mean as a solid line and p90 dotted, each with its bootstrap interval shaded; below, over the faster points, "
        "the fused plain kernel's time minus the copy's in µs."))


def plain_formatter(minor: bool = False):
    """Ticks of a log ratio axis as plain numbers (1, 1.5, 2); minor ticks only at 1.2, 1.5, 2, 3 and 5 tenths."""
    from matplotlib.ticker import FuncFormatter

    shown = {"0.5", "0.7", "1.2", "1.5", "2", "3", "5"}
    return FuncFormatter(lambda v, _: (f"{v:g}" if not minor or f"{v:g}" in shown else ""))


def bandwidth_plane_figure(run):
    """Logical GB/s against the matrix size: fused plain and the copy ceiling at every point, the peak dotted."""
    from launchlab.present import figures

    plane = plane_of(run)
    if not plane["points"]:
        return no_plane_figure("bandwidth")
    fig, axes = figures.figure(1, 2, height=3.0, layout="constrained", sharey=True)
    for column, l2 in enumerate(L2_STATES):
        ax = axes[0, column]
        points = sorted((p for p in plane["points"] if l2 in p["ceiling"]), key=lambda p: p["bytes"])
        sizes = [p["bytes"] / 2**20 for p in points]
        ceiling = [p["gbs"][p["ceiling"][l2]["name"]][l2] for p in points]
        plain = [p["gbs"].get("fused_plain", {}).get(l2, math.nan) for p in points]
        ax.scatter(sizes, plain, s=16, marker="o", color=figures.COLOURS[0], label=label("fused_plain"))
        figures.bandwidth_references(ax, run.record.device_name, ceiling, sizes)   # the copy ceiling dashed
        ax.set_xscale("log")
        ax.set_xlabel("bytes moved per call (MiB)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"{l2} L2", fontsize=figures.FONT_PT)
        if column == 0:
            ax.set_ylabel("logical GB/s")
    fig = figures.finish(fig, legend_where="below")
    return figures.describe(fig, (
        "Scatter plots of logical bandwidth (bytes read and written per call over device time) against the bytes a "
        "call moves, log scale, warm L2 left and cold right: the fused plain kernel as dots, the faster of the two "
        "copies at the same points as a dashed line, and the GPU's peak DRAM bandwidth dotted."))


def model_figure(run):
    """The launch-policy model's predicted device time of the chosen design against the measured one."""
    from launchlab.present import figures

    plane = plane_of(run)
    if not plane["points"]:
        return no_plane_figure("model")
    fig, axes = figures.figure(1, 2, height=3.0, layout="constrained", sharey=True)
    for column, l2 in enumerate(L2_STATES):
        ax = axes[0, column]
        points = [p for p in plane["points"] if l2 in p["predicted_us"] and l2 in p["device_us"].get("fused_plain", {})]
        designs = list(dict.fromkeys(p["design"] for p in plane["points"]))
        for design in dict.fromkeys(p["design"] for p in points):
            chosen = [p for p in points if p["design"] == design]
            ax.scatter([p["device_us"]["fused_plain"][l2] for p in chosen], [p["predicted_us"][l2] for p in chosen],
                       s=18, marker=marker(design, designs), label=design_label(design))
        if points:
            ends = [min(min(p["predicted_us"][l2], p["device_us"]["fused_plain"][l2]) for p in points),
                    max(max(p["predicted_us"][l2], p["device_us"]["fused_plain"][l2]) for p in points)]
            ax.plot(ends, ends, color="black", linestyle="--", linewidth=0.8, label="prediction = measurement",
                    gid=figures.REFERENCE_GID)
            ax.set_xscale("log")
            ax.set_yscale("log")
        else:
            ax.text(0.5, 0.5, "the run's plans carry no prediction", transform=ax.transAxes, ha="center", va="center")
        ax.set_xlabel("measured fused plain (µs)")
        ax.set_title(f"{l2} L2", fontsize=figures.FONT_PT)
        if column == 0:
            ax.set_ylabel("predicted (µs)")
    fig = figures.finish(fig, legend_where="below")
    return figures.describe(fig, (
        "Scatter plots, log-log, of the launch-policy model's predicted device time for the design it chose against "
        "the measured device time of the fused plain kernel at every plane point, warm L2 left and cold right; the "
        "dashed diagonal is a perfect prediction."))
