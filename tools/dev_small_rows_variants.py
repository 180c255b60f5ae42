"""The development variants of tools/dev_small_rows.py: handwritten kernels that each change one thing
(tools/dev_small_rows_kernels.cu), and one fixed instantiation of the shipped narrow and row kernels (no launch-time
switch, no cold tiers). Development only: never used by a chapter."""
from __future__ import annotations

from pathlib import Path

from launchlab.chapters.fusion import plans
from launchlab.model import fused_policy

from calibrate_fused import H200  # tools/ is on the path of every script that imports this module
DEV_SOURCE = Path(__file__).resolve().parent / "dev_small_rows_kernels.cu"
DEV_MAX_CHUNKS = 1024  # longer rows get no development variants


def np2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


# ---------------------------------------------------------------- development variants per shape
def dev_name(kind, g, bt, k, vec, online, fast, rms) -> str:
    return f"d{kind}_g{g}_b{bt}_k{k}_{'svg'[int(vec)]}{'o' if online else 't'}{'f' if fast else 'p'}{'r' if rms else ''}"


def dev_variants(rows: int, cols: int) -> list[dict]:
    """The development kernels timed at a shape: {name, g, bt, k, vec, online, fast, rms, kind}."""
    chunks = fused_policy.worst_chunks(rows, cols)
    found = []
    if chunks > DEV_MAX_CHUNKS:
        return found

    def add(g, bt, k, vec, online, fast, rms=False, kind="k"):
        if g > 32 and g != bt or k > 24:
            return
        found.append({"name": dev_name(kind, g, bt, k, vec, online, fast, rms), "g": g, "bt": bt, "k": k,
                      "vec": vec, "online": online, "fast": fast, "rms": rms, "kind": kind})

    # float4 chunks, groups of up to a warp
    g = min(32, np2(chunks))
    k = -(-chunks // g)
    for bt in (32, 128, 256):
        if g <= bt:
            add(g, bt, k, True, True, True)
            add(g, bt, k, 2, True, True)                 # whole-granule loads
    add(g, 128 if g <= 128 else g, k, 2, False, False, kind="c")
    bt = 128 if g <= 128 else g
    add(g, bt, k, True, False, False, kind="c")      # copy floor of the walk
    add(g, bt, k, True, False, False)                # max then sum, IEEE division (today's arithmetic)
    add(g, bt, k, True, False, True)                 # max then sum, fast division
    add(g, bt, k, True, True, False)                 # one online reduction, IEEE division
    add(g, bt, k, True, False, False, rms=True)
    add(g, bt, k, True, True, True, rms=True)
    # scalar elements, groups of up to a warp
    gs = min(32, np2(cols))
    ks = -(-cols // gs)
    add(gs, max(bt, gs), ks, False, True, True)
    add(gs, max(bt, gs), ks, False, False, False)
    add(gs, max(bt, gs), ks, False, False, False, kind="c")
    # several warps per row for longer rows: one barrier (online) against four (max then sum)
    if chunks > 64:
        for threads in (64, 128, 256):
            kk = -(-chunks // threads)
            if threads < 32 * np2(-(-chunks // 32)) or threads == 64:
                add(threads, threads, kk, True, True, True)
                add(threads, threads, kk, True, False, False)
                add(threads, threads, kk, True, True, True, rms=True)
    return found


def dev_source(shapes) -> str:
    from launchlab.gpu import build

    names, lines = set(), []
    for rows, cols in shapes:
        for v in dev_variants(rows, cols):
            if v["name"] in names:
                continue
            names.add(v["name"])
            b = lambda flag: "true" if flag else "false"  # noqa: E731
            if v["kind"] == "c":
                lines.append(f"DEV_COPY({v['name']}, {v['g']}, {v['bt']}, {v['k']}, {int(v['vec'])})")
            else:
                lines.append(f"DEV_KERNEL({v['name']}, {v['g']}, {v['bt']}, {v['k']}, {int(v['vec'])}, {b(v['online'])}, "
                             f"{b(v['fast'])}, {b(v['rms'])})")
    head = build.expand_source(build.KERNEL_DIR / "row_helpers.cuh")
    return head + "\n" + DEV_SOURCE.read_text() + "\n" + "\n".join(lines) + "\n"


class DevTarget:
    """One development kernel on x: grid = rows / (rows per block), or the given launch."""

    name = "dev"

    def __init__(self, module, v, x, grid=None, block=None, args=None):
        import cupy
        import numpy as np

        self.x, self.y = x, cupy.empty_like(x)
        rows, cols = x.shape
        self.kernel = module.get_function(v["name"])
        if grid is None:
            per_block = v["bt"] // v["g"] if v["g"] <= v["bt"] else 1
            grid, block = -(-rows // per_block), v["bt"]
        self.grid, self.block = (grid,), (block,)
        self.args = (x, self.y, *(args or (np.int32(rows), np.int32(cols))))

    def invoke(self):
        self.kernel(self.grid, self.block, self.args)

    def poison(self):
        self.y.fill(float("nan"))


# One fixed instantiation of the shipped kernels, beside the shipped ones: how much the launch-time switch (narrow's
# lanes) and the cold tiers (the row kernel's shared and streamed code) cost a short row. {label: (family, defines,
# appended source)}; the kernels take the shipped kernel's arguments less `lanes`.
FIXED_LANES = (1, 2, 4, 8, 16, 32)
FIXED = {
    "fixed_narrow_r1": ("softmax_designs", {"BLOCK": 256, "DESIGN": 1, "ROW_CHUNKS": 1}, "".join(
        f"extern \"C\" __global__ void __launch_bounds__(BLOCK) fixed_narrow_{mode}_l{lanes}(const float* __restrict__ x, "
        f"float* __restrict__ y, int rows, int cols) {{ narrow_rows<{'true' if mode == 'rms' else 'false'}, {lanes}>"
        f"(x, y, rows, cols); }}\n" for mode in ("rms", "plain") for lanes in FIXED_LANES)),
    "fixed_row_b32": ("fused_softmax", {"BLOCK": 32, "REG_CHUNKS": 4, "UNROLL": 4, "MIN_BLOCKS": 32}, "".join(
        f"extern \"C\" __global__ void __launch_bounds__(BLOCK, MIN_BLOCKS) fixed_row_{mode}(const float* __restrict__ x, "
        f"float* __restrict__ y, int cols) {{ __shared__ float scratch[3 * BLOCK / 32]; row_in_registers<"
        f"{'true' if mode == 'rms' else 'false'}>(row_at(x, y, blockIdx.x, cols), scratch); }}\n" for mode in ("rms", "plain"))),
}
FIXED["fixed_row_b128"] = ("fused_softmax", {"BLOCK": 128, "REG_CHUNKS": 4, "UNROLL": 4, "MIN_BLOCKS": 10},
                           FIXED["fixed_row_b32"][2])


def fixed_source(label: str, folder: Path) -> str:
    from launchlab.gpu import build

    family, _, appended = FIXED[label]
    return build.expand_source(folder / f"{family}.cu") + "\n" + appended


def fixed_contenders(rows, cols, x, modules) -> list:
    """[(name, target, mode)] of the fixed instantiations that serve this shape (compared with new:<tag>)."""
    import numpy as np

    found = []
    chunks = fused_policy.worst_chunks(rows, cols)
    if chunks <= 32:
        lanes = fused_policy.narrow_lanes(rows, cols, 1)
        grid = min(-(-rows // (256 // lanes)), 132 * 4)
        for mode in ("plain", "rms"):
            found.append((f"fixed:narrow-r1-l{lanes}/{mode}", DevTarget(modules["fixed_narrow_r1"],
                          {"name": f"fixed_narrow_{mode}_l{lanes}"}, x, grid, 256), mode))
    for label, block in (("fixed_row_b32", 32), ("fixed_row_b128", 128)):
        if plans.fused_config(rows, cols, H200["shared_bytes_per_block_optin"])["defines"] == FIXED[label][1]:
            for mode in ("plain", "rms"):
                found.append((f"fixed:row-b{block}/{mode}", DevTarget(modules[label], {"name": f"fixed_row_{mode}"}, x,
                              rows, block, (np.int32(cols),)), mode))
    return found

