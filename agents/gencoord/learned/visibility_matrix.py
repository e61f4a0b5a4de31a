"""Task-structure visibility matrix (paper Figure S5) for `gencoord/learned` study=visibility.

Conditions are named `<method>/<view>`; every cell is the terminal success of one method under
one view on one motif (episodes over role views and seeds, i.e. the mean of the cluster means,
since every cluster has the same number of episodes), with its cluster-bootstrap 95% CI and the
paper's figure beside it. The PNG is the annotated 3-method x (3 motifs x 3 views) heatmap.
"""
import os

import numpy as np

from agents.gencoord import motifs
from lib.report import plots, stats

METHOD_TITLES = {"dsl": "Short DSL", "freeform": "Controlled free-form",
                 "rule": "Factorized rule"}
VIEW_TITLES = {"full": "Full", "skeleton": "Skeleton", "node_only": "Node-only"}
_MOTIF_OF = {t: m for m, t in motifs.MOTIF_TEMPLATES.items()}


def _paper_cells(text: str) -> list:
  """'familiar 100 / post 0 / pre 24.5' -> [100.0, 0.0, 24.5]."""
  return [float(part.split()[-1]) for part in text.split(" / ")] if text else []


def cells(rows_by: dict, specs, n_resamples: int = 10_000, seed: int = 0) -> dict:
  """(method, view, motif) -> (success %, ci low %, ci high %, episodes)."""
  out = {}
  for i, s in enumerate(specs):
    method = s["name"].rsplit("/", 1)[0]
    for j, motif in enumerate(motifs.MOTIFS):
      rows = [r for r in rows_by[s["name"]] if _MOTIF_OF.get(r["template"]) == motif]
      if not rows:
        continue
      by: dict = {}
      for r in rows:
        by.setdefault(r["cluster_id"], []).append(float(r["success"]))
      lo, hi = stats.bootstrap_ci({k: [float(np.mean(v))] for k, v in by.items()},
                                  n_resamples=n_resamples, seed=seed + 10 * i + j)
      out[(method, s["view"], motif)] = (100.0 * np.mean([r["success"] for r in rows]),
                                         100.0 * lo, 100.0 * hi, len(rows))
  return out


def table(matrix: dict, paper: dict) -> list:
  """One row per (method, view): each motif's success, CI and the paper's cell."""
  out = []
  for method in METHOD_TITLES:
    for view in VIEW_TITLES:
      if not any((method, view, m) in matrix for m in motifs.MOTIFS):
        continue
      ref = _paper_cells(paper.get(f"{method}/{view}", ""))
      row = {"method": METHOD_TITLES[method], "view": VIEW_TITLES[view]}
      for j, motif in enumerate(motifs.MOTIFS):
        cell = matrix.get((method, view, motif))
        row[f"{motif}_%"] = cell[0] if cell else float("nan")
        row[f"{motif}_ci95"] = f"[{cell[1]:.1f}, {cell[2]:.1f}]" if cell else "-"
        row[f"{motif}_paper_%"] = ref[j] if ref else float("nan")
      row["episodes"] = sum(matrix[(method, view, m)][3] for m in motifs.MOTIFS
                            if (method, view, m) in matrix)
      out.append(row)
  return out


def heatmap(workdir: str, matrix: dict, paper: dict, name: str = "visibility_matrix.png"):
  """Annotated heatmap: rows = methods, columns = motif x view; each cell our success with its
  cluster-bootstrap 95% CI and n episodes, the paper's figure below. Returns the file name."""
  methods = [m for m in METHOD_TITLES if any(k[0] == m for k in matrix)]
  cols = [(motif, view) for motif in motifs.MOTIFS for view in VIEW_TITLES]
  grid = np.full((len(methods), len(cols)), np.nan)
  for i, m in enumerate(methods):
    for j, (motif, view) in enumerate(cols):
      if (m, view, motif) in matrix:
        grid[i, j] = matrix[(m, view, motif)][0]
  fig, ax = plots.figure(11, 1.8 + 1.2 * len(methods))
  im = ax.imshow(grid, cmap="viridis", vmin=0, vmax=100, aspect="auto")
  for i, m in enumerate(methods):
    ref = {v: _paper_cells(paper.get(f"{m}/{v}", "")) for v in VIEW_TITLES}
    for j, (motif, view) in enumerate(cols):
      if np.isnan(grid[i, j]):
        continue
      _, lo, hi, n = matrix[(m, view, motif)]
      text = f"{grid[i, j]:.1f}%\n[{lo:.0f}, {hi:.0f}]\nn={n}"
      if ref[view]:
        text += f"\n(paper {ref[view][motifs.MOTIFS.index(motif)]:g}%)"
      ax.text(j, i, text, ha="center", va="center", fontsize=7,
              color="black" if grid[i, j] > 60 else "white")
  ax.set_xticks(range(len(cols)), [f"{motif}\n{VIEW_TITLES[v]}" for motif, v in cols],
                fontsize=7)
  ax.set_yticks(range(len(methods)), [METHOD_TITLES[m] for m in methods], fontsize=8)
  for x in (2.5, 5.5):
    ax.axvline(x, color="white", linewidth=2)
  ax.set_title("Task-structure visibility: terminal success (%) by motif and view\n"
               "[95% cluster-bootstrap CI], n = episodes, the paper's figure below", fontsize=9)
  fig.colorbar(im, ax=ax, fraction=0.02, label="terminal success (%)")
  return os.path.basename(plots.save(fig, os.path.join(workdir, name)))
