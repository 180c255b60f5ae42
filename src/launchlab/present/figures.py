"""Figures drawn from saved runs (matplotlib, no GPU), in the book's house style.

Usage for chapter authors (house style: drawn 780 px wide, the content column's width, so text is at least 9 px
as rendered; "µs", never "us"; legends outside the data; at most six series per axes; colours from COLOURS):
    fig, axes = figures.figure(1, 1, height=3.2)            # 7.8 in at 100 dpi, constrained layout
    figures.sweep(axes[0, 0], shapes, {"fused": summaries}, ceiling=copy_gbs, ceiling_label="copy")
    figures.finish(fig)                                     # checks <= 6 series, puts the legend below the data
Every figure says what it shows, for readers who cannot see it: `describe(fig, "...")` sets its alt text (the
chapter's figure function does, from the run's numbers), and `glue_figure` refuses a figure without one.
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
ALT_ATTRIBUTE = "launchlab_alt"   # where describe() keeps a figure's alt text until glue_figure emits it

# Peak DRAM bandwidth per device name, in GB/s (10^9 bytes per second): 4.8 TB/s of HBM3e for the H200, from
# NVIDIA's H200 Tensor Core GPU datasheet ("GPU Memory Bandwidth 4.8TB/s", both the SXM and the NVL form).
PEAK_DRAM_GBS = {"NVIDIA H200": 4800.0}

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
        found = target.legend(handles, labels, loc=loc, ncols=ncols, **kwargs)
        # a row of entries wider than the figure would widen the saved image and shrink everything in it on the
        # page: fewer columns until the legend fits
        while where == "below" and ncols > 1 and _wider_than_figure(found):
            found.remove()
            ncols -= 1
            found = target.legend(handles, labels, loc=loc, ncols=ncols, **kwargs)
        return found
    if where == "right":
        return target.legend(handles, labels, loc="center left", bbox_to_anchor=(1.01, 0.5), ncols=ncols, **kwargs)
    # Below the axes, under its tick labels (and x label): an offset in points, so it does not depend on the
    # axes' height.
    from matplotlib.transforms import ScaledTranslation

    drop = (SMALL_PT + 10 + (FONT_PT + 6 if target.get_xlabel() else 0)) / 72
    transform = target.transAxes + ScaledTranslation(0, -drop, target.figure.dpi_scale_trans)
    return target.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=transform,
                         ncols=ncols, **kwargs)


def _wider_than_figure(artist) -> bool:
    fig = artist.figure
    return artist.get_window_extent(fig.canvas.get_renderer()).width > fig.bbox.width


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


def describe(fig, alt: str):
    """Set a figure's alt text: what it shows, in a sentence or two (not a file name). Returns the figure."""
    if not alt or not alt.strip():
        raise ValueError("a figure's alt text must say what the figure shows")
    setattr(fig, ALT_ATTRIBUTE, " ".join(alt.split()))
    return fig


def alt_text(fig) -> str | None:
    """The alt text `describe` set, or None."""
    return getattr(fig, ALT_ATTRIBUTE, None)


def glue_figure(name: str, fig, alt: str | None = None) -> None:
    """Glue a figure for a `{glue:figure}` directive and close it, so the cell does not show it a second time.

    The PNG carries its alt text (`alt`, else what `describe` set) in the output's metadata, where the book's
    Sphinx extension (present/sphinx_ext.py) reads it into the <img alt>; a figure without one is refused."""
    from IPython.core.formatters import format_display_data
    from IPython.display import display
    from myst_nb.ext.glue import GLUE_PREFIX

    alt = alt or alt_text(fig)
    if not alt:
        plt.close(fig)
        raise ValueError(f"figure {name!r} has no alt text: call figures.describe(fig, ...) where it is drawn")
    bundle, metadata = format_display_data(fig)
    for mime in bundle:
        if mime.startswith("image/"):
            metadata.setdefault(mime, {})["alt"] = " ".join(alt.split())
    metadata["scrapbook"] = {"name": name, "mime_prefix": GLUE_PREFIX}
    display({GLUE_PREFIX + mime: value for mime, value in bundle.items()}, raw=True, metadata=metadata)
    plt.close(fig)


def bandwidth_references(ax, device_name: str | None, copy_gbs=None, x=None,
                         copy_label: str = "measured copy") -> None:
    """Reference lines wherever bandwidth is plotted: the device's peak DRAM bandwidth (PEAK_DRAM_GBS, dotted;
    left out for a device not in the table) and, when given, the measured copy (a number, or one value per x;
    dashed, named copy_label). Both are references, not data series."""
    peak = PEAK_DRAM_GBS.get(device_name or "")
    if peak is not None:
        ax.axhline(peak, color="black", linestyle=":", linewidth=1.2, label=f"peak DRAM ({peak / 1000:g} TB/s)",
                   gid=REFERENCE_GID)
    if copy_gbs is not None:
        level = np.asarray(copy_gbs, dtype=float)
        if level.ndim == 0 or x is None:
            ax.axhline(float(np.nanmedian(level)), color="black", linestyle="--", linewidth=1.0,
                       label=copy_label, gid=REFERENCE_GID)
        else:
            ax.plot(x, level, color="black", linestyle="--", linewidth=1.0, label=copy_label, gid=REFERENCE_GID)


def overlapping_tick_labels(fig) -> list[str]:
    """Pairs of tick labels of one axis whose drawn text overlaps (should be empty), as readable strings. The
    figure is drawn first, so the boxes are the saved PNG's; a rotated label is its rotated rectangle, not the
    upright box around it (rotated labels whose upright boxes overlap may well be legible)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for index, ax in enumerate(fig.axes):
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = [t for t in axis.get_ticklabels(minor=False) + axis.get_ticklabels(minor=True)
                      if t.get_visible() and t.get_text().strip()]
            boxes = [(t.get_text(), _text_corners(t, renderer)) for t in labels]
            for i, (text_a, a) in enumerate(boxes):
                for text_b, b in boxes[i + 1:]:
                    if _convex_overlap(a, b):
                        title = ax.get_title() or f"axes {index}"
                        found.append(f"{title}: {name} tick labels {text_a!r} and {text_b!r} overlap")
    return found


def _text_corners(text, renderer) -> np.ndarray:
    """The four corners (pixels) of a text's rotated rectangle: its upright size, turned by its rotation about the
    centre of the box it is drawn in (which is the rectangle's centre in both of matplotlib's rotation modes)."""
    box = text.get_window_extent(renderer)
    angle = text.get_rotation()
    text.set_rotation(0)
    upright = text.get_window_extent(renderer)
    text.set_rotation(angle)
    half = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]]) * [upright.width / 2, upright.height / 2]
    turn = np.deg2rad(angle)
    rotation = np.array([[np.cos(turn), -np.sin(turn)], [np.sin(turn), np.cos(turn)]])
    return half @ rotation.T + [(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2]


def _convex_overlap(a: np.ndarray, b: np.ndarray, margin: float = 0.5) -> bool:
    """Whether two convex polygons overlap by more than `margin` pixels (separating axis test): labels that only
    touch are legible."""
    for polygon in (a, b):
        for i in range(len(polygon)):
            edge = polygon[(i + 1) % len(polygon)] - polygon[i]
            axis = np.array([-edge[1], edge[0]]) / (np.hypot(*edge) or 1.0)
            pa, pb = a @ axis, b @ axis
            if min(pa.max(), pb.max()) - max(pa.min(), pb.min()) <= margin:
                return False
    return True
def _positions(x: Sequence):
    """Numeric x positions and, for categories (shape names), their tick labels."""
    if len(x) and isinstance(x[0], str):
        return np.arange(len(x), dtype=float), list(x)
    return np.asarray(x, dtype=float), None


def sweep(ax, x: Sequence, series: Mapping[str, Sequence], ceiling=None, ceiling_label: str = "ceiling",
          xlabel: str | None = None, ylabel: str | None = None, logx: bool = False, logy: bool = False,
          band: bool = True, styles: Sequence[int] | None = None, lines: bool = True):
    """Lines over a sweep (shapes, sizes, kernel counts): one line per series through the medians with the
    p10–p90 band shaded, and an optional ceiling (a number, or one value per x) drawn as a dashed black line.

    series: {label: [summary or number per x]}, a summary being {"median", "p10", "p90", ...}; None skips a point.
    At most six series (ValueError otherwise). styles: per series, its index into COLOURS and MARKERS (so that one
    contender keeps its colour across panels that show different sets); by default the series' position.
    lines=False draws markers only (the band as a bar at each x), for x values that are separate cases rather
    than a range."""
    if len(series) > MAX_SERIES:
        raise ValueError(f"{len(series)} series on one axes (at most {MAX_SERIES}): {list(series)}")
    xs, ticks = _positions(x)
    if styles is not None and len(styles) != len(series):
        raise ValueError(f"{len(styles)} styles for {len(series)} series")
    for position, (label, values) in enumerate(series.items()):
        index = position if styles is None else styles[position]
        med = np.array([np.nan if v is None else (v["median"] if isinstance(v, Mapping) else v) for v in values],
                       dtype=float)
        colour = COLOURS[index % len(COLOURS)]
        ax.plot(xs, med, marker=MARKERS[index % len(MARKERS)], color=colour, label=label,
                linestyle="-" if lines else "none")
        if band and all(isinstance(v, Mapping) and "p10" in v for v in values if v is not None):
            low = np.array([np.nan if v is None else v["p10"] for v in values], dtype=float)
            high = np.array([np.nan if v is None else v["p90"] for v in values], dtype=float)
            if lines:
                ax.fill_between(xs, low, high, color=colour, alpha=0.18, linewidth=0)
            else:   # separate cases: a bar at each, nothing shaded between them
                ax.errorbar(xs, med, yerr=[med - low, high - med], fmt="none", ecolor=colour, elinewidth=1.0,
                            capsize=2)
    if ceiling is not None and xs.size:
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
    ax.set_ylabel("SM index")
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
