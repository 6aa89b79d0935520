#!/usr/bin/env bash
# The mutants of one folder that no committed outcome file has run yet, one
# anchored, escaped regex a line (as sample.sh), ready for `cargo mutants --re`:
# how a whole-folder measurement is resumed shard after shard
# (reports/mutants.md, "The whole folders").
#
#   reports/mutants/remaining.sh FOLDER [OUTCOMES.json...]
#   e.g. reports/mutants/remaining.sh core/src/client reports/mutants/raw/e-client-*.json
#
# The folder is matched on the listed name's prefix with grep, not with
# `cargo mutants --re` (27.1's --re also kept three `delete field` mutants of
# other folders). Names carry line numbers: a mutant whose line moved since an
# outcome file was written counts as not run.
set -euo pipefail
folder=${1:?FOLDER}; shift
cd "$(dirname "$0")/../.."
done_names=$(python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    for o in json.load(open(path))["outcomes"]:
        s = o["scenario"]
        if isinstance(s, dict) and "Mutant" in s:
            print(s["Mutant"]["name"])
PY
)
cargo mutants --list \
  | grep -F -- "$folder/" | grep -E "^${folder//./\\.}/" \
  | grep -vxF -f <(printf '%s\n' "$done_names" | grep . || echo '//none//') \
  | sed -e 's/[][\\.+*?(){}|^$#&~-]/\\&/g' -e 's/^/^/' -e 's/$/$/'
