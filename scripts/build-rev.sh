#!/usr/bin/env bash
# Builds qattn-compile of git revision REV of this checkout once, into a cache
# shared with ../shared/tools/ptx-compare (QATTN_PTX_CACHE, default
# ~/.cache/qattn-ptx/<sha>/build), and prints its path: the compiler of a
# baseline, e.g. the static decode kernel's for bench/decode_gate.py
#   prepare OUT --static-compile "$(bash scripts/build-rev.sh 434f776)"
# (434f776 is the last tree with DecodeKernel.cpp). Progress on stderr; about
# 10 minutes on 2 cores the first time.
# Usage: build-rev.sh REV
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rev="${1:?usage: build-rev.sh REV}"
sha="$(git -C "$root" rev-parse --verify -q "$rev^{commit}")" \
  || { echo "build-rev.sh: no revision '$rev' in $root" >&2; exit 2; }
cache="${QATTN_PTX_CACHE:-$HOME/.cache/qattn-ptx}/$sha"
bin="$cache/build/bin/qattn-compile"
if [ ! -x "$bin" ]; then
  echo "build-rev.sh: building ${sha:0:10} into $cache (once)" >&2
  rm -rf "$cache/src" && mkdir -p "$cache/src"
  git -C "$root" archive "$sha" | tar -x -C "$cache/src"
  QATTN_BUILD_DIR="$cache/build" bash "$cache/src/scripts/build.sh" qattn-compile \
    > "$cache/build.log" 2>&1 \
    || { tail -n 30 "$cache/build.log" >&2; echo "build-rev.sh: ${sha:0:10} did not build" >&2; exit 1; }
fi
echo "$bin"
