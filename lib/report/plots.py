"""Paper figures on matplotlib's object API: bars with CI error bars, curves with bands, count
histograms.

Every figure is a `matplotlib.figure.Figure` (no pyplot: no global backend or figure registry,
so experiments can draw from any thread and tests need no display). The conventions a reader
expects are built in: error bars from the confidence intervals, n written above every bar, zero
bars visible (an outlined marker at 0 with the value printed), axis labels with units, integer
ticks for counts.

  fig, ax = plots.figure(width=6, height=3.5)
  plots.bar_with_ci(ax, ["true", "removed"], [plots.Bars("rule", [100, 0], [97, 0], [100, 3],
                                                           [128, 128])], ylabel="success (%)")
  plots.save(fig, "success.png")
"""
import dataclasses
import math
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from lib.report import stats

DPI = 150


@dataclasses.dataclass
class Bars:
  """One series of bars (one colour), one value per category.

  Attributes:
    label: the legend entry (None: no legend entry).
    values: [C] bar heights.
    lo, hi: [C] the confidence interval of each bar (NaN: no error bar).
    n: [C] the number of observations behind each bar, written above it.
    reference: [C] optional published values drawn as a black tick on each bar (NaN: none).
  """
  label: str | None
  values: Sequence[float]
  lo: Sequence[float]
  hi: Sequence[float]
  n: Sequence[int]
  reference: Sequence[float] | None = None


def figure(width: float = 6.0, height: float = 3.6, ncols: int = 1,
           width_ratios: Sequence[float] | None = None) -> tuple[Figure, object]:
  """A new figure of `width` x `height` inches with `ncols` axes side by side.

  Args:
    width: inches.
    height: inches.
    ncols: axes in one row.
    width_ratios: [ncols] relative axes widths; None for equal widths.
  Returns:
    (figure, axes): one axes for ncols = 1, else an [ncols] array of axes.
  """
  fig = Figure(figsize=(width, height), dpi=DPI)
  return fig, fig.subplots(1, ncols, width_ratios=width_ratios)


def save(fig: Figure, path: str) -> str:
  """Lays the figure out (tight_layout) and writes it at `DPI`.

  Args:
    fig: the figure.
    path: the output file; its extension picks the format (PNG in this codebase).
  Returns:
    `path`.
  """
  fig.tight_layout()
  fig.savefig(path, dpi=DPI)
  return path


def success_with_ci(outcomes: Sequence[bool]) -> tuple[float, float, float, int]:
  """Success rate (percent) of boolean outcomes with its exact Clopper-Pearson 95% interval.

  Args:
    outcomes: [n] booleans (episodes).
  Returns:
    (success %, ci low %, ci high %, n); NaNs and n = 0 for no outcomes.
  """
  n = len(outcomes)
  if not n:
    return math.nan, math.nan, math.nan, 0
  wins = int(sum(bool(o) for o in outcomes))
  lo, hi = stats.clopper_pearson(wins, n)
  return 100.0 * wins / n, 100.0 * lo, 100.0 * hi, n


def bar_with_ci(ax, categories: Sequence[str], series: Sequence[Bars], *, ylabel: str,
                xlabel: str = "", ymax: float = 100.0, value_format: str = "{:.0f}",
                title: str = "") -> None:
  """Grouped bars with CI error bars, n and the value above each bar, zero bars visible.

  Args:
    ax: the matplotlib axes to draw on.
    categories: [C] x tick labels (one group of bars each).
    series: the bar series, drawn side by side within each group.
    ylabel: the y axis label, with its unit (e.g. "terminal success (%)").
    xlabel: the x axis label.
    ymax: the largest value the axis must show (100 for percentages); room for the labels is
      added above it.
    value_format: how the value above each bar is printed.
    title: the axes title.
  """
  x = np.arange(len(categories), dtype=float)
  width = 0.8 / max(len(series), 1)
  crowded = len(categories) * len(series) > 12      # labels turn vertical to stay legible
  colours = [f"C{k}" for k in range(len(series))]
  for k, (s, colour) in enumerate(zip(series, colours)):
    pos = x - 0.4 + width * (k + 0.5)
    values = np.asarray(s.values, dtype=float)
    lo = np.asarray(s.lo, dtype=float)
    hi = np.asarray(s.hi, dtype=float)
    err = np.vstack([np.nan_to_num(values - lo), np.nan_to_num(hi - values)])
    ax.bar(pos, np.nan_to_num(values), width * 0.9, color=colour, alpha=0.85,
           edgecolor=colour, linewidth=1.0, label=s.label, yerr=err, capsize=2,
           error_kw={"elinewidth": 0.8, "ecolor": "0.2"})
    zero = np.nan_to_num(values) == 0
    if zero.any():    # a 0% bar has no height: an outlined marker at 0 keeps it visible
      ax.plot(pos[zero], np.zeros(zero.sum()), linestyle="none", marker="s", markersize=6,
              markerfacecolor="white", markeredgecolor=colour, clip_on=False, zorder=3)
    if s.reference is not None:
      ref = np.asarray(s.reference, dtype=float)
      has = ~np.isnan(ref)
      ax.plot(pos[has], ref[has], linestyle="none", marker="_", markersize=9,
              markeredgewidth=2, color="black", zorder=4,
              label="paper" if k == 0 and has.any() else None)
    for p, v, top, n in zip(pos, values, hi, s.n):
      if np.isnan(v):
        text, y = "n=0", 0.0
      else:
        text, y = f"{value_format.format(v)}\nn={n}", max(v, 0.0 if np.isnan(top) else top)
      ax.annotate(text, (p, y), xytext=(0, 4), textcoords="offset points", ha="center",
                  va="bottom", fontsize=6, rotation=90 if crowded else 0, linespacing=0.9)
  slanted = len(categories) > 4 or max(map(len, categories), default=0) > 12
  ax.set_xticks(x, list(categories), rotation=25 if slanted else 0,
                ha="right" if slanted else "center", rotation_mode="anchor", fontsize=7)
  ax.set_xlim(-0.6, len(categories) - 0.4)
  ax.set_ylim(0, ymax * (1.32 if crowded else 1.2))
  if ymax == 100.0:
    ax.set_yticks(np.linspace(0, 100, 6))
  else:
    ax.yaxis.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))
  ax.set_ylabel(ylabel)
  if xlabel:
    ax.set_xlabel(xlabel)
  ax.grid(axis="y", alpha=0.3)
  ax.set_axisbelow(True)
  has_reference = any(s.reference is not None and not np.isnan(np.asarray(s.reference,
                                                                       dtype=float)).all()
                      for s in series)
  legend = any(s.label for s in series) or has_reference
  above = legend and len(series) <= 3
  if above:   # one row just above the axes, under the title: never over bars or labels
    ax.legend(fontsize=7, ncols=len(series) + 1, loc="lower left", frameon=False,
              bbox_to_anchor=(0.0, 1.0), borderaxespad=0.1, handlelength=1.2)
  elif legend:   # many series: one column right of the axes
    ax.legend(fontsize=7, loc="upper left", frameon=False, bbox_to_anchor=(1.0, 1.0),
              handlelength=1.2)
  if title:
    ax.set_title(title, fontsize=9, loc="left", pad=16 if above else 6)


def curve_with_band(ax, x: Sequence[float], y: Sequence[float], lo: Sequence[float] | None,
                    hi: Sequence[float] | None, *, label: str, n: int | None = None) -> None:
  """One line with markers and its shaded confidence band.

  Args:
    ax: the matplotlib axes to draw on.
    x: [K] x positions.
    y: [K] values.
    lo, hi: [K] the band (None: no band).
    label: the legend entry; " (n=<n>)" is appended when `n` is given.
    n: the number of observations behind every point (e.g. tasks).
  """
  line, = ax.plot(x, y, marker="o", markersize=3,
                  label=label if n is None else f"{label} (n={n})")
  if lo is not None and hi is not None:
    ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.18, linewidth=0)


def count_histogram(ax, samples: dict[str, Sequence[float]], *, xlabel: str,
                    ylabel: str = "episodes") -> None:
  """Overlaid histograms of several samples on shared bins, chosen from n (Sturges' rule).

  Args:
    ax: the matplotlib axes to draw on.
    samples: label -> [n] values; empty samples are skipped. Legend entries carry n.
    xlabel: the x axis label, with its unit.
    ylabel: what the counts count (integer ticks).
  """
  samples = {k: np.asarray(v, dtype=float) for k, v in samples.items() if len(v)}
  if not samples:
    return
  pooled = np.concatenate(list(samples.values()))
  n_bins = int(math.ceil(math.log2(max(len(v) for v in samples.values())))) + 1
  edges = np.histogram_bin_edges(pooled, bins=max(n_bins, 1))
  for label, values in samples.items():
    ax.hist(values, bins=edges, alpha=0.55, edgecolor="black", linewidth=0.5,
            label=f"{label} (n={len(values)})")
  ax.yaxis.set_major_locator(MaxNLocator(integer=True))
  ax.set_xlabel(xlabel)
  ax.set_ylabel(ylabel)
  ax.legend(fontsize=7, frameon=False)
