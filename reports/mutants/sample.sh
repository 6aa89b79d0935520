#!/usr/bin/env bash
# The mutation-score sample (reports/mutants.md): a seeded shuffle of every
# mutant `cargo mutants --list` shows under .cargo/mutants.toml.
#
#   reports/mutants/sample.sh FROM TO [SEED]
#
# Each mutant's sort key is the SHA-256 of "SEED:NAME" (NAME as --list prints
# it, with line and column); the mutants sorted by that key are the shuffled
# order, and positions FROM..TO (1-based, inclusive) are printed, one
# anchored, escaped regex a line, ready for `cargo mutants --re`. The same
# tree, filters and seed give the same sample on any machine.
set -euo pipefail
from=${1:?FROM}; to=${2:?TO}; seed=${3:-leasesim-issue-17}
cd "$(dirname "$0")/../.."
cargo mutants --list \
  | while IFS= read -r name; do
      printf '%s\t%s\n' "$(printf '%s:%s' "$seed" "$name" | sha256sum | cut -c1-64)" "$name"
    done \
  | sort \
  | sed -n "${from},${to}p" \
  | cut -f2- \
  | sed -e 's/[][\\.+*?(){}|^$#&~-]/\\&/g' -e 's/^/^/' -e 's/$/$/'
