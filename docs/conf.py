"""The documentation site: Sphinx with MyST (the pages are Markdown) and the Furo theme.

Build it: `python -m sphinx -W --keep-going -n -b html docs docs/_build/html` (warnings as
errors: a broken link between pages or to a heading is one). tests/test_docs.py builds it so.
"""

project = "nb2cwl"
author = "the nb2cwl developers"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
# headings get anchors, as on GitHub, so that `page.md#a-heading` links work in both
myst_heading_anchors = 4
exclude_patterns = ["_build"]
html_theme = "furo"
html_title = "nb2cwl"
