"""The alpha-beta-gamma model of the compressed allreduce that ``bench/perf_model.py`` runs.

counts   what each algorithm sends, its message steps and CPU work, per pipeline segment
timing   the seconds of those counts on the emulator (shared cores) and on a cluster
speeds   the codecs' speeds on one core: measured here, kept in calibration/speeds.json
fit      the four machine parameters fitted to calibration/runs.jsonl, and held-out errors
report   the speeds, the fit and the model against measured, as printed tables
predict  cluster predictions, where compression stops paying, and the plot
"""
