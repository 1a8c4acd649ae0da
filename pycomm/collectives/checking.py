"""Whether the torch backend's groups check each other's arguments (no torch here).

pycomm's own collectives always agree; a torch backend group (read when it is made) checks
when this is on: ``MPIUCC_CHECK=1``; ``MPIUCC_CHECK=0`` turns it off; otherwise torch's own
convention decides, ``TORCH_DISTRIBUTED_DEBUG=DETAIL``.
"""

from __future__ import annotations

import os


def enabled() -> bool:
    """Whether checking is on (the environment as it is now)."""
    forced = os.environ.get("MPIUCC_CHECK", "")
    if forced in ("0", "1"):
        return forced == "1"
    return os.environ.get("TORCH_DISTRIBUTED_DEBUG", "").upper() == "DETAIL"
