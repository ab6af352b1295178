#!/usr/bin/env bash
# The next session's first call (session 66; carry [".deps"]): on an H200
# experiments/2026-12-07-s66-h200.sh (issue 5's table with a device build and targets.py's
# verdicts, torch's whole layer), else session 65's -s65-next.sh, whose H100 branch is unchanged
# (~520 s: scripts/gpu-test.sh on the tree, the NARROW instance at T 9216 / 288 per expert,
# `--phases 1` narrow 0 / 1 at T 8192). Logs: as the script it runs.
d=$(dirname "$0")
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  exec bash "$d/2026-12-07-s66-h200.sh"
fi
exec bash "$d/2026-12-07-s65-next.sh"
