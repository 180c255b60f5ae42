"""The fused kernel of each shape: the configurations the launch policy considers (`candidates`), the model's
prediction for each (model/fused_cost.py) and the pick (`fused_plan`), with the build each one needs.

A plan is a dict: "design" (row, narrow, cluster, split), "family" (the kernel file), "defines" (compile-time),
"module" (the build's label: plans with equal defines share one), "shared_bytes" (the row kernel's dynamic shared
memory; None for the designs, whose targets derive it), "options" (launch-time choices of the target), "tag" (the
configuration's name), and from `fused_plan` "predicted_us" ({tag: {"warm", "cold"}} for every candidate
considered) and "model" (the version of the fitted constants)."""
from __future__ import annotations

from launchlab.model import fused_cost, fused_policy

FUSED_KERNELS = ("fused_rms_softmax", "fused_softmax")
REGISTERS_FAMILY = "fused_row_registers"   # the row kernel's registers tier alone (kernels/fused_row_registers.cu)
REGISTERS_KERNELS = ("registers_rms_softmax", "registers_softmax")

# ---------------------------------------------------------------- the one-block-per-row kernel's build per shape
# A row walks in 16-byte chunks; a block holds up to REG_CHUNKS chunks per thread in registers, else the row in
# dynamic shared memory, else it streams the row twice (kernels/fused_softmax.cu decides, from these). One warp
# per row for rows up to 256 chunks, a register budget that lets several rows share an SM, and deeper unrolling
# where a row is cached in shared memory or streamed. Fewer rows than SMs (one row per SM at most) keep rows of up
# to 8 x 1024 chunks in registers, 8 chunks a thread (evidence/development/fused_policy_sweep.md).
REG_CHUNKS = 4
WARP_ROW_CHUNKS = 8           # chunks per thread a one-warp block may hold (rows up to 1024 floats)
FEW_ROWS_REG_CHUNKS = 8       # chunks per thread in registers when rows are fewer than SMs
WIDE_REGISTER_BUDGET = 64     # per thread, for 8 chunks a thread (ptxas fits them in 60 without spills)
REGISTER_TIER_MAX_BLOCK = 256
SHARED_TIER_BLOCK = 512
STREAMED_TIER_BLOCK = 1024
UNROLL = {"registers": 4, "shared": 8, "streamed": 8}
REGISTER_BUDGET = {"registers": 48, "shared": 64, "streamed": 64}  # per thread; ptxas fits these without spills


def fused_tier(rows: int, cols: int, block: int, shared_bytes: int, reg_chunks: int = REG_CHUNKS) -> str:
    """Where the kernel keeps a row (the worst-aligned one), mirroring fused_row() in the .cu file."""
    chunks = fused_policy.worst_chunks(rows, cols)
    if chunks <= reg_chunks * block:
        return "registers"
    if 16 * chunks <= shared_bytes:
        return "shared"
    return "streamed"


def fused_config(rows: int, cols: int, shared_limit: int, sm_count: int | None = None) -> dict:
    """Block size, compile-time defines and dynamic shared memory of the row kernel for a shape; `module` names
    the build (shapes with equal defines share one). With the GPU's `sm_count`, fewer rows than SMs keep longer
    rows in registers; without it (callers whose rows outnumber any GPU's SMs) they do not."""
    chunks = fused_policy.worst_chunks(rows, cols)
    few_rows = sm_count is not None and rows < sm_count
    if chunks <= WARP_ROW_CHUNKS * 32:
        tier, block, reg_chunks, shared = "registers", 32, (REG_CHUNKS if chunks <= REG_CHUNKS * 32 else WARP_ROW_CHUNKS), 0
    elif chunks <= REG_CHUNKS * REGISTER_TIER_MAX_BLOCK:
        tier, block, reg_chunks, shared = "registers", fused_policy.next_power_of_two(-(-chunks // REG_CHUNKS)), REG_CHUNKS, 0
    elif few_rows and chunks <= FEW_ROWS_REG_CHUNKS * 1024:
        tier, reg_chunks, shared = "registers", FEW_ROWS_REG_CHUNKS, 0
        block = max(REGISTER_TIER_MAX_BLOCK, fused_policy.next_power_of_two(-(-chunks // FEW_ROWS_REG_CHUNKS)))
    elif 16 * chunks <= shared_limit:
        block = SHARED_TIER_BLOCK
        while REG_CHUNKS * block >= chunks:  # the kernel keeps a row in registers when it fits: keep it from fitting
            block //= 2
        tier, reg_chunks, shared = "shared", REG_CHUNKS, 16 * chunks
    else:
        tier, block, reg_chunks, shared = "streamed", STREAMED_TIER_BLOCK, REG_CHUNKS, 0
    budget = REGISTER_BUDGET[tier] if reg_chunks <= REG_CHUNKS else WIDE_REGISTER_BUDGET
    defines = {"BLOCK": block, "REG_CHUNKS": reg_chunks, "UNROLL": UNROLL[tier], "MIN_BLOCKS": min_blocks(block, budget)}
    assert fused_tier(rows, cols, block, shared, reg_chunks) == tier
    return {"defines": defines, "block": block, "shared_bytes": shared, "tier": tier, "module": row_kernel_module(defines)}


def min_blocks(block: int, register_budget: int = REGISTER_BUDGET["registers"]) -> int:
    """Blocks per SM that __launch_bounds__ asks the register allocation to allow: as many as a budget of
    registers per thread gives (4 schedulers of 16384 registers, 32 threads a warp), within the SM's 2048
    threads and 32 blocks."""
    warps = 4 * (16384 // (32 * register_budget))
    return max(1, min(32, 2048 // block, warps // max(1, block // 32)))


def row_kernel_module(defines: dict) -> str:
    """The build of kernels/fused_softmax.cu with these defines (shapes with equal defines share it)."""
    return (f"fused_softmax_b{defines['BLOCK']}_r{defines['REG_CHUNKS']}_u{defines['UNROLL']}"
            f"_m{defines.get('MIN_BLOCKS', 1)}")


# ---------------------------------------------------------------- plans
def row_plan(rows: int, cols: int, shared_limit: int, sm_count: int | None) -> dict:
    return _row(fused_config(rows, cols, shared_limit, sm_count))


def _row(config: dict) -> dict:
    d = config["defines"]
    return {"design": "row", "family": "fused_softmax", "options": {}, **config,
            "tag": f"row-b{d['BLOCK']}-r{d['REG_CHUNKS']}-u{d['UNROLL']}-m{d['MIN_BLOCKS']}-{config['tier']}"}


# (threads, chunks in flight a thread, registers a thread) beside fused_config's shared and streamed tiers; the
# calibration also timed (1024, 8, 64), (256, 16, 128) and one warp holding rows of 1K-4K floats (16 or 32 chunks a
# thread): none beat the other candidates by 2 % anywhere on its plane
ROW_VARIANTS = ((256, 8, 64),)


def row_variants(rows: int, cols: int, shared_limit: int) -> list[dict]:
    """The row kernel for rows its registers cannot hold, with 256 threads and deeper unrolling than fused_config's
    (it keeps the row in shared memory where it fits, else streams it)."""
    chunks = fused_policy.worst_chunks(rows, cols)
    shared = 16 * chunks if 16 * chunks <= shared_limit else 0
    found = []
    for block, unroll, registers in ROW_VARIANTS:
        if REG_CHUNKS * block >= chunks:
            continue
        defines = {"BLOCK": block, "REG_CHUNKS": REG_CHUNKS, "UNROLL": unroll, "MIN_BLOCKS": min_blocks(block, registers)}
        tier = fused_tier(rows, cols, block, shared)
        found.append(_row({"defines": defines, "block": block, "shared_bytes": shared, "tier": tier,
                           "module": row_kernel_module(defines)}))
    return found


# Short rows of small matrices (the latency regime), where a block's life is mostly latency: more threads per row,
# each holding fewer chunks, shorten every thread's chain of loads and exponentials. tools/dev_small_rows.py timed
# one warp against 64-256 threads on rows of 92-375 chunks: 2 chunks a thread won everywhere (e.g. 269 chunks:
# 256 threads 1.45 us, 128 threads x 3 chunks 1.50, one warp x 9 chunks 2.2); so the policy also considers the
# registers tier with LATENCY_ROW_CHUNKS chunks a thread and the fewest threads that hold the row that way.
LATENCY_MAX_BYTES = 8 << 20      # x at most this large: a copy of it takes a few microseconds at most
LATENCY_ROW_CHUNKS = 2
LATENCY_ROW_MIN_CHUNKS = 65      # shorter rows: one warp of fused_config's already holds them in 2 chunks a thread
LATENCY_ROW_MAX_BLOCK = 256


def latency_row_variants(rows: int, cols: int) -> list[dict]:
    """The registers tier with LATENCY_ROW_CHUNKS chunks a thread for a small matrix's rows of LATENCY_ROW_MIN_CHUNKS
    up to LATENCY_ROW_CHUNKS x LATENCY_ROW_MAX_BLOCK chunks (none elsewhere)."""
    chunks = fused_policy.worst_chunks(rows, cols)
    if 4 * rows * cols > LATENCY_MAX_BYTES or not LATENCY_ROW_MIN_CHUNKS <= chunks <= LATENCY_ROW_CHUNKS * LATENCY_ROW_MAX_BLOCK:
        return []
    block = fused_policy.next_power_of_two(-(-chunks // LATENCY_ROW_CHUNKS))
    defines = {"BLOCK": block, "REG_CHUNKS": LATENCY_ROW_CHUNKS, "UNROLL": UNROLL["registers"],
               "MIN_BLOCKS": min_blocks(block)}
    assert fused_tier(rows, cols, block, 0, LATENCY_ROW_CHUNKS) == "registers"
    return [_row({"defines": defines, "block": block, "shared_bytes": 0, "tier": "registers",
                  "module": row_kernel_module(defines)})]


# Rows of 65 to 4096 chunks spread thin: the registers tier with 1, 2 or 4 chunks a thread and as many threads (up
# to 1024) as hold the row that way, at any matrix size. A Triton kernel of one program per row with 4-16 warps,
# each thread holding 4-16 floats, was faster than the policy's pick at a few such shapes of the chapter's plane
# (rows of 375-5,562 floats). The calibration times these builds (candidates' every_build) so that the policy
# offers them only once the calibration plane has measured them.
SPREAD_ROW_CHUNKS = (1, 2, 4)
SPREAD_ROW_MAX_BLOCK = 1024


def fewest_threads(rows: int, cols: int) -> list[tuple[int, int]]:
    """(chunks a thread, the fewest power-of-two threads that hold the worst-aligned row that way) for each of
    SPREAD_ROW_CHUNKS."""
    chunks = fused_policy.worst_chunks(rows, cols)
    return [(per_thread, fused_policy.next_power_of_two(-(-chunks // per_thread))) for per_thread in SPREAD_ROW_CHUNKS]


def spread_row_variants(rows: int, cols: int) -> list[dict]:
    """The registers tier with each of SPREAD_ROW_CHUNKS chunks a thread and the fewest power-of-two threads (64 to
    SPREAD_ROW_MAX_BLOCK) that hold the worst-aligned row that way."""
    found = []
    for per_thread, block in fewest_threads(rows, cols):
        if not 64 <= block <= SPREAD_ROW_MAX_BLOCK:
            continue
        defines = {"BLOCK": block, "REG_CHUNKS": per_thread, "UNROLL": UNROLL["registers"],
                   "MIN_BLOCKS": min_blocks(block)}
        assert fused_tier(rows, cols, block, 0, per_thread) == "registers"
        found.append(_row({"defines": defines, "block": block, "shared_bytes": 0, "tier": "registers",
                           "module": row_kernel_module(defines)}))
    return found


def registers_only_variants(rows: int, cols: int) -> list[dict]:
    """The row kernel's registers tier alone (REGISTERS_FAMILY) with each of SPREAD_ROW_CHUNKS chunks a thread and
    the fewest power-of-two threads (32 to SPREAD_ROW_MAX_BLOCK) that hold the worst-aligned row that way. Without
    the other tiers' code it fits 32 registers a thread, so it asks for the SM's whole 2048 threads
    (REGISTERS_MIN_BLOCKS); MIN_BLOCKS bounds the full kernels its module also holds, unused. On the calibration of
    2026-12-05 one of these was the fastest candidate at 46 of 145 shapes warm and 41 cold, so the policy offers
    them."""
    found = []
    for per_thread, fewest in fewest_threads(rows, cols):
        block = max(32, fewest)
        if block > SPREAD_ROW_MAX_BLOCK:
            continue
        full = min(32, 2048 // block)
        defines = {"BLOCK": block, "REG_CHUNKS": per_thread, "UNROLL": UNROLL["registers"],
                   "MIN_BLOCKS": min_blocks(block), "REGISTERS_MIN_BLOCKS": full}
        assert fused_tier(rows, cols, block, 0, per_thread) == "registers"
        found.append({"design": "row", "family": REGISTERS_FAMILY, "options": {}, "defines": defines, "block": block,
                      "shared_bytes": 0, "tier": "registers",
                      "module": f"{REGISTERS_FAMILY}_b{block}_r{per_thread}_m{full}",
                      "tag": f"row-b{block}-r{per_thread}-m{full}-registers-only"})
    return found


def design_plan(design: str, defines: dict, options: dict | None = None) -> dict:
    """The plan of one of kernels/softmax_designs.cu's designs built with these defines."""
    options = dict(options or {})
    return {"design": design, "family": fused_policy.FAMILY, "defines": defines, "shared_bytes": None,
            "module": fused_policy.module_label(design, defines), "options": options,
            "tag": design_tag(design, defines, options)}


TAG_LETTERS = {"CLUSTER": "c", "BLOCK": "b", "ROW_CHUNKS": "r", "PREFETCH": "p", "SCALAR": "s", "SLICE_REGS": "g",
               "UNROLL": "u", "NARROW_MIN_BLOCKS": "m"}


# The narrow design's builds of 1 or 2 chunks a lane, also at full occupancy (kernels/narrow_full.cu): they fit 32
# registers a thread there and hold 2048 threads an SM, where softmax_designs.cu's need 44-48 and hold 1280. The
# calibration times them (candidates' every_build); the policy offers them once it has.
NARROW_FULL_FAMILY = "narrow_full"
NARROW_FULL_ROW_CHUNKS = (1, 2)


def narrow_full_twin(plan: dict) -> dict | None:
    """The full-occupancy twin of a narrow plan of NARROW_FULL_ROW_CHUNKS chunks a lane (not scalar, no prefetch);
    None for any other plan."""
    defines = plan["defines"]
    if (plan["design"] != "narrow" or defines.get("SCALAR") or defines.get("PREFETCH")
            or defines["ROW_CHUNKS"] not in NARROW_FULL_ROW_CHUNKS):
        return None
    full = {"BLOCK": defines["BLOCK"], "ROW_CHUNKS": defines["ROW_CHUNKS"],
            "NARROW_MIN_BLOCKS": 2048 // defines["BLOCK"]}  # without DESIGN: the file emits only its own kernels
    return {**plan, "family": NARROW_FULL_FAMILY, "defines": full,
            "module": f"{NARROW_FULL_FAMILY}_b{full['BLOCK']}_r{full['ROW_CHUNKS']}_m{full['NARROW_MIN_BLOCKS']}",
            "tag": design_tag("narrow", full, plan["options"])}


def design_tag(design: str, defines: dict, options: dict) -> str:
    parts = [f"{letter}{defines[key]}" for key, letter in TAG_LETTERS.items() if key in defines]
    parts += [f"{key}{value}" for key, value in sorted(options.items())]
    return "-".join([design, *parts])


def plan_kernels(plan: dict) -> tuple[str, str]:
    """(RMS kernel, plain kernel) of a plan: the row kernel's, or a design's of kernels/softmax_designs.cu."""
    if plan["design"] == "row":
        return REGISTERS_KERNELS if plan.get("family") == REGISTERS_FAMILY else FUSED_KERNELS
    return tuple(fused_policy.KERNELS[plan["design"]][mode] for mode in fused_policy.MODES)


# ---------------------------------------------------------------- what the policy considers
CANDIDATE_NARROW_ROW_CHUNKS = (1, 2, 4, 8)      # chunks per lane a narrow build may hold (16 spills)
# narrow builds that may load the next rows early (8: too many registers; 1 and 2 were never the fastest candidate
# on the calibration plane, and slower than without at every small shape tools/dev_small_rows.py timed)
CANDIDATE_PREFETCH_ROW_CHUNKS = (4,)
CANDIDATE_CLUSTERS = (4, 8, 16)                   # clusters of 2 never beat the others by 1 % on the calibration plane
NARROW_BLOCK = 256
# A small matrix's narrow build of fewest chunks a lane also in blocks of 128 threads: tools/dev_small_rows.py found
# groups of up to a warp per row 0.03-0.1 us faster in blocks of 128 threads than of 256 at every small shape
LATENCY_NARROW_BLOCK = 128
CANDIDATE_SLICE_REGS = (8, 16)                    # chunks per thread a cluster build holds in registers
# Cluster builds of fewer chunks a thread, for slices of up to 1024 chunks: a thread's statistics take an exponential
# of every entry of its register array, used or not, so a short slice in the builds of 8 pays for entries it leaves
# empty. The calibration times them (candidates' every_build); the policy offers them once it has.
SPREAD_SLICE_REGS = (1, 2, 4)
CANDIDATE_MAX_BLOCKS_PER_SM = 64                  # a cluster design whose grid exceeds SMs x this is not considered
SPLIT_MAX_ROWS_PER_SM = 2                         # the split design is considered for fewer rows than SMs x this


def _try(make, *args, **kwargs):
    try:
        return make(*args, **kwargs)
    except ValueError:
        return None


def fewest_per_lane(rows: int, cols: int, scalar: bool = False) -> dict:
    """{lanes a row: the fewest chunks a lane (single floats in a scalar build) among CANDIDATE_NARROW_ROW_CHUNKS
    that gives that lane count}, over the narrow builds that hold the row in 32 lanes."""
    units = cols if scalar else fused_policy.worst_chunks(rows, cols)
    found = {}
    for per_lane in CANDIDATE_NARROW_ROW_CHUNKS:
        if units <= 32 * per_lane:
            found.setdefault(fused_policy.narrow_lanes(rows, cols, per_lane, scalar), per_lane)
    return found


# Builds the calibration times and the policy does not offer yet, by group: the groups `candidates` leaves out
# unless asked for every build. Offering a group is taking it out of this set (tools/calibrate_fused.py --offer
# shows what that would do on a calibration plane first).
CALIBRATION_ONLY = frozenset({
    "spread_rows",     # spread_row_variants
    "narrow_full",     # narrow_full_twin
    "thin_slices",     # cluster builds of SPREAD_SLICE_REGS
})


def offered(group: str, every_build: bool) -> bool:
    """Whether `candidates` holds a group of builds (one of those CALIBRATION_ONLY ever named)."""
    return every_build or group not in CALIBRATION_ONLY


def candidates(rows: int, cols: int, device: dict, every_build: bool = False) -> list[dict]:
    """Every configuration the policy considers for a shape on a device (its identity: "sm_count",
    "compute_capability", "shared_bytes_per_block_optin"), each once, as plans. `every_build` adds the builds the
    policy leaves out because another design does their work as well (the split build of 256 threads for many rows
    a block per row holds on chip) or because the calibration has yet to measure them (CALIBRATION_ONLY): the
    calibration times them, and the model's fit learns from them."""
    if rows <= 0 or cols <= 0:
        raise ValueError(f"shape {rows}x{cols} is empty")
    sm_count, optin = int(device["sm_count"]), int(device["shared_bytes_per_block_optin"])
    clusters = fused_policy.capability(device["compute_capability"]) >= fused_policy.CLUSTER_CAPABILITY
    chunks = fused_policy.worst_chunks(rows, cols)
    row = row_plan(rows, cols, optin, sm_count)  # the one-block-per-row kernel's own plan: where a block keeps a row
    found = [row, row_plan(rows, cols, optin, None)]
    found += row_variants(rows, cols, optin) + latency_row_variants(rows, cols)
    if offered("spread_rows", every_build):
        found += spread_row_variants(rows, cols)
    found += registers_only_variants(rows, cols)
    by_lanes = fewest_per_lane(rows, cols)
    for per_lane in by_lanes.values():
        for prefetch in (0, 1) if per_lane in CANDIDATE_PREFETCH_ROW_CHUNKS else (0,):
            found.append(design_plan("narrow", fused_policy.design_defines(
                "narrow", rows, cols, sm_count, row_chunks=per_lane, block=NARROW_BLOCK,
                **({"prefetch": 1} if prefetch else {}))))
    if by_lanes and 4 * rows * cols <= LATENCY_MAX_BYTES:
        found.append(design_plan("narrow", fused_policy.design_defines(
            "narrow", rows, cols, sm_count, row_chunks=min(by_lanes.values()), block=LATENCY_NARROW_BLOCK)))
    if offered("narrow_full", every_build):
        found += [twin for twin in map(narrow_full_twin, found) if twin]
    for per_lane in fewest_per_lane(rows, cols, scalar=True).values():
        found.append(design_plan("narrow", fused_policy.design_defines(
            "narrow", rows, cols, sm_count, row_chunks=per_lane, scalar=1)))
    if clusters and cols >= 1024:
        for width in CANDIDATE_CLUSTERS:
            if rows * width > CANDIDATE_MAX_BLOCKS_PER_SM * sm_count:
                continue
            slice_chunks = -(-chunks // width)
            for regs in CANDIDATE_SLICE_REGS + (SPREAD_SLICE_REGS if offered("thin_slices", every_build) else ()):
                if regs != fused_policy.CLUSTER_SLICE_REGS and not (regs // 2) * 256 < slice_chunks <= regs * 256:
                    continue  # another capacity only as the fewest chunks a thread that keep the slice in registers
                defines = _try(fused_policy.design_defines, "cluster", rows, cols, sm_count, cluster=width,
                               slice_regs=regs)
                if defines and (slice_chunks <= regs * 256
                                or 16 * slice_chunks <= optin - fused_policy.SHARED_RESERVED_PER_BLOCK):
                    found.append(design_plan("cluster", defines))
    if cols >= 4096:
        # blocks of 512 threads for few rows (latency), of 256 for many only where a block per row cannot keep its row
        # on chip (the row kernel streams it, reading x twice): there the pieces keep rows on chip and walk them in grid
        # steps. Where a block per row holds its row, the split build does the same work in grid steps that wait for
        # one another (slower by 11-13 % at every many-row shape of the calibration plane), which the model, with one
        # share of the rate for the split design, cannot tell. Each with fused_policy.split_pieces
        few = rows < SPLIT_MAX_ROWS_PER_SM * sm_count
        if few:
            found.append(design_plan("split", fused_policy.design_defines("split", rows, cols, sm_count)))
        if few or row["tier"] == "streamed" or every_build:
            found.append(design_plan("split", fused_policy.design_defines("split", rows, cols, sm_count, block=256)))
    unique = {}
    for plan in found:
        unique.setdefault(plan["tag"] + "|" + plan["module"], plan | {"place": place(plan, rows, cols, sm_count)})
    return list(unique.values())


def place(plan: dict, rows: int, cols: int, sm_count: int) -> str:
    """Where a plan keeps a row at this shape, in words (the page's)."""
    defines, chunks = plan["defines"], fused_policy.worst_chunks(rows, cols)
    if plan["design"] == "row":
        return plan["tier"]
    if plan["design"] == "narrow":
        scalar = bool(defines.get("SCALAR"))
        lanes = fused_policy.narrow_lanes(rows, cols, defines["ROW_CHUNKS"], scalar)
        return f"registers{' (single floats)' if scalar else ''}, {lanes} lanes"
    if plan["design"] == "cluster":
        slice_chunks = -(-chunks // defines["CLUSTER"])
        where = "registers" if slice_chunks <= defines["SLICE_REGS"] * defines["BLOCK"] else "shared memory"
        return f"{where}, {defines['CLUSTER']} blocks"
    block = defines["BLOCK"]
    on_chip = fused_policy.split_on_chip_chunks(block)
    pieces = plan["options"].get("pieces") or fused_policy.split_pieces(
        rows, fused_policy.split_blocks_per_sm(block) * sm_count, chunks, on_chip, sm_count)
    kept = -(-chunks // pieces) <= on_chip
    return f"{'registers and shared memory' if kept else 'streamed'}, {pieces} pieces"


def predictions(rows: int, cols: int, device: dict, constants: fused_cost.Constants | None = None) -> list[tuple]:
    """[(plan, {"warm": us, "cold": us})] of every candidate, in the order `candidates` gives them."""
    constants = constants or fused_cost.FITTED
    return [(plan, {l2: fused_cost.predict(plan, rows, cols, device, l2, constants) for l2 in fused_cost.L2_STATES})
            for plan in candidates(rows, cols, device)]


def score(predicted: dict) -> float:
    """What the policy minimises: the geometric mean of the warm and cold predictions (both count alike)."""
    return (predicted["warm"] * predicted["cold"]) ** 0.5


# Scores within this relative distance of the least are the same prediction (they differ in rounding only).
TIE = 1e-9


def pick(rows: int, cols: int, device: dict, predicted: list[tuple], constants: fused_cost.Constants | None = None
         ) -> int:
    """The index in `predicted` (as `predictions` gives it) of the policy's candidate: the least score. Where
    several tie, the model predicts them alike because the GPU's bandwidth paces every wave of each; of those, the
    one whose tasks' latency leaves most room under that pace (the least fused_cost "latency_bound", scored as the
    predictions are), then the first."""
    scores = [score(times) for _, times in predicted]
    least = min(scores)
    tied = [k for k, each in enumerate(scores) if each <= least * (1.0 + TIE)]
    if len(tied) == 1:
        return tied[0]
    constants = constants or fused_cost.FITTED

    def latency_bound(k: int) -> float:
        return score({l2: fused_cost.predict_terms(predicted[k][0], rows, cols, device, l2, constants)["latency_bound"]
                      for l2 in fused_cost.L2_STATES})

    return min(tied, key=lambda k: (latency_bound(k), k))


def fused_plan(rows: int, cols: int, device: dict) -> dict:
    """The fused kernel for a shape on a device (its identity: SM count, compute capability, opt-in shared memory):
    the candidate of least predicted time (model/fused_cost.py with its fitted constants; `pick` says how ties
    fall), with every candidate's prediction ("predicted_us", by tag) and the model's version ("model")."""
    predicted = predictions(rows, cols, device)
    best = pick(rows, cols, device, predicted)
    plan = dict(predicted[best][0])
    plan["predicted_us"] = {candidate["tag"]: times for candidate, times in predicted}
    plan["model"] = fused_cost.MODEL_VERSION
    return plan


def fused_plans(shapes, device: dict) -> dict:
    """{"<rows>x<cols>": fused_plan} for every shape."""
    return {f"{r}x{c}": fused_plan(r, c, device) for r, c in shapes}
