"""Paper-figure helpers: CI error bars, n per bar, visible zero bars, integer count ticks."""
import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure

from lib.report import plots, stats


def _texts(ax):
  return [t.get_text() for t in ax.texts]


def test_bars_carry_ci_error_bars_n_and_a_visible_zero(tmp_path):
  fig, ax = plots.figure()
  assert isinstance(fig, Figure)
  bars = plots.Bars("rule", values=[100.0, 0.0, 50.0], lo=[89.0, 0.0, 31.0],
                    hi=[100.0, 11.0, 69.0], n=[32, 32, 32], reference=[100.0, np.nan, 50.0])
  plots.bar_with_ci(ax, ["true", "alternative", "removed"], [bars],
                    ylabel="terminal success (%)", xlabel="condition")
  assert _texts(ax) == ["100\nn=32", "0\nn=32", "50\nn=32"]
  # The error bars span the CIs (the zero bar's CI [0, 11] included).
  segments = [seg for c in ax.collections for seg in c.get_segments()]
  spans = sorted((round(s[0][1], 6), round(s[1][1], 6)) for s in segments)
  assert spans == [(0.0, 11.0), (31.0, 69.0), (89.0, 100.0)]
  # The 0% bar has no height, so an outlined marker at y = 0 marks it.
  zero_markers = [l for l in ax.lines if l.get_marker() == "s"]
  assert len(zero_markers) == 1 and list(zero_markers[0].get_ydata()) == [0.0]
  assert list(zero_markers[0].get_xdata()) == [pytest.approx(1.0)]
  assert ax.get_ylabel() == "terminal success (%)" and ax.get_xlabel() == "condition"
  assert ax.get_ylim()[1] > 100                      # room for the labels above a 100% bar
  assert [t.get_text() for t in ax.get_legend().get_texts()] in (["rule", "paper"], ["paper", "rule"])
  path = plots.save(fig, str(tmp_path / "bars.png"))
  with open(path, "rb") as f:
    assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_grouped_bars_are_side_by_side_and_nan_cells_say_n0():
  fig, ax = plots.figure()
  a = plots.Bars("a", [10.0, np.nan], [5.0, np.nan], [20.0, np.nan], [8, 0])
  b = plots.Bars("b", [30.0, 40.0], [20.0, 30.0], [40.0, 50.0], [8, 8])
  plots.bar_with_ci(ax, ["t1", "t2"], [a, b], ylabel="success (%)")
  xs = sorted(round(p.get_x() + p.get_width() / 2, 3) for p in ax.patches)
  assert xs == [-0.2, 0.2, 0.8, 1.2]
  assert "n=0" in _texts(ax) and "40\nn=8" in _texts(ax)
  del fig


def test_success_with_ci_is_clopper_pearson_in_percent():
  pct, lo, hi, n = plots.success_with_ci([True, False, False, True, True])
  cp_lo, cp_hi = stats.clopper_pearson(3, 5)
  assert (pct, n) == (60.0, 5)
  assert (lo, hi) == pytest.approx((100 * cp_lo, 100 * cp_hi))
  assert np.isnan(plots.success_with_ci([])[0])


def test_count_histogram_bins_follow_n_and_ticks_are_integers():
  fig, ax = plots.figure()
  rng = np.random.default_rng(0)
  plots.count_histogram(ax, {"dsl": rng.normal(30, 3, 16), "json": rng.normal(40, 3, 16)},
                        xlabel="time to commitment (ms)")
  heights = [p.get_height() for p in ax.patches]
  assert len(heights) == 2 * 5                       # Sturges: ceil(log2 16) + 1 = 5 bins each
  assert sum(heights) == 32 and all(float(h).is_integer() for h in heights)
  fig.canvas.draw()                                  # resolves the tick locator
  ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
  assert ticks and all(float(t).is_integer() for t in ticks)
  assert [t.get_text() for t in ax.get_legend().get_texts()] == ["dsl (n=16)", "json (n=16)"]
  assert ax.get_ylabel() == "episodes"


def test_curve_with_band_shades_the_band_and_names_n():
  fig, ax = plots.figure()
  plots.curve_with_band(ax, [1, 2, 4], [10.0, 20.0, 30.0], [5.0, 15.0, 25.0],
                        [15.0, 25.0, 35.0], label="BASE", n=12)
  assert ax.lines[0].get_label() == "BASE (n=12)"
  band = [c for c in ax.collections if isinstance(c, PolyCollection)]
  assert len(band) == 1
  ys = band[0].get_paths()[0].vertices[:, 1]
  assert ys.min() == 5.0 and ys.max() == 35.0
  del fig
