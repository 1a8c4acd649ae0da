"""An alpha-beta-gamma model of the compressed allreduce, calibrated on the emulator, and its
predictions from 8 to 4096 ranks at 10-400 Gbit/s.

    python bench/perf_model.py --measure-speeds   # the codecs on one core: calibration/speeds.json
    python bench/perf_model.py                    # fit to calibration/runs.jsonl, print, plot

The model is the package perfmodel beside this file, one module per part: counts (what each
algorithm sends, per segment), timing (the seconds of those counts), speeds (the codecs'),
fit, report and predict. Each module's docstring states its share of the model.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from perfmodel.fit import errors, fit, fit_growth, held_out_errors, load_runs, merge_repeats
from perfmodel.predict import predict
from perfmodel.report import print_fit, print_speeds, report
from perfmodel.speeds import load_speeds, measure_speeds

HERE = Path(__file__).parent
RUNS = HERE / "calibration" / "runs.jsonl"
SPEEDS = HERE / "calibration" / "speeds.json"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", default=str(RUNS))
    p.add_argument("--speeds", default=str(SPEEDS), help="the codec speeds' file")
    p.add_argument(
        "--measure-speeds", action="store_true", help="measure them here into --speeds, exit"
    )
    p.add_argument("--mib", type=float, default=100, help="MiB per rank for the predictions")
    p.add_argument("--plot", default=str(HERE / "perf_model.png"))
    args = p.parse_args()
    if args.measure_speeds:
        print_speeds(measure_speeds(Path(args.speeds)))
        return
    record = load_speeds(Path(args.speeds))
    sp, cores = record["speeds"], record["cores"]
    print_speeds(record)
    repeats = load_runs(Path(args.runs))
    runs = merge_repeats(repeats)
    g = fit_growth(runs)
    params = fit(runs, sp, g, cores)
    print_fit(params, g, len(runs), len(repeats), cores)
    errs, held = errors(params, runs, sp, g, cores), held_out_errors(runs, sp, cores)
    report(runs, errs, held)
    measured = np.array([r["seconds"] for r in runs])
    fitted = (measured, measured * (1 + errs), measured * (1 + held))
    predict(sp, g, params["eff"], args.mib * 2**20, Path(args.plot), fitted)


if __name__ == "__main__":
    main()
