"""Cluster widths other than 4, 8 and 16 (a development probe): what the GPU's occupancy API says a grid of clusters
of each width holds, and how fast the cluster design (kernels/softmax_designs.cu, DESIGN 2) runs at every width
from 2 to 16 beside the launch policy's pick.

    PYTHONPATH=src python tools/dev_cluster_widths.py --build DIR                  # here: nvcc, sm_90 cubins
    PYTHONPATH=src python tools/dev_cluster_widths.py --cubins DIR --pick-cubins DIR2 --out f.json [--shapes ...]
    PYTHONPATH=src python tools/dev_cluster_widths.py --occupancy-only --cubins DIR --out f.json

The cost model (model/fused_cost.py) counts a cluster grid's wave as the SMs whole clusters fill at one block an SM
times the blocks an SM holds: an assumption where an SM holds several blocks, which the occupancy part checks
(cuOccupancyMaxActiveClusters with each build's own registers and shared memory). The timing part uses the
development protocol of tools/dev_probe.py (every output poisoned, checked against the float64 oracle before and
after timing; warm and cold medians of 7), at shapes drawn from the plane's distribution with this probe's own seed
(DRAW_SEED: neither the chapter's nor the calibration's), kept where a cluster is a candidate and x is at least
MIN_BYTES.
"""
from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

from dev_probe import SHARED_PER_BLOCK, Launch, command_line  # noqa: E402

WIDTHS = tuple(range(2, 17))
SLICE_REGS = (8, 16)
BLOCK = 256
DRAW_SEED = 60417
DRAWS = 400
SHAPES = 16
MIN_BYTES = 8 << 20
# dynamic shared bytes a block asks for in the occupancy table (0: the slice in registers)
# (160 KiB: one block an SM, the share of the SMs whole clusters fill that model/fused_cost.py's CLUSTER_SM_SHARE holds)
OCCUPANCY_SHARED = (0, 8 << 10, 16 << 10, 24 << 10, 32 << 10, 48 << 10, 64 << 10, 96 << 10, 112 << 10, 160 << 10)


def defines(width: int, regs: int) -> dict:
    return {"BLOCK": BLOCK, "CLUSTER": width, "DESIGN": 2, "SLICE_REGS": regs, "UNROLL": 4}


def cubin_name(width: int, regs: int) -> str:
    return f"cluster_c{width}_g{regs}.cubin"


def build(directory: Path) -> None:
    from launchlab.gpu import build as gpu_build

    directory.mkdir(parents=True, exist_ok=True)
    source = directory / "softmax_designs.cu"
    source.write_text(gpu_build.expand_source(gpu_build.KERNEL_DIR / "softmax_designs.cu"))

    def one(key):
        width, regs = key
        command = ["nvcc", *gpu_build.compile_options(defines(width, regs), arch="sm_90"), "-cubin", "-o",
                   str(directory / cubin_name(width, regs)), str(source)]
        subprocess.run(command, check=True, capture_output=True, text=True)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, [(w, r) for w in WIDTHS for r in SLICE_REGS]))
    source.unlink()
    print(f"{len(WIDTHS) * len(SLICE_REGS)} cubins in {directory}")


def drawn_shapes() -> list[tuple[int, int]]:
    """SHAPES shapes of the plane's distribution (DRAW_SEED) where x holds MIN_BYTES or more and a cluster of 4 is
    one of the policy's candidates."""
    from launchlab.chapters.fusion import plans
    from launchlab.model import fused_cost

    device = {"sm_count": 132, "compute_capability": "9.0", "shared_bytes_per_block_optin": SHARED_PER_BLOCK}
    found = []
    for rows, cols in fused_cost.draw_plane(DRAW_SEED, DRAWS):
        if 4 * rows * cols < MIN_BYTES:
            continue
        if any(p["design"] == "cluster" for p in plans.candidates(rows, cols, device)):
            found.append((rows, cols))
        if len(found) == SHAPES:
            break
    return found


def variants(rows: int, cols: int, sms: int):
    """(width, regs, shared bytes) of every cluster build that keeps the row's slices on chip, as the policy's
    candidates would at that width."""
    from launchlab.chapters.fusion import plans
    from launchlab.model import fused_policy

    chunks = fused_policy.worst_chunks(rows, cols)
    found = []
    for width in WIDTHS:
        if rows * width > plans.CANDIDATE_MAX_BLOCKS_PER_SM * sms:
            continue
        slice_chunks = -(-chunks // width)
        for regs in SLICE_REGS:
            if regs != fused_policy.CLUSTER_SLICE_REGS and not (regs // 2) * BLOCK < slice_chunks <= regs * BLOCK:
                continue
            in_registers = slice_chunks <= regs * BLOCK
            shared = 0 if in_registers else 16 * slice_chunks
            if not in_registers and shared > fused_policy.CLUSTER_SLICE_BYTES:
                continue
            found.append((width, regs, shared))
    return found


def load(cubins: Path, width: int, regs: int, cache: dict):
    import cupy

    key = (width, regs)
    if key not in cache:
        kernel = cupy.RawModule(path=str(cubins / cubin_name(width, regs))).get_function("cluster_softmax")
        if width > 8:
            attribute = getattr(cupy.cuda.driver, "CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 14)
            cupy.cuda.driver.funcSetAttribute(kernel.kernel.ptr, attribute, 1)
        cache[key] = kernel
    return cache[key]


def occupancy(cubins: Path, cache: dict) -> list[dict]:
    """Per build and dynamic shared size: blocks an SM (occupancy API) and clusters the GPU holds at once."""
    import cupy
    from cuda.bindings import driver as cu

    from launchlab.gpu.targets import allow_dynamic_shared

    table = []
    for width in WIDTHS:
        for regs in SLICE_REGS:
            kernel = load(cubins, width, regs, cache)
            allow_dynamic_shared(kernel, max(OCCUPANCY_SHARED))
            for shared in OCCUPANCY_SHARED:
                entry = {"cluster": width, "slice_regs": regs, "shared": shared,
                         "per_sm": cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
                             kernel.kernel.ptr, BLOCK, shared)}
                config = cu.CUlaunchConfig()
                config.gridDimX, config.gridDimY, config.gridDimZ = width * 4096, 1, 1
                config.blockDimX, config.blockDimY, config.blockDimZ = BLOCK, 1, 1
                config.sharedMemBytes = shared
                config.numAttrs = 0
                error, clusters = cu.cuOccupancyMaxActiveClusters(cu.CUfunction(kernel.kernel.ptr), config)
                entry["clusters"] = int(clusters) if error == cu.CUresult.CUDA_SUCCESS else None
                if error != cu.CUresult.CUDA_SUCCESS:
                    entry["error"] = str(error)
                table.append(entry)
                print(f"c{width} g{regs} shared {shared}: {entry['per_sm']} an SM, clusters {entry['clusters']}",
                      flush=True)
    return table


def targets(cubins: Path, cache: dict):
    import numpy as np

    from launchlab.gpu.targets import allow_dynamic_shared

    def targets_at(rows, cols, x, y, sms):
        for width, regs, shared in variants(rows, cols, sms):
            kernel = load(cubins, width, regs, cache)
            if shared > 48 * 1024:
                allow_dynamic_shared(kernel, shared)
            entry = {"cluster": width, "slice_regs": regs, "shared": shared}
            yield entry, Launch(kernel, rows * width, BLOCK, (x, y, np.int32(cols)), shared, y)

    return targets_at


def label(entry: dict) -> str:
    return f"c{entry['cluster']} g{entry['slice_regs']}"


def main() -> None:
    cache: dict = {}
    table: list = []
    if "--occupancy-only" in sys.argv:  # --occupancy-only --cubins DIR --out FILE: the table alone, no timing
        arguments = dict(zip(sys.argv[2::2], sys.argv[3::2]))
        out = Path(arguments["--out"])
        if out.exists():
            raise SystemExit(f"error: {out} exists; give another --out")
        out.write_text(json.dumps({"occupancy": occupancy(Path(arguments["--cubins"]), cache)}, indent=1))
        return

    given = {}

    def timed_targets(args):
        given["out"] = args.out
        table.extend(occupancy(args.cubins, cache))
        return targets(args.cubins, cache)

    command_line(__doc__, lambda args: build(args.build), timed_targets, label,
                 default_shapes=drawn_shapes())
    if table:  # the timing ran and saved its result: the occupancy table joins it
        result = json.loads(given["out"].read_text())
        result["occupancy"] = table
        given["out"].write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
