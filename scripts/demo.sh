#!/usr/bin/env bash
# Main job: install nb2cwl in .venv, then compile and run the bundled example notebook on the
# local deployment. The executed notebook lands in demo-output/example-wf/runs/<n>/. Then
# check it against a Jupyter kernel's run, with both run times.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# nb2cwl itself (with nbclient and ipykernel, for nb2cwl check), plus the libraries the
# example notebook imports
.venv/bin/python -m pip install --quiet -e ".[check]" numpy pandas matplotlib
# an editable install leaves nb2cwl's own modules uncompiled: where PYTHONDONTWRITEBYTECODE
# is set, every nb2cwl command would compile them again (0.4 s of each run's start)
.venv/bin/python -m compileall -q nb2cwl > /dev/null
export PATH="$PWD/.venv/bin:$PATH"   # steps run `python3` from PATH: use this environment
nb2cwl explain notebooks/example.ipynb
nb2cwl run notebooks/example.ipynb -o demo-output/example-wf
# the same notebook top to bottom in a Jupyter kernel and as a fresh workflow run: every
# cell's outputs compared, and both times (the bootstrap's 8 batches run side by side)
nb2cwl check notebooks/example.ipynb -o demo-output/example-check
