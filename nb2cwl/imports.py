"""What the nb2cwl command and its StreamFlow process leave unimported, to start sooner."""

from __future__ import annotations

import sys

#: Modules jsonschema imports only for format checks that nothing in these processes asks
#: for (nbformat's and StreamFlow's validators check no formats): rfc3987_syntax builds its
#: IRI grammar when imported, about a second on these machines; the others (isoduration with
#: arrow, the RFC 3339 and 3986 validators, webcolors, uri_template) take a tenth of a second
#: together, on the path to each run's first step. They come with jsonschema[format-nongpl],
#: which Jupyter Server's events require.
UNUSED = ("rfc3987_syntax", "isoduration", "rfc3339_validator", "rfc3986_validator",
          "webcolors", "uri_template")


def skip_unused_imports() -> None:
    """Make importing UNUSED fail at once (jsonschema then goes without those checks)."""
    for name in UNUSED:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
