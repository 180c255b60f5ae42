#!/usr/bin/env bash
# The pipelined-design probes on a GPU host, each under a time limit of its own:
#   lag    tools/dev_lag.py: blocks that read a piece for its statistics and write the piece they read `lag` grid
#          steps earlier, reading x again from L2 (no wait for a row just read), against the launch policy's pick;
#   gpipe  tools/dev_gpipe.py: blocks that keep pieces in shared memory and load later grid steps ahead while a row's
#          statistics travel, against the pick;
#   floor  tools/dev_pipeline_floor.py: the gpipe schedule with nothing reduced (how close to a copy can it come?).
# Every softmax output is checked against the float64 oracle. The shapes are the fusion plane's worst
# bandwidth-regime points and three of hundreds to thousands of rows.
#
#   bash tools/dev_pipelined_probes.sh build CUBIN_DIR                    # any machine with nvcc (no GPU needed)
#   bash tools/dev_pipelined_probes.sh run CUBIN_DIR OUT_DIR [PROBE ...]  # the GPU host: OUT_DIR/<probe>.json
#
# PROBE is lag, gpipe or floor (all three, in that order, if none is named); their limits are 240, 300 and 240 s, so
# one call of at most 10 minutes runs two of them. Build here and carry CUBIN_DIR to the GPU host (.probe-cubins,
# which git ignores), so that the call spends no device time compiling. A probe cut short by its limit keeps the
# shapes it finished.
set -uo pipefail
python=${PYTHON:-python3}
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD/src:${PYTHONPATH:-}
case ${1:-} in
  build)
    dir=${2:?usage: $0 build CUBIN_DIR}
    shapes=$($python -c "import sys; sys.path.insert(0, 'tools'); import dev_lag as g; print(','.join(f'{r}x{c}' for r, c in g.SHAPES))") || exit 1  # the gpipe shapes and more
    mkdir -p "$dir/picks" || exit 1
    nvcc -arch=sm_90 -std=c++17 -cubin -o "$dir/pipeline_floor.cubin" tools/dev_pipeline_floor.cu || exit 1
    $python tools/dev_gpipe.py --build "$dir/gpipe" || exit 1
    $python tools/dev_lag.py --build "$dir/lag" || exit 1
    $python tools/calibrate_fused.py --build-cubins "$dir/picks" --picks-only --shapes "$shapes" || exit 1
    ;;
  run)
    dir=${2:?usage: $0 run CUBIN_DIR OUT_DIR [PROBE ...]}
    out=${3:?usage: $0 run CUBIN_DIR OUT_DIR [PROBE ...]}
    shift 3
    mkdir -p "$out" || exit 1
    status=0
    for probe in "${@:-lag gpipe floor}"; do
      for name in $probe; do
        case $name in
          lag) timeout 240 $python tools/dev_lag.py --cubins "$dir/lag" --pick-cubins "$dir/picks" --out "$out/lag_probe.json" || status=1 ;;
          gpipe) timeout 300 $python tools/dev_gpipe.py --cubins "$dir/gpipe" --pick-cubins "$dir/picks" --out "$out/gpipe_probe.json" || status=1 ;;
          floor) timeout 240 $python tools/dev_pipeline_floor.py --cubin "$dir/pipeline_floor.cubin" --out "$out/pipeline_floor.json" || status=1 ;;
          *) echo "unknown probe $name: lag, gpipe or floor" >&2; exit 2 ;;
        esac
      done
    done
    exit $status
    ;;
  *)
    echo "usage: $0 build CUBIN_DIR | run CUBIN_DIR OUT_DIR [lag] [gpipe] [floor]" >&2
    exit 2
    ;;
esac
