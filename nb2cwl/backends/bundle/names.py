"""The names of a bundle's own files and folders, and the constants its steps share.

Every module of the package names a bundle's files through these constants: the seal, the
checksum list, the cell map, the check step and its result, the folders of the inputs and of
the original run. `START_SEED` is the state the global random generators start from in a step
that inherits none, and `BOOTSTRAP` the one-line Python program at the head of every tool's
command that checks the runtime's zip `nb2cwl_runtime.zip` (and so its `checksums.py`) before it
lets `checksums.py` check everything else.
"""

from __future__ import annotations

SEAL = "nb2cwl-seal.json"
SUMS = "CHECKSUMS.sha256"
MAP = "nb2cwl-map.json"
VERIFY_STEP = "nb2cwl_verify"
VERIFIED_FILE = "nb2cwl-verified.json"
INPUTS = "inputs"
RUN = "run"
PROVENANCE = f"{RUN}/provenance.crate.zip"
OUTPUTS = f"{RUN}/outputs"
CHECK_REPORT = f"{RUN}/nb2cwl-check.json"  # nb2cwl check's report of the run, if it has one
#: The state the global generators start from in a step that inherits none.
START_SEED = 0

# Runs before anything from the bundle: checks the runtime's zip against the sha256 in
# argv[1], then lets the zip's checksums.py check the rest (see nb2cwl_runtime/checksums.py).
# One line, no $ or quotes that a shell or CWL would touch.
BOOTSTRAP = (
    "import sys;sys.path[:]=[p for p in sys.path if p];import hashlib,os;a=sys.argv;"
    "r=a[a.index('--runtime')+1];"
    "d=open(r,'rb').read() if os.path.isfile(r) else b'';"
    "hashlib.sha256(d).hexdigest()==a[1] or sys.exit('nb2cwl: bundle check failed: "
    "nb2cwl_runtime.zip: changed or missing (sha256 differs); nothing was run');"
    "import io,zipfile;c=zipfile.ZipFile(io.BytesIO(d)).read('nb2cwl_runtime/checksums.py');"
    "g={'__name__':'nb2cwl_checksums'};exec(compile(c,r+'/nb2cwl_runtime/checksums.py','exec'),g);"
    "sys.exit(g['guard'](a[2:]))"
)
