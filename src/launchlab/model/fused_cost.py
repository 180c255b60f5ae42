"""A cost model of the fused softmax designs (NumPy only): device time per call, warm and cold L2, of each
configuration the launch policy considers, from the bytes it moves, how its blocks fill the GPU and how many
reduction round trips it makes. Its constants are fitted by least squares (on log time) on a calibration plane
drawn with another seed than the fusion chapter's (tools/calibrate_fused.py measures it, tools/fused_fit.py fits;
the data and the fit are committed under evidence/development/).

How a configuration is seen (`geometry`): its work is N equal TASKS (a row, a slice of a row, a group of rows a
warp holds), P of which run at once (resident blocks x tasks a block runs at a time, from the registers, shared
memory and threads each build needs); a task moves b bytes (x read once, y written once; the streamed tiers read x
again), keeps q bytes of loads in flight, and waits for `syncs` block-wide reductions, `cluster` cluster exchanges
and `grid` grid-wide round trips; each thread works through `serial` elements in turn (the whole register array
of its build, empty entries included), and a grid of many short-lived blocks starts `blocks` of them one after
another on each SM. The narrow design's scalar build (single floats a lane) has constants of its own ("scalar"), and
so do cluster builds whose slices sit in shared memory ("cluster_shared"). A grid of clusters uses only the SMs whole
clusters fill (`cluster_sms`), and a wave that puts two of its blocks on one SM waits for that SM.

The time (`terms`): a fixed part (the launch, the design's own fixed cost, and after an L2 flush a cold start), then
N / P waves, the last one partial. A wave of A tasks takes the longest of: a task's latency (its design's fixed
time per task, its reductions, and a loaded round trip for every q of its bytes), A b over the GPU's bandwidth (its
share of it that the design reaches), and (A / SMs) b over one SM's bandwidth; a grid-wide round trip (the split
design's exchange, which holds every block of a grid step at once) adds to its wave instead. Blocks that start one
after another (thread-block clusters over the whole GPU, the row kernel's and the scalar builds' blocks on each SM)
can set the pace instead. The
bandwidth mixes the L2's and DRAM's by the share of the bytes the L2 serves: warm, as far as it holds x and y; cold,
none. The copy is the same model without tasks: launch, one round trip and its bytes over the bandwidth; the fit
takes the memory system's constants from the copy first, then each design's own from the designs.
"""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np

from launchlab.model.fused_policy import (SPLIT_REGS, next_power_of_two, split_blocks_per_sm, split_on_chip_chunks,
                                          split_pieces, split_slice_bytes, worst_chunks)

# The plane's distribution (the fusion chapter's): rows log-uniform in 1..65536, row length log-uniform in
# 1..2^21 floats, a draw whose matrix falls outside 4 KiB..256 MiB redrawn.
MAX_ROWS = 1 << 16
MAX_COLS = 1 << 21
MIN_BYTES = 4 << 10
MAX_BYTES = 256 << 20
CALIBRATION_SEED = 4851   # the calibration plane's: never the chapter's
CALIBRATION_POINTS = 128
L2_STATES = ("warm", "cold")
# the model's: "scalar" is the narrow design's scalar build, "cluster_shared" a cluster build whose slices are in
# shared memory (read through a loop of UNROLL chunks a thread rather than all at once into registers)
DESIGNS = ("row", "narrow", "scalar", "cluster", "cluster_shared", "split")


def draw_plane(seed: int, points: int) -> list[tuple[int, int]]:
    """`points` distinct shapes (rows, cols) of the plane's distribution, in the order drawn."""
    rng = np.random.default_rng(seed)
    shapes: list[tuple[int, int]] = []
    while len(shapes) < points:
        rows = int(np.floor(np.exp(rng.uniform(0.0, np.log(MAX_ROWS + 1)))))
        cols = int(np.floor(np.exp(rng.uniform(0.0, np.log(MAX_COLS + 1)))))
        if MIN_BYTES <= 4 * rows * cols <= MAX_BYTES and (rows, cols) not in shapes:
            shapes.append((rows, cols))
    return shapes


# ---------------------------------------------------------------- the GPU's limits (occupancy)
THREADS_PER_SM = 2048
BLOCKS_PER_SM = 32
REGISTERS_PER_SM = 65536
SHARED_RESERVED_PER_BLOCK = 1024
STATIC_SHARED_BYTES = 512          # a design's reduction scratch (ptxas: 400 bytes and less)
# Registers per thread of each build (ptxas for sm_90, the larger of the two modes; tests check them against
# nvcc): narrow by ROW_CHUNKS, cluster by SLICE_REGS, split; the row kernel's follow its MIN_BLOCKS bound.
NARROW_REGISTERS = {1: 44, 2: 48, 4: 48, 8: 89}
NARROW_PREFETCH_REGISTERS = {1: 40, 2: 48, 4: 80}
SCALAR_REGISTERS = {1: 24, 2: 24, 4: 24, 8: 32}
CLUSTER_REGISTERS = {0: 64, 1: 58, 2: 58, 4: 58, 8: 64, 16: 80}
SPLIT_REGISTERS = 61
# Share of the SMs a grid of thread-block clusters of each width can use: the H200's occupancy API
# (cuOccupancyMaxActiveClusters) holds 66, 30, 15 and 7 clusters of 2, 4, 8 and 16 blocks at one block an SM, so
# clusters of 4 and 8 fill 120 of its 132 SMs and clusters of 16 fill 112 (a cluster's blocks share one GPC).
CLUSTER_SM_SHARE = {1: 1.0, 2: 1.0, 4: 120 / 132, 8: 120 / 132, 16: 112 / 132}


def cluster_sms(width: int, sms: int) -> int:
    """SMs a grid of clusters of `width` blocks can use on a GPU of `sms` SMs: whole clusters of them."""
    share = CLUSTER_SM_SHARE.get(int(width), min(CLUSTER_SM_SHARE.values()))
    return max(int(width), int(sms * share) // int(width) * int(width))


def resident_blocks(block: int, registers: int, shared_bytes: int, shared_per_sm: int) -> int:
    """Blocks of `block` threads one SM holds: threads, blocks, registers (allocated per warp in units of 256)
    and shared memory (with the hardware's reservation per block)."""
    warps = -(-block // 32)
    per_warp = -(-registers * 32 // 256) * 256
    by_registers = REGISTERS_PER_SM // (per_warp * warps)
    by_shared = shared_per_sm // (shared_bytes + STATIC_SHARED_BYTES + SHARED_RESERVED_PER_BLOCK)
    return max(0, min(THREADS_PER_SM // block, BLOCKS_PER_SM, by_registers, by_shared))


@dataclasses.dataclass(frozen=True)
class Geometry:
    """What the cost model sees of a configuration at a shape (see the module's docstring)."""
    tasks: int          # N
    slots: int          # P: tasks at once over the GPU
    task_bytes: float   # b: moved per task
    in_flight: float    # q: bytes of loads a task keeps in flight
    syncs: float        # block-wide reductions a task waits for
    cluster: float      # cluster exchanges a task waits for
    grid: float         # grid-wide round trips a task waits for
    reread: float       # share of x read a second time (the streamed tiers)
    design: str = "copy"  # the design (its fixed cost is its own)
    serial: float = 0.0   # elements one thread works through in turn per task (its registers' whole array, even
                          # where the row leaves entries empty: the kernels compute over every entry they hold)
    blocks: float = 0.0   # blocks of a grid that starts them one after another on each SM (0: a resident grid)
    sms: float = 0.0      # SMs the grid's blocks can use (0: all; fewer for clusters, `cluster_sms`)


def geometry(plan: dict, rows: int, cols: int, device: dict) -> Geometry:
    """The Geometry of a plan (chapters/fusion/plans.py: design, defines, shared_bytes, tier) at a shape."""
    sms = int(device["sm_count"])
    shared_per_sm = int(device.get("shared_bytes_per_sm", 233472))
    design, defines = plan["design"], plan["defines"]
    block = int(defines.get("BLOCK", 256))
    chunks = worst_chunks(rows, cols)
    row_bytes = 4.0 * cols
    block_syncs = 0.0 if block == 32 else 1.0
    if design == "row":
        reg_chunks, unroll = int(defines["REG_CHUNKS"]), int(defines["UNROLL"])
        # the registers a thread may use: what __launch_bounds__ leaves for the blocks an SM it asks for (the
        # registers-only build's own bound where it has one, kernels/fused_row_registers.cu)
        bound = int(defines.get("REGISTERS_MIN_BLOCKS", defines.get("MIN_BLOCKS", 1)))
        budget = REGISTERS_PER_SM // (block * max(1, bound))
        resident = resident_blocks(block, min(255, budget), int(plan.get("shared_bytes") or 0), shared_per_sm)
        tier = plan.get("tier") or ("registers" if chunks <= reg_chunks * block else "streamed")
        in_flight = min(row_bytes, 16.0 * block * (reg_chunks if tier == "registers" else unroll))
        serial = 4.0 * (reg_chunks if tier == "registers" else -(-chunks // block))
        return Geometry(rows, sms * resident, 8.0 * cols, in_flight, block_syncs, 0.0, 0.0,
                        1.0 if tier == "streamed" else 0.0, "row", serial, rows)
    if design == "narrow":
        row_chunks = int(defines["ROW_CHUNKS"])
        scalar = bool(defines.get("SCALAR"))
        lanes = min(32, next_power_of_two(-(-(cols if scalar else chunks) // row_chunks)))
        rows_per_warp = 32 // lanes
        prefetch = int(defines.get("PREFETCH", 0))
        table = SCALAR_REGISTERS if scalar else NARROW_PREFETCH_REGISTERS if prefetch else NARROW_REGISTERS
        # a full-occupancy build (kernels/narrow_full.cu) has the registers its __launch_bounds__ leaves
        bound = int(defines.get("NARROW_MIN_BLOCKS", 1))
        registers = min(table.get(row_chunks, 120), REGISTERS_PER_SM // (block * bound))
        resident = resident_blocks(block, registers, 0, shared_per_sm)
        groups = -(-rows // rows_per_warp)
        # a row's reduction: log2(lanes) rounds of shuffles, counted as a share of a block-wide reduction's ten; the
        # scalar build's grid: a block for every block // 32 groups, started one after another like the row kernel's
        return Geometry(groups, sms * resident * (block // 32), 8.0 * cols * min(rows, rows_per_warp),
                        (1 + prefetch) * row_bytes * min(rows, rows_per_warp), math.log2(lanes) / 10, 0.0, 0.0, 0.0,
                        "scalar" if scalar else "narrow", (1 if scalar else 4) * row_chunks,
                        -(-groups // (block // 32)) if scalar else 0)
    if design == "cluster":
        width, regs = int(defines["CLUSTER"]), int(defines.get("SLICE_REGS", 0))
        slice_chunks = -(-chunks // width)
        in_registers = slice_chunks <= regs * block
        shared = 0 if in_registers else 16 * slice_chunks
        resident = resident_blocks(block, CLUSTER_REGISTERS.get(regs, 108), shared, shared_per_sm)
        in_flight = min(16.0 * slice_chunks, 16.0 * block * (regs if in_registers else int(defines.get("UNROLL", 4))))
        # one merged (m, s, q) reduction a block, then the cluster's exchange, whose time grows with the blocks it
        # joins (counted in clusters of 8) as every block pushes its triple into every other block's shared memory
        serial = 4.0 * (regs if in_registers else -(-slice_chunks // block))
        usable = cluster_sms(width, sms)
        return Geometry(rows * width, usable * resident, 8.0 * cols / width, in_flight, 1.0, width / 8, 0.0, 0.0,
                        "cluster" if in_registers else "cluster_shared", serial, sms=usable)
    if design == "split":
        slice_bytes = split_slice_bytes(block)
        resident = min(split_blocks_per_sm(block), resident_blocks(block, SPLIT_REGISTERS, slice_bytes, shared_per_sm))
        capacity = sms * max(1, resident)
        on_chip = split_on_chip_chunks(block)
        pieces = int(plan.get("options", {}).get("pieces") or split_pieces(rows, capacity, chunks, on_chip, sms))
        per_piece = -(-chunks // pieces)
        reread = max(0, per_piece - on_chip) / per_piece  # the share of x beyond registers and shared memory
        in_flight = min(16.0 * per_piece, 16.0 * block * int(defines.get("UNROLL", 4)))
        # a piece's merged reduction, and where the row has pieces one round trip (publish stamped words, gather
        # them) and the merge of the gathered ones
        serial = 4.0 * (SPLIT_REGS + -(-max(0, per_piece - SPLIT_REGS * block) // block))
        return Geometry(rows * pieces, pieces * min(rows, capacity // pieces), 8.0 * cols / pieces, in_flight,
                        2.0 if pieces > 1 else 1.0, 0.0, 1.0 if pieces > 1 else 0.0, reread, "split", serial)
    if design == "copy":
        return Geometry(1, 1, 8.0 * rows * cols, float("inf"), 0.0, 0.0, 0.0, 0.0)
    raise ValueError(f"unknown design {design!r}")


# ---------------------------------------------------------------- the model's constants
@dataclasses.dataclass(frozen=True)
class Constants:
    """Times in microseconds, bandwidths in bytes per microsecond, sizes in bytes."""
    launch: float = 1.0           # a call's fixed cost in a graph of many calls
    cold_start: float = 2.5       # added to a call after an L2 flush (its first misses, address translation)
    fixed_row: float = 0.3        # each design's own fixed cost per call (its launch, its setup and its end)
    fixed_narrow: float = 0.3
    fixed_scalar: float = 0.3
    fixed_cluster: float = 1.0    # a grid of thread-block clusters
    fixed_cluster_shared: float = 1.0
    fixed_split: float = 3.0      # resident blocks exchanging stamped words
    task_row: float = 1.0         # each design's fixed time per task: its dependent steps (load, reduce, store)
    task_narrow: float = 1.0      # beyond its loads, and for a block per task, the block's start and end
    task_scalar: float = 1.0
    task_cluster: float = 1.0
    task_cluster_shared: float = 1.0
    task_split: float = 1.0
    task_latency: float = 0.8     # a round trip of a task's loads while the GPU is loaded with other tasks
    latency: float = 0.6          # a memory round trip under load, served by the L2
    cold_latency: float = 0.4     # added to a round trip served by DRAM
    sync: float = 0.1             # one block-wide reduction
    element: float = 0.004        # one element a thread works through in turn (its loads, exponentials, stores)
    cluster_sync: float = 0.5     # one cluster exchange
    grid_sync: float = 3.0        # one grid-wide round trip
    dram: float = 4.2e6           # DRAM bytes per microsecond (read + write)
    l2: float = 7.0e6             # L2 bytes per microsecond
    per_sm: float = 1.0e5         # bytes per microsecond one SM moves at most
    l2_effective: float = 40e6    # footprint the L2 holds for reuse
    l2_sharpness: float = 8.0     # how fast the hit share falls past l2_effective
    # share of the memory system's rate each design reaches, warm and cold (its phases do not all overlap)
    share_row_warm: float = 0.8
    share_row_cold: float = 0.9
    share_narrow_warm: float = 0.8
    share_narrow_cold: float = 0.9
    share_scalar_warm: float = 0.8
    share_scalar_cold: float = 0.9
    share_cluster_warm: float = 0.8
    share_cluster_cold: float = 0.9
    share_cluster_shared_warm: float = 0.8
    share_cluster_shared_cold: float = 0.9
    share_split_warm: float = 0.8
    share_split_cold: float = 0.9
    warm_dram: float = 0.95       # DRAM's rate when warm calls also write back the last call's y
    cluster_block: float = 0.008  # clusters start one after another: this long per block of a cluster grid
    row_block: float = 0.08       # an SM starts the row kernel's blocks one after another: this long per block

    @classmethod
    def names(cls) -> list[str]:
        return [field.name for field in dataclasses.fields(cls)]

    def vector(self) -> np.ndarray:
        return np.array([getattr(self, name) for name in self.names()], dtype=float)

    @classmethod
    def from_vector(cls, values) -> "Constants":
        return cls(**{name: float(v) for name, v in zip(cls.names(), values)})


def hit_share(footprint, constants: Constants):
    """Share of a footprint's bytes the L2 serves: 1 well inside its effective size, falling to 0 past it."""
    return 1.0 / (1.0 + (np.asarray(footprint, dtype=float) / constants.l2_effective) ** constants.l2_sharpness)


@dataclasses.dataclass(frozen=True)
class Cases:
    """Many (geometry, shape, L2 state) at once, as arrays: what `times` evaluates in one pass."""
    tasks: np.ndarray
    slots: np.ndarray
    task_bytes: np.ndarray
    in_flight: np.ndarray
    syncs: np.ndarray
    cluster: np.ndarray
    grid: np.ndarray
    reread: np.ndarray
    serial: np.ndarray
    blocks: np.ndarray
    matrix_bytes: np.ndarray
    warm: np.ndarray
    copy: np.ndarray
    designs: dict
    sms: np.ndarray       # SMs each case's grid can use

    @classmethod
    def of(cls, items, sms: int) -> "Cases":
        """From [(Geometry, rows, cols, l2)]."""
        columns = {name: np.array([float(getattr(g, name)) for g, _, _, _ in items])
                   for name in ("tasks", "slots", "task_bytes", "in_flight", "syncs", "cluster", "grid", "reread",
                                "serial", "blocks", "sms")}
        for _, _, _, l2 in items:
            if l2 not in L2_STATES:
                raise ValueError(f"L2 state {l2!r} is not one of {L2_STATES}")
        usable = columns.pop("sms")
        return cls(**columns, matrix_bytes=np.array([4.0 * r * c for _, r, c, _ in items]),
                   warm=np.array([l2 == "warm" for _, _, _, l2 in items]),
                   copy=np.isinf(columns["in_flight"]),
                   designs={d: np.array([g.design == d for g, _, _, _ in items]) for d in DESIGNS},
                   sms=np.where(usable > 0, usable, float(sms)))


TERMS = ("fixed", "latency", "bandwidth", "per_sm", "starts")


def terms(cases: Cases, constants: Constants) -> dict:
    """The model's time of every case (microseconds, "total") and what it is made of: "fixed" (the launch and
    the design's own fixed cost), and over the waves the time set by a task's "latency", by the GPU's
    "bandwidth" or by one SM's bandwidth ("per_sm"), or by blocks starting one after another ("starts"; the
    smooth max of waves and starts is shared out in proportion). Beside them, not part of the total:
    "latency_bound", the waves' time had a task's latency set the pace of every wave, which tells apart
    configurations whose waves the bandwidth paces alike (`plans.pick` breaks ties with it)."""
    k = constants
    # share of the moved bytes the L2 serves: warm, as far as it holds the footprint of x and y; cold, none (x
    # comes from DRAM, y's lines are allocated there); the streamed tiers' second read of x from the L2 (a row's
    # worth fits it)
    served = np.where(cases.warm, hit_share(2.0 * cases.matrix_bytes, k), 0.0)
    served = (2.0 * served + cases.reread) / (2.0 + cases.reread)
    dram = k.dram * np.where(cases.warm, k.warm_dram, 1.0)
    bw = 1.0 / (served / k.l2 + (1.0 - served) / dram)
    for design in DESIGNS:
        share = np.where(cases.warm, getattr(k, f"share_{design}_warm"), getattr(k, f"share_{design}_cold"))
        bw = np.where(cases.designs[design], bw * share, bw)
    latency = k.latency + (1.0 - served) * k.cold_latency * (~cases.warm)
    task_latency = k.task_latency + (1.0 - served) * k.cold_latency * (~cases.warm)
    task_bytes = cases.task_bytes * (1.0 + 0.5 * cases.reread)
    in_flight = np.where(cases.copy, 1.0, cases.in_flight)
    dependent = sum(cases.designs[design] * getattr(k, f"task_{design}") for design in DESIGNS)
    task = (dependent + cases.serial * k.element + cases.syncs * k.sync + cases.cluster * k.cluster_sync
            + task_latency * np.maximum(1.0, 0.5 * task_bytes / in_flight))
    # a grid-wide round trip (the split design's exchange) holds every block of its grid step at once: the memory
    # idles through it, so it adds to the step's time instead of overlapping other tasks' transfers
    exchange = cases.grid * k.grid_sync
    slots = np.maximum(1.0, cases.slots)
    full = np.floor(cases.tasks / slots)
    rest = cases.tasks - full * slots
    parts = {name: np.zeros_like(task) for name in ("latency", "bandwidth", "per_sm")}
    latency_bound = (full + (rest > 0)) * task
    clustered = cases.designs["cluster"] | cases.designs["cluster_shared"]
    for count, active in ((full, slots), (rest > 0, rest)):
        # blocks an SM serves: a cluster grid's come in whole blocks (one cluster past what its SMs hold at one block
        # each puts two blocks on some SMs, and their wave waits for those)
        per_sm = active / cases.sms
        per_sm = np.where(clustered, np.ceil(per_sm - 1e-9), per_sm)
        limits = np.stack([task, active * task_bytes / bw, np.maximum(1.0, per_sm) * task_bytes / k.per_sm])
        which = np.argmax(limits, axis=0)
        for index, name in enumerate(parts):
            parts[name] = parts[name] + count * np.where(which == index, limits[index], 0.0)
        parts["latency"] = parts["latency"] + count * exchange
    waves = sum(parts.values())
    fixed = k.launch + (~cases.warm) * k.cold_start
    for design in DESIGNS:
        fixed = fixed + cases.designs[design] * getattr(k, f"fixed_{design}")
    starts = np.maximum(clustered * cases.tasks * k.cluster_block,
                        np.ceil(cases.blocks / cases.sms) * k.row_block)
    paced = (waves ** 4 + starts ** 4) ** 0.25  # a smooth max: the larger of the two sets the pace
    scale = paced / np.maximum(waves + starts, 1e-12)
    copied = {"fixed": fixed + latency, "bandwidth": task_bytes / bw}
    found = {"fixed": np.where(cases.copy, copied["fixed"], fixed)}
    for name in ("latency", "bandwidth", "per_sm"):
        found[name] = np.where(cases.copy, copied.get(name, 0.0), parts[name] * scale)
    found["starts"] = np.where(cases.copy, 0.0, starts * scale)
    found["total"] = sum(found[name] for name in TERMS)
    found["latency_bound"] = np.where(cases.copy, 0.0, latency_bound)
    return found


def times(cases: Cases, constants: Constants) -> np.ndarray:
    """Device time per call (microseconds) of every case (see `terms`)."""
    return terms(cases, constants)["total"]


def predict(plan: dict, rows: int, cols: int, device: dict, l2: str, constants: Constants) -> float:
    """Device time per call (microseconds) of a plan at a shape in an L2 state."""
    cases = Cases.of([(geometry(plan, rows, cols, device), rows, cols, l2)], int(device["sm_count"]))
    return float(times(cases, constants)[0])


def predict_terms(plan: dict, rows: int, cols: int, device: dict, l2: str, constants: Constants) -> dict:
    """`terms` of a plan at a shape in an L2 state, as floats."""
    cases = Cases.of([(geometry(plan, rows, cols, device), rows, cols, l2)], int(device["sm_count"]))
    return {name: float(value[0]) for name, value in terms(cases, constants).items()}


# ---------------------------------------------------------------- fitting
FIT_RANGE = 1000.0
DESIGN_STARTS = (  # where the designs' stage starts: the defaults, then fixed costs high, then task latency high
    {},
    {f"fixed_{d}": 1.0 for d in ("row", "narrow")} | {"task_latency": 0.3},
    {f"fixed_{d}": 0.2 for d in ("row", "narrow")} | {"task_latency": 1.2},
)
MEMORY_CONSTANTS = ("launch", "cold_start", "latency", "cold_latency", "dram", "l2", "l2_effective", "l2_sharpness",
                    "warm_dram")


def fit(observations, device: dict, start: Constants = Constants(), iterations: int = 100) -> tuple[Constants, dict]:
    """Least squares on log time of `observations` [(plan, rows, cols, l2, measured microseconds)], in two stages:
    the memory system's constants (MEMORY_CONSTANTS) on the copy's observations, then the designs' own constants
    on theirs with the memory system's held. Returns the constants and the fit's errors over every observation."""
    copies = [o for o in observations if o[0]["design"] == "copy"]
    designs = [o for o in observations if o[0]["design"] != "copy"]
    names = Constants.names()
    memory = [names.index(name) for name in MEMORY_CONSTANTS]
    constants = start
    if copies:
        constants = _least_squares(copies, device, constants, memory, iterations)
    if designs:
        # the designs' stage from a few fixed starts (its least squares has more than one valley): the best one
        free = [k for k in range(len(names)) if k not in memory]
        tries = [_least_squares(designs, device, dataclasses.replace(constants, **changes), free, iterations)
                 for changes in DESIGN_STARTS]
        constants = min(tries, key=lambda tried: _squares(designs, device, tried))
    cases = Cases.of([(geometry(p, r, c, device), r, c, l2) for p, r, c, l2, _ in observations], int(device["sm_count"]))
    relative = times(cases, constants) / np.array([float(us) for *_, us in observations]) - 1.0
    return constants, errors(relative)


def _squares(observations, device: dict, constants: Constants) -> float:
    cases = Cases.of([(geometry(p, r, c, device), r, c, l2) for p, r, c, l2, _ in observations], int(device["sm_count"]))
    residuals = np.log(times(cases, constants)) - np.log([float(us) for *_, us in observations])
    return float(residuals @ residuals)


def _least_squares(observations, device: dict, start: Constants, free: list[int], iterations: int) -> Constants:
    """Levenberg-Marquardt over the logs of the constants `free` (indices), the others held at `start`."""
    cases = Cases.of([(geometry(plan, rows, cols, device), rows, cols, l2) for plan, rows, cols, l2, _ in observations],
                     int(device["sm_count"]))
    measured = np.log([float(us) for *_, us in observations])
    base = np.log(start.vector())

    def residuals(values: np.ndarray) -> np.ndarray:
        full = base.copy()
        full[free] = values
        return np.log(times(cases, Constants.from_vector(np.exp(full)))) - measured

    # each constant stays within a factor FIT_RANGE of its start: a term the data cannot see stays put
    # instead of drifting to zero or infinity
    x = base[free]
    low, high = x - np.log(FIT_RANGE), x + np.log(FIT_RANGE)
    r = residuals(x)
    damping = 1e-2
    for _ in range(iterations):
        jacobian = np.empty((r.size, x.size))
        for j in range(x.size):
            step = np.zeros_like(x)
            step[j] = 1e-5
            jacobian[:, j] = (residuals(x + step) - r) / 1e-5
        normal, gradient = jacobian.T @ jacobian, jacobian.T @ r
        improved = False
        while damping < 1e10:
            delta = np.clip(x + np.linalg.solve(normal + damping * np.diag(np.diag(normal) + 1e-12), -gradient),
                            low, high) - x
            trial = residuals(x + delta)
            if trial @ trial < r @ r:
                x, r, damping, improved = x + delta, trial, max(damping / 3.0, 1e-9), True
                break
            damping *= 4.0
        if not improved or np.abs(delta).max() < 1e-7:
            break
    full = base.copy()
    full[free] = x
    return Constants.from_vector(np.exp(full))


def errors(relative: np.ndarray) -> dict:
    """median and p90 of |predicted / measured - 1|."""
    magnitude = np.abs(np.asarray(relative, dtype=float))
    return {"median": float(np.median(magnitude)), "p90": float(np.percentile(magnitude, 90)),
            "points": int(magnitude.size)}


# ---------------------------------------------------------------- the fitted constants
# The model's structure (its terms), numbered anew whenever a term changes: the version of a fit is the structure
# and the first 12 hex digits of the SHA-256 of its calibration's JSON (decompressed where it is stored gzipped).
MODEL_STRUCTURE = "fused_cost-3"
# Fitted by tools/calibrate_fused.py --fit on evidence/development/fused_calibration.json.gz (the calibration plane,
# seed CALIBRATION_SEED, measured on an H200); tests/test_fused_cost.py refits and compares.
MODEL_VERSION = f"{MODEL_STRUCTURE} 70313acef0db"
FITTED = Constants(launch=0.793511, cold_start=2.27581, fixed_row=0.471876, fixed_narrow=0.525551, fixed_scalar=0.281258, fixed_cluster=1.10105, fixed_cluster_shared=2.38312, fixed_split=2.43504, task_row=0.001, task_narrow=0.001, task_scalar=0.090459, task_cluster=0.001, task_cluster_shared=0.16451, task_split=0.001, task_latency=0.0003, latency=0.40821, cold_latency=0.222547, sync=0.000467819, element=0.0428356, cluster_sync=0.0005, grid_sync=1.11106, dram=4.44494e+06, l2=8.00332e+06, per_sm=47717.2, l2_effective=4.21374e+07, l2_sharpness=5.38336, share_row_warm=0.854851, share_row_cold=0.798341, share_narrow_warm=0.525654, share_narrow_cold=0.755691, share_scalar_warm=0.576755, share_scalar_cold=0.815595, share_cluster_warm=0.879856, share_cluster_cold=0.802595, share_cluster_shared_warm=0.795057, share_cluster_shared_cold=0.75709, share_split_warm=0.847686, share_split_cold=0.836601, warm_dram=0.870983, cluster_block=0.00782014, row_block=0.085316)
