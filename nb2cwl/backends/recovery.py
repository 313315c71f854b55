"""StreamFlow's failure manager: how often a crashed step is retried, and after what delay.

A cell that raises is not retried (its error is deterministic and shown in the notebook); a
step whose process dies (killed, out of memory, lost node) is.
"""

from __future__ import annotations

from typing import Any


def recovery_settings(retries: int, retry_delay: int) -> dict[str, Any]:
    """The streamflow.yml entries for `retries` retries of a crashed step (none for 0)."""
    if retries <= 0:
        return {}
    return {
        "failureManager": {
            "enabled": True,
            "type": "default",
            "config": {"max_retries": retries, "retry_delay": max(0, retry_delay)},
        }
    }
