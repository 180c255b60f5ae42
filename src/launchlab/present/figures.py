"""Figures drawn from saved runs (matplotlib, no GPU)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

KERNEL_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860")


def quantile_dots(ax, groups: dict, metrics: dict, log: bool = True):
    """One cluster per group, one dot per metric at the median with a p10-p90 bar.

    groups: {label: {metric: {"median", "p10", "p90"}}}; metrics: {metric: legend label}.
    The metrics sit side by side: they measure different things and are never added.
    """
    width = 0.8 / len(metrics)
    for index, (metric, label) in enumerate(metrics.items()):
        xs = np.arange(len(groups)) + (index - (len(metrics) - 1) / 2) * width
        medians = np.array([g[metric]["median"] for g in groups.values()])
        low = medians - np.array([g[metric]["p10"] for g in groups.values()])
        high = np.array([g[metric]["p90"] for g in groups.values()]) - medians
        ax.errorbar(xs, medians, yerr=[low, high], fmt="o", capsize=3, label=label,
                    color=KERNEL_COLOURS[index % len(KERNEL_COLOURS)])
    ax.set_xticks(np.arange(len(groups)), list(groups))
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    return ax


def block_timeline(ax, start_ns: np.ndarray, end_ns: np.ndarray, sm: np.ndarray, names, title: str):
    """Every block of every kernel as a bar on its SM's row: gaps between kernels show as white."""
    for index, name in enumerate(names):
        colour = KERNEL_COLOURS[index % len(KERNEL_COLOURS)]
        # one line segment per block (a LineCollection): thousands of blocks draw in well under a second
        ax.hlines(sm[index], start_ns[index] / 1e3, end_ns[index] / 1e3, colors=colour, label=name, linewidth=1.2)
    ax.set_xlabel("time since the first block started (us)")
    ax.set_ylabel("SM (%smid)")
    ax.set_title(title, fontsize="medium")
    ax.legend(fontsize="small", loc="upper right", ncols=len(names))
    return ax


def figure(rows: int = 1, cols: int = 1, width: float = 9.0, height: float = 3.6, **kwargs):
    fig, axes = plt.subplots(rows, cols, figsize=(width, height * rows), squeeze=False, **kwargs)
    return fig, axes


def draw_chain(ax, labels, title: str):
    """Boxes top to bottom with arrows between them: a linear graph of nodes."""
    count = len(labels)
    for index, label in enumerate(labels):
        y = count - 1 - index
        ax.text(0.5, y, label, ha="center", va="center", fontsize="small", family="monospace",
                bbox={"boxstyle": "round", "facecolor": KERNEL_COLOURS[index % len(KERNEL_COLOURS)], "alpha": 0.3})
        if index:
            ax.annotate("", xy=(0.5, y + 0.25), xytext=(0.5, y + 0.75), arrowprops={"arrowstyle": "->"})
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.6, count - 0.4)
    ax.set_title(title, fontsize="medium")
    ax.axis("off")
    return ax
