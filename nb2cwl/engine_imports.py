"""What the StreamFlow process of a run (nb2cwl.engine) imports only once a run uses it.

StreamFlow 0.2.0rc3 imports every connector it has at start-up, with their client libraries,
only to register them and read their configuration schemas; and its data manager imports an
HTTP client for inputs given as URLs. On the path to a run's first step that is about 0.6 s of
CPU on these machines:

- the Kubernetes and Helm connectors and kubernetes_asyncio (a quarter of a second);
- the SSH connector and asyncssh, which looks for liboqs by running the C compiler twice;
- aiohttp;
- the ECMAScript lexer and parser (antlr) that find what a CWL JavaScript expression reads:
  building their tables at import takes a tenth of a second, and nb2cwl's workflows hold no
  expression.

Stand-ins take their place: a connector's stand-in registers it with its real schema, and
importing the real connector is what making one does, so a run that uses it gets the real
connector, later. aiohttp's stand-in imports aiohttp at its first use (a download); the
expressions' dependency resolver is imported when a workflow's expression needs one.
"""

from __future__ import annotations

import importlib
import sys
import types
from importlib.resources import files
from typing import Any

KUBERNETES = "streamflow.deployment.connector.kubernetes"
SSH = "streamflow.deployment.connector.ssh"
#: Each deferred connector module: its classes and their schema files (in its package's
#: `schemas` folder).
CONNECTORS = {
    KUBERNETES: {"KubernetesConnector": "kubernetes.json", "Helm3Connector": "helm3.json",
                 "Helm4Connector": "helm4.json"},
    SSH: {"SSHConnector": "ssh.json"},
}
EXPRESSIONS = "streamflow.cwl.expression"
HTTP = "aiohttp"
#: What StreamFlow's data manager takes from aiohttp when imported: a name it annotates with.
_HTTP_NAMES = ("ClientResponse",)


def _defer_classes(module_name: str, extras: dict[str, dict[str, Any]]) -> None:
    """Put a module of stand-ins for the classes `extras` names where `module_name` is
    imported from: making one imports the real module and makes the real class's instance.
    Each class's dict of extras (class attributes) is what StreamFlow asks of it before."""
    module = types.ModuleType(module_name)
    module.__file__ = "<deferred by nb2cwl>"

    def stand_in(name: str, extra: dict[str, Any]) -> type:
        def new(cls: type, *args: Any, **kwargs: Any) -> Any:
            if sys.modules.get(module_name) is module:
                del sys.modules[module_name]
            return getattr(importlib.import_module(module_name), name)(*args, **kwargs)

        return type(name, (), {"__new__": new, "__module__": module_name, **extra})

    for name, extra in extras.items():
        setattr(module, name, stand_in(name, extra))
    sys.modules[module_name] = module


def defer_connectors(module_name: str) -> None:
    """Put stand-ins for the connector classes of `module_name` (a key of CONNECTORS) where
    StreamFlow imports them from; each reads its real configuration schema."""
    package = module_name.rsplit(".", 1)[0]

    def schema_of(schema: str) -> classmethod:
        return classmethod(lambda cls: files(package).joinpath("schemas").joinpath(schema)
                           .read_text("utf-8"))

    _defer_classes(module_name, {name: {"get_schema": schema_of(schema)}
                                 for name, schema in CONNECTORS[module_name].items()})


def defer_http() -> None:
    """Put a stand-in for aiohttp that imports aiohttp when anything of it is used."""
    if HTTP in sys.modules:
        return
    module = types.ModuleType(HTTP)
    module.__file__ = "<deferred by nb2cwl>"

    def load() -> types.ModuleType:
        if sys.modules.get(HTTP) is module:
            del sys.modules[HTTP]
        real = importlib.import_module(HTTP)
        module.__dict__.update(real.__dict__)  # what holds the stand-in finds it all now
        sys.modules[HTTP] = real
        return real

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(load(), name)

    for name in _HTTP_NAMES:  # a `from aiohttp import X` at import, used in annotations
        setattr(module, name, type(name, (), {"__module__": HTTP}))
    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[HTTP] = module


def defer_expressions() -> None:
    """Put a stand-in for StreamFlow's JavaScript dependency resolver, whose module builds
    the ECMAScript lexer's and parser's tables when imported; making one imports it."""
    if EXPRESSIONS not in sys.modules:
        _defer_classes(EXPRESSIONS, {"DependencyResolver": {}})
