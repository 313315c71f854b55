"""nb2cwl's Jupyter Server extension: REST endpoints under `<base_url>nb2cwl/api/` and the runs'
live progress on Jupyter Server's event bus (schema `https://events.nb2cwl.org/run/v1`).

Enabled by the configuration file `pip install "nb2cwl[jupyter]"` installs
(`etc/jupyter/jupyter_server_config.d/nb2cwl.json`). Settings (e.g. in jupyter_server_config.py
or on the command line):

- `Nb2CwlServer.runs_dir`: where run records live (default: `<Jupyter data dir>/nb2cwl/runs`,
  shared with the `%nb2cwl` magics);
- `Nb2CwlServer.deployment_file`: a StreamFlow deployments file whose deployments the
  sidebar offers besides the profiles (local, docker, slurm, helm).

Each run is an `nb2cwl run` process of its own (nb2cwl/integrations/runs.py): a run that crashes
never takes the server down; runs still going when the server stops are cancelled. One such
process waits ready (nb2cwl.standby: nb2cwl imported, StreamFlow started), so that a run
starts its first step without their start-up; it stops with the server.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.extension.application import ExtensionApp
from traitlets import Unicode

from nb2cwl.integrations.runs import RunStore, default_runs_dir
from nb2cwl.integrations.server.events import SCHEMA
from nb2cwl.integrations.server.handlers import handlers
from nb2cwl.integrations.server.relay import Relay


class Nb2CwlServer(ExtensionApp):
    """The server side of nb2cwl in Jupyter."""

    name = "nb2cwl"

    runs_dir = Unicode("", config=True,
                       help="Where run records live (default: NB2CWL_RUNS_DIR, else "
                            "<Jupyter data dir>/nb2cwl/runs)")
    deployment_file = Unicode("", config=True,
                              help="A StreamFlow deployments file offered besides the profiles")

    def initialize_settings(self) -> None:
        """The run store, the relay of run events, and the event schema."""
        self.serverapp.event_logger.register_event_schema(SCHEMA)
        self.store = RunStore(self.runs_dir or default_runs_dir())
        self.store.prepare()  # a run of the open notebook starts without nb2cwl's start-up
        self.relay = Relay(self.store, self.serverapp.event_logger, self.log)
        self.relay.start()
        self.settings["nb2cwl"] = self

    def initialize_handlers(self) -> None:
        """The REST endpoints."""
        self.handlers.extend(handlers())

    async def stop_extension(self) -> None:
        """The server stops: the runs it started stop too (nothing keeps running)."""
        self.relay.stop()
        self.relay.cancel_started()
        self.store.close()


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    return [{"module": "nb2cwl.integrations.server", "app": Nb2CwlServer}]
