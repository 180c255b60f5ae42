"""Where the chapter's Triton softmax beats the row kernel (a development probe): a thousand or a few thousand rows
of 300-1,600 floats, one block per row, one wave. Times the chapter's Triton kernel (chapters/fusion/baselines.py)
beside every registers-only row build that holds the row (kernels/fused_row_registers.cu) and two variants of each:

    plain   x read with ld.global instead of ld.global.nc (__ldg), as Triton's kernel reads it;
    half    half the resident blocks an SM in __launch_bounds__ (more registers a thread for the scheduler);
    scalar  Triton's layout (tools/dev_triton_gap.cu): 4 x chunks floats a thread at a stride of the block, each a
            4-byte load, so that a warp's load covers one 128-byte line instead of four.

    PYTHONPATH=src python tools/dev_triton_gap.py --build DIR                 # here: nvcc, sm_90 cubins
    PYTHONPATH=src python tools/dev_triton_gap.py --cubins DIR --out f.json [--shapes 1823x781,...]
    PYTHONPATH=src python tools/dev_triton_gap.py --once --cubins DIR --shapes ...   # one call each (for ncu)

Development protocol of tools/dev_probe.py: every output poisoned and checked against the float64 oracle before and
after timing; warm (a CUDA graph of many calls) and cold (after an L2 flush) medians of 7. The shapes are drawn
log-uniformly in that region with this probe's own seed (neither the chapter's nor the calibration's). The result
also records the Triton kernel's registers, spills and shared memory at each shape.
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tools"))

from dev_probe import Launch, command_line  # noqa: E402

DRAW_SEED = 3171
SHAPES = 10
ROWS = (400, 5000)
COLS = (300, 1600)
BLOCKS = (64, 128, 256, 512)
CHUNKS = (1, 2, 4)
KINDS = ("base", "plain", "half", "scalar")
PTX_DIR = Path(os.environ["DEV_TRITON_PTX"]) if os.environ.get("DEV_TRITON_PTX") else None  # where Triton's PTX goes


def drawn_shapes(count: int = SHAPES, seed: int = DRAW_SEED) -> list[tuple[int, int]]:
    import numpy as np

    generator = np.random.default_rng(seed)

    def log_uniform(low: int, high: int) -> int:
        return int(round(math.exp(generator.uniform(math.log(low), math.log(high)))))

    return [(log_uniform(*ROWS), log_uniform(*COLS)) for _ in range(count)]


def defines(block: int, chunks: int, kind: str) -> dict:
    full = min(32, 2048 // block)
    values = {"BLOCK": block, "REG_CHUNKS": chunks, "UNROLL": 4, "MIN_BLOCKS": 1,
              "REGISTERS_MIN_BLOCKS": full // 2 if kind == "half" else full}
    if kind == "plain":
        values["PLAIN_LOADS"] = 1
    return values


def cubin_name(block: int, chunks: int, kind: str) -> str:
    return f"rowreg_b{block}_r{chunks}_{kind}.cubin"


def build(directory: Path) -> None:
    from launchlab.gpu import build as gpu_build

    directory.mkdir(parents=True, exist_ok=True)
    source = directory / "dev_triton_gap_rows.cu"
    # PLAIN_LOADS turns every __ldg of the row helpers into a plain load; the kernels are otherwise the chapter's.
    source.write_text("#ifdef PLAIN_LOADS\n#define __ldg(p) (*(p))\n#endif\n"
                      + gpu_build.expand_source(gpu_build.KERNEL_DIR / "fused_row_registers.cu"))
    scalar = directory / "dev_triton_gap_scalar.cu"
    scalar.write_text(gpu_build.expand_source(ROOT / "tools" / "dev_triton_gap.cu"))

    def one(key):
        command = ["nvcc", *gpu_build.compile_options(defines(*key), arch="sm_90"), "-cubin", "-o",
                   str(directory / cubin_name(*key)), str(scalar if key[2] == "scalar" else source)]
        subprocess.run(command, check=True, capture_output=True, text=True)

    keys = [(b, r, k) for b in BLOCKS for r in CHUNKS for k in KINDS]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, keys))
    source.unlink()
    scalar.unlink()
    print(f"{len(keys)} cubins in {directory}")


def builds_at(rows: int, cols: int):
    """(block, chunks) for each of CHUNKS chunks a thread: the fewest threads of BLOCKS that hold the worst-aligned
    row that way (as the chapter's registers-only builds are chosen)."""
    from launchlab.model.fused_policy import worst_chunks

    chunks = worst_chunks(rows, cols)
    return [(min(b for b in BLOCKS if b * r >= chunks), r) for r in CHUNKS if BLOCKS[-1] * r >= chunks]


class TritonInto:
    """The chapter's Triton softmax writing into the probe's own output buffer."""

    name = "triton"

    def __init__(self, x, y, stream):
        from launchlab.chapters.fusion import baselines

        self.inner = baselines.TritonSoftmax(x, stream)
        self.inner.y = y
        self.inner.yt = baselines._shared_tensor(self.inner.torch, y)
        self.y = y

    def invoke(self) -> None:
        self.inner.invoke()

    def poison(self) -> None:
        self.y.fill(float("nan"))

    def describe(self) -> dict:
        from launchlab.chapters.fusion import baselines

        shape = self.inner.shape
        kernel = {"softmax_row_resident": baselines.softmax_row_resident,
                  "softmax_row_looped": baselines.softmax_row_looped}[shape["kernel"]]
        found = {"kernel": shape["kernel"], "BLOCK": shape["BLOCK"], "num_warps": shape["num_warps"]}
        try:
            compiled = kernel.warmup(self.inner.xt, self.inner.yt, self.inner.cols, BLOCK=shape["BLOCK"],
                                     num_warps=shape["num_warps"], grid=(1,))
            if hasattr(compiled, "_init_handles"):
                compiled._init_handles()  # the registers and spills are known once the module is loaded
            if PTX_DIR is not None:
                (PTX_DIR / f"triton_block{shape['BLOCK']}.ptx").write_text(compiled.asm["ptx"])
            found.update(registers=getattr(compiled, "n_regs", None), spills=getattr(compiled, "n_spills", None),
                         shared=getattr(compiled.metadata, "shared", None))
        except Exception as error:  # the figures are a note; the timing stands without them
            found["error"] = f"{type(error).__name__}: {str(error)[:160]}"
        return found


def load(cubins: Path, key: tuple, cache: dict):
    import cupy

    if key not in cache:
        cache[key] = SimpleNamespace(kernel=cupy.RawModule(path=str(cubins / cubin_name(*key))).get_function(
            "scalar_softmax" if key[2] == "scalar" else "registers_softmax"))
    return cache[key]


def targets(cubins: Path, cache: dict, stream_holder: dict):
    import numpy as np

    def targets_at(rows, cols, x, y, sms):
        import cupy

        stream = stream_holder.setdefault("stream", cupy.cuda.get_current_stream())
        try:
            triton = TritonInto(x, y, stream)
            yield {"variant": "triton", **triton.describe()}, triton
        except Exception as error:
            yield {"variant": "triton", "valid": False, "error": f"{type(error).__name__}: {str(error)[:200]}"}, None
        for block, chunks in builds_at(rows, cols):
            for kind in KINDS:
                entry = {"variant": kind, "block": block, "chunks": chunks}
                yield entry, Launch(load(cubins, (block, chunks, kind), cache), rows, block,
                                    (x, y, np.int32(cols)), 0, y)

    return targets_at


def label(entry: dict) -> str:
    return "triton" if entry["variant"] == "triton" else f"b{entry['block']} r{entry['chunks']} {entry['variant']}"


def once(cubins: Path, shapes) -> None:
    """Each variant called twice at each shape, outside any graph, for a profiler to see one launch of each."""
    import cupy

    cache: dict = {}
    stream = cupy.cuda.Stream(non_blocking=True)  # the Triton baseline refuses the legacy default stream
    stream.use()
    for rows, cols in shapes:
        x = cupy.random.default_rng(5).standard_normal((rows, cols), dtype=cupy.float32)
        y = cupy.empty_like(x)
        for entry, target in targets(cubins, cache, {"stream": stream})(rows, cols, x, y, 132):
            if target is None:
                print(rows, cols, label(entry), "not run:", entry.get("error"), flush=True)
            elif entry["variant"] in ("triton", "base", "scalar"):
                for _ in range(2):
                    target.invoke()
                stream.synchronize()
                print(rows, cols, label(entry), flush=True)


def main() -> None:
    if "--once" in sys.argv:
        arguments = dict(zip(sys.argv[2::2], sys.argv[3::2]))
        once(Path(arguments["--cubins"]), [tuple(int(v) for v in s.split("x")) for s in arguments["--shapes"].split(",")])
        return
    cache: dict = {}
    command_line(__doc__, lambda args: build(args.build), lambda args: targets(args.cubins, cache, {}), label,
                 default_shapes=drawn_shapes())


if __name__ == "__main__":
    main()
