#!/usr/bin/env bash
# The source of one git revision in DIR (no .git, no build): a side of scripts/device_ab.sh.
# usage: scripts/ab_src.sh REV DIR     (DIR under the untracked ./ab travels with the working tree)
set -eu
case $2 in *..*) ;; ab/?*) ok=1 ;; esac
[ "${ok:-0}" = 1 ] || { echo "ab_src: DIR must be under ab/ (it is emptied first), got '$2'" >&2; exit 2; }
rm -rf "$2" && mkdir -p "$2"
git archive "$1" | tar -x -C "$2"
echo "ab_src: $1 in $2 ($(du -sh "$2" | cut -f1))"
