"""`mpiucc info` as a job runs it: ``check_info.py [--off-on-rank-1] info [--json]``.

With ``--off-on-rank-1``, rank 1 turns its compiled path off (MPIUCC_HOT=0), so that one
per-rank row differs between the ranks."""

import os
import sys

if sys.argv[1:2] == ["--off-on-rank-1"]:
    del sys.argv[1]
    if os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK")) == "1":
        os.environ["MPIUCC_HOT"] = "0"

from pycomm.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
