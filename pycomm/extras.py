"""The optional layers of mpiucc, by the pip extra that installs them, and what is present.

``pip install 'mpiucc[mpi,torch,train]'`` (pyproject.toml ``[project.optional-dependencies]``).
Packages are found (``importlib.util.find_spec``) and their versions read from their metadata;
nothing is imported, so ``mpiucc info`` stays fast and never initialises MPI or torch for this.
"""

from __future__ import annotations

from importlib import metadata, util

#: extra -> (distribution, what needs it); keep in step with pyproject.toml.
EXTRAS: dict[str, tuple[tuple[str, str], ...]] = {
    "mpi": (("mpi4py", "pycomm collectives, mpiucc info, mpiucc train"),),
    "torch": (("torch", "pycomm.distributed (backend, DDP hooks), mpiucc train"),),
    "train": (
        ("matplotlib", "mpiucc train's loss.png (without it: no plot, a note in the summary)"),
        ("tqdm", "mpiucc train's progress bar (without it: a line every tenth of the steps)"),
    ),
    "numcodecs": (("numcodecs", "the mpiucc.* numcodecs codecs"),),
}


def version_of(name: str) -> str | None:
    """The version of an importable package (its distribution has the same name), else None."""
    try:
        if util.find_spec(name) is None:
            return None
    except (ImportError, ValueError):  # a broken package, or one blocked in sys.modules
        return None
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "(version unknown)"


def extras_present() -> dict[str, dict[str, str | None]]:
    """Per extra, each of its distributions with its installed version (None: missing)."""
    return {extra: {dist: version_of(dist) for dist, _ in wants} for extra, wants in EXTRAS.items()}


def missing_for(*extras: str) -> list[str]:
    """The extras among ``extras`` with at least one distribution not installed."""
    present = extras_present()
    return [e for e in extras if any(v is None for v in present[e].values())]


def install_hint(extras: list[str]) -> str:
    return f"pip install 'mpiucc[{','.join(extras)}]'"
