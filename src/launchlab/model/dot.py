"""Reading CUDA graphs' DOT output: nodes, edges, kernel node counts, order. Plain text, runs anywhere."""
from __future__ import annotations

import re
from collections import deque

_NODE = re.compile(r'^"([\w.]+)"\s*\[(.*?)\];?\s*$', re.DOTALL)
_EDGE = re.compile(r'^"([\w.]+)"\s*->\s*"([\w.]+)"')
_ATTRIBUTE = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"', re.DOTALL)


def parse_dot(text: str) -> dict:
    """Nodes and edges of a CUDA graph DOT dump (`Graph.debug_dot_str()`).

    Each node keeps its shape and the lines of its label; CUDA labels a kernel node
    with its index and the kernel's function name."""
    nodes, edges = {}, []
    for statement in _statements(text):
        if edge := _EDGE.match(statement):
            edges.append((edge.group(1), edge.group(2)))
        elif node := _NODE.match(statement):
            attributes = dict(_ATTRIBUTE.findall(node.group(2)))
            if "label" in attributes:
                lines = [line for line in attributes["label"].replace("\\n", "\n").split("\n") if line.strip()]
                nodes[node.group(1)] = {"shape": attributes.get("shape"), "label": lines}
    unknown = {a for edge in edges for a in edge} - set(nodes)
    if unknown:
        raise ValueError(f"DOT edges name undeclared nodes: {sorted(unknown)}")
    return {"nodes": nodes, "edges": edges}


def _statements(text: str) -> list[str]:
    """DOT statements, joined across the newlines that CUDA puts inside labels."""
    statements, current = [], ""
    for line in text.splitlines():
        current = f"{current}\n{line}" if current else line.strip()
        if current.count('"') % 2 == 0:
            if current.strip():
                statements.append(current.strip())
            current = ""
    return statements


def node_counts(parsed: dict, kernel_names) -> dict:
    """{"kernel": nodes whose label names one of `kernel_names`, "other": the rest}."""
    names = set(kernel_names)
    kernel = sum(1 for node in parsed["nodes"].values() if names & set(node["label"]))
    return {"kernel": kernel, "other": len(parsed["nodes"]) - kernel}


def topological_order(parsed: dict) -> list[str]:
    """Node ids in dependency order (Kahn), ties broken by declaration order; linear in nodes and edges,
    so the graphs of a thousand launches order as fast as the small ones."""
    incoming = {n: 0 for n in parsed["nodes"]}
    following: dict[str, list[str]] = {n: [] for n in parsed["nodes"]}
    for a, b in parsed["edges"]:
        incoming[b] += 1
        following[a].append(b)
    ready = deque(n for n, count in incoming.items() if count == 0)
    order = []
    while ready:
        current = ready.popleft()
        order.append(current)
        for b in following[current]:
            incoming[b] -= 1
            if incoming[b] == 0:
                ready.append(b)
    if len(order) != len(incoming):
        raise ValueError("the graph has a cycle")
    return order
