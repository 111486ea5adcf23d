#!/usr/bin/env bash
# Builds qattn and runs the whole lit suite; ends with "N passed, N failed".
# Extra arguments go to lit (e.g. --filter Integration).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${QATTN_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh" qattn-opt qattn-compile qattn-run QAttnCAPI qattn_runtime_c || {
  echo "0 passed, 1 failed"; exit 1; }

log="$(mktemp)"
/usr/lib/llvm-22/bin/lit -sv "$build/test" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}

# lit's summary lines look like "  Passed            : 12 (85.71%)".
count() { awk -v k="$1" -F: '$1 ~ "^ *"k" *$" {gsub(/ *\(.*/, "", $2); s += $2} END {print s+0}' "$log"; }
passed=$(( $(count Passed) + $(count "Expectedly Failed") ))
failed=$(( $(count Failed) + $(count "Unexpectedly Passed") + $(count Unresolved) + $(count "Timed Out") ))
skipped=$(( $(count Unsupported) + $(count Skipped) + $(count Excluded) ))
rm -f "$log"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
