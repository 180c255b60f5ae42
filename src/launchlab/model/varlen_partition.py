"""The partition rule of the one-launch varlen design (kernels/varlen_softmax.cu): which block does what.

Rows of any lengths, packed end to end, become the blocks of ONE launch:
  * a piece block runs piece j of a row: the whole row when the row has one piece; a long row is split into k
    pieces of equal work (lengths within 2 ALIGN elements of each other, boundaries on ALIGN-element addresses);
  * a packed block runs several short rows (at most PACK_LONGEST elements each), one warp per row.
Pieces of a split row wait for each other inside the launch, so every block must be co-resident: a plan has
at most `slots` blocks (the occupancy API's blocks per SM x SMs), ONE wave; a plan that needs more is refused.

The rule tries piece targets w (the largest piece it wants) and block sizes and keeps the plan its cost model
predicts fastest. The cost model (`PieceCost`) is a launch, a fixed cost per block on the busiest SM, one
handoff where a row is split (a partial published, counted and waited for), and the bytes moved (x read once, y
written once) over the bandwidth: the device's for all bytes, one SM's for the busiest SM's share. Blocks are
dispatched in launch order, one per SM per wave of SM count blocks, which is how the model places them; the
launch order is the largest work first.

NumPy only: the chapter's declaration and the CPU tests use it; the GPU target (chapters/megakernels/varlen.py)
turns a Plan into device arrays.
"""
from __future__ import annotations

import dataclasses

import numpy as np

ALIGN = 32            # piece boundaries on 128-byte addresses: every piece's loads start on a cache line
PACK_LONGEST = 512    # longest row a warp of a packed block runs (one warp's registers: 32 x 4 chunks x 4)
REG_CHUNKS = 4        # kernels/varlen_softmax.cu's REG_CHUNKS: 16-byte chunks a thread keeps in registers
BLOCK_SIZES = (256, 512)  # the kernel's entry points varlen_rows_<threads>
BYTES_PER_ELEMENT = 8  # x read once, y written once
MIN_PIECE = 1024      # smallest piece target tried: below it a block's fixed cost outweighs its bytes


@dataclasses.dataclass(frozen=True)
class PieceCost:
    """Predicted microseconds of one invocation (see the module's docstring). `handoff_per_piece_us` is the
    row counter's arrivals, which serialise at one L2 address. The defaults are the fit (`fit_cost`) of the
    warm times of every plan measured in evidence/development/varlen_check_batch5.json (tests check it)."""
    launch_us: float = 2.329
    block_us: float = 0.363
    handoff_us: float = 0.201
    handoff_per_piece_us: float = 0.0192
    wide_handoff_us: float = 0.607  # more per split row with blocks of 512 threads (twice the warps to wait for)
    streamed_us: float = 0.0     # a piece beyond the registers reads x twice (0: no streamed plan was measured)
    device_gbs: float = 4300.0   # all bytes over the device's bandwidth
    sm_gbs: float = 45.0         # the busiest SM's bytes over what one SM's blocks draw

    def time(self, terms: dict) -> float:
        """Microseconds of a plan from its cost_terms."""
        memory_us = max(terms["total_bytes"] / (self.device_gbs * 1e3), terms["busiest_sm_bytes"] / (self.sm_gbs * 1e3))
        return (self.launch_us + self.block_us * terms["blocks_per_sm"] + self.handoff_us * terms["split"]
                + self.handoff_per_piece_us * terms["split_pieces"] + self.wide_handoff_us * terms["split_wide"]
                + self.streamed_us * terms["streamed"] + memory_us)


def cost_terms(work: np.ndarray, blocks_per_sm_busiest: int, split_pieces: int, sms: int,
               streamed: bool = False, threads: int = BLOCK_SIZES[0]) -> dict:
    """What the cost model reads of a plan: blocks on the busiest SM, whether a row is split and into how many
    pieces (0 where none is), the same for blocks wider than the narrowest (in units of it), whether a piece is
    streamed, the bytes of all blocks and of the busiest SM's (blocks
    placed round-robin in launch order)."""
    per_sm = np.zeros(sms)
    np.add.at(per_sm, np.arange(work.size) % sms, work)
    split = split_pieces > 1
    return {"blocks_per_sm": blocks_per_sm_busiest, "split": float(split), "split_pieces": split_pieces if split else 0,
            "split_wide": float(split) * (threads / BLOCK_SIZES[0] - 1), "streamed": float(streamed),
            "total_bytes": float(work.sum() * BYTES_PER_ELEMENT),
            "busiest_sm_bytes": float(per_sm.max() * BYTES_PER_ELEMENT)}


def fit_cost(plans, measured_us, device_gbs=(2000.0, 3000.0, 4300.0, 6000.0, 9000.0, 14000.0),
             sm_gbs=(10.0, 15.0, 20.0, 30.0, 45.0, 60.0, 80.0, 100.0, 130.0, 170.0, 220.0)) -> tuple[PieceCost, float]:
    """The PieceCost that fits measured times of plans best (least squares over the fixed costs, non-negative,
    for each pair of bandwidths on the grids) -> (cost, root-mean-square residual in us)."""
    terms = [p.terms() for p in plans]
    measured = np.asarray(measured_us, dtype=np.float64)
    if len(terms) != measured.size or measured.size < 5:
        raise ValueError("fit_cost needs one measured time per plan, and at least five plans")
    fixed = np.array([[1.0, t["blocks_per_sm"], t["split"], t["split_pieces"], t["split_wide"], t["streamed"]]
                      for t in terms])
    best = None
    for device in device_gbs:
        for sm in sm_gbs:
            memory = np.array([max(t["total_bytes"] / (device * 1e3), t["busiest_sm_bytes"] / (sm * 1e3))
                               for t in terms])
            coefficients = _nonnegative_least_squares(fixed, measured - memory)
            residual = float(np.sqrt(np.mean((fixed @ coefficients + memory - measured) ** 2)))
            if best is None or residual < best[1]:
                best = (PieceCost(*map(float, coefficients), device_gbs=device, sm_gbs=sm), residual)
    return best


def _nonnegative_least_squares(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min |a x - b| over x >= 0 by dropping the most negative coefficient until none is (a few columns)."""
    active = list(range(a.shape[1]))
    while True:
        x = np.zeros(a.shape[1])
        x[active] = np.linalg.lstsq(a[:, active], b, rcond=None)[0]
        if (x >= 0).all():
            return x
        active.remove(int(np.argmin(x)))


@dataclasses.dataclass(frozen=True)
class Plan:
    """One launch of `threads`-thread blocks. `blocks` (B x 4 int32): {row, start, length, j} for piece j of a
    row ({first, count, 0, -1} for a packed block: rows pack_rows[first .. first + count)); `row_first_slot`
    (rows + 1): row r's pieces publish partials at slots row_first_slot[r] .. row_first_slot[r + 1] - 1."""
    threads: int
    piece_target: int
    blocks: np.ndarray
    row_first_slot: np.ndarray
    pack_rows: np.ndarray
    slots: int
    sms: int
    predicted_us: float
    lengths: np.ndarray

    @property
    def grid(self) -> int:
        return len(self.blocks)

    @property
    def waves(self) -> int:
        return -(-self.grid // self.slots)

    @property
    def pieces_per_row(self) -> np.ndarray:
        return np.diff(self.row_first_slot)

    def terms(self) -> dict:
        """What the cost model reads of this plan (cost_terms)."""
        pieces = self.blocks[self.blocks[:, 3] >= 0]
        streamed = bool((span(pieces[:, 1], pieces[:, 2]) > register_capacity(self.threads)).any())
        return cost_terms(self.work(), -(-self.grid // self.sms), int(self.pieces_per_row.max()), self.sms, streamed,
                          self.threads)

    def descriptors(self) -> np.ndarray:
        """What the kernel reads per block (B x 8 int32): {row, start, length, j, pieces of the row, its first
        partial slot, row length, 0} for a piece, {first, count, 0, -1, 0, 0, 0, 0} for a packed block."""
        out = np.zeros((self.grid, 8), dtype=np.int64)
        out[:, :4] = self.blocks
        piece = self.blocks[:, 3] >= 0
        rows = self.blocks[piece, 0]
        out[piece, 4] = self.pieces_per_row[rows]
        out[piece, 5] = self.row_first_slot[rows]
        out[piece, 6] = self.lengths[rows]
        return out.astype(np.int32)

    def predict(self, cost: PieceCost) -> float:
        return cost.time(self.terms())

    def work(self) -> np.ndarray:
        """Elements each block runs, in launch order."""
        return block_work(self.blocks, self.pack_rows, self.lengths)

    def describe(self) -> dict:
        k = self.pieces_per_row
        packed = self.blocks[:, 3] < 0
        return {"threads": self.threads, "piece_target": self.piece_target, "grid": self.grid, "slots": self.slots,
                "sms": self.sms, "waves": self.waves, "split_rows": int((k > 1).sum()), "most_pieces": int(k.max()),
                "packed_blocks": int(packed.sum()), "packed_rows": int(self.pack_rows.size),
                "largest_block_elements": int(self.work().max()), "predicted_us": round(self.predicted_us, 3)}


def block_work(blocks: np.ndarray, pack_rows: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    work = blocks[:, 2].astype(np.int64).copy()
    for b in np.flatnonzero(blocks[:, 3] < 0):
        first, count = blocks[b, 0], blocks[b, 1]
        work[b] = lengths[pack_rows[first:first + count]].sum()
    return work


def split_points(start: int, length: int, pieces: int, align: int = ALIGN) -> np.ndarray:
    """pieces + 1 boundaries of [start, start + length): interior ones on multiples of `align` (absolute element
    index), as near equal shares as that allows; every piece non-empty."""
    if pieces < 1 or length < pieces:
        raise ValueError(f"cannot cut {length} elements into {pieces} pieces")
    ideal = start + np.arange(1, pieces) * (length / pieces)
    interior = np.rint(ideal / align).astype(np.int64) * align
    points = np.concatenate([[start], interior, [start + length]]).astype(np.int64)
    if (np.diff(points) <= 0).any():  # pieces shorter than `align`: fall back to unaligned equal shares
        points = start + (np.arange(pieces + 1) * length) // pieces
    return points


def span(starts, lengths) -> np.ndarray:
    """Elements of the 16-byte chunks a piece's loads cover (its first chunk from the aligned address before it):
    what must fit the kernel's registers."""
    starts, lengths = np.asarray(starts, dtype=np.int64), np.asarray(lengths, dtype=np.int64)
    return 4 * ((starts % 4 + lengths + 3) // 4)


def row_points(start: int, length: int, piece_target: int, align: int = ALIGN) -> np.ndarray:
    """The boundaries of a row under target w: the fewest pieces (from ceil(length / w)) whose every span fits
    w, no piece shorter than `align` (a row too short for that is one piece)."""
    most = max(1, length // align)
    k = min(max(1, -(-length // piece_target)), most)
    while True:
        points = split_points(start, length, k, align)
        if k == most or span(points[:-1], np.diff(points)).max() <= piece_target:
            return points
        k += 1


def plan_for(lengths, threads: int, piece_target: int, slots: int, sms: int, cost: PieceCost = PieceCost(),
             pack_longest: int = PACK_LONGEST) -> Plan:
    """The plan of one (block size, piece target); ValueError where it needs more blocks than `slots`."""
    lengths = _checked(lengths)
    if threads not in BLOCK_SIZES:
        raise ValueError(f"threads must be one of {BLOCK_SIZES}, not {threads}")
    if piece_target < 1 or slots < 1 or sms < 1:
        raise ValueError("piece_target, slots and sms must be positive")
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    short = lengths <= pack_longest
    k = np.ones(len(lengths), dtype=np.int64)
    pieces = []  # (work, split, row, start, length, j)
    for r in np.flatnonzero(~short):
        points = row_points(int(offsets[r]), int(lengths[r]), piece_target)
        k[r] = len(points) - 1
        pieces += [(int(b - a), k[r] > 1, int(r), int(a), int(b - a), j)
                   for j, (a, b) in enumerate(zip(points[:-1], points[1:]))]
    pack_rows, packed = _pack(lengths, np.flatnonzero(short), threads // 32, max(piece_target, pack_longest))
    rows = pieces + [(work, False, first, count, 0, -1) for work, first, count in packed]
    rows.sort(key=lambda p: (-p[0], not p[1]))  # largest work first, split pieces before whole rows of equal work
    if len(rows) > slots:
        raise ValueError(f"{len(rows)} blocks of {threads} threads (piece target {piece_target}) exceed the {slots} "
                         "that can be co-resident: the pieces of a split row would wait on blocks that never start")
    blocks = np.array([p[2:] for p in rows], dtype=np.int64).reshape(-1, 4)
    if blocks.size and np.abs(blocks).max() >= 2**31:
        raise ValueError("the varlen kernel indexes with 32-bit integers")
    row_first_slot = np.concatenate([[0], np.cumsum(k)])
    plan = Plan(threads, int(piece_target), blocks.astype(np.int32), row_first_slot.astype(np.int32),
                pack_rows.astype(np.int32), int(slots), int(sms), 0.0, lengths)
    return dataclasses.replace(plan, predicted_us=plan.predict(cost))


def _pack(lengths: np.ndarray, short_rows: np.ndarray, per_block: int, most_work: int):
    """Short rows into packed blocks, longest first: at most `per_block` rows (one per warp) and `most_work`
    elements per block. -> (pack_rows, [(work, first, count)])."""
    order = short_rows[np.argsort(-lengths[short_rows], kind="stable")]
    groups, current, work = [], [], 0
    for r in order:
        n = int(lengths[r])
        if current and (len(current) == per_block or work + n > most_work):
            groups.append((work, current))
            current, work = [], 0
        current.append(int(r))
        work += n
    if current:
        groups.append((work, current))
    pack_rows, packed = [], []
    for work, group in groups:
        packed.append((work, len(pack_rows), len(group)))
        pack_rows += group
    return np.array(pack_rows, dtype=np.int64), packed


def register_capacity(threads: int) -> int:
    """Elements a block of `threads` keeps in registers (REG_CHUNKS 16-byte chunks per thread)."""
    return threads * REG_CHUNKS * 4


def piece_targets(lengths, threads: int, slots: int, sms: int) -> list[int]:
    """Targets tried for one block size: the register tier's capacity and its halvings down to MIN_PIECE, and
    the equal shares of the elements over m blocks per SM (m = 1 .. slots / sms) that fit the registers, on
    ALIGN multiples."""
    total = int(_checked(lengths).sum())
    capacity = register_capacity(threads)
    targets = {capacity >> i for i in range(8) if capacity >> i >= MIN_PIECE}
    for m in range(1, max(1, slots // sms) + 1):
        share = -(-total // (m * sms))
        share = max(MIN_PIECE, -(-share // ALIGN) * ALIGN)
        if share <= capacity:
            targets.add(share)
    return sorted(targets)


def streamed_targets(lengths, threads: int) -> list[int]:
    """Targets beyond the registers (pieces streamed, x read twice): tried only where no plan within them fits."""
    longest, capacity = int(_checked(lengths).max()), register_capacity(threads)
    return [capacity << i for i in range(1, 64) if capacity << (i - 1) < longest]


def choose(lengths, slots_by_threads: dict, sms: int, cost: PieceCost = PieceCost()) -> Plan:
    """The plan with the least predicted time over the block sizes (`slots_by_threads`: {threads: co-resident
    blocks}) and their piece targets within the registers (beyond them where none fits); ties go to fewer blocks.
    ValueError where no plan fits one wave."""
    plans = []
    for targets in (piece_targets, lambda lengths, threads, *_: streamed_targets(lengths, threads)):
        for threads, slots in sorted(slots_by_threads.items()):
            for target in targets(lengths, threads, slots, sms):
                try:
                    plans.append(plan_for(lengths, threads, target, slots, sms, cost))
                except ValueError:
                    continue
        if plans:
            break
    if not plans:
        raise ValueError(f"no varlen plan fits one wave of {slots_by_threads} co-resident blocks for "
                         f"{len(_checked(lengths))} rows")
    return min(plans, key=lambda p: (round(p.predicted_us, 6), p.grid))


def _checked(lengths) -> np.ndarray:
    lengths = np.asarray(lengths, dtype=np.int64)
    if lengths.ndim != 1 or lengths.size == 0 or (lengths <= 0).any():
        raise ValueError("every row needs at least one element")
    return lengths
