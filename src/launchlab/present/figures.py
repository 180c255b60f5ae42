"""Figures drawn from saved runs (matplotlib, no GPU), in the book's house style.

Usage for chapter authors (house style: drawn 780 px wide, the content column's width, so text is at least 9 px
as rendered; "µs", never "us"; legends outside the data; at most six series per axes; colours from COLOURS):
    fig, axes = figures.figure(1, 1, height=3.2)            # 7.8 in at 100 dpi, constrained layout
    figures.sweep(axes[0, 0], shapes, {"fused": summaries}, ceiling=copy_gbs, ceiling_label="copy")
    figures.finish(fig)                                     # checks <= 6 series, puts the legend below the data
In the notebook a code cell glues it without showing it, and a Markdown cell places it, numbered and captioned:
    figures.glue_figure("fusion-time", chapter.time_figure(run))
    ```{glue:figure} fusion-time
    :name: fig-fusion-time
    Time per invocation: dots are medians, bars p10–p90 over the rounds.
    ```
and the prose refers to it as {numref}`fig-fusion-time` ("Figure 3": `numfig` in _config.yml).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib
import matplotlib.figure
import matplotlib.layout_engine
import matplotlib.pyplot as plt
import numpy as np

# Okabe–Ito colours: distinguishable with the common colour-vision deficiencies and in greyscale order.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9")
MAX_SERIES = 6
MARKERS = ("o", "s", "^", "D", "v", "P")

DPI = 100
WIDTH_IN = 7.8                    # 780 px: the content column at a 1400 px window (figures never exceed it)
FONT_PT = 10                      # 10 pt at 100 dpi is 13.9 px; the smallest text (9 pt) is 12.5 px
SMALL_PT = 9
REFERENCE_GID = "reference"       # lines that are references (ceilings, y = 1), not data series

STYLE = {
    "figure.dpi": DPI, "savefig.dpi": DPI,
    "font.size": FONT_PT, "axes.titlesize": FONT_PT + 1, "axes.labelsize": FONT_PT,
    "xtick.labelsize": SMALL_PT, "ytick.labelsize": SMALL_PT, "legend.fontsize": SMALL_PT,
    "figure.titlesize": FONT_PT + 1, "legend.title_fontsize": SMALL_PT,
    "axes.prop_cycle": matplotlib.cycler(color=COLOURS),
    "axes.spines.top": False, "axes.spines.right": False,
    "axes.grid": False, "grid.alpha": 0.3, "legend.frameon": False,
    "lines.linewidth": 1.6, "lines.markersize": 5, "errorbar.capsize": 3,
    "savefig.bbox": "tight", "savefig.pad_inches": 0.05,
}


def apply_style() -> None:
    """Set the house style in matplotlib's rcParams (figure() calls it)."""
    matplotlib.rcParams.update(STYLE)


def figure(rows: int = 1, cols: int = 1, width: float = WIDTH_IN, height: float = 3.2, layout: str | None = None,
           **kwargs):
    """(fig, axes) with axes always 2-D. The width is capped at WIDTH_IN, so a figure never renders smaller than
    drawn; `height` is per row. layout="constrained" lets `finish` and `legend` put legends outside the axes
    (code that calls `fig.tight_layout()` itself leaves layout None)."""
    apply_style()
    fig, axes = plt.subplots(rows, cols, figsize=(min(width, WIDTH_IN), height * rows), squeeze=False, dpi=DPI,
                             layout=layout, **kwargs)
    return fig, axes


def data_series(ax) -> list[str]:
    """Labels of an axes' data series (legend entries that are not references such as a ceiling)."""
    handles, labels = ax.get_legend_handles_labels()
    return [label for handle, label in zip(handles, labels) if _gid(handle) != REFERENCE_GID]


def _gid(handle):
    gid = handle.get_gid() if hasattr(handle, "get_gid") else None
    if gid is None and hasattr(handle, "get_children"):       # an errorbar container holds its lines
        gid = next((c.get_gid() for c in handle.get_children() if c.get_gid()), None)
    return gid


def check_series(ax) -> None:
    """Raise when an axes shows more than six data series: split the figure or the comparison instead."""
    labels = data_series(ax)
    if len(labels) > MAX_SERIES:
        raise ValueError(f"{len(labels)} series on one axes (at most {MAX_SERIES}): {labels}")


def legend(target, where: str = "below", ncols: int | None = None, **kwargs):
    """A legend outside the data: below the axes (or the figure) or to its right. target: an Axes (its own
    series) or a Figure (the series of its first axes, for panels that share them). Reference lines (a ceiling,
    gid="reference") are listed too but do not count towards the six series."""
    if not isinstance(target, matplotlib.figure.Figure) and len(target.figure.axes) == 1 \
            and _constrained(target.figure):
        target = target.figure           # one axes: the figure's legend is placed by its layout
    axes = target.axes if isinstance(target, matplotlib.figure.Figure) else [target]
    handles, labels = axes[0].get_legend_handles_labels()
    if not handles:
        return None
    for ax in axes:
        check_series(ax)
    if where not in ("below", "right"):
        raise ValueError("where is 'below' or 'right'")
    if ncols is None:
        ncols = 1 if where == "right" else min(len(labels), 3)
    if isinstance(target, matplotlib.figure.Figure):
        if not _constrained(target):
            target.set_layout_engine("constrained")
        loc = "outside lower center" if where == "below" else "outside right center"
        return target.legend(handles, labels, loc=loc, ncols=ncols, **kwargs)
    if where == "right":
        return target.legend(handles, labels, loc="center left", bbox_to_anchor=(1.01, 0.5), ncols=ncols, **kwargs)
    # Below the axes, under its tick labels (and x label): an offset in points, so it does not depend on the
    # axes' height.
    from matplotlib.transforms import ScaledTranslation

    drop = (SMALL_PT + 10 + (FONT_PT + 6 if target.get_xlabel() else 0)) / 72
    transform = target.transAxes + ScaledTranslation(0, -drop, target.figure.dpi_scale_trans)
    return target.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=transform,
                         ncols=ncols, **kwargs)


def _constrained(fig) -> bool:
    return isinstance(fig.get_layout_engine(), matplotlib.layout_engine.ConstrainedLayoutEngine)


def finish(fig, legend_where: str | None = "below", shared_legend: bool = True):
    """The last call on a figure: check every axes (<= 6 series), put the legend outside the data (one for the
    figure when its panels share series, else one per axes), and lay it out."""
    for ax in fig.axes:
        check_series(ax)
        if ax.get_legend() is not None and legend_where:
            ax.get_legend().remove()
    if legend_where:
        if shared_legend:
            legend(fig, legend_where)
        else:
            for ax in fig.axes:
                legend(ax, legend_where)
    if fig.get_layout_engine() is None:
        fig.set_layout_engine("constrained")
    return fig


def glue_figure(name: str, fig) -> None:
    """Glue a figure for a `{glue:figure}` directive and close it, so the cell does not show it a second time."""
    from myst_nb import glue

    glue(name, fig, display=False)
    plt.close(fig)


def _positions(x: Sequence):
    """Numeric x positions and, for categories (shape names), their tick labels."""
    if len(x) and isinstance(x[0], str):
        return np.arange(len(x), dtype=float), list(x)
    return np.asarray(x, dtype=float), None


def sweep(ax, x: Sequence, series: Mapping[str, Sequence], ceiling=None, ceiling_label: str = "ceiling",
          xlabel: str | None = None, ylabel: str | None = None, logx: bool = False, logy: bool = False,
          band: bool = True):
    """Lines over a sweep (shapes, sizes, kernel counts): one line per series through the medians with the
    p10–p90 band shaded, and an optional ceiling (a number, or one value per x) drawn as a dashed black line.

    series: {label: [summary or number per x]}, a summary being {"median", "p10", "p90", ...}; None skips a point.
    At most six series (ValueError otherwise)."""
    if len(series) > MAX_SERIES:
        raise ValueError(f"{len(series)} series on one axes (at most {MAX_SERIES}): {list(series)}")
    xs, ticks = _positions(x)
    for index, (label, values) in enumerate(series.items()):
        med = np.array([np.nan if v is None else (v["median"] if isinstance(v, Mapping) else v) for v in values],
                       dtype=float)
        colour = COLOURS[index % len(COLOURS)]
        ax.plot(xs, med, marker=MARKERS[index % len(MARKERS)], color=colour, label=label)
        if band and all(isinstance(v, Mapping) and "p10" in v for v in values if v is not None):
            low = np.array([np.nan if v is None else v["p10"] for v in values], dtype=float)
            high = np.array([np.nan if v is None else v["p90"] for v in values], dtype=float)
            ax.fill_between(xs, low, high, color=colour, alpha=0.18, linewidth=0)
    if ceiling is not None:
        level = np.broadcast_to(np.asarray(ceiling, dtype=float), xs.shape)
        if np.all(level == level[0]):
            ax.axhline(level[0], color="black", linestyle="--", linewidth=1.0, label=ceiling_label, gid=REFERENCE_GID)
        else:
            ax.plot(xs, level, color="black", linestyle="--", linewidth=1.0, label=ceiling_label, gid=REFERENCE_GID)
    if ticks is not None:
        ax.set_xticks(xs, ticks)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    return ax


def quantile_dots(ax, groups: dict, metrics: dict, log: bool = True, legend_where: str | None = "right"):
    """One cluster per group, one dot per metric at the median with a p10–p90 bar.

    groups: {label: {metric: {"median", "p10", "p90"}}}; metrics: {metric: legend label} (at most six).
    The metrics sit side by side: they measure different things and are never added. The legend goes outside
    the data (right of the axes; legend_where=None leaves it to `finish` or the caller).
    """
    if len(metrics) > MAX_SERIES:
        raise ValueError(f"{len(metrics)} series on one axes (at most {MAX_SERIES}): {list(metrics)}")
    width = 0.8 / len(metrics)
    for index, (metric, label) in enumerate(metrics.items()):
        xs = np.arange(len(groups)) + (index - (len(metrics) - 1) / 2) * width
        medians = np.array([g[metric]["median"] for g in groups.values()])
        low = medians - np.array([g[metric]["p10"] for g in groups.values()])
        high = np.array([g[metric]["p90"] for g in groups.values()]) - medians
        ax.errorbar(xs, medians, yerr=[low, high], fmt=MARKERS[index % len(MARKERS)], capsize=3, label=label,
                    color=COLOURS[index % len(COLOURS)])
    ax.set_xticks(np.arange(len(groups)), list(groups))
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    if legend_where:
        legend(ax, legend_where)
    return ax


def block_timeline(ax, start_ns: np.ndarray, end_ns: np.ndarray, sm: np.ndarray, names, title: str,
                   legend_where: str | None = "right"):
    """Every block of every kernel as a bar on its SM's row: gaps between kernels show as white."""
    if len(names) > MAX_SERIES:
        raise ValueError(f"{len(names)} kernels on one axes (at most {MAX_SERIES}): {list(names)}")
    for index, name in enumerate(names):
        colour = COLOURS[index % len(COLOURS)]
        # one line segment per block (a LineCollection): thousands of blocks draw in well under a second
        ax.hlines(sm[index], start_ns[index] / 1e3, end_ns[index] / 1e3, colors=colour, label=name, linewidth=1.2)
    ax.set_xlabel("time since the first block started (µs)")
    ax.set_ylabel("SM (%smid)")
    ax.set_title(title)
    if legend_where:
        legend(ax, legend_where)
    return ax


def draw_chain(ax, labels, title: str):
    """Boxes top to bottom with arrows between them: a linear graph of nodes."""
    count = len(labels)
    for index, label in enumerate(labels):
        y = count - 1 - index
        ax.text(0.5, y, label, ha="center", va="center", fontsize=SMALL_PT, family="monospace",
                bbox={"boxstyle": "round", "facecolor": COLOURS[index % len(COLOURS)], "alpha": 0.3})
        if index:
            ax.annotate("", xy=(0.5, y + 0.25), xytext=(0.5, y + 0.75), arrowprops={"arrowstyle": "->"})
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.6, count - 0.4)
    ax.set_title(title)
    ax.axis("off")
    return ax
