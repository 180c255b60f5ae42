"""present/hovermap.py: the inline SVG of a hover map (no GPU, no browser): one circle per point at its place on
log axes, its first state's colour and title, every state's data for the script, and clear errors."""
import html
import json
import re

import pytest

from launchlab.present import hovermap

POINTS = [{"x": 1, "y": 1, "states": {"a": {"colour": "#000000", "text": "one <a>"}, "b": {"colour": "#111111", "text": "1b"}}},
          {"x": 1000, "y": 10, "states": {"a": {"colour": "#222222", "text": "two"}, "b": {"colour": "#333333", "text": "2b"}}}]


def test_every_point_is_a_circle_with_its_first_states_colour_and_title_and_every_states_data():
    found = hovermap.html(POINTS, "x <log>", "y", ("a", "b"), intro="hover", label="a map", script="s.js")
    circles = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"[^>]* fill="(#\w+)"[^>]* data-plane="([^"]+)"><title>'
                         r'([^<]*)</title>', found)
    assert [(fill, html.unescape(title)) for _, _, fill, _, title in circles] == [("#000000", "one <a>"), ("#222222", "two")]
    assert [json.loads(html.unescape(data)) for *_, data, _ in circles] == [p["states"] for p in POINTS]
    (x1, y1), (x2, y2) = [(float(x), float(y)) for x, y, *_ in circles]
    assert x1 < x2 and y1 > y2                      # further right with x, higher up (smaller y) with y
    assert 'src="s.js"' in found and "x &lt;log&gt;" in found and 'data-states="[&quot;a&quot;, &quot;b&quot;]"' in found


@pytest.mark.parametrize("points, message", [([], "at least one point"),
                                              ([{"x": 0, "y": 1, "states": {}}], "must be positive")])
def test_a_map_without_points_or_off_its_log_axes_is_refused(points, message):
    with pytest.raises(ValueError, match=message):
        hovermap.html(points, "x", "y", ("a",), intro="", label="m", script="s.js")


def test_a_colour_key_is_a_gradient_through_its_stops_with_their_labels_and_needs_two_stops():
    stops = [("low", "#0000ff"), ("mid", "#ffffff"), ("high", "#ff0000")]
    found = hovermap.html(POINTS, "x", "y", ("a",), intro="", label="m", script="s.js", key=stops)
    assert re.findall(r'<stop offset="([\d.]+)" stop-color="(#\w+)"/>', found) == [
        ("0.000", "#0000ff"), ("0.500", "#ffffff"), ("1.000", "#ff0000")]
    assert all(f">{text}</text>" in found for text, _ in stops)
    assert "<linearGradient" not in hovermap.html(POINTS, "x", "y", ("a",), intro="", label="m", script="s.js")
    with pytest.raises(ValueError, match="two stops"):
        hovermap.html(POINTS, "x", "y", ("a",), intro="", label="m", script="s.js", key=stops[:1])
