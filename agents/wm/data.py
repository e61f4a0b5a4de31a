"""World-model data: trajectories -> next-observation samples, seeded sampling, held-out splits.

A sample is one executed transition with its context: (task, recent history, current observation,
action, true next observation). Steps without a parsable action are skipped (there is no action to
condition on); refused actions stay in (predicting "Nothing happens." is part of the dynamics).

  samples = transitions(trajs, history_window=5)
  train = sample(samples, n=20_000, seed=42)                    # the audit's 20k at seed 42
  test = held_out(eval_samples, train, n=1_200, seed=42)        # transitions absent from train
  mis = with_mismatched_targets(train, seed=0)                   # MIS targets (text derangement)
  messages = prompt_messages(s) / teacher_messages(s, target)    # chat input for GRPO / OPSD
  texts = tokenizer_corpus(train)                                # what a tiny BPE is trained on
"""
import dataclasses
from typing import Iterable, Sequence

import numpy as np

from agents.wm.prompts import world_model_prompt
from agents.wm.rewards import mismatched_targets
from agents.wm.trajectory import Trajectory
from lib.run.jsonl import read_jsonl


@dataclasses.dataclass
class WMSample:
  env: str
  task_id: str
  task: str
  history: list[tuple[str, str | None]]
  obs: str
  action: str
  next_obs: str
  step: int = 0
  target: str | None = None  # training target; None means the true next observation

  @property
  def key(self) -> tuple[str, str, str, str]:
    """Identity of the transition itself (context-free): task, observation, action, outcome."""
    return (self.task, self.obs, self.action, self.next_obs)

  def to_json(self) -> dict:
    return dataclasses.asdict(self)

  @classmethod
  def from_json(cls, d: dict) -> "WMSample":
    return cls(**{**d, "history": [tuple(h) for h in d["history"]]})


def transitions(trajs: Iterable[Trajectory], history_window: int = 5) -> list[WMSample]:
  """Every step with an action of every trajectory, with its last `history_window` steps."""
  out = []
  for traj in trajs:
    history: list[tuple[str, str | None]] = []
    for t, step in enumerate(traj.steps):
      if step.action is not None:
        window = history[-history_window:] if history_window else []
        out.append(WMSample(traj.env, traj.task_id, traj.task, list(window), step.obs,
                            step.action, step.next_obs, t))
      history.append((step.obs, step.action))
  return out


def dedup(samples: Sequence[WMSample]) -> list[WMSample]:
  """Keeps the first sample of each transition key (task, observation, action, outcome)."""
  seen, out = set(), []
  for s in samples:
    if s.key not in seen:
      seen.add(s.key)
      out.append(s)
  return out


def sample(samples: Sequence[WMSample], n: int, seed: int = 42) -> list[WMSample]:
  """n samples drawn without replacement by a seeded Generator (all of them if n >= len)."""
  if n < 0:
    raise ValueError(f"n must be >= 0, got {n}")
  rng = np.random.default_rng(seed)
  if n >= len(samples):
    order = rng.permutation(len(samples))
  else:
    order = rng.choice(len(samples), size=n, replace=False)
  return [samples[i] for i in order]


def held_out(candidates: Sequence[WMSample], train: Sequence[WMSample], n: int | None = None,
             seed: int = 42) -> list[WMSample]:
  """Candidates whose transition (task, observation, action, outcome) never occurs in `train`,
  deduplicated, then `n` of them sampled with `seed` (all when n is None)."""
  seen = {s.key for s in train}
  fresh = dedup([s for s in candidates if s.key not in seen])
  return fresh if n is None else sample(fresh, n, seed)


def with_mismatched_targets(samples: Sequence[WMSample], seed: int) -> list[WMSample]:
  """MIS: each sample's target becomes another sample's true next observation (a text-level
  derangement from `agents.wm.rewards.mismatched_targets`); inputs are unchanged."""
  targets = mismatched_targets([s.next_obs for s in samples], seed)
  return [dataclasses.replace(s, target=t) for s, t in zip(samples, targets)]


def target_of(s: WMSample) -> str:
  return s.next_obs if s.target is None else s.target


def prompt_messages(s: WMSample) -> list[dict]:
  """The world-model (student) chat input of a sample."""
  return [{"role": "user", "content": world_model_prompt(s.env, s.task, s.history, s.obs,
                                                         s.action)}]


def teacher_messages(s: WMSample) -> list[dict]:
  """The OPSD teacher's input: the student prompt plus the sample's target (GT or MIS)."""
  return [{"role": "user", "content": world_model_prompt(s.env, s.task, s.history, s.obs,
                                                         s.action, privileged_next=target_of(s))}]


def tokenizer_corpus(samples: Sequence[WMSample]) -> list[str]:
  """Texts a tiny model's tokenizer is trained on: prompts, targets and the tags."""
  out = [m["content"] for s in samples for m in teacher_messages(s)]
  return out + ["<think> </think> <next_state> </next_state> <action> </action>"] * 8


def load_samples(path: str) -> list[WMSample]:
  """The samples of a JSONL file written by `lib.run.jsonl.write_jsonl` (one to_json() a line)."""
  return [WMSample.from_json(r) for r in read_jsonl(path)]


def load_trajectories(path: str) -> list[Trajectory]:
  """The trajectories of a JSONL file of Trajectory.to_json() rows."""
  return [Trajectory.from_json(r) for r in read_jsonl(path)]
