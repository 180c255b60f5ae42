"""Extended launches of CuPy kernels through the driver's cuLaunchKernelEx: programmatic dependent
launch (PDL) and thread-block clusters; and the read-back of a captured graph's edge types.

CuPy launches kernels with cuLaunchKernel, which takes no launch attributes. A `ExtendedLaunch`
takes the CUfunction of a CuPy kernel (`kernel.kernel.ptr`) and launches it with
CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION (the kernel may start once every block of the
previous kernel in the stream has executed griddepcontrol.launch_dependents or exited; its own
griddepcontrol.wait then waits for that kernel's completion and memory) and/or
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, on CuPy's current stream. Under stream capture the launch
becomes a kernel node, and a programmatic launch an edge of type programmatic.

Two ways to reach the driver: cuda-bindings (`cuda.bindings.driver`, or `cuda.cuda` of older
cuda-python) where it is installed, otherwise ctypes on libcuda itself (the same C entry point;
CuPy has loaded the library already). `DRIVERS` lists both; `default_driver()` is ctypes: the C
structures are checked against cuda.h by the CPU tests and a launch allocates no Python objects on
the timed path; cuda-bindings stays selectable (`driver="cuda-bindings"`, `CUlaunchConfig.attrs` a list
of CUlaunchAttribute, kernelParams the int address of the void* array) and is cross-checked on the GPU.
Imports CuPy only when a launch is prepared.
"""
from __future__ import annotations

import ctypes
import re

import numpy as np

PROGRAMMATIC_STREAM_SERIALIZATION = 6  # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
CLUSTER_DIMENSION = 4                  # CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14  # CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
EDGE_TYPES = {0: "default", 1: "programmatic"}             # CUgraphDependencyType
PORTS = {0: "default", 1: "programmatic", 2: "launch_order"}  # CU_GRAPH_KERNEL_NODE_PORT_*
NODE_TYPES = {0: "kernel", 1: "memcpy", 2: "memset", 3: "host", 4: "graph", 5: "empty", 6: "wait_event",
              7: "event_record", 8: "ext_semas_signal", 9: "ext_semas_wait", 10: "mem_alloc", 11: "mem_free",
              12: "batch_mem_op", 13: "conditional"}
DRIVERS = ("cuda-bindings", "ctypes")


class DriverError(RuntimeError):
    """A driver call returned an error code."""


# --------------------------------------------------------------------------- ctypes mirrors of cuda.h
class _AttributeValue(ctypes.Union):
    _fields_ = [("pad", ctypes.c_char * 64), ("align", ctypes.c_uint64), ("flag", ctypes.c_int),
                ("dims", ctypes.c_uint * 3)]


class _LaunchAttribute(ctypes.Structure):  # CUlaunchAttribute: id, 4 bytes pad, 64-byte value
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", _AttributeValue)]


class _LaunchConfig(ctypes.Structure):  # CUlaunchConfig
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("shared_bytes", ctypes.c_uint),
                ("stream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_LaunchAttribute)), ("count", ctypes.c_uint)]


class _EdgeData(ctypes.Structure):  # CUgraphEdgeData
    _fields_ = [("from_port", ctypes.c_ubyte), ("to_port", ctypes.c_ubyte), ("type", ctypes.c_ubyte),
                ("reserved", ctypes.c_ubyte * 5)]


class _KernelNodeParams(ctypes.Structure):  # CUDA_KERNEL_NODE_PARAMS_v2
    _fields_ = [("func", ctypes.c_void_p), ("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3),
                ("shared_bytes", ctypes.c_uint), ("params", ctypes.c_void_p), ("extra", ctypes.c_void_p),
                ("kern", ctypes.c_void_p), ("ctx", ctypes.c_void_p)]


_LIBCUDA = None


def libcuda():
    global _LIBCUDA
    if _LIBCUDA is None:
        _LIBCUDA = ctypes.CDLL("libcuda.so.1")
    return _LIBCUDA


def _check(code: int, call: str) -> None:
    if code != 0:
        name = ctypes.c_char_p()
        libcuda().cuGetErrorName(int(code), ctypes.byref(name))
        raise DriverError(f"{call} failed: {name.value.decode() if name.value else code}")


def _bindings():
    """The driver module of cuda-bindings (or older cuda-python); None when neither is installed."""
    try:
        from cuda.bindings import driver
        return driver
    except ImportError:
        try:
            from cuda import cuda as driver
            return driver
        except ImportError:
            return None


def default_driver() -> str:
    return "ctypes"


# --------------------------------------------------------------------------- kernel arguments
def argument_array(args) -> tuple[ctypes.Array, list]:
    """The void** kernelParams array for CuPy-style arguments (CuPy arrays and NumPy scalars), and the
    ctypes values it points at (keep them alive until the launch call returns)."""
    import cupy

    values = []
    for index, value in enumerate(args):
        if isinstance(value, cupy.ndarray):
            values.append(ctypes.c_void_p(value.data.ptr))
        elif isinstance(value, np.generic):
            values.append(np.ctypeslib.as_ctypes_type(value.dtype)(value.item()))
        else:  # a bare Python int would leave its width to a guess
            raise TypeError(f"argument {index} is a {type(value).__name__}; pass a CuPy array or a NumPy scalar")
    pointers = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.cast(ctypes.pointer(v), ctypes.c_void_p)
                                                         for v in values])
    return pointers, values


class ExtendedLaunch:
    """One kernel launch, prepared once, enqueued by `launch()` on CuPy's current stream.

    `programmatic`: the PDL attribute; `cluster`: blocks per cluster along x (None: no attribute);
    `shared_bytes`: dynamic shared memory; `driver`: "cuda-bindings" or "ctypes"."""

    def __init__(self, kernel, grid: int, block: int, args, programmatic: bool = False, cluster: int | None = None,
                 shared_bytes: int = 0, driver: str | None = None):
        self.kernel, self.grid, self.block, self.args = kernel, int(grid), int(block), tuple(args)
        self.programmatic, self.cluster, self.shared_bytes = bool(programmatic), cluster, int(shared_bytes)
        self.driver = driver or default_driver()
        if self.driver not in DRIVERS:
            raise ValueError(f"driver {self.driver!r} is not one of {DRIVERS}")
        if cluster is not None and (cluster < 1 or self.grid % cluster):
            raise ValueError(f"a grid of {self.grid} blocks is no whole number of clusters of {cluster}")
        self.function_ptr = int(kernel.kernel.ptr)
        self.params, self._values = argument_array(self.args)
        self.attributes = []
        if self.programmatic:
            self.attributes.append((PROGRAMMATIC_STREAM_SERIALIZATION, 1))
        if cluster is not None:
            self.attributes.append((CLUSTER_DIMENSION, (int(cluster), 1, 1)))
        self._launch = self._prepare_bindings() if self.driver == "cuda-bindings" else self._prepare_ctypes()
        import cupy

        self._current_stream = cupy.cuda.get_current_stream  # looked up once: launch() is on the timed path

    def launch(self) -> None:
        self._launch(self._current_stream().ptr)

    # ctypes: the C structures themselves
    def _prepare_ctypes(self):
        attrs = (_LaunchAttribute * max(1, len(self.attributes)))()
        for slot, (kind, value) in zip(attrs, self.attributes):
            slot.id = kind
            if kind == CLUSTER_DIMENSION:
                slot.value.dims[0], slot.value.dims[1], slot.value.dims[2] = value
            else:
                slot.value.flag = value
        config = _LaunchConfig()
        config.grid[:] = (self.grid, 1, 1)
        config.block[:] = (self.block, 1, 1)
        config.shared_bytes = self.shared_bytes
        config.attrs = ctypes.cast(attrs, ctypes.POINTER(_LaunchAttribute))
        config.count = len(self.attributes)
        self._structures = (attrs, config)  # alive as long as this launch
        function, params, entry = ctypes.c_void_p(self.function_ptr), self.params, libcuda().cuLaunchKernelEx
        return lambda stream_ptr: _launch_ctypes(entry, config, function, params, stream_ptr)

    # cuda-bindings: the same call through NVIDIA's Python bindings
    def _prepare_bindings(self):
        driver = _bindings()
        if driver is None:
            raise ImportError("cuda-bindings (or cuda-python) is not installed; use driver='ctypes'")
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = self.grid, 1, 1
        config.blockDimX, config.blockDimY, config.blockDimZ = self.block, 1, 1
        config.sharedMemBytes = self.shared_bytes
        attrs = []
        for kind, value in self.attributes:
            attr = driver.CUlaunchAttribute()
            attr.id = driver.CUlaunchAttributeID(kind)
            if kind == CLUSTER_DIMENSION:
                attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = value
            else:
                attr.value.programmaticStreamSerializationAllowed = value
            attrs.append(attr)
        config.attrs = attrs
        config.numAttrs = len(attrs)
        function = driver.CUfunction(init_value=self.function_ptr)
        params = ctypes.addressof(self.params)

        def launch(stream_ptr: int) -> None:
            config.hStream = driver.CUstream(init_value=stream_ptr)
            (error,) = driver.cuLaunchKernelEx(config, function, params, 0)
            if int(error) != 0:
                raise DriverError(f"cuLaunchKernelEx failed: {error!r}")

        return launch


def _launch_ctypes(entry, config, function, params, stream_ptr: int) -> None:
    config.stream = stream_ptr
    _check(entry(ctypes.byref(config), function, params, None), "cuLaunchKernelEx")


def allow_non_portable_clusters(kernel) -> None:
    """Clusters of more than 8 blocks (up to 16 on Hopper) need this function attribute."""
    import cupy

    cupy.cuda.driver.funcSetAttribute(kernel.kernel.ptr, NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)


# --------------------------------------------------------------------------- graph edges
def graph_edges(graph) -> dict:
    """Nodes and edges of a captured graph (a CuPy Graph, or a CUgraph handle as an int), read back
    with cuGraphGetEdges_v2: per node its type and, for a kernel, its function name; per edge the
    node indices, the dependency type (default or programmatic) and the ports."""
    handle = ctypes.c_void_p(int(getattr(graph, "graph", graph)))
    lib = libcuda()
    count = ctypes.c_size_t(0)
    _check(lib.cuGraphGetNodes(handle, None, ctypes.byref(count)), "cuGraphGetNodes")
    nodes = (ctypes.c_void_p * max(1, count.value))()
    _check(lib.cuGraphGetNodes(handle, nodes, ctypes.byref(count)), "cuGraphGetNodes")
    handles = [nodes[i] for i in range(count.value)]
    index = {h: i for i, h in enumerate(handles)}
    edge_count = ctypes.c_size_t(0)
    _check(lib.cuGraphGetEdges_v2(handle, None, None, None, ctypes.byref(edge_count)), "cuGraphGetEdges_v2")
    n = edge_count.value
    sources, targets, data = (ctypes.c_void_p * max(1, n))(), (ctypes.c_void_p * max(1, n))(), (_EdgeData * max(1, n))()
    if n:  # a graph without edges (one node): the driver refuses a second call with a zero count
        _check(lib.cuGraphGetEdges_v2(handle, sources, targets, data, ctypes.byref(edge_count)), "cuGraphGetEdges_v2")
    described = [_describe_node(lib, h) for h in handles]
    edges = [{"from": index[sources[i]], "to": index[targets[i]], "type": EDGE_TYPES.get(data[i].type, str(data[i].type)),
              "from_port": PORTS.get(data[i].from_port, str(data[i].from_port)), "to_port": int(data[i].to_port),
              "from_kernel": described[index[sources[i]]].get("kernel"),
              "to_kernel": described[index[targets[i]]].get("kernel")} for i in range(edge_count.value)]
    return {"nodes": described, "edges": edges}


def _describe_node(lib, node) -> dict:
    kind = ctypes.c_int(-1)
    _check(lib.cuGraphNodeGetType(ctypes.c_void_p(node), ctypes.byref(kind)), "cuGraphNodeGetType")
    described = {"type": NODE_TYPES.get(kind.value, str(kind.value))}
    if kind.value == 0:
        params = _KernelNodeParams()
        _check(lib.cuGraphKernelNodeGetParams_v2(ctypes.c_void_p(node), ctypes.byref(params)),
               "cuGraphKernelNodeGetParams_v2")
        name = ctypes.c_char_p()
        if params.func and hasattr(lib, "cuFuncGetName") and \
                lib.cuFuncGetName(ctypes.byref(name), ctypes.c_void_p(params.func)) == 0 and name.value:
            described["kernel"] = name.value.decode()
        else:
            described["kernel"] = None
        described["grid"] = int(params.grid[0])
    return described


def edge_type_counts(edges: dict) -> dict:
    """{"default": n, "programmatic": n} over the edges `graph_edges` read back."""
    counts = {name: 0 for name in EDGE_TYPES.values()}
    for edge in edges["edges"]:
        counts[edge["type"]] = counts.get(edge["type"], 0) + 1
    return counts


_DOT_EDGE = re.compile(r'^\s*"([\w.]+)"\s*->\s*"([\w.]+)"\s*(?:\[(.*)\])?\s*;?\s*$', re.DOTALL)
_DOT_ATTRIBUTE = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def dot_edges(text: str) -> list[dict]:
    """Edges of a CUDA graph DOT dump with whatever attributes CUDA gave them (a verbose dump may
    style or label a programmatic edge). `programmatic` is True where an attribute says so."""
    edges = []
    for line in text.splitlines():
        if match := _DOT_EDGE.match(line):
            attributes = dict(_DOT_ATTRIBUTE.findall(match.group(3) or ""))
            edges.append({"from": match.group(1), "to": match.group(2), "attributes": attributes,
                          "programmatic": "programmatic" in (match.group(3) or "").lower()})
    return edges
