"""Run the training job as if some packages were not installed.

    [mpiexec -n N] python run_without.py matplotlib,tqdm [train options...]

Each named package is set to None in ``sys.modules`` before the job starts, so importing it
raises ImportError and ``importlib.util.find_spec`` finds nothing, as when it is absent.
"""

import runpy
import sys

for name in sys.argv[1].split(","):
    sys.modules[name] = None  # type: ignore[assignment]
sys.argv = ["pycomm.train", *sys.argv[2:]]
runpy.run_module("pycomm.train", run_name="__main__", alter_sys=True)
