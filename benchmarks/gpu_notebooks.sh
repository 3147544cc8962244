#!/bin/bash
# Notebooks 4, E10.2 and 3 in their real configuration on a GPU machine without Jupyter, as
# scripts (benchmarks/notebooks_as_scripts.py), each timed with its peak GPU memory.
#
#   here:  python benchmarks/notebooks_as_scripts.py .gpu && cp -r $MULTI30K_DIR .gpu/data
#          (and sacremoses' wheel in .gpu/whl, if the machine lacks it: pip download sacremoses)
#   there: OUT=out bash benchmarks/gpu_notebooks.sh    (the lent machine's device tool sets OUT)
set -u
ROOT=$PWD
SCRATCH=$(mktemp -d)  # the wheels, the runs and each script's working folder; removed at the end
trap 'rm -rf "$SCRATCH"' EXIT
if ls .gpu/whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$SCRATCH/site" \
    .gpu/whl/*.whl || exit 1
fi
export PYTHONPATH=$SCRATCH/site:$ROOT PYTHONUNBUFFERED=1 MULTI30K_DIR=$ROOT/.gpu/data \
  COURSE_RUNS_DIR=$SCRATCH/runs MPLBACKEND=Agg
unset COURSE_QUICK
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
for name in nb4 e102 nb3; do  # notebook 4 first: E10.2 compares with its models
  python3 - "$name" "$ROOT" "$SCRATCH" <<'PY' 2>&1 | tee "$OUT/$name.log"
import os, runpy, sys, time

import torch

name, root, scratch = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(f"{scratch}/work/{name}", exist_ok=True)
os.chdir(f"{scratch}/work/{name}")
torch.cuda.reset_peak_memory_stats()
start = time.perf_counter()
try:
    runpy.run_path(f"{root}/.gpu/{name}.py", run_name="__main__")
finally:
    print(f"@@RESULT {name}: {(time.perf_counter() - start) / 60:.2f} min, peak GPU memory "
          f"{torch.cuda.max_memory_allocated() / 2**30:.2f} GiB allocated, "
          f"{torch.cuda.max_memory_reserved() / 2**30:.2f} GiB reserved", flush=True)
PY
done
