"""ConPAct with models trained here: supervision rows, base-role SFT, recipe training, report.

rows.py          planner / actor / baseline rows from expert play on the source split
train.py         SFT of one role through the one SFT loop, HF export
recipe_train.py  ConPAct-S / ConPAct-R / token-matched baseline training of both roles
report.py        the study's summary.json / summary.md / study.png
study.py         the study's stages in order (lib/run/stages.py), run by
                 experiments/conpact/study.py
arms_report.py   the re-check study's comparison of arms (experiments/conpact/arms.py)
field_probe.py   per-field correctness of a trained role on training and held-out rows
"""
