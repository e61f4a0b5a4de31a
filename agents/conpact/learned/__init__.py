"""ConPAct with models trained here: supervision rows, base-role SFT, resumable stages, report.

rows.py    planner / actor / baseline rows from expert play on the source split
train.py   SFT of one role through the one SFT loop, HF export
stages.py  done markers and timings of the study's stages
report.py  the study's summary.json / summary.md / study.png
The study itself is experiments/conpact/study.py (configs/conpact/study.py).
"""
