"""The ``mpiucc`` command: ``mpiucc --version``, ``mpiucc info [--json]``, ``mpiucc train ...``."""

from __future__ import annotations

import argparse
import json
import sys

from pycomm.info import info, mpiucc_version
from pycomm.info_report import format_info, gather


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["train"]:  # its own parser: python -m pycomm.train
        from pycomm.train.__main__ import main as train

        return train(argv[1:], prog="mpiucc train")
    parser = argparse.ArgumentParser(prog="mpiucc", description="mpiucc command-line tools")
    parser.add_argument("--version", action="version", version=f"mpiucc {mpiucc_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser(
        "info",
        help="MPI library, thread level, UCC, codec SIMD level, extras; under mpiexec one "
        "report for the job, with every rank's host, cores and paths",
    )
    show.add_argument("--json", action="store_true", help="print the report as JSON")
    sub.add_parser("train", help="train a GPT with dp x tp x pp over compressed MPI (--help)")
    args = parser.parse_args(argv)
    if args.command == "info":
        found = info()
        if gather(found):  # under a launcher: rank 0 prints every rank's facts
            print(json.dumps(found, indent=2) if args.json else format_info(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
