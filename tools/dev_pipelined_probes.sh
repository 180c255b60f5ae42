#!/usr/bin/env bash
# The two pipelined-design probes in one GPU call: first the schedule with nothing reduced
# (tools/dev_pipeline_floor.py: how close to a copy can blocks that read rows ahead, wait for their group, then
# write come?), then the softmax built on it (tools/dev_gpipe.py, against the launch policy's pick, every output
# checked against the float64 oracle). Both at the fusion plane's worst bandwidth-regime shapes, the second also at
# three shapes of hundreds to thousands of rows.
#
#   bash tools/dev_pipelined_probes.sh build CUBIN_DIR        # any machine with nvcc (no GPU needed)
#   bash tools/dev_pipelined_probes.sh run CUBIN_DIR OUT_DIR   # the GPU host: OUT_DIR/pipeline_floor.json, gpipe_probe.json
#
# Build here and carry CUBIN_DIR to the GPU host (.probe-cubins, which git ignores), so that the call spends no device
# time compiling. Each probe runs under a time limit of its own, so that the first one's result comes back even if the
# second runs long.
set -uo pipefail
python=${PYTHON:-python3}
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/src:${PYTHONPATH:-}
case ${1:-} in
  build)
    dir=${2:?usage: $0 build CUBIN_DIR}
    shapes=$($python -c "import sys; sys.path.insert(0, 'tools'); import dev_gpipe as g; print(','.join(f'{r}x{c}' for r, c in g.SHAPES))") || exit 1
    mkdir -p "$dir/picks" || exit 1
    nvcc -arch=sm_90 -std=c++17 -cubin -o "$dir/pipeline_floor.cubin" tools/dev_pipeline_floor.cu || exit 1
    $python tools/dev_gpipe.py --build "$dir/gpipe" || exit 1
    $python tools/calibrate_fused.py --build-cubins "$dir/picks" --picks-only --shapes "$shapes" || exit 1
    ;;
  run)
    dir=${2:?usage: $0 run CUBIN_DIR OUT_DIR}
    out=${3:?usage: $0 run CUBIN_DIR OUT_DIR}
    mkdir -p "$out" || exit 1
    status=0
    timeout 240 $python tools/dev_pipeline_floor.py --cubin "$dir/pipeline_floor.cubin" --out "$out/pipeline_floor.json" || status=1
    timeout 300 $python tools/dev_gpipe.py --cubins "$dir/gpipe" --pick-cubins "$dir/picks" --out "$out/gpipe_probe.json" || status=1
    exit $status
    ;;
  *)
    echo "usage: $0 build CUBIN_DIR | run CUBIN_DIR OUT_DIR" >&2
    exit 2
    ;;
esac
