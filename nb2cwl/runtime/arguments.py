"""The command line of a generated step: `--name value [value ...]` groups."""

from __future__ import annotations


class Arguments(dict):
    """`--name value [value ...]` groups (the command line is generated, never typed)."""

    def one(self, name: str) -> str:
        """The single value of `--name`."""
        found = self.get(name)
        if not found:
            raise SystemExit(f"nb2cwl step: no --{name} given")
        return found[0]


def parse_arguments(argv: list[str]) -> Arguments:
    """Group each `--name` with the values that follow it."""
    args = Arguments()
    current: list[str] | None = None
    for word in argv:
        if word.startswith("--"):
            current = args.setdefault(word[2:], [])
        elif current is None:
            raise SystemExit(f"nb2cwl step: unexpected argument {word!r}")
        else:
            current.append(word)
    return args
