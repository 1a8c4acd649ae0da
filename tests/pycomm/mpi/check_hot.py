"""The compiled path (``pycomm.collectives.hot``) keeps the Python path's contracts: the same
bits (MPI's sum, then the mean's division), the same records, every rank raising on a mismatch
or on one rank's invalid argument, a late rank waited for by the engine, and auto's key state
agreed. Run on 2 and 3 ranks."""

from __future__ import annotations

import time

import numpy as np
from _check import COMM, RANK, SIZE, everyone, same_everywhere
from mpi4py import MPI
from mpi_helpers import slowed

import pycomm
from pycomm.collectives import auto_state, hot, reduction
from pycomm.collectives.engine import engine_of

pycomm.set_timeout(20)
ENG = engine_of(COMM)


def compiled_calls() -> int:
    return sum(plan.calls for plan in ENG.settled.values())


def check_same_bits_as_mpi() -> None:
    """Every dtype, op, size (1, odd, large), in place or not: MPI's own sum (and the mean
    divided as numpy divides), identical on every rank, and made on the compiled path."""
    rng = np.random.default_rng(RANK)
    for dtype in (np.float32, np.float64):
        for count in (1, 7, 4097, 300_001):
            x = (rng.standard_normal(count) * 10.0 ** rng.integers(-30, 30, count)).astype(dtype)
            x[0] = -0.0 if RANK else np.float32(1e-45)  # +-0 and a denormal
            for codec in ("none", "auto:rms:1e-2", "auto:rel:1e-2", "auto:abs:1e30"):
                for op in ("sum", "mean"):
                    want = np.empty_like(x)
                    COMM.Allreduce(x, want, op=MPI.SUM)
                    if op == "mean":
                        np.divide(want, SIZE, out=want)
                    for _ in range(3 * auto_state.CODEC.keep if codec != "none" else 3):
                        before = compiled_calls()
                        got = pycomm.allreduce(x, codec=codec, op=op)
                    same_everywhere(got, f"{codec} {op} {dtype} x{count}")
                    if compiled_calls() == before:  # auto's last call timed or kept a codec
                        assert codec != "none", (codec, op, dtype, count)
                        continue
                    assert got.tobytes() == want.tobytes(), (codec, op, dtype, count)
                    inplace = x.copy()
                    assert pycomm.allreduce(inplace, codec=codec, op=op, out=inplace) is inplace
                    assert inplace.tobytes() == want.tobytes(), "in place"


def check_records_alike() -> None:
    """A CommStats counts a compiled call as the Python path does."""
    x = np.ones(1000, np.float32)
    pycomm.allreduce(x)
    stats = pycomm.CommStats()
    before = compiled_calls()
    for _ in range(5):
        pycomm.allreduce(x, stats=stats)
    assert compiled_calls() - before == 5
    ring = 2 * (SIZE - 1) * x.nbytes // SIZE
    assert (stats.calls, stats.raw_bytes, stats.frame_bytes) == (5, 5 * x.nbytes, 5 * x.nbytes)
    assert (stats.sent_bytes, stats.recv_bytes) == (5 * ring, 5 * ring)
    assert stats.total_seconds > 0 and stats.lossy_calls == 0


def check_mismatch_raises_everywhere() -> None:
    """Settled on every rank, then rank 0 sends a size the others do not: all raise, none
    returns data, and the ranks are still in step after it."""
    x = np.ones(2000, np.float32)
    pycomm.allreduce(x)
    pycomm.allreduce(x)
    try:
        pycomm.allreduce(x[:-1] if RANK == 0 else x)
    except pycomm.SettingsMismatchError:
        pass
    else:
        raise AssertionError(f"rank {RANK}: returned data from mismatched calls")
    same_everywhere(pycomm.allreduce(x), "after a mismatch")


def check_invalid_argument_raises_everywhere() -> None:
    """Settled, then rank 0's arguments are bad (out overlapping x, a non-contiguous x, a
    read-only out): a ValueError there, PeerArgumentError on the others (which took the
    compiled path), nothing returned, no rank left waiting."""
    x = np.ones(4000, np.float32)
    readonly = np.zeros(2000, np.float32)
    readonly.flags.writeable = False
    bad = {
        "overlapping out": dict(x=x[:2000], out=x[1:2001]),
        "non-contiguous x": dict(x=x[::2], out=None),
        "read-only out": dict(x=x[:2000], out=readonly),
    }
    for what, args in bad.items():
        pycomm.allreduce(x[:2000])
        pycomm.allreduce(x[:2000])
        python_path: list[int] = []  # the Python path agrees through Engine.agree, C not
        ENG.agree = lambda *a, seen=python_path, **kw: (
            seen.append(1) or type(ENG).agree(ENG, *a, **kw)
        )
        try:
            if RANK == 0:
                pycomm.allreduce(args["x"], out=args["out"])
            else:
                pycomm.allreduce(x[:2000])
        except pycomm.PeerArgumentError:
            assert RANK != 0 and not python_path, what
        except ValueError:
            assert RANK == 0, what
        else:
            raise AssertionError(f"rank {RANK}: returned data though rank 0 passed a {what}")
        finally:
            del ENG.agree
        same_everywhere(pycomm.allreduce(x[:2000]), f"after a {what}")


def check_late_rank_waited_for() -> None:
    """A rank later than the compiled path's spin: the engine's wait takes over, the result
    is right everywhere."""
    x = np.full(3000, RANK + 1.0)
    pycomm.allreduce(x)
    pycomm.allreduce(x)
    for late in range(SIZE):
        if RANK == late:
            time.sleep(0.3)
        got = pycomm.allreduce(x)
        assert np.array_equal(got, np.full(3000, SIZE * (SIZE + 1) / 2.0)), late


def check_tokens_differ() -> None:
    """auto settled raw everywhere; one rank forgets the key: every rank decides afresh (the
    compiled path hands its agreement to Python), same bits, then settles again. (Compressing
    is made 20 ms slower, so that raw is what the measurements keep.)"""
    x = np.random.default_rng(RANK).standard_normal(10_000).astype(np.float32)
    codec = "auto:rms:1e-2"
    with slowed(reduction, "run_segments"):
        for _ in range(3 * auto_state.CODEC.keep):
            pycomm.allreduce(x, codec=codec)
        seen = auto_state.observed(ENG)
        if RANK == SIZE - 1:
            for entry in seen.keys.values():
                entry.forget()
        want = everyone(x).astype(np.float64).sum(0)
        rms = max(float(np.sqrt(np.mean(v.astype(np.float64) ** 2))) for v in everyone(x))
        for _ in range(3 * auto_state.CODEC.keep):
            got = pycomm.allreduce(x, codec=codec)
            same_everywhere(got, "tokens differ")
            assert np.abs(got - want).max() <= 1e-2 * rms
        before = compiled_calls()
        pycomm.allreduce(x, codec=codec)
    assert compiled_calls() == before + 1, "settled again"


def check_raw_measured_slower() -> None:
    """auto settled raw on the compiled path, then the round's runner-up recorded as faster
    than raw's calls take (alike on every rank, as an agreed trial would leave it): the next
    call hands back to Python with its agreement, every rank keeps the runner-up, the same
    bits everywhere, within the bound."""
    auto_state.forget(ENG)  # what auto learned (the codecs measured slow above) forgotten
    x = np.random.default_rng(RANK + 7).standard_normal(12_000).astype(np.float32)
    codec = "auto:rms:1e-2"
    ENG.link.pin(50e-6, 125e6)  # a slow link: the model has codecs tried
    with slowed(reduction, "run_segments"):  # and they measure slower than raw
        for _ in range(3 * auto_state.CODEC.keep):
            pycomm.allreduce(x, codec=codec)
    ENG.link.pin(None)
    (entry,) = auto_state.observed(ENG).keys.values()
    plan = entry.compiled
    entry.reclaim()  # the Python side owns the key's state while it changes it
    times = entry.times()
    runner_up = min((n for n in times if n != "raw"), key=times.__getitem__)
    entry.samples[runner_up] = [1e-9] * len(entry.samples[runner_up])  # measured that fast
    entry.give_up = 1e-9
    plan.adopt(entry.compiled_state())  # as settling again hands the plan the state
    entry.compiled = plan
    before = compiled_calls()
    got = pycomm.allreduce(x, codec=codec)
    assert compiled_calls() == before, "raw kept on the compiled path"
    assert COMM.allgather(entry.kept) == [runner_up] * SIZE, entry.kept
    same_everywhere(got, "raw measured slower")
    rms = max(float(np.sqrt(np.mean(v.astype(np.float64) ** 2))) for v in everyone(x))
    assert np.abs(got - everyone(x).astype(np.float64).sum(0)).max() <= 1e-2 * rms


def check_feedback_on_the_compiled_path() -> None:
    """auto settled raw with an ErrorFeedback (the DDP hook's calls): once an uncompressed
    call has emptied the residual, blocking and non-blocking calls are compiled and leave it
    empty; a residual that holds values goes to Python, which sends it along exactly and
    empties it; a call handed back (one rank forgot the key) gets the residual there; one
    rank's residual of the wrong size raises there, and on the others (compiled) too."""
    auto_state.forget(ENG)
    x = np.random.default_rng(RANK + 11).standard_normal(10_000).astype(np.float32)
    feedback, codec = pycomm.ErrorFeedback(np.zeros_like(x)), "auto:rms:1e-2"
    with slowed(reduction, "run_segments"):
        for _ in range(3 * auto_state.CODEC.keep):
            pycomm.allreduce(x, codec=codec, residual=feedback)
    rms = max(float(np.sqrt(np.mean(v.astype(np.float64) ** 2))) for v in everyone(x))

    def within(got: np.ndarray, sent: np.ndarray, what: str) -> None:
        same_everywhere(got, what)
        err = np.abs(got - everyone(sent).astype(np.float64).sum(0)).max()
        assert err <= 1e-2 * rms, (what, err)

    python = []  # the calls that took the Python path
    real = reduction._allreduce
    reduction._allreduce = lambda *args, **kw: python.append(1) or real(*args, **kw)
    try:
        within(pycomm.allreduce(x, codec=codec, residual=feedback), x, "blocking")
        within(pycomm.iallreduce(x, codec=codec, residual=feedback).wait(), x, "non-blocking")
        assert not python, "not compiled"
        assert feedback.worker_zero and not feedback.worker.any()
        feedback.worker[:], feedback.worker_zero = 0.25, False  # what a compressed call left
        within(pycomm.allreduce(x, codec=codec, residual=feedback), x + 0.25, "residual sent")
        assert len(python) == 1 and feedback.worker_zero and not feedback.worker.any()
        if RANK == SIZE - 1:
            for entry in auto_state.observed(ENG).keys.values():
                entry.forget()
        within(pycomm.allreduce(x, codec=codec, residual=feedback), x, "handed back")
        assert len(python) == 2, "compiled though the tokens differ"
        for _ in range(3 * auto_state.CODEC.keep):  # settled again
            pycomm.allreduce(x, codec=codec, residual=feedback)
        wrong = pycomm.ErrorFeedback(np.zeros(5, np.float32))  # not x's size: on the last rank
        wrong.worker_zero = True
        try:
            pycomm.allreduce(x, codec=codec, residual=wrong if RANK == SIZE - 1 else feedback)
        except pycomm.PeerArgumentError:
            assert RANK != SIZE - 1
        except ValueError:
            assert RANK == SIZE - 1
        else:
            raise AssertionError(f"rank {RANK}: returned data from a call one rank got wrong")
    finally:
        reduction._allreduce = real


def check_range_bound_leaves_the_dtype() -> None:
    """auto:rel and auto:abs settled raw on the compiled path (their statistics made in C and
    agreed); then data whose range no longer proves a sum in the dtype within the bound (a
    large offset, a tiny spread): that call goes back to Python, which sums wider, keeps the
    bound, the same bits everywhere; the next ordinary call is compiled again. (Compressing is
    made 20 ms slower, so that raw is what the measurements keep.)"""
    rng = np.random.default_rng(RANK)
    with slowed(reduction, "run_segments"):
        for codec, bound in (("auto:rel:1e-3", None), ("auto:abs:2e-4", 2e-4)):
            x = rng.standard_normal(5000).astype(np.float32)
            # float32 sums of |x| near 1000 may err by N^2 * 6e-8 * 1000 >= 2.4e-4, more than
            # either bound (1e-3 x a range of 0.18; 2e-4); a wider sum rounds once, by 1.2e-4
            # at most
            tight = (1000 + rng.uniform(0, 0.18, 5000)).astype(np.float32)
            for _ in range(3 * auto_state.CODEC.keep):
                pycomm.allreduce(x, codec=codec)
            before = compiled_calls()
            pycomm.allreduce(x, codec=codec)
            assert compiled_calls() == before + 1, f"{codec}: not on the compiled path"
            got = pycomm.allreduce(tight, codec=codec)
            assert compiled_calls() == before + 1, f"{codec}: summed in the dtype"
            same_everywhere(got, codec)
            inputs = everyone(tight)
            want = inputs.astype(np.longdouble).sum(0)
            limit = bound if bound else 1e-3 * float(inputs.max() - inputs.min())
            assert float(np.abs(got - want).max()) <= limit, (codec, np.abs(got - want).max())
            pycomm.allreduce(x, codec=codec)
            assert compiled_calls() == before + 2, f"{codec}: not compiled again"


def check_every_spelling_one_path() -> None:
    """Every spelling of one request (a name and keywords, ``auto:MODE:BOUND``, a CodecSpec)
    is one spec, one kind and one compiled plan: taken in turns once settled, never back on
    the Python path. (Compressing is made 20 ms slower, so that raw is what auto keeps.)"""
    x = np.random.default_rng(RANK + 3).standard_normal(7000).astype(np.float32)
    spellings = {
        "none": [
            ("none", {}),
            (None, {}),
            (pycomm.CodecSpec(), {}),
            (pycomm.CodecSpec("none"), {}),
        ],
        "auto": [
            ("auto:rms:1e-2", {}),
            ("auto", {"error_bound": 1e-2, "mode": "rms"}),
            (pycomm.CodecSpec("auto", error_bound=1e-2, mode="rms"), {}),
        ],
    }
    for what, ways in spellings.items():
        ENG.settled.clear()
        with slowed(reduction, "run_segments"):
            for i in range(3 * auto_state.CODEC.keep):
                codec, params = ways[i % len(ways)]
                pycomm.allreduce(x, codec=codec, **params)
        assert len(ENG.settled) == 1, (what, list(ENG.settled))
        before = compiled_calls()
        for codec, params in ways:
            same_everywhere(pycomm.allreduce(x, codec=codec, **params), f"{what} {codec}")
        assert compiled_calls() == before + len(ways), f"{what}: a spelling left the path"


def check_status() -> None:
    assert hot.status().startswith("compiled for"), hot.status()


CHECKS = [
    check_status,
    check_same_bits_as_mpi,
    check_records_alike,
    check_mismatch_raises_everywhere,
    check_invalid_argument_raises_everywhere,
    check_late_rank_waited_for,
    check_tokens_differ,
    check_raw_measured_slower,
    check_feedback_on_the_compiled_path,
    check_range_bound_leaves_the_dtype,
    check_every_spelling_one_path,
]

if __name__ == "__main__":
    for check in CHECKS:
        check()
        COMM.Barrier()
    if RANK == 0:
        print("hot: passed", flush=True)
