"""The short-context sender drill: cheap extra rows that teach the sender's obtain quantity.

A from-scratch model learns every receiver row of the quickstart and fails the sender's `q` on new
instances: `q` is k * p - held (goal count times the per-order need, minus what the agent holds of
that item), and the 1,920 rows hold too few distinct examples of it (`configs/gencoord/sender_probe.py`
needs ~10x as many). The full rows are ~370 tokens, most of them the system prompt and the
template's structure, which are the same for every world of a template, so more worlds at full
length cost proportionally more.

A drill row is a sender row of another training world (on the recipe's own surface), prompted
with only the agent's own sections (`chat.OWN_SECTIONS`: observation, stage, identities, task; no system prompt, prior or
structure), with the row's unchanged target: ~110 tokens. Its worlds come from the same `train`
suite, so every drill view lies on the train side of the view space (`facts.view_side`): no
validation or evaluation instance is ever drilled. The answer's tokens sit at the same distance
from the observation as in a full row, so a relative-position model reads the holding the same way
in both. Training interleaves one batch of full rows with one drill batch
(`lib.sft.batches.interleave`); evaluation and validation read full prompts only.
"""
import hashlib
import json

from agents.gencoord.learned import chat, training_recipes


def drill_rows(clusters_per_template: int, recipe_name: str = "direct_dsl") -> list:
  """The sender-side rows of a forward training recipe on the `train` suite at
  `clusters_per_template` (every stage the sender decides: sender_initial, and where the recipe
  has them sender_after_obtain or the free-form dialogue's sender_intent), on its own surface.

  Args:
    clusters_per_template: forward training clusters per template (even, at most
      suites.TRAIN_PER_TEMPLATE_MAX); the first 60 are the quickstart's own worlds.
    recipe_name: a training recipe whose train suite is `train` (ValueError otherwise: the
      Goal x Capability and composition recipes train on other pools).
  Returns:
    `agents.gencoord.data.Row`s of the sender stages, both role views of every cluster.
  """
  recipe = training_recipes.get(recipe_name)
  if recipe.train_suite != "train":
    raise ValueError(f"train.drill: recipe {recipe_name!r} trains on {recipe.train_suite!r}, "
                     "not on the forward `train` worlds the drill draws (set "
                     "train.drill.clusters_per_template=0)")
  return [r for r in recipe.rows(clusters_per_template) if r.stage.startswith("sender")]


def drill_pairs(rows) -> list[tuple[list[dict], str]]:
  """Drill rows -> (short-context messages, target) pairs for `lib.sft.chat_rows.encode_rows`."""
  return [(chat.own_messages(r.context), r.target) for r in rows]


def drill_sha256(row) -> str:
  """sha256 of the short prompt a drill row trains on (over `json.dumps(messages,
  sort_keys=True)`, as split_audit hashes a policy's inputs)."""
  text = json.dumps(chat.own_messages(row.context), sort_keys=True)
  return hashlib.sha256(text.encode("utf-8")).hexdigest()


def drill_record(row) -> dict:
  """A drill row as written to JSONL: its record with the short prompt it trains on and that
  prompt's sha256 (`drill_sha256`)."""
  return {**row.to_json(), "prompt": chat.own_messages(row.context)[0]["content"],
          "prompt_sha256": drill_sha256(row)}
