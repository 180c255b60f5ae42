"""CUDA graphs: capture with setup costs, and reading node records from DOT files.

`capture` needs CuPy and a GPU; the DOT parsing is plain text and runs anywhere."""
from __future__ import annotations

import re
import time
from collections import Counter

NODE_TYPES = ("KERNEL", "MEMCPY", "MEMSET", "HOST", "GRAPH", "EMPTY", "WAIT_EVENT", "EVENT_RECORD",
              "EXT_SEMAS_SIGNAL", "EXT_SEMAS_WAIT", "MEM_ALLOC", "MEM_FREE", "BATCH_MEM_OP", "CONDITIONAL")


def capture(invoke, stream) -> tuple[object, dict]:
    """Capture `invoke` on `stream` into a graph, instantiate, upload and replay it once.

    Returns the graph and the time of each setup step in microseconds (host clock,
    each step synchronised). CuPy may instantiate inside end_capture or defer it to
    the first use; `instantiated_in_end_capture` records which happened."""
    stream.synchronize()
    t0 = time.perf_counter_ns()
    stream.begin_capture()
    invoke()
    t1 = time.perf_counter_ns()
    graph = stream.end_capture()
    t2 = time.perf_counter_ns()
    deferred = getattr(graph, "graphExec", 1) == 0 and hasattr(graph, "_ensure_instantiate")
    if deferred:
        graph._ensure_instantiate()  # CuPy's own step; otherwise upload would hide it
    t3 = time.perf_counter_ns()
    graph.upload(stream)
    stream.synchronize()
    t4 = time.perf_counter_ns()
    graph.launch(stream)
    stream.synchronize()
    t5 = time.perf_counter_ns()
    setup = {"capture_us": (t1 - t0) / 1e3, "end_capture_us": (t2 - t1) / 1e3, "instantiate_us": (t3 - t2) / 1e3,
             "upload_us": (t4 - t3) / 1e3, "first_replay_us": (t5 - t4) / 1e3,
             "instantiated_in_end_capture": not deferred}
    return graph, setup


_NODE = re.compile(r'^\s*"?([\w.]+)"?\s*\[(.*)$')
_EDGE = re.compile(r'^\s*"?([\w.]+)"?\s*->\s*"?([\w.]+)"?')


def parse_dot(text: str) -> dict:
    """Nodes (id, type, kernel name where given) and edges of a CUDA graph DOT dump."""
    statements = _statements(text)
    nodes, edges = {}, []
    for statement in statements:
        if edge := _EDGE.match(statement):
            edges.append((edge.group(1), edge.group(2)))
        elif (node := _NODE.match(statement)) and "label" in node.group(2):
            body = node.group(2)
            found = [t for t in NODE_TYPES if re.search(rf"\b{t}\b", body)]
            if found:
                name = re.search(r"\b(?:function|kernel)?\s*[:=]?\s*\\?n?([A-Za-z_]\w*)\s*\\?<", body)
                nodes[node.group(1)] = {"type": found[0], "kernel": _kernel_name(body) if found[0] == "KERNEL" else None}
                del name
    edges = [(a, b) for a, b in edges if a in nodes and b in nodes]
    return {"nodes": nodes, "edges": edges}


def _statements(text: str) -> list[str]:
    """Join DOT statements that span several lines (labels hold newlines)."""
    statements, current = [], ""
    for line in text.splitlines():
        current = f"{current}\n{line}" if current else line
        if current.count('"') % 2 == 0 and (current.rstrip().endswith(";") or current.rstrip().endswith("]")
                                            or "->" in current):
            statements.append(current)
            current = ""
    if current:
        statements.append(current)
    return statements


def _kernel_name(body: str) -> str | None:
    for candidate in re.findall(r"([A-Za-z_]\w*)", body):
        if candidate not in NODE_TYPES and candidate not in ("label", "style", "shape", "solid", "rectangle",
                                                               "record", "dashed", "TABLE", "TR", "TD", "BR"):
            return candidate
    return None


def node_counts(parsed: dict) -> dict:
    return dict(sorted(Counter(node["type"] for node in parsed["nodes"].values()).items()))
