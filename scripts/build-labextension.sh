#!/usr/bin/env bash
# Rebuild nb2cwl's prebuilt JupyterLab / Notebook 7 extension from its TypeScript sources.
#
#   scripts/build-labextension.sh            (uses .venv/bin/python, or $PYTHON)
#
# Sources: nb2cwl/integrations/jupyterlab/{package.json,package-lock.json,tsconfig.json,src/,style/}
# Output:  nb2cwl/integrations/jupyterlab/labextension/  (committed: `pip install` never needs node)
#
# Steps: `npm ci` (exactly the lockfile's packages, no install scripts), `tsc`, then
# `jupyter-builder build --core-package-file=<site-packages>/jupyterlab/staging/package.json .`
# (`jupyter labextension build` is deprecated in JupyterLab 4.6 and would try to download
# @jupyterlab/core-meta). Needs node >= 20 and npm, and a Python with jupyterlab and
# jupyter-builder installed.
#
# Finally it writes labextension/sources.sha256, so that a test can tell, without node, that
# the committed build is up to date with the sources. The file holds one line: a sha256 hex
# digest and "\n". The digest is computed as follows:
#   - files: package.json, package-lock.json, tsconfig.json, and every regular file under src/
#     and style/ (recursively), each named by its '/'-separated path relative to
#     nb2cwl/integrations/jupyterlab/ (e.g. "src/index.ts");
#   - order: sorted by that relative path, byte-wise (LC_ALL=C sort; the same as Python's
#     sorted() on the path strings, the names being ASCII);
#   - digest: sha256 of the concatenation, for each file in that order, of
#       relative_path + "\n" + sha256hex(file bytes) + "\n"
#     (hex digests in lowercase).
# In Python:
#   root = Path("nb2cwl/integrations/jupyterlab")
#   files = ["package.json", "package-lock.json", "tsconfig.json"] + [
#       p.relative_to(root).as_posix()
#       for d in ("src", "style") for p in (root / d).rglob("*") if p.is_file()]
#   h = hashlib.sha256()
#   for rel in sorted(files):
#       h.update(f"{rel}\n{hashlib.sha256((root / rel).read_bytes()).hexdigest()}\n".encode())
#   assert (root / "labextension/sources.sha256").read_text().strip() == h.hexdigest()
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
ext="$repo/nb2cwl/integrations/jupyterlab"
python="${PYTHON:-$repo/.venv/bin/python}"

command -v node >/dev/null || { echo "build-labextension: node is required" >&2; exit 1; }
command -v npm >/dev/null || { echo "build-labextension: npm is required" >&2; exit 1; }
"$python" -c "import jupyterlab, jupyter_builder" 2>/dev/null || {
    echo "build-labextension: $python lacks jupyterlab or jupyter-builder" >&2
    exit 1
}
builder="$(dirname "$python")/jupyter-builder"
[ -x "$builder" ] || builder="jupyter-builder"
core_package_file="$("$python" -c \
    'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging", "package.json"))')"

cd "$ext"

# 1. exactly the packages of the lockfile
npm ci --ignore-scripts --no-audit --no-fund

# 2. TypeScript -> lib/
rm -rf lib tsconfig.tsbuildinfo
npx --no-install tsc

# 3. the prebuilt extension -> labextension/
rm -rf labextension
"$builder" build --core-package-file="$core_package_file" .

# 4. the digest of the sources this build came from (see the top of this file)
list_sources() {
    printf '%s\n' package.json package-lock.json tsconfig.json
    find src style -type f
}
digest="$(
    list_sources | LC_ALL=C sort | while IFS= read -r rel; do
        printf '%s\n%s\n' "$rel" "$(sha256sum "$rel" | cut -d' ' -f1)"
    done | sha256sum | cut -d' ' -f1
)"
printf '%s\n' "$digest" > labextension/sources.sha256

echo "build-labextension: built $ext/labextension (sources sha256 $digest)"
