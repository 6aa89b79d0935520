#!/usr/bin/env bash
# Installs the two etcd client libraries that node/tests/it/client_libraries.rs
# runs against real etcd and leasesim-node: npm `etcd3` (versions pinned by
# js/package-lock.json) into js/node_modules, and PyPI `etcd3` (pinned by
# py/requirements.txt) into a virtual environment at py/.venv. Needs Node.js
# with npm and Python 3 with venv; installs Debian's nodejs/npm when node
# is missing and apt-get is there.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

if ! command -v npm >/dev/null 2>&1; then
  as_root=""
  [ "$(id -u)" = 0 ] || as_root="sudo -n"
  $as_root apt-get update
  $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y nodejs npm
fi
(cd "$here/js" && npm ci --no-audit --no-fund --loglevel=error)

python3 -m venv "$here/py/.venv"
"$here/py/.venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/py/requirements.txt"
"$here/py/.venv/bin/python" -c 'import etcd3; print("PyPI etcd3", etcd3.__version__)'
node -e 'console.log("npm etcd3", require(process.argv[1] + "/package.json").version)' "$here/js/node_modules/etcd3"
