"""An interactive scatter map for a page without any network: an inline SVG with log axes whose points carry their
figures, per state (e.g. warm and cold L2), as data; book/_static/planemap.js adds a switch between the states and a
tooltip box that follows the pointer. Without scripts the SVG still shows the first state, and each point's <title>
is the browser's own tooltip. A static figure of the same data belongs beside it.

    hovermap.html([{"x": 1000, "y": 64, "states": {"warm": {"colour": "#b35806", "text": "..."}, ...}}, ...],
                  xlabel="row length", ylabel="rows", states=("warm", "cold"), intro="...", script="_static/planemap.js")
"""
from __future__ import annotations

import html as html_text
import json
import math

WIDTH, HEIGHT, MARGIN = 720, 400, 48
LEFT, TOP = 76, 56          # room for the y ticks and title on the left, for the colour key on top
SCRIPT = "planemap.js"


def _x(value: float, low: float, high: float) -> float:
    return LEFT + (math.log10(value) - low) / max(high - low, 1e-9) * (WIDTH - LEFT - MARGIN)


def _y(value: float, low: float, high: float) -> float:
    """SVG y of a value (up is larger): the plot spans TOP to HEIGHT - MARGIN."""
    return HEIGHT - MARGIN - (math.log10(value) - low) / max(high - low, 1e-9) * (HEIGHT - MARGIN - TOP)


def script_path() -> str:
    """The script relative to the page being executed (the book's _static folder); "_static/..." outside the book."""
    from launchlab.present import tables

    try:
        return f"{tables.static_dir()[1]}/{SCRIPT}"
    except FileNotFoundError:
        return f"_static/{SCRIPT}"


def _ticks(low: float, high: float, along_x: bool) -> str:
    found = []
    for k in range(math.ceil(low), math.floor(high) + 1):
        if along_x:
            found.append(f'<text x="{_x(10 ** k, low, high):.1f}" y="{HEIGHT - MARGIN + 16}" text-anchor="middle" '
                         f'font-size="11">{10 ** k:,}</text>')
        else:
            found.append(f'<text x="{LEFT - 6}" y="{_y(10 ** k, low, high) + 4:.1f}" text-anchor="end" '
                         f'font-size="11">{10 ** k:,}</text>')
    return "".join(found)


def _key(stops: list[tuple[str, str]]) -> str:
    """A horizontal colour bar above the plot, right-aligned: a gradient through the stops' colours, each stop's
    label (where it has one) under its place."""
    width, height, x0, y0 = 240, 10, WIDTH - MARGIN - 240, 14
    gradient = "".join(f'<stop offset="{i / (len(stops) - 1):.3f}" stop-color="{colour}"/>'
                       for i, (_, colour) in enumerate(stops))
    labels = "".join(f'<text x="{x0 + width * i / (len(stops) - 1):.1f}" y="{y0 + height + 13}" text-anchor="middle" '
                     f'font-size="11">{html_text.escape(text)}</text>' for i, (text, _) in enumerate(stops) if text)
    return (f'<defs><linearGradient id="ll-map-key">{gradient}</linearGradient></defs>'
            f'<rect x="{x0}" y="{y0}" width="{width}" height="{height}" fill="url(#ll-map-key)" stroke="#555" '
            f'stroke-width="0.5"/>{labels}')


def html(points: list[dict], xlabel: str, ylabel: str, states: tuple[str, ...], intro: str, label: str,
         script: str | None = None, key: list[tuple[str, str]] | None = None) -> str:
    """The map as one HTML block: `intro` above it (the state shown is named in it by the script), one circle per
    point at (x, y) on log axes, coloured and titled by its first state. `label` is the SVG's accessible name;
    `key`, (label, colour) stops at even spacing, draws a colour bar above the plot."""
    if key is not None and len(key) < 2:
        raise ValueError("a colour key needs at least two stops")
    if not points:
        raise ValueError("a hover map needs at least one point")
    if any(p["x"] <= 0 or p["y"] <= 0 for p in points):
        raise ValueError("a hover map's axes are logarithmic: every x and y must be positive")
    xs, ys = [math.log10(p["x"]) for p in points], [math.log10(p["y"]) for p in points]
    x0, x1, y0, y1 = min(xs) - 0.1, max(xs) + 0.1, min(ys) - 0.1, max(ys) + 0.1
    circles = []
    for p in points:
        first = p["states"][states[0]]
        data = html_text.escape(json.dumps({state: p["states"][state] for state in states}), quote=True)
        circles.append(f'<circle cx="{_x(p["x"], x0, x1):.1f}" cy="{_y(p["y"], y0, y1):.1f}" r="6" '
                       f'fill="{first["colour"]}" '
                       f'stroke="#333" stroke-width="0.6" data-plane="{data}"><title>{html_text.escape(first["text"])}'
                       f'</title></circle>')
    middle = (TOP + HEIGHT - MARGIN) / 2
    axes = (f'<line x1="{LEFT}" y1="{HEIGHT - MARGIN}" x2="{WIDTH - MARGIN}" y2="{HEIGHT - MARGIN}" stroke="#555"/>'
            f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - MARGIN}" stroke="#555"/>'
            f'<text x="{(LEFT + WIDTH - MARGIN) / 2}" y="{HEIGHT - 8}" text-anchor="middle" font-size="13">'
            f'{html_text.escape(xlabel)}</text><text x="16" y="{middle}" text-anchor="middle" font-size="13" '
            f'transform="rotate(-90 16 {middle})">{html_text.escape(ylabel)}</text>')
    order = html_text.escape(json.dumps(list(states)), quote=True)
    return (f'<div class="ll-planemap" data-states="{order}"><p class="ll-planemap-switch">Showing '
            f'<strong data-plane-l2>{html_text.escape(states[0])}</strong>. {html_text.escape(intro)}</p>'
            f'<svg role="img" aria-label="{html_text.escape(label)}" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
            f'style="max-width:{WIDTH}px">{_key(key) if key else ""}{axes}{_ticks(x0, x1, True)}{_ticks(y0, y1, False)}'
            f'{"".join(circles)}</svg>'
            f'</div><script src="{script or script_path()}"></script>')
