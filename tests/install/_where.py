"""Fails unless pycodecs and pycomm come from an installed wheel, not from a source tree."""

import sys
from pathlib import Path

import pycodecs

import pycomm


def check_installed() -> None:
    for module in (pycodecs, pycomm):
        where = Path(module.__file__).resolve()
        assert "site-packages" in where.parts, f"{module.__name__} imported from {where}"
    assert Path(sys.prefix) != Path(sys.base_prefix), "not in a virtual environment"
