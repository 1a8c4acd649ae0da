"""`import pycodecs` stays light: no torch, mpi4py or numcodecs."""

import subprocess
import sys


def test_import_leaves_heavy_modules_out():
    code = (
        "import sys, pycodecs, numpy as np\n"
        "pycodecs.decompress(pycodecs.compress(np.ones(3, np.float32), 'raw'))\n"
        "print(sorted(m for m in ('torch', 'mpi4py', 'numcodecs', 'pycodecs.numcodecs_codecs')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()
    assert out == "[]"
