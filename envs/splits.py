"""Seeded evaluation instance sets and budgets (ConPAct paper, Tables 4 and 5).

A is the limit on executed actions and C the limit on logical model calls per rollout; each
evaluation instance gets eight rollouts. Instances are fully determined by the seeds here:
- Sokoban: levels from the reverse-play generator, source and evaluation drawn from different seeds,
  no board in both; every level is solved by BFS and carries its optimal action count.
- Crafter: world seeds (crafter generates the world from the seed).
- Procgen: level ids per game, evaluation levels 100-119, source levels the first n of 0-49.
Board size, box count and move range for Sokoban are our choice (the paper does not give them);
they keep each level's optimal solution well inside A = 60.
"""
import dataclasses
import functools

import numpy as np

from envs.sokoban import generator, solver


@dataclasses.dataclass(frozen=True)
class Budget:
  source: int  # instances available for training data / demonstrations
  evaluation: int  # held-out evaluation instances
  rollouts: int  # evaluation rollouts per instance
  actions: int  # A
  calls: int  # C


BUDGETS = {
    "sokoban": Budget(source=100, evaluation=200, rollouts=8, actions=60, calls=60),
    "crafter": Budget(source=100, evaluation=200, rollouts=8, actions=160, calls=160),
    # Table 4 says 140 Procgen evaluation instances, Table 5 six games x 20 levels = 120 (and 86
    # source levels); `procgen_levels` follows Table 5 and the issue (levels 100-119 per game).
    "procgen": Budget(source=100, evaluation=140, rollouts=8, actions=160, calls=160),
}

SOKOBAN_LEVELS = dict(height=8, width=8, num_boxes=2, min_moves=6, max_moves=40)
_SOKOBAN_SEEDS = {"source": 20_000, "evaluation": 30_000}
CRAFTER_SEEDS = {"source": range(0, 100), "evaluation": range(10_000, 10_200)}

# game -> (source level count, R_min, R_max) for easy mode (paper Table 5, from Cobbe et al. 2020)
PROCGEN_GAMES = {"bigfish": (14, 1.0, 40.0), "chaser": (14, 0.5, 13.0), "coinrun": (15, 5.0, 10.0),
                 "jumper": (14, 3.0, 10.0), "maze": (14, 5.0, 10.0), "miner": (15, 1.5, 13.0)}
PROCGEN_EVAL_LEVELS = range(100, 120)


@dataclasses.dataclass(frozen=True)
class SokobanInstances:
  ids: tuple[str, ...]
  levels: np.ndarray  # int8 [N, H, W]
  optimal_moves: np.ndarray  # int32 [N], BFS optimum
  budget: Budget


def _check_split(split: str) -> None:
  if split not in ("source", "evaluation"):
    raise ValueError(f"split must be 'source' or 'evaluation', got {split!r}")


@functools.lru_cache(maxsize=2)
def sokoban_instances(split: str) -> SokobanInstances:
  """The Sokoban source (100) or evaluation (200) levels; evaluation boards never occur in source."""
  _check_split(split)
  budget = BUDGETS["sokoban"]
  n = budget.source if split == "source" else budget.evaluation
  levels = generator.generate_levels(_SOKOBAN_SEEDS[split], n + 20, **SOKOBAN_LEVELS)
  if split == "evaluation":
    seen = {lv.tobytes() for lv in sokoban_instances("source").levels}
    levels = np.stack([lv for lv in levels if lv.tobytes() not in seen])
  levels = levels[:n]
  moves = np.array([solver.solve(lv).length for lv in levels], np.int32)
  ids = tuple(f"sokoban-{split}-{i:03d}" for i in range(n))
  return SokobanInstances(ids, levels, moves, budget)


def crafter_seeds(split: str) -> list[int]:
  _check_split(split)
  return list(CRAFTER_SEEDS[split])


def procgen_levels(split: str) -> list[tuple[str, int]]:
  """(game, level id) pairs: the first n of 0-49 per game for source, 100-119 per game for evaluation."""
  _check_split(split)
  if split == "evaluation":
    return [(g, lvl) for g in PROCGEN_GAMES for lvl in PROCGEN_EVAL_LEVELS]
  return [(g, lvl) for g, (n, _, _) in PROCGEN_GAMES.items() for lvl in range(n)]


def procgen_normalized_return(game: str, episode_return: float) -> float:
  """(R - R_min) / (R_max - R_min) with the easy-mode bounds of the paper."""
  _, lo, hi = PROCGEN_GAMES[game]
  return (episode_return - lo) / (hi - lo)
