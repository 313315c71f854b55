#!/usr/bin/env bash
# Main job: install nb2cwl in .venv, then compile and run the bundled example notebook on the
# local deployment. The executed notebook lands in demo-output/example-wf/runs/<n>/.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# nb2cwl itself, plus the libraries the example notebook imports
.venv/bin/python -m pip install --quiet -e . numpy pandas matplotlib
export PATH="$PWD/.venv/bin:$PATH"   # steps run `python3` from PATH: use this environment
nb2cwl explain notebooks/example.ipynb
nb2cwl run notebooks/example.ipynb -o demo-output/example-wf
