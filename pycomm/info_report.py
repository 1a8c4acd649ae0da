"""What ``mpiucc info`` prints: ``info()`` as labelled rows, and under a launcher one report
for the job, written by rank 0.

Every rank collects its own ``info()``; the rows that may differ between ranks (``PER_RANK``:
host, cores, UCC, the compiled path, the codecs' SIMD level) are gathered to rank 0, which
shows each once where every rank agrees and per rank where they differ.
"""

from __future__ import annotations

import re
import sys
from typing import Any

#: The rows of ``mpiucc info`` that may differ from rank to rank: under a launcher each rank's
#: are gathered (``gather``) and shown once where they agree.
PER_RANK = (
    "host",
    "cores",
    "collectives via UCC",
    "compiled allreduce",
    "codec SIMD level",
    "pycomm UCC layer",
)


def format_info(found: dict[str, Any]) -> str:
    """``info()`` as the lines ``mpiucc info`` prints; with ``found["ranks"]`` (each rank's
    ``rank_rows``, added by ``gather``), the per-rank rows of every rank."""
    rows = _rows(found)
    ranks = found.get("ranks")
    if ranks:
        rows = [merged for row in rows for merged in _merge(row, ranks)]
        rows.insert(1, ("ranks", f"{len(ranks)} (MPI_COMM_WORLD)"))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def rank_rows(found: dict[str, Any]) -> dict[str, str]:
    """The rows of ``format_info`` that may differ between ranks (``PER_RANK``), by label."""
    return {k: v for k, v in _rows(found) if k in PER_RANK}


def _merge(row: tuple[str, str], ranks: list[dict[str, str]]) -> list[tuple[str, str]]:
    """A per-rank row as one line where every rank agrees, else a line per distinct value
    naming its ranks."""
    label, _ = row
    if label not in PER_RANK:
        return [row]
    by_value: dict[str, list[int]] = {}
    for rank, rows in enumerate(ranks):
        by_value.setdefault(rows.get(label, "-"), []).append(rank)
    if len(by_value) == 1:
        return [(label, f"{next(iter(by_value))} (same on all ranks)")]
    return [
        (label if i == 0 else "", f"{_ranks(members)}: {value}")
        for i, (value, members) in enumerate(by_value.items())
    ]


def _ranks(members: list[int]) -> str:
    """[0, 1, 2, 5] as "ranks 0-2, 5"."""
    spans: list[list[int]] = []
    for r in members:
        if spans and r == spans[-1][1] + 1:
            spans[-1][1] = r
        else:
            spans.append([r, r])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
    return ("rank " if len(members) == 1 else "ranks ") + text


def _rows(found: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [("mpiucc", found["mpiucc"])]
    cores = found.get("cores") or {}
    if "host" in found:
        rows.append(("host", found["host"]))
    if cores:
        usable = "?" if cores["usable"] is None else cores["usable"]
        threads = cores["codec_threads"]
        rows.append(("cores", f"{usable} usable of {cores['machine']}"
                     + ("" if threads is None else f", codec threads {threads}")))  # fmt: skip
    if found["mpi_vendor"] is None:
        rows.append(("MPI library", f"not available ({found['mpi_error']})"))
    else:
        rows += _mpi_rows(found)
    rows += [
        ("codec SIMD level", found["simd_level"] or "pycodecs not installed"),
        ("torch", found["torch"] or "not installed"),
    ]
    if found["torch_ucc"] is not None:
        rows.append(("torch UCC backend", "yes" if found["torch_ucc"] else "no"))
    rows += _ucc_layer_rows(found.get("ucc_layer"))
    ucc = found["ucc"] or {}
    if ucc.get("component") and not ucc.get("enabled"):
        rows.append(("hint", "set OMPI_MCA_coll_ucc_enable=1 OMPI_MCA_coll_ucc_priority=100"))
    elif ucc.get("component") is False and ucc.get("enabled"):
        rows.append(
            ("hint", "OMPI_MCA_coll_ucc_enable=1 is set, but this Open MPI has no coll/ucc")
        )
    for extra, dists in found["extras"].items():
        have = [f"{d} {v}" for d, v in dists.items() if v]
        lack = [d for d, v in dists.items() if not v]
        state = "yes" if not lack else f"no ({', '.join(lack)} missing)"
        rows.append((f"extra [{extra}]", state + (f": {', '.join(have)}" if have else "")))
    rows += _auto_rows(found.get("auto"))
    return rows


def _mpi_rows(found: dict[str, Any]) -> list[tuple[str, str]]:
    ucc = found["ucc"]
    via = {True: "yes", False: "no", None: "unknown"}[ucc["collectives_via_ucc"]]
    library = found["mpi_library"]
    device = re.search(r"Device:\s*(.+)", library)
    first_line = library.splitlines()[0] if library else ""
    detail = f"device {device.group(1).strip()}" if device else " ".join(first_line.split())[:72]
    return [
        ("MPI library", f"{found['mpi_vendor']} ({detail})"),
        ("MPI standard", found["mpi_version"]),
        ("mpi4py", found["mpi4py"] or "not installed"),
        ("thread level", f"MPI_THREAD_{found['thread_level'].upper()}"),
        ("collectives via UCC", f"{via} ({ucc['how']})"),
        ("compiled allreduce", found["compiled_path"]),
    ]


def _ucc_layer_rows(layer: dict[str, Any] | None) -> list[tuple[str, str]]:
    if not layer:
        return []
    if not layer["built"]:
        return [("pycomm UCC layer", f"no ({layer['why_not']})")]
    layers = "; ".join(f"{kind} {', '.join(names)}" for kind, names in layer["components"].items())
    settings = ", ".join(f"{k}={v}" for k, v in layer["settings"].items())
    rows = [
        ("pycomm UCC layer", f"yes (UCC {layer['version']} from {layer['library']})"),
        ("UCX library", layer["ucx_library"] or "not loaded"),
        ("UCC components", layers or "none found beside libucc"),
        ("UCC settings", settings),
        ("UCC collectives", ", ".join(layer["supports"])),
        ("group collectives on", f"{layer['collectives']} (MPIUCC_COLLECTIVES, new groups)"),
    ]
    if layer["groups"] is None:
        return rows + [("groups on UCC", "none here (pycomm.info() in a job lists its groups)")]
    for g in layer["groups"]:
        on = ", ".join(
            what if g["collectives"] == "ucc" else f"{what} {lib}"
            for what, lib in g["on_ucc"].items()
        )
        rows.append(
            (f"group {g['name']!r} ({g['size']} ranks)", f"{g['collectives']}: {on or '-'}")
        )
    return rows


def _auto_rows(auto: dict[str, Any] | None) -> list[tuple[str, str]]:
    if not auto:
        return []
    link, speeds = auto["link"], auto["codec_speeds"]
    measured = f"{link['latency_samples']} + {link['bandwidth_samples']} samples"
    codecs = ", ".join(f"{k} {1e-9 / v:.2f} GB/s" for k, v in speeds.items() if k != "dense_share")
    choices = ", ".join(f"{size} {name}" for size, name in auto["choices"].items())
    return [
        ("auto: link", f"{link['latency_us']:.1f} us, {link['bandwidth_gbit_s']:.2f} Gbit/s"
         f" ({measured}; none: first guess)"),
        ("auto: codecs", f"{codecs} (encode + decode, this CPU)"),
        ("auto: tries first", f"{choices} ({auto['contract']}, {auto['ranks']} ranks, mean)"),
    ]  # fmt: skip


def gather(found: dict[str, Any]) -> bool:
    """Add ``found["ranks"]`` (each rank's per-rank rows, by rank) on rank 0 of a job of
    several ranks, and return whether this process should print. A single process, or one
    without MPI, prints its own report."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or found.get("mpi_vendor") is None or not mpi.Is_initialized():
        return True
    comm = mpi.COMM_WORLD
    if comm.size == 1:
        return True
    rows = comm.gather(rank_rows(found), root=0)
    if comm.rank != 0:
        return False
    found["ranks"] = rows
    return True
