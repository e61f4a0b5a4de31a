"""Reusing a model another GenCoord learned run has trained, when it is provably the same model.

A study whose recipe, seed, rows and tokenizer match another run's (the quickstart's Direct Short
DSL seeds serve the representation, backend, request, horizon and visibility studies) copies that
run's checkpoints instead of training again (`config.reuse_models_from`, a list of run
directories). The training stream is a function of what is compared here, so the copied
checkpoint is the one this run would have written:

  config.json   the `model`, `mesh` and `train` blocks, `number_tokens`,
                `train_clusters_per_template` and `max_rows` are equal, and the seed was trained
                there. One difference is allowed: `train.select` (the validation stop) may be off
                here when the other run's stop never fired (its validation history has no stop)
                and it kept its final step (`train.select.keep="last"`), since validation only
                reads the parameters; a reused `keep="best"` model brings its `best/` params
  run_env.json  the numerics settings and versions are equal (lib/run/run_env.py); a run without
                the record is reused with a warning
  data/         `<recipe>.jsonl` and `<recipe>_drill.jsonl` are byte-identical (or both absent)
  tokenizer     `models/<recipe>/tokenizer/tokenizer.json` is byte-identical (a single-recipe run
                made before per-recipe tokenizers keeps it in `tokenizer/`), or differs only in
                the pre-tokenizer's spelling while vocabulary, merges and every other part are
                equal and both encode every prompt and target of the data files to the same ids
                (files written before the item pattern's order was fixed); a model started from
                a checkpoint brings its own

A checkpoint short of the final step resumes here and trains on, to the same model.
"""
import filecmp
import json
import os
import shutil

from tokenizers import Tokenizer

from lib.run import run_env

_SAME_FIELDS = ("model", "mesh", "number_tokens", "train_clusters_per_template", "max_rows")
# Train fields added after runs were made, with the behaviour those runs had: a run without the
# field trained with this value.
_ADDED_TRAIN_FIELDS = {"schedule": "cosine", "decay_frac": 0.2}


def _load_json(path: str):
  try:
    with open(path, encoding="utf-8") as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def _same_file(a: str, b: str) -> bool:
  if not os.path.exists(a) and not os.path.exists(b):
    return True
  return os.path.isfile(a) and os.path.isfile(b) and filecmp.cmp(a, b, shallow=False)


def _tokenizer_file(workdir: str, cfg: dict, recipe: str) -> str:
  path = os.path.join(workdir, "models", recipe, "tokenizer", "tokenizer.json")
  if not os.path.exists(path) and list(cfg.get("recipes", [])) == [recipe]:
    path = os.path.join(workdir, "tokenizer", "tokenizer.json")
  return path


def _same_tokenizer(a: str, b: str, data_files) -> bool:
  """Byte-identical files, or the same tokenizer spelled differently: equal apart from the
  pre-tokenizer, and the same ids for every prompt and target in `data_files` (JSONL rows)."""
  if _same_file(a, b):
    return True
  if not (os.path.isfile(a) and os.path.isfile(b)):
    return False
  left, right = _load_json(a), _load_json(b)
  if left is None or right is None:
    return False
  if {k: v for k, v in left.items() if k != "pre_tokenizer"} != {
      k: v for k, v in right.items() if k != "pre_tokenizer"}:
    return False
  tok_a, tok_b = Tokenizer.from_file(a), Tokenizer.from_file(b)
  for path in data_files:
    if not os.path.exists(path):
      continue
    with open(path, encoding="utf-8") as f:
      rows = [json.loads(line) for line in f if line.strip()]
    texts = [r[k] for r in rows for k in ("prompt", "target")]
    if [e.ids for e in tok_a.encode_batch(texts)] != [e.ids for e in tok_b.encode_batch(texts)]:
      return False
  return True


def _stop_fired(validation_path: str) -> bool | None:
  """Whether a validation history records a fired stop (None: no readable history)."""
  try:
    with open(validation_path, encoding="utf-8") as f:
      records = [json.loads(line) for line in f if line.strip()]
  except (OSError, ValueError):
    return None
  return any(r.get("stop") for r in records)


def model_dir(workdir: str, recipe: str, seed: int) -> str:
  return os.path.join(workdir, "models", recipe, f"s{seed}")


def _select(block: dict | None) -> dict | None:
  """A `train.select` block with the fields later added given their default values."""
  return None if block is None else {"keep": "last", **block}


def check(ours: dict, workdir: str, other: str, recipe: str, seed: int
          ) -> tuple[list[str], list[str]]:
  """Whether `other`'s model of (recipe, seed) is the one `workdir`'s run would train.

  Args:
    ours: this run's resolved config as JSON (`config.to_json_best_effort()` loaded).
    workdir: this run's directory (its data/ and tokenizer files already written).
    other: another run's directory.
    recipe, seed: the model.
  Returns:
    (reasons it is not the same model: empty when it is, warnings).
  """
  theirs = _load_json(os.path.join(other, "config.json"))
  if theirs is None:
    return [f"no readable config.json in {other}"], []
  src = model_dir(other, recipe, seed)
  ckpt = os.path.join(src, "ckpt")
  if not (os.path.isdir(ckpt) and os.listdir(ckpt)):
    return [f"no checkpoint of {recipe}/s{seed}"], []
  reasons, warnings = [], []
  if seed not in theirs.get("seeds", []):
    reasons.append(f"seed {seed} not among its seeds {theirs.get('seeds')}")
  for field in _SAME_FIELDS:
    if theirs.get(field) != ours.get(field):
      reasons.append(f"config field {field} differs")
  train_ours, train_theirs = dict(ours.get("train", {})), dict(theirs.get("train", {}))
  for key, value in _ADDED_TRAIN_FIELDS.items():
    train_ours.setdefault(key, value)
    train_theirs.setdefault(key, value)
  sel_ours, sel_theirs = (_select(t.pop("select", None)) for t in (train_ours, train_theirs))
  if train_ours != train_theirs:
    keys = sorted(k for k in set(train_ours) | set(train_theirs)
                  if train_ours.get(k) != train_theirs.get(k))
    reasons.append(f"train fields differ: {', '.join(keys)}")
  if sel_ours != sel_theirs:
    fired = _stop_fired(os.path.join(src, "validation.jsonl"))
    if sel_ours is not None or fired is not False:
      reasons.append("train.select differs" + (
          "" if sel_ours is not None else " and its validation stop fired or left no history"))
    elif sel_theirs["keep"] == "best":
      reasons.append("its model is the best validation's (train.select.keep=best), not the final "
                     "step's")
  env_ours, env_theirs = run_env.load(workdir), run_env.load(other)
  if env_theirs is None:
    warnings.append(f"{other} has no {run_env.FILENAME}: its numerics settings are not recorded")
  elif env_ours is not None:
    reasons += [f"numerics {d}" for d in run_env.differences(env_ours, env_theirs)]
  for name in (f"{recipe}.jsonl", f"{recipe}_drill.jsonl"):
    if not _same_file(os.path.join(workdir, "data", name), os.path.join(other, "data", name)):
      reasons.append(f"data/{name} differs")
  if not (ours.get("model") or {}).get("checkpoint"):
    data_files = [os.path.join(workdir, "data", f"{recipe}{s}.jsonl") for s in ("", "_drill")]
    if not _same_tokenizer(_tokenizer_file(workdir, ours, recipe),
                           _tokenizer_file(other, theirs, recipe), data_files):
      reasons.append("tokenizer differs")
  return reasons, warnings


def adopt(ours: dict, workdir: str, others, recipe: str, seed: int, log=print) -> str | None:
  """Copies the first matching model of `others` into `workdir` (its checkpoints and, when this
  run validates the same way, its validation history) unless `workdir` already has a checkpoint.

  Args:
    ours, workdir, recipe, seed: as `check`.
    others: run directories to look in, in order.
    log: one-line reporter (e.g. absl logging.info).
  Returns:
    The directory the model came from, or None (train here).
  """
  dst = model_dir(workdir, recipe, seed)
  if os.path.isdir(os.path.join(dst, "ckpt")) and os.listdir(os.path.join(dst, "ckpt")):
    return None                                  # this run's own checkpoint: resume it
  for other in others:
    if os.path.abspath(other) == os.path.abspath(workdir):
      continue
    reasons, warnings = check(ours, workdir, other, recipe, seed)
    if reasons:
      log(f"reuse {recipe}/s{seed}: not from {other}: {'; '.join(reasons)}")
      continue
    for w in warnings:
      log(f"reuse {recipe}/s{seed}: warning: {w}")
    src = model_dir(other, recipe, seed)
    os.makedirs(dst, exist_ok=True)
    # orbax writes a step into a temporary directory and renames it when complete: a run still
    # training there may be mid-save
    shutil.copytree(os.path.join(src, "ckpt"), os.path.join(dst, "ckpt"),
                    ignore=shutil.ignore_patterns("*tmp*"))
    history = os.path.join(src, "validation.jsonl")
    if ours.get("train", {}).get("select") is not None and os.path.exists(history):
      shutil.copyfile(history, os.path.join(dst, "validation.jsonl"))
      if os.path.isdir(os.path.join(src, "best")):       # the kept model of keep="best"
        shutil.copytree(os.path.join(src, "best"), os.path.join(dst, "best"),
                        ignore=shutil.ignore_patterns("*tmp*"))
    log(f"reuse {recipe}/s{seed}: checkpoints copied from {src}")
    return other
  return None
