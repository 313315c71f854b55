"""The Jupyter side of nb2cwl, tested with real parts (a package: its conftest is its own)."""
