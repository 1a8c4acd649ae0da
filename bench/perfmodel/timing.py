"""The seconds of a rank's counts. On the emulator, with s = max(1, N/cores) (N busy-polling
ranks share the machine's cores, so both the CPU work and the wait for a peer to be scheduled
stretch with N/cores):

    time = rounds·alpha·s + pipelined(link·beta, cpu·s, segments)
    cpu  = work·kappa + (stack + local)·tcp

pipelined: the link time of one segment overlaps the CPU of the next (plan.run_segments);
beta = eff·8/rate. A cluster takes one core per rank (s = 1, kappa = 1), 5 µs per step, the
fitted link efficiency, network bytes at no CPU cost (the NIC moves them), and the node steps
at the memcpy speed measured here.
"""

from __future__ import annotations

from .counts import Counts

CLUSTER_ALPHA = 5e-6


def stretch(n: int, cores: int) -> float:
    """How much slower a rank's CPU work and waits are when n busy-polling ranks share cores."""
    return max(1.0, n / cores)


def pipelined(wire: float, cpu: float, k: int) -> float:
    """Seconds of k equal segments when the wire time of one overlaps the CPU time of the
    next: the first segment's both, then the slower of the two for each further one."""
    return (wire + cpu) / k + (k - 1) / k * max(wire, cpu)


def emulated_time(c: Counts, params: dict, n: int, gbit: float, cores: int) -> float:
    """Seconds of counts c on the emulator: n ranks on cores cores, links of gbit Gbit/s."""
    s = stretch(n, cores)
    beta = params["eff"] * 8 / (gbit * 1e9)
    cpu = c.work * params["kappa"] + (c.stack + c.local) * params["tcp"]
    return c.rounds * params["alpha"] * s + pipelined(c.link * beta, cpu * s, c.segments)


def cluster_time(c: Counts, gbit: float, eff: float, sp: dict) -> float:
    """Seconds of counts c on a cluster: one core per rank, the NIC moving network bytes."""
    beta = eff * 8 / (gbit * 1e9)
    cpu = c.work + c.local / 2 * sp["memcpy"]
    return c.rounds * CLUSTER_ALPHA + pipelined(c.link * beta, cpu, c.segments)
