#!/usr/bin/env bash
# Execute chapters on a GPU host without network access: install the offline wheelhouse (.whl/, made by
# tools/wheelhouse.py), then `python -m launchlab execute` each stem, archiving every sealed (or failed)
# run as ARCHIVE_DIR/<RUN_ID>.tar.gz to unpack in the repository root of the machine that keeps the evidence.
#
#   LAUNCHLAB_GIT_COMMIT=<commit> bash tools/gpu_host_execute.sh ARCHIVE_DIR STEM [STEM ...]
#
# The commit is passed in because a copied working tree may carry no .git; give the commit the tree was
# copied from, and copy only a committed tree (acceptance checks the run's source hash against it).
set -uo pipefail
archive=$1; shift
cd "$(dirname "$0")/.."
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/launchlab-site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/launchlab-site:$PWD/src:${PYTHONPATH:-}
else
  export PYTHONPATH=$PWD/src:${PYTHONPATH:-}
fi
export PYTHONUNBUFFERED=1
status=0
for stem in "$@"; do
  start=$(date +%s)
  python3 -m launchlab execute "$stem" --archive "$archive" || status=1
  echo "== $stem: $(( $(date +%s) - start )) s"
done
exit $status
