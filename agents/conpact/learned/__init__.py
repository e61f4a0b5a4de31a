"""ConPAct with models trained here: supervision rows, base-role SFT, recipe training, report.

rows.py          planner / actor / baseline rows from expert play on the source split
train.py         SFT of one role through the one SFT loop, HF export
recipe_train.py  ConPAct-S / ConPAct-R / token-matched baseline training of both roles
report.py        the study's summary.json / summary.md / study.png
The study itself is experiments/conpact/study.py (configs/conpact/study.py); its stages are
lib/stages.py's.
"""
