"""World-model post-training under one of the audit's conditions (agents/wm/conditions.py).

Every condition reads the same next-observation samples (train.jsonl from experiments/wm/data.py),
builds the same world-model prompts, drops the same over-long inputs (Table 6: inputs above the
length limit are removed before training), visits them in the same seeded order with the same
optimizer and sampling settings; only the reward or supervision source differs:

  GRPO-*  lib/rl/grpo.py: 8 responses per prompt, reward from the condition (embedding similarity of
          the <next_state> prediction to the GT or MIS target, or a coin), *-PERM shuffles scores
          within each group, k3 KL to the initial model, entropy bonus, dual clip.
  OPSD-*  lib/rl/opsd.py: one response per prompt, the frozen initial model as teacher sees the
          GT or MIS next observation; generalized JSD on the student's <next_state> span.
  BASE    no updates; the initial model is exported so evaluation treats it like the others.

Outputs: TensorBoard scalars, checkpoints in <workdir>/ckpt (the RL loop of lib/rl/loop.py;
resumable: data order and keys depend only on (seed, iteration)), the final model as an HF
directory <workdir>/hf (loadable by the flax backend and by transformers/vLLM), summary.json/md.
"""
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from agents.wm import conditions, data, embedders, policy
from agents.wm.rewards import extract_next_state
from lib.parallel import sharding
from lib.rl import grpo, loop as rl_loop, opsd
from lib.run.results import write_summary
from lib.train import optim, setup as train_loop
from lib.train.state import nnx_apply_fn


def load_samples(c) -> list[data.WMSample]:
  if not c.train:
    raise ValueError("config.data.train must name a train.jsonl from experiments/wm/data.py")
  samples = data.load_samples(c.train)
  if c.env:
    samples = [s for s in samples if s.env == c.env]
  if c.limit:
    samples = samples[:c.limit]
  if not samples:
    raise ValueError(f"no training samples in {c.train} (env filter {c.env!r})")
  return samples


class PromptSet:
  """Student (and teacher) prompt token ids of the samples that fit the input limit."""

  def __init__(self, tok, samples, targets, max_input: int, with_teacher: bool):
    self.samples, self.targets, self.dropped = [], [], 0
    self.student, self.teacher = [], []
    for s, t in zip(samples, targets):
      ids = policy.encode_chat(tok, data.prompt_messages(s))
      if len(ids) > max_input:
        self.dropped += 1
        continue
      self.samples.append(s)
      self.targets.append(t)
      self.student.append(ids)
      if with_teacher:
        teacher_sample = data.WMSample(**{**s.to_json(), "target": t})
        self.teacher.append(policy.encode_chat(tok, data.teacher_messages(teacher_sample)))
    self.pad_id = tok.pad_token_id or 0

  def __len__(self):
    return len(self.samples)

  def batch_indices(self, seed: int, it: int, batch: int) -> np.ndarray:
    """Indices of iteration `it`: epoch-wise seeded permutations, remainder dropped."""
    per_epoch = len(self) // batch
    epoch, pos = divmod(it, per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(len(self))
    return order[pos * batch:(pos + 1) * batch]

  def padded(self, rows, idx, minimum: int = 16):
    return policy.pad_left([rows[i] for i in idx], self.pad_id, minimum=minimum)


# Per RL trainer: its class, its config class, and its argument for the frozen initial model
# (GRPO's KL reference, OPSD's teacher).
_TRAINERS = {"grpo": (grpo.GRPOTrainer, grpo.GRPOConfig, "ref_params"),
             "opsd": (opsd.OPSDTrainer, opsd.OPSDConfig, "teacher_params")}


def make_tx(config, steps: int):
  return optim.from_config(config.optim, max(steps, 1))


def train_condition(config, workdir):
  """Post-trains the model of `config.model` under `config.condition` (see the module doc).

  Args:
    config: a wm/train config (configs/wm/train.py).
    workdir: the run directory (checkpoints, hf/, summary.json/md, TensorBoard).
  Returns:
    The summary dict (`hf_dir`: the exported model, "" without `train.export`).
  """
  t_start, cpu_start = time.perf_counter(), time.process_time()
  cond = conditions.get(config.condition)
  c = config.train
  if config.grpo.permute_scores != cond.permute:
    raise ValueError(f"grpo.permute_scores={config.grpo.permute_scores} contradicts condition "
                     f"{cond.name} (permute={cond.permute})")
  samples = load_samples(config.data)
  model, tok = policy.load_policy(config.model, config.seed, workdir,
                                  data.tokenizer_corpus(samples))
  targets = conditions.training_targets([s.next_obs for s in samples], cond, config.data.mis_seed)
  prompts = PromptSet(tok, samples, targets, c.max_input_tokens, cond.trainer == "opsd")
  batch = c.batch
  if len(prompts) < batch:
    raise ValueError(f"{len(prompts)} samples fit max_input_tokens={c.max_input_tokens}; "
                     f"need at least batch={batch}")
  steps = c.steps or (len(prompts) // batch) * c.epochs
  if cond.trainer is None:
    steps = 0
  key = jax.random.key(config.seed)
  tx = make_tx(config, steps)
  dtype = None if config.model.dtype == "float32" else jnp.dtype(config.model.dtype)
  apply_fn, params = nnx_apply_fn(model, compute_dtype=dtype)
  mesh = sharding.mesh_from_config(config)   # FSDP shards of the state, the batch split
  state, state_sh = train_loop.create_state(params, tx, mesh)
  sample_kw = dict(max_new_tokens=c.max_output_tokens, eos_ids=policy.eos_ids(tok, model),
                   pad_id=prompts.pad_id)
  decode = lambda row, n: policy.decode(tok, row, n)
  if cond.trainer:
    trainer_cls, config_cls, initial_arg = _TRAINERS[cond.trainer]
    cfg = config_cls.from_config(config[cond.trainer])
  if cond.trainer == "grpo":
    embed = embedders.make_embedder(config.embedder) if cond.reward == "embedding" else None
  pad = c.pad_prompts_to or 16
  formed = []   # well-formed replies (a complete, non-empty <next_state>) of the latest iteration

  def make_trainer(state, initial_params):   # GRPO reference / OPSD teacher: the initial model
    if not cond.trainer:
      return None
    return trainer_cls(apply_fn, grpo.nnx_sample_fn(model, temperature=cfg.temperature,
                                                    weights_dtype=cfg.rollout_dtype,
                                                    prefill_rows=cfg.prefill_rows, **sample_kw),
                       state, tx, cfg, **{initial_arg: initial_params},
                       step_fn=trainer_cls.mesh_step_fn(apply_fn, tx, cfg, batch, mesh, state_sh))

  def iterate(trainer, it):
    idx = prompts.batch_indices(config.seed, it, batch)
    it_key = jax.random.fold_in(jax.random.fold_in(key, 1), it)
    student = prompts.padded(prompts.student, idx, pad)
    formed.clear()

    def watch(tokens, lengths):
      formed.extend(extract_next_state(decode(tokens[i], int(lengths[i]))) is not None
                    for i in range(len(tokens)))

    if cond.trainer == "grpo":
      inner = conditions.make_reward_fn(
          cond, [prompts.targets[i] for i in idx], decode, embed, cfg.group_size,
          jax.random.fold_in(jax.random.fold_in(key, 2), it), config.reward.threshold,
          config.reward.coin_p)

      def reward_fn(tokens, lengths):
        watch(tokens, lengths)
        return inner(tokens, lengths)

      return trainer.iteration(*student, reward_fn, it_key)

    def span_fn(tokens, lengths):
      watch(tokens, lengths)
      if c.span == "next_state":
        return policy.next_state_span(tok, tokens, lengths)
      return np.ones(tokens.shape, np.int32)
    teacher = prompts.padded(prompts.teacher, idx, pad)
    return trainer.iteration(student, teacher, it_key, span_fn=span_fn)

  def record(m):   # the training signal and what the trainer saw, kept in the checkpoints
    if cond.trainer == "grpo":
      return {"signal": m["reward_mean"], "well_formed": float(np.mean(formed)),
              "reward_std": m["reward_std"],
              "nonzero_adv_group_frac": 1.0 - m["zero_std_group_frac"]}
    return {"signal": m["jsd"], "well_formed": float(np.mean(formed)),
            "target_span_tokens": m["target_span_tokens"]}

  settings = rl_loop.RLLoopConfig(log_every=c.log_every, ckpt_every=c.ckpt_every,
                                  prefix=f"{cond.trainer}/", desc=cond.name,
                                  start_fresh=train_loop.fresh_start(config))
  run = rl_loop.train(state, make_trainer, iterate, steps, workdir, settings, record=record,
                      started=(t_start, cpu_start))
  history = [r["signal"] for r in run.records]
  stats = [{k: v for k, v in r.items() if k != "signal"} for r in run.records]
  tokens_seen = run.tokens_seen
  hf_dir = (policy.export(model, run.state.params, tok, os.path.join(workdir, "hf"))
            if c.export else "")
  k = max(1, len(history) // 5)
  summary = {
      "condition": cond.name, "trainer": cond.trainer or "none", "target": cond.target or "none",
      "reward": cond.reward or ("teacher JSD" if cond.trainer == "opsd" else "none"),
      "permute_scores": cond.permute, "embedder": config.embedder.kind
      if cond.reward == "embedding" else "none",
      "samples": len(prompts), "dropped_over_length": prompts.dropped, "steps": steps,
      "resumed_from": run.resumed_from, "tokens_seen": tokens_seen,
      "signal_first": float(np.mean(history[:k])) if history else None,
      "signal_last": float(np.mean(history[-k:])) if history else None,
      "signal_mean": float(np.mean(history)) if history else None,
      **{f"{name}_mean": float(np.mean([r[name] for r in stats]))
         for name in (stats[0] if stats else {})},
      "hf_dir": hf_dir, **dict(zip(("wall_s", "cpu_s"), run.elapsed()))}
  signal = "mean reward" if cond.trainer == "grpo" else "student-teacher JSD"
  # well_formed_mean: replies with a complete <next_state>; for GRPO, reward_std_mean is the
  # within-batch reward spread and nonzero_adv_group_frac_mean the groups that carry a gradient.
  write_summary(workdir, summary, [summary], title=f"World-model training: {cond.name}",
                notes=f"{signal} over the first / last {k} iterations: {summary['signal_first']}"
                      f" -> {summary['signal_last']}. Embedder: {summary['embedder']}"
                      + (" (lexical stand-in, CPU scale)"
                         if summary["embedder"] == "lexical" else "") + ".")
  return summary
