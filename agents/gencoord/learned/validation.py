"""Validation during SFT: greedy exact match on the forward `intervention` split.

The validation split is the 160 `intervention` clusters (suites.py): worlds disjoint from the
train and held-out splits, so selecting or stopping on it never looks at a held-out cluster.
Its rows are built exactly like the training rows (sender_initial and receiver_after_request
for both role views), and each is scored teacher-forced in one jitted forward: a row counts as
exact when the argmax at every target position (EOS included) is the target token. That is
the same event as "greedy decoding reproduces the target", so a cluster whose four rows are
exact is a cluster the closed loop commits correctly (the receiver row's context holds the
gold request, which is what an exact sender sends).

For rows that are not exact, `first_error_field` names the commitment field of the first wrong
token (`SELF:component`, `REQ:bind`, ...): the diagnosis of which decision a template-binding
has not learned yet, per role view and stage.
"""
import dataclasses
import json
import os
import re

import jax
import jax.numpy as jnp
import numpy as np

from agents.gencoord import data, suites
from agents.gencoord.learned import chat, training_recipes
from lib.sft import batches as sft_batches, chat_rows
from lib.train import checkpoint

SPLIT = "intervention"


@dataclasses.dataclass
class ValidationSet:
  """The encoded validation rows and their grouping keys."""
  rows: list                  # agents.gencoord.data.Row
  arrays: dict                # lib.sft.batches.left_padded layout
  target_ids: list            # per row: target token ids + EOS


def build(recipe_name: str, tokenizer, split: str = SPLIT) -> ValidationSet:
  """The validation rows of a training recipe, encoded with the run's tokenizer.

  Args:
    recipe_name: a key of training_recipes.TRAINING_RECIPES (a forward recipe).
    tokenizer: the tokenizer the training rows were encoded with.
    split: the forward split (never `heldout`: that is the evaluation pool).
  Returns:
    ValidationSet.
  """
  if split == "heldout":
    raise ValueError("validation on the held-out clusters would select on the evaluation pool")
  recipe = training_recipes.get(recipe_name)
  if recipe.protocol != "forward":
    raise ValueError(f"recipe {recipe_name!r} is not a forward recipe")
  rows = data.forward_rows(suites.suite(split), recipe.surface, recipe.horizon)
  return encode(rows, chat.sft_pairs(rows, recipe.surface), tokenizer)


def encode(rows, pairs, tokenizer) -> ValidationSet:
  """Rows and their (messages, target) chat pairs -> a ValidationSet (`make_scorer` scores it).

  `pairs` may render the rows another way than a policy does (the drill's own-section prompts,
  `drill.drill_pairs`): experiments/gencoord/sender_fit.py scores the same rows both ways.
  """
  examples = chat_rows.encode_rows(tokenizer, pairs)
  arrays = sft_batches.left_padded(examples, tokenizer.pad_token_id or 0)
  ids, mask = arrays["input_ids"], arrays["loss_mask"]
  targets = [ids[i][mask[i].astype(bool)].tolist() for i in range(len(rows))]
  return ValidationSet(list(rows), arrays, targets)


def make_scorer(apply_fn, vset: ValidationSet, batch: int = 64):
  """-> score(params) -> (exact bool [N], first_error int [N]; -1 where exact).

  One compiled forward serves every call: rows are scored `batch` at a time (the last batch is
  padded with copies of row 0 and the copies dropped).
  """
  k = int(vset.arrays["target_window"])
  n = len(vset.rows)
  pad = -n % batch
  cols = {key: np.concatenate([vset.arrays[key], np.repeat(vset.arrays[key][:1], pad, 0)])
          for key in ("input_ids", "attention_mask", "loss_mask")}

  @jax.jit
  def _chunk(params, input_ids, attention_mask, loss_mask):
    logits = apply_fn(params, input_ids, attention_mask, last=k + 1)
    pred = jnp.argmax(logits[:, :-1], axis=-1)
    gold, scored = input_ids[:, -k:], loss_mask[:, -k:].astype(bool)
    wrong = scored & (pred != gold)
    # Position of the first wrong token counted from the first target token of the row.
    first_target = jnp.argmax(scored, axis=-1)
    first_wrong = jnp.where(wrong.any(-1), jnp.argmax(wrong, axis=-1) - first_target, -1)
    return ~wrong.any(-1), first_wrong

  def score(params):
    exact, first = [], []
    for s in range(0, n + pad, batch):
      e, f = _chunk(params, *(jnp.asarray(cols[key][s:s + batch])
                              for key in ("input_ids", "attention_mask", "loss_mask")))
      exact.append(np.asarray(e))
      first.append(np.asarray(f))
    return np.concatenate(exact)[:n], np.concatenate(first)[:n]

  return score


_KEY = re.compile(r"(\w+)=")


def first_error_field(tokenizer, target_ids, index: int) -> str:
  """The commitment field that the first wrong token belongs to.

  Args:
    tokenizer: the run's tokenizer.
    target_ids: the row's target ids (EOS last).
    index: position of the first wrong token in target_ids.
  Returns:
    `<section>:<field>`: section SELF or REQ (the line being written); field the argument name
    the gold token writes or continues (`component`, `bind`, `q`, ...), `skill` for a skill
    name, `eos` for the end of the answer.
  """
  if index >= len(target_ids) - 1:
    return "eos"
  before = tokenizer.decode(target_ids[:index])
  through = tokenizer.decode(target_ids[:index + 1])
  section = "REQ" if before.rfind("REQ") > before.rfind("SELF") else "SELF"
  gold = through[len(before):]
  keys = _KEY.findall(gold) or _KEY.findall(before.rsplit("(", 1)[-1])
  if keys:
    return f"{section}:{keys[0]}"
  return f"{section}:skill" if "(" in gold or "." in gold else f"{section}:other"


def summarize(vset: ValidationSet, exact: np.ndarray, first: np.ndarray, tokenizer) -> dict:
  """Validation metrics of one evaluation.

  Returns:
    {row_exact, cluster_exact (a cluster: both role views, both stages, all exact),
     per_binding {template/binding: cluster_exact}, errors {template/binding/stage/r<view>:
     {field: rows}} for the rows that are not exact}. Rates are fractions in [0, 1].
  """
  clusters: dict = {}
  per: dict = {}
  errors: dict = {}
  for i, r in enumerate(vset.rows):
    ok = bool(exact[i])
    clusters[r.cluster_id] = clusters.get(r.cluster_id, True) and ok
    per.setdefault(f"{r.template}/{r.binding}", set()).add(r.cluster_id)
    if not ok:
      key = f"{r.template}/{r.binding}/{r.stage}/r{r.role_view}"
      field = first_error_field(tokenizer, vset.target_ids[i], int(first[i]))
      errors.setdefault(key, {}).setdefault(field, 0)
      errors[key][field] += 1
  per_binding = {k: float(np.mean([clusters[c] for c in sorted(v)]))
                 for k, v in sorted(per.items())}
  return {"row_exact": float(np.mean(exact)), "cluster_exact": float(np.mean(
      list(clusters.values()))), "per_binding": per_binding, "errors": errors}


def _rank(record: dict) -> tuple:
  """How validations compare for `keep="best"`: cluster exact match, then row exact match, then
  the later step (of equals, the model trained longer)."""
  return record["cluster_exact"], record["row_exact"], record["step"]


class EarlyStopping:
  """Validation every `every` steps; stop once the cluster exact match reaches `stop_at`.

  The rule is fixed in the config before a run (`train.select`), never read off held-out
  results: from step `min_steps` on, the first validation whose cluster exact match is at least
  `stop_at` ends training. Without such a validation the run trains its full budget. The model
  kept is the final step's (`keep="last"`) or the best validation's (`keep="best"`: highest
  cluster, then row exact match, the later step of equals; its params are saved to `best_dir`
  when it is validated, so a resumed run keeps it). Every validation is appended to
  `<workdir>/validation.jsonl` (step, rates, per-binding rates, first-error fields).
  """

  def __init__(self, vset: ValidationSet, tokenizer, *, every: int, min_steps: int,
               stop_at: float, path: str, keep: str = "last", best_dir: str | None = None):
    if keep not in ("last", "best"):
      raise ValueError(f"train.select.keep must be 'last' or 'best', not {keep!r}")
    if keep == "best" and not best_dir:
      raise ValueError('keep="best" needs a best_dir for the best model\'s params')
    self.vset, self.tokenizer, self.every = vset, tokenizer, every
    self.min_steps, self.stop_at, self.path = min_steps, stop_at, path
    self.keep, self.best_dir = keep, best_dir
    self.last: dict | None = None

  def best(self) -> dict | None:
    """The best validation so far (`_rank`) of this run and any run it resumed, or None."""
    records = history(self.path)
    return max(records, key=_rank) if records else None

  def _save_if_best(self, record: dict, params) -> None:
    best = self.best()
    if best is not None and _rank(best) > _rank(record):
      return
    ckpt = checkpoint.Checkpointer(self.best_dir, max_to_keep=1)
    if record["step"] not in ckpt.all_steps():   # a resumed run re-validates saved steps
      ckpt.save(record["step"], params, metadata={k: record[k] for k in
                                                   ("cluster_exact", "row_exact")})
    ckpt.close()

  def kept_params(self, params):
    """-> (params of the kept model, its step or None for the final one). `params` is the final
    step's (and the template the best model's params restore into)."""
    best = self.best() if self.keep == "best" else None
    if best is None:
      return params, None
    ckpt = checkpoint.Checkpointer(self.best_dir, max_to_keep=1)
    restored, _ = ckpt.restore(template=params, step=best["step"])
    ckpt.close()
    return restored, best["step"]

  def bind(self, apply_fn):
    """-> validate(step, params) -> (scalars, stop), the `lib.sft.loop.train` hook."""
    score = make_scorer(apply_fn, self.vset)

    def validate(step: int, params):
      exact, first = score(params)
      summary = summarize(self.vset, exact, first, self.tokenizer)
      stop = step >= self.min_steps and summary["cluster_exact"] >= self.stop_at
      self.last = dict(step=step, stop=bool(stop), **summary)
      if self.keep == "best":          # before the record is appended: it is compared with the rest
        self._save_if_best(self.last, params)
      with open(self.path, "a", encoding="utf-8") as f:
        f.write(json.dumps(self.last, sort_keys=True) + "\n")
      return {"row_exact": summary["row_exact"],
              "cluster_exact": summary["cluster_exact"]}, stop

    return validate


def history(path: str) -> list:
  """The validations a run appended to `path`, one per step in step order (empty: none)."""
  if not os.path.exists(path):
    return []
  with open(path, encoding="utf-8") as f:
    by_step = {}        # a resumed run re-validates the steps after its last checkpoint
    for line in f:
      if line.strip():
        rec = json.loads(line)
        by_step[rec["step"]] = rec
  return [by_step[s] for s in sorted(by_step)]
