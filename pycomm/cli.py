"""The ``mpiucc`` command: ``mpiucc info [--json]``."""

from __future__ import annotations

import argparse
import json
import sys

from pycomm.info import format_info, info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mpiucc", description="mpiucc command-line tools")
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("info", help="MPI library, thread level, UCC, codec SIMD level")
    show.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    if args.command == "info":
        found = info()
        print(json.dumps(found, indent=2) if args.json else format_info(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
