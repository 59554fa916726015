#!/bin/sh
# Rebuilds docs/examples/kth-sp2/: the KTH-SP2 trace (28,475 jobs, 100 machines) converted, simulated
# with FCFS, EASY-FCFS, EASY-SQF and conservative backfilling, and compared in one HTML report.
# Runs from anywhere; needs .venv (scripts/bootstrap.sh) or BATFEED=/path/to/batfeed. About 15 s.
set -eu
cd "$(dirname "$0")/../.."                     # the repository root: the paths below are relative to it
B=${BATFEED:-.venv/bin/batfeed}
RUNS=runs/kth-report                           # the runs (about 30 MB, not committed: /runs/ is ignored)
IN=$RUNS/inputs/KTH-SP2-1996-2.1-cln

"$B" convert swf data/swf/KTH-SP2-1996-2.1-cln.swf.gz -o "$RUNS/inputs" > /dev/null
"$B" simulate "${IN}_platform.xml" "$IN.json" --scheduler fcfs -o "$RUNS/fcfs" --no-progress
"$B" simulate "${IN}_platform.xml" "$IN.json" --scheduler easy --options '{"policy": "FCFS"}' \
    -o "$RUNS/easy_fcfs" --no-progress
"$B" simulate "${IN}_platform.xml" "$IN.json" --scheduler easy --options '{"policy": "SQF"}' \
    -o "$RUNS/easy_sqf" --no-progress
"$B" simulate "${IN}_platform.xml" "$IN.json" --scheduler conservative -o "$RUNS/conservative" --no-progress

rm -rf docs/examples/kth-sp2
# --gantt-window: days 100 to 102 (in seconds) job by job; the whole year is a heat map (28,475 jobs)
"$B" report "$RUNS/fcfs_jobs.csv" "$RUNS/easy_fcfs_jobs.csv" "$RUNS/easy_sqf_jobs.csv" "$RUNS/conservative_jobs.csv" \
    --label FCFS --label EASY-FCFS --label EASY-SQF --label conservative \
    --title "KTH-SP2: FCFS, EASY-FCFS, EASY-SQF and conservative backfilling" \
    --gantt-window 8640000:8812800 -o docs/examples/kth-sp2
