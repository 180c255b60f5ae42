"""Graph records on the CPU: DOT parsing of saved files, node counting, setup arithmetic."""
import json

import pytest

from launchlab.store import evidence
from launchlab.gpu import capture
from launchlab.model import dot
from launchlab.chapters import graphs as chapter

MEMSET_AND_KERNEL = '''digraph dot {
subgraph cluster_1 {
label="graph_1" graph[style="dashed"];
"graph_1_node_0"[style="solid" shape="invtrapezium" label="0
MEMSET
"];

"graph_1_node_1"[style="bold" shape="octagon" label="1
persistent_queue
"];

"graph_1_node_0" -> "graph_1_node_1";
}
}
'''


def accepted_graph_run():
    return evidence.accepted_run(chapter.STEM)


def test_saved_dot_files_parse_to_the_recorded_nodes():
    run = accepted_graph_run()
    records = json.loads((run / "graphs/nodes.json").read_text())
    dot_files = sorted((run / "graphs").glob("*.dot"))
    assert dot_files
    for dot_file in dot_files:
        parsed = dot.parse_dot(dot_file.read_text())
        record = records[dot_file.stem]
        assert parsed["nodes"] == record["nodes"] and [list(e) for e in parsed["edges"]] == [list(e) for e in record["edges"]]
        counts = dot.node_counts(parsed, record["kernel_names"])
        assert counts == {"kernel": record["stream_launches"], "other": 0}, dot_file.stem
        order = dot.topological_order(parsed)
        assert [parsed["nodes"][n]["label"][-1] for n in order][:len(record["kernel_names"])] == record["kernel_names"][:len(order)]


def test_headline_node_counts_match_the_stream_launch_counts():
    headline = json.loads((accepted_graph_run() / "headline.json").read_text())
    assert headline["kernel_nodes.row4"] == 4 and headline["kernel_nodes.tiled3"] == 3


def test_non_kernel_nodes_are_counted_apart():
    parsed = dot.parse_dot(MEMSET_AND_KERNEL)
    assert dot.node_counts(parsed, ["persistent_queue"]) == {"kernel": 1, "other": 1}
    assert parsed["nodes"]["graph_1_node_0"] == {"shape": "invtrapezium", "label": ["0", "MEMSET"]}
    assert dot.topological_order(parsed) == ["graph_1_node_0", "graph_1_node_1"]


def test_cycles_and_undeclared_nodes_are_errors():
    cyclic = MEMSET_AND_KERNEL.replace('"graph_1_node_0" -> "graph_1_node_1";',
                                       '"graph_1_node_0" -> "graph_1_node_1";\n"graph_1_node_1" -> "graph_1_node_0";')
    with pytest.raises(ValueError, match="cycle"):
        dot.topological_order(dot.parse_dot(cyclic))
    with pytest.raises(ValueError, match="undeclared"):
        dot.parse_dot(MEMSET_AND_KERNEL.replace('"graph_1_node_0" -> "graph_1_node_1";', '"graph_1_node_0" -> "x";'))


def timing(stream_event, graph_event, stream_complete, graph_complete):
    entry = lambda e, c: {"event_us": {"median": e}, "single_complete_us": {"median": c}}  # noqa: E731
    return {"stream.w": entry(stream_event, stream_complete), "graph.w": entry(graph_event, graph_complete)}


def test_break_even_replays():
    setup = {"capture_us": 10.0, "end_capture_us": 20.0, "instantiate_us": 5.0, "upload_us": 15.0, "first_replay_us": 50.0}
    summary = chapter._setup_summary(setup, timing(30.0, 10.0, 40.0, 60.0), "w")
    assert summary["total_us"] == 100.0
    assert summary["break_even_replays.event_us"] == 5.0  # 100 us / (30 - 10) us saved per replay
    assert summary["break_even_replays.single_complete_us"] is None  # the graph is slower: it never pays back
