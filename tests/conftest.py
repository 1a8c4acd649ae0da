import sys
from pathlib import Path

# tests/ helpers (mpi_launch) are importable from every test folder.
sys.path.insert(0, str(Path(__file__).parent))
