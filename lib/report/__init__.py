"""Numbers and figures for the papers' tables.

  stats.py  pass@k family, cluster and paired bootstrap intervals, exact tests
  plots.py  bars with CI error bars, curves with bands, count annotations (matplotlib object API)
"""
