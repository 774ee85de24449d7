#!/usr/bin/env bash
# `gemini-tool-proxy --help` before/after (issue 63 item 4), interleaved A/B: BASE is a checkout of the
# old proxy/ (e.g. `git archive 8e34ceb proxy pyproject.toml | tar -x -C /tmp/base`), NEW this one.
# Prints each run's wall seconds, then the modules `python -X importtime` lists and the sum of their
# self times (repeatable under load, unlike the wall time).
set -eu
BASE=${1:?usage: scripts/bench_help.sh BASE_DIR [NEW_DIR]}
NEW=${2:-$(cd "$(dirname "$0")/.." && pwd)}
PY=${PY:-$NEW/.venv/bin/python}
for _ in 1 2 3 4 5 6 7; do
  for side in base new; do
    dir=$BASE; [ $side = new ] && dir=$NEW
    s=$(date +%s.%N); (cd "$dir" && "$PY" -m proxy --help >/dev/null); e=$(date +%s.%N)
    echo "$side $(echo "$e - $s" | bc)"
  done
done
for side in base new; do
  dir=$BASE; [ $side = new ] && dir=$NEW
  out=$(cd "$dir" && "$PY" -X importtime -m proxy --help 2>&1 >/dev/null)
  echo "$side modules=$(grep -c 'import time:' <<<"$out") self_us=$(grep 'import time:' <<<"$out" | grep -v 'self \[us\]' \
    | awk -F'|' '{gsub(/import time:/, "", $1); s += $1} END {print s}')"
done
