"""Locations, diagnostics and the error hierarchy every layer reports through."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """Where something is in a notebook; cell_index counts every cell, markdown included (as
    the step names and --cells do); `prompt` is the number Jupyter shows the code cell with
    after a Run All in a new kernel, `In [prompt]` (as explain and the graph show it)."""

    notebook: str
    cell_index: int | None = None
    cell_id: str | None = None
    line: int | None = None
    prompt: int | None = None

    def __str__(self) -> str:
        parts = [self.notebook]
        if self.cell_index is not None:
            cell = f"cell {self.cell_index}"
            named = [f"In [{self.prompt}]"] if self.prompt else []
            named += [f"id {self.cell_id}"] if self.cell_id else []
            if named:
                cell += f" ({', '.join(named)})"
            parts.append(cell)
        if self.line is not None:
            parts.append(f"line {self.line}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Diagnostic:
    """A warning or note found while compiling; `code` is stable, the wording is not."""

    code: str
    message: str
    location: Location
    severity: str = "warning"

    def __str__(self) -> str:
        return f"{self.location}: {self.severity}: {self.message} [{self.code}]"

    def to_json(self) -> dict[str, object]:
        """The diagnostic as plain JSON data."""
        return {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "cell": self.location.cell_index,
            "line": self.location.line,
        }


class Nb2CwlError(Exception):
    """Root of every error nb2cwl reports to users (one line, no traceback)."""

    code = "error"
    exit_status = 1  # what `nb2cwl` exits with

    def __init__(self, message: str, location: Location | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.location}: {self.message}"


class NotebookFormatError(Nb2CwlError):
    """The file is not a readable, valid Python notebook."""

    code = "notebook-format"


class CellSyntaxError(Nb2CwlError):
    """A code cell does not parse as Python (after magics are converted)."""

    code = "syntax-error"


class AnalysisError(Nb2CwlError):
    """The analysis cannot handle a cell (and no safe fallback exists)."""

    code = "analysis"


class DirectiveError(Nb2CwlError):
    """An nb2cwl tag or Jupyter-Workflow metadata entry is malformed or contradictory."""

    code = "directive"


class BackendError(Nb2CwlError):
    """The workflow could not be written."""

    code = "backend"


class OptionError(Nb2CwlError):
    """A command-line option (or its file) is unusable."""

    code = "option"


class OutputExistsError(Nb2CwlError):
    """The output directory holds files nb2cwl did not write; nothing is overwritten."""

    code = "output-exists"


class RunError(Nb2CwlError):
    """The workflow engine failed or a step raised."""

    code = "run"


class RunInterrupted(RunError):
    """A signal stopped `nb2cwl run`: it exits with 128 + the signal's number, as shells do."""

    code = "interrupted"

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum
        self.exit_status = 128 + signum


class BundleError(Nb2CwlError):
    """A reproducible bundle could not be made, or a bundle does not verify."""

    code = "bundle"
