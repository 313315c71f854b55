#!/usr/bin/env bash
# Install nb2cwl with its test dependencies in .venv, lint, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[test]"
# an editable install leaves nb2cwl's own modules uncompiled: where PYTHONDONTWRITEBYTECODE
# is set, every nb2cwl command would compile them again (0.4 s of each run's start)
.venv/bin/python -m compileall -q nb2cwl > /dev/null
# tf-keras (Keras fit on several training workers) without its dependency on the `tensorflow`
# wheel: the tests' tensorflow-cpu is the same TensorFlow, half the size
.venv/bin/python -m pip install --quiet --no-deps "tf-keras==2.21.0"
export PATH="$PWD/.venv/bin:$PATH"   # steps run `python3` from PATH: use this environment
ruff check nb2cwl tests benchmarks
status=0
# both cores: the tests that use the Slurm cluster or the Docker engine share one worker (the
# engines start once), and a notebook's fidelity tests share one kernel run (conftest.py);
# the 25 slowest are listed at the end, to keep the whole run well under CI's 40 minutes
python -m pytest -q -p no:cacheprovider -n 2 --dist loadgroup --durations=25 "$@" || status=$?
if [ "$status" -eq 5 ]; then
    echo "no tests were collected" >&2
    exit 1
fi
exit "$status"
