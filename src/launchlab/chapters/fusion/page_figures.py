"""Chapter 3's figures at the fixed shapes: device time over the copy's, logical GB/s, logical against DRAM bytes."""
from __future__ import annotations

from launchlab.chapters.fusion import L2_STATES, is_library
from launchlab.chapters.fusion.page_format import label, shape_label, summaries_of

MAX_SERIES = 6


def _groups(run) -> list[tuple[str, list[str]]]:
    """(title, contenders) per figure row: our kernels, then the libraries beside the fused plain kernel; at most
    MAX_SERIES each, so every panel reads at a glance."""
    contenders = summaries_of(run)["contenders"]
    ours = [n for n in contenders if n != "copy" and not is_library(n)]
    ours.sort(key=lambda n: n != "fused_plain")   # fused plain first: the same colour in both rows
    libraries = [n for n in contenders if is_library(n)]
    groups = [("this book's kernels", ours[:MAX_SERIES])]
    if libraries:
        plain = ["fused_plain"] if "fused_plain" in contenders else []
        groups.append(("libraries and fused plain", (plain + libraries)[:MAX_SERIES]))
    return groups


def _panel_sweeps(run, value_of, ylabel: str, ceiling_of, logy: bool, bandwidth: bool = False):
    """A figure with one row per contender group and one column per L2 state; a legend right of each row.
    bandwidth: `ceiling_of(l2)` is the copy's GB/s per shape, drawn with the device's peak DRAM bandwidth."""
    import numpy as np

    from launchlab.present import figures

    s = summaries_of(run)
    groups = _groups(run)
    order = list(dict.fromkeys(name for _, names in groups for name in names))  # one colour per contender
    fig, axes = figures.figure(len(groups), 2, height=2.9, layout="constrained", sharey="row")
    shapes = [shape_label(shape) for shape in s["shapes"]]
    for row, (title, names) in enumerate(groups):
        for column, l2 in enumerate(L2_STATES):
            ax = axes[row, column]
            series = {label(n): [value_of(n, shape, l2) for shape in s["shapes"]] for n in names}
            figures.sweep(ax, shapes, series, ceiling=None if bandwidth else ceiling_of(l2),
                          ceiling_label="cudaMemcpyAsync", logy=logy, ylabel=ylabel if column == 0 else None,
                          styles=[order.index(n) for n in names], lines=False)
            if bandwidth:
                figures.bandwidth_references(ax, run.record.device_name, ceiling_of(l2), np.arange(len(shapes)),
                                             copy_label="cudaMemcpyAsync")
                ax.set_ylim(bottom=0)
            ax.set_title(f"{title}, {l2} L2", fontsize=figures.FONT_PT)
            ax.tick_params(axis="x", labelrotation=35)
            if logy:
                plain_log_ticks(ax)
        figures.legend(axes[row, 1], "right")
    return fig


def ratio_figure(run):
    """Device time per call over the copy's, per shape: warm L2 left, cold right; 1 is the copy."""
    s = summaries_of(run)

    def ratio(name, shape, l2):
        return s["ratios"]["graph"].get(f"{name}_over_copy", {}).get(shape, {}).get(l2)

    from launchlab.present import figures

    fig = _panel_sweeps(run, ratio, "device time / cudaMemcpyAsync's", lambda l2: 1.0, logy=True)
    return figures.describe(fig, (
        f"Dot charts, warm L2 left and cold L2 right, of each contender's device time per call over "
        f"cudaMemcpyAsync's at the shapes {', '.join(shape_label(x) for x in s['shapes'])}, on a log scale with a "
        "dashed line at 1 for the copy: the top row shows this book's kernels, the bottom row the libraries beside the fused plain kernel. "
        "Medians with p10–p90 bars."))


def plain_log_ticks(ax) -> None:
    """Ratios on a log axis read as 1, 1.5, 2, 3, not as powers of ten."""
    from matplotlib.ticker import FuncFormatter

    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}"[0] in "125" else ""))


def bandwidth_figure(run):
    """Logical GB/s from device time per call, per shape, with the same run's copy as the ceiling."""
    s = summaries_of(run)
    copy = s["bandwidth"].get("copy", {})

    def gbs(name, shape, l2):
        return s["bandwidth"].get(name, {}).get(shape, {}).get(f"{l2}_gbs")

    def ceiling(l2):
        return [copy.get(shape, {}).get(f"{l2}_gbs", float("nan")) for shape in s["shapes"]]

    from launchlab.present import figures

    fig = _panel_sweeps(run, gbs, "logical GB/s", ceiling, logy=False, bandwidth=True)
    return figures.describe(fig, (
        f"Dot charts, warm L2 left and cold L2 right, of each contender's logical bandwidth in GB/s at the shapes "
        f"{', '.join(shape_label(x) for x in s['shapes'])}, with cudaMemcpyAsync's dashed and the GPU's peak DRAM "
        "bandwidth dotted: the top row shows this book's kernels, the bottom row the libraries beside the fused plain "
        "kernel."))


def bytes_figure(run):
    """Logical bytes against DRAM bytes measured by Nsight Compute, per contender."""
    import numpy as np

    from launchlab.present import figures

    s = summaries_of(run)
    entries = [(shape, name, v) for shape, e in s["dram"].items() for name, v in e["contenders"].items()]
    # One horizontal pair of bars per contender and shape: the labels sit on one line each, left of the bars.
    fig, axes = figures.figure(1, 1, height=max(2.4, 0.42 * len(entries) + 1.0), layout="constrained")
    ax = axes[0, 0]
    if not entries:
        errors = "; ".join(f"{shape}: {e['error']}" for shape, e in s["dram"].items()) or "no profile was taken"
        ax.text(0.5, 0.5, f"DRAM counters not read:\n{errors[:300]}", ha="center", va="center", wrap=True)
        ax.set_axis_off()
        return figures.describe(fig, f"No bars: the DRAM counters were not read ({errors[:200]}).")
    ys = np.arange(len(entries))
    read = np.array([v["read_bytes"] / 1e6 for _, _, v in entries])
    ax.barh(ys - 0.2, [v["logical_bytes"] / 1e6 for _, _, v in entries], 0.4, label="logical",
            color=figures.COLOURS[0])
    ax.barh(ys + 0.2, read, 0.4, label="DRAM read", color=figures.COLOURS[1])
    ax.barh(ys + 0.2, [v["write_bytes"] / 1e6 for _, _, v in entries], 0.4, left=read, label="DRAM written",
            color=figures.COLOURS[2])
    ax.set_yticks(ys, [f"{label(name)}, {shape_label(shape)}" for shape, name, _ in entries])
    ax.invert_yaxis()
    ax.set_xlabel("MB per call")
    ax.grid(axis="x", alpha=0.3)
    shapes = list(dict.fromkeys(shape_label(shape) for shape, _, _ in entries))
    return figures.describe(figures.finish(fig, legend_where="right"), (
        f"Horizontal bar chart of the bytes of one call at {' and '.join(shapes)} for each profiled kernel: the "
        "logical bytes the algorithm asks for beside the DRAM bytes read and written that Nsight Compute counted, "
        "in MB."))


