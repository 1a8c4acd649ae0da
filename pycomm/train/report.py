"""The runs merged over ranks: the operator table, the comparison, metrics.json and the plot.

Bytes and calls are summed over ranks (the job's traffic); times are averaged over ranks (what
one rank's training thread spent), over the timed steps (the first is left out).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pycomm.train.loop import WARMUP_STEPS_UNTIMED, RankRecord
from pycomm.train.meters import LABELS, OPERATORS
from pycomm.train.plot import plot_or_note, run_label
from pycomm.train.targets import TARGET_SLACK, target_loss, time_to_loss

SPLIT_KEYS = ("compute", "codec", "wait", *(f"comm_{k}" for k in OPERATORS))


def merge(records: list[RankRecord]) -> dict:
    """One run's records from every rank as one summary."""
    first = records[0]
    timed = slice(WARMUP_STEPS_UNTIMED, None)
    steps = len(first.step_s)
    step_s = np.mean([r.step_s for r in records], axis=0)
    split = {k: np.mean([[s[k] for s in r.split] for r in records], axis=0) for k in SPLIT_KEYS}
    ops = {}
    for k in OPERATORS:
        per_rank = [r.ops[k] for r in records]
        ops[k] = {
            f: float(sum(p[f] for p in per_rank)) for f in ("calls", "raw_bytes", "frame_bytes")
        }
        for f in ("codec_s", "comm_s", "wait_s", "background_s"):
            ops[k][f] = float(np.mean([p[f] for p in per_rank]))
    timed_steps = max(1, steps - WARMUP_STEPS_UNTIMED)
    return {
        "name": first.name,
        "codecs": first.codecs,
        "step_s": step_s.tolist(),
        "split": {k: v.tolist() for k, v in split.items()},
        "train_loss": first.train_loss,
        "val": [list(v) for v in first.val],
        "ops": ops,
        "timed_steps": timed_steps,
        "timed_s": float(step_s[timed].sum()),
        "comm_s_per_step": sum(o["codec_s"] + o["comm_s"] for o in ops.values()) / timed_steps,
        "final_val": first.val[-1][1] if first.val else float("nan"),
        "replica_checks": first.replica_checks,
        "guard": first.guard,
        "guard_events": first.guard_events,
        "guard_errors": [list(e) for e in first.guard_errors],
    }


def guard_table(run: dict) -> str:
    """Per compressed stream: its sampled relative error per step, threshold, final codec."""
    checks = run["replica_checks"]
    lines = [
        f"replica check: every replica bitwise identical ({checks} checks)"
        if checks
        else "replica check: off (--check-replicas 0)"
    ]
    rows = {k: v for k, v in run["guard"].items() if v["samples"]}
    if rows:
        head = f"{'stream':<22}{'samples':>8}{'mean err':>10}{'max err':>10}{'limit':>8}  codec"
        lines += ["relative error per step (|compressed - exact| / |exact|, sampled):", head]
        for k, g in rows.items():
            lines.append(
                f"{LABELS[k]:<22}{g['samples']:>8}{_err(g['mean_error']):>10}"
                f"{_err(g['max_error']):>10}{_err(g['threshold']):>8}  {g['codec']}"
            )
    lines += run["guard_events"]
    return "\n".join(lines)


def operator_table(run: dict) -> str:
    """The per-operator table of one run (like the paper's): time and bytes per operator.

    The FSDP rows appear in a run that has them (``--fsdp``), the others always."""
    n, total = run["timed_steps"], run["timed_s"]
    head = (
        f"{'operator':<22}{'calls':>8}{'ms/step':>10}{'codec ms':>10}{'share':>8}"
        f"{'raw MB':>10}{'wire MB':>10}{'ratio':>7}"
    )
    lines = [head, "-" * len(head)]
    for k in OPERATORS:
        o = run["ops"][k]
        if k.startswith("fsdp") and not o["calls"]:
            continue
        t = o["codec_s"] + o["comm_s"]
        ratio = o["raw_bytes"] / o["frame_bytes"] if o["frame_bytes"] else float("nan")
        lines.append(
            f"{LABELS[k]:<22}{o['calls']:>8.0f}{1e3 * t / n:>10.1f}{1e3 * o['codec_s'] / n:>10.1f}"
            f"{_pct(t, total):>8}{o['raw_bytes'] / 1e6:>10.2f}{o['frame_bytes'] / 1e6:>10.2f}"
            f"{ratio:>7.2f}"
        )
    wait = run["ops"]["pp"]["wait_s"]
    compute = float(np.sum(run["split"]["compute"][WARMUP_STEPS_UNTIMED:]))
    comm = run["comm_s_per_step"] * n
    for label, t in (
        ("communication total", comm),
        ("pipeline bubble", wait),
        ("computation", compute),
        ("step", total),
    ):
        lines.append(f"{label:<22}{'':>8}{1e3 * t / n:>10.1f}{'':>10}{_pct(t, total):>8}")
    bg = run["ops"]["dp"]["background_s"]
    if bg:
        lines.append(
            f"(DP buckets on the communication thread, overlapped: {1e3 * bg / n:.1f} "
            "ms/step; the DP row is the part the training thread waited for)"
        )
    return "\n".join(lines)


def comparison(baseline: dict, compressed: dict) -> dict:
    b, c = baseline, compressed
    return {
        "step_ms": (1e3 * b["timed_s"] / b["timed_steps"], 1e3 * c["timed_s"] / c["timed_steps"]),
        "comm_ms": (1e3 * b["comm_s_per_step"], 1e3 * c["comm_s_per_step"]),
        "comm_removed": 1 - c["comm_s_per_step"] / b["comm_s_per_step"]
        if b["comm_s_per_step"]
        else float("nan"),
        "comm_share_baseline": b["comm_s_per_step"] * b["timed_steps"] / b["timed_s"],
        "wire_mb": (wire_bytes(b) / 1e6, wire_bytes(c) / 1e6),
        "final_val": (b["final_val"], c["final_val"]),
        "val_gap": c["final_val"] / b["final_val"] - 1,
    }


def comparison_text(cmp: dict, label: str = "compressed") -> str:
    rows = [
        ("step time (ms)", *cmp["step_ms"], ""),
        ("communication (ms/step)", *cmp["comm_ms"], _change(cmp["comm_removed"])),
        (
            "bytes on the wire (MB)",
            *cmp["wire_mb"],
            f"{cmp['wire_mb'][0] / max(cmp['wire_mb'][1], 1e-12):.1f}x fewer",
        ),
        ("final validation loss", *cmp["final_val"], f"{100 * cmp['val_gap']:+.2f}%"),
    ]
    out = [f"{'':<26}{'baseline':>12}{label:>12}", "-" * 62]
    out += [f"{r[0]:<26}{r[1]:>12.3f}{r[2]:>12.3f}  {r[3]}" for r in rows]
    out.append(
        f"(uncompressed communication is {100 * cmp['comm_share_baseline']:.0f}% of "
        "the baseline step)"
    )
    return "\n".join(out)


def write_outputs(out: Path, args_dict: dict, runs: list[dict], header: str) -> str:
    """Write summary.txt and metrics.json, then loss.png, into ``out``; the summary text.

    Without matplotlib there is no loss.png and the summary ends with a note saying so.
    """
    out.mkdir(parents=True, exist_ok=True)
    parts = [header]
    for run in runs:
        parts.append(f"\n== {run['name']} run: {run['codecs']}\n{operator_table(run)}")
        parts.append(guard_table(run))
    cmps: dict[str, dict] = {}
    reached: dict[str, float | None] = {}
    if len(runs) >= 2 and runs[0]["name"] == "baseline":
        for run in runs[1:]:
            cmps[run["name"]] = cmp = comparison(runs[0], run)
            label = run_label(run)
            parts.append(f"\n== {label} against baseline\n" + comparison_text(cmp, label))
        reached = times_to_target(runs)
        parts.append(time_to_target_text(runs, reached))
    text = "\n".join(parts) + "\n"
    (out / "summary.txt").write_text(text)
    metrics = {
        "args": args_dict,
        "runs": runs,
        "comparisons": cmps,
        "target_val": target_loss(runs[0]) if reached else None,
        "seconds_to_target": reached,
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1, default=_jsonable))
    # Optional from here on (matplotlib): the results above are on disk whatever happens next.
    note = plot_or_note(runs, out / "loss.png")
    if note:
        text += f"\nnote: {note}\n"
        (out / "summary.txt").write_text(text)
    return text


def times_to_target(runs: list[dict]) -> dict[str, float | None]:
    """Each run's training seconds to the baseline's target loss (``runs[0]``: the baseline)."""
    target = target_loss(runs[0])
    return {run["name"]: time_to_loss(run, target) for run in runs}


def time_to_target_text(runs: list[dict], reached: dict[str, float | None]) -> str:
    base = reached[runs[0]["name"]]
    out = [
        f"\n== training time to the baseline's final validation loss (within "
        f"{100 * TARGET_SLACK:g}%: {target_loss(runs[0]):.4f})"
    ]
    for run in runs:
        secs = reached[run["name"]]
        if secs is None:
            what = f"not reached in {len(run['step_s'])} steps (final {run['final_val']:.4f})"
        else:
            what = f"{secs:8.1f} s"
            if base and run is not runs[0]:
                what += f"  ({base / secs:.2f}x {'sooner' if secs <= base else 'the time'})"
        out.append(f"{run['name']:<14}{what}")
    return "\n".join(out)


def _change(removed: float) -> str:
    if removed != removed:  # nan: nothing to remove
        return ""
    return f"{100 * removed:.0f}% removed" if removed >= 0 else f"{-100 * removed:.0f}% more"


def wire_bytes(run: dict) -> float:
    """The bytes a run sent, summed over its streams and ranks."""
    return sum(o["frame_bytes"] for o in run["ops"].values())


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _err(x: float) -> str:
    return "-" if x != x else f"{100 * x:.2f}%"


def _jsonable(x: object) -> object:
    if hasattr(x, "tolist"):
        return x.tolist()
    return str(x)
