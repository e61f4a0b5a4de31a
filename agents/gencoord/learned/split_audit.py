"""Are the splits disjoint? Every model input of a pool, hashed as a learned policy reads it.

A prompt is `chat.messages(ctx, surface)`, the conversation a learned policy answers; its hash
(`prompt_sha256`) is sha256 over `json.dumps(messages, sort_keys=True)`. Training rows record
it (`row_record`, what the data files hold), learned results rows record the hashes of every model input of the
episode (experiments/gencoord/learned.py).

`split_table` is the per-split table of summary.md: rows, distinct prompts, distinct targets, and
how many prompts (and gold targets) of the validation and evaluation pools also occur in
training. Prompts are kept apart by construction (a training world's views lie on the train side
of the view space, an evaluation world's on the eval side: facts.view_side), so the overlap is 0; targets can recur, since one
commitment answers many worlds (the same goal count and holdings, other spare items).

`model_inputs(pool)` lists every stage context the closed loops give a policy on an evaluation
pool: the forward stages (multi- and single-step, the free-form dialogue turns) with the gold
request, and the receiver under the removed and same-template-alternative request; the Goal x
Capability requester stages under the correct and the counterfactual response, and the
centralized view. tests/agents/gencoord/test_gencoord_splits.py checks them all against every
training row.
"""
import hashlib
import json

from agents.gencoord import capability, data, episode as E, protocol, suites, templates
from agents.gencoord.dsl import Proposal, parse, request_line
from agents.gencoord.learned import chat, drill, training_recipes

# Every evaluation pool a GenCoord study runs (visibility under each of its three views).
EVAL_POOLS = ("heldout", "intervention", "heldout_template", "cross_product", "capability",
              "visibility/full", "visibility/skeleton", "visibility/node_only",
              "naturalized_c1", "naturalized_c2", "naturalized_c3")
# Training pools beside the recipes' (the naturalized references fit on these rows).
EXTRA_TRAIN_SUITES = ("naturalized_train",)


def prompt_sha256(ctx: E.LocalContext, surface: str = "dsl") -> str:
  """sha256 of the model input a learned policy on `surface` reads for `ctx`."""
  text = json.dumps(chat.messages(ctx, surface), sort_keys=True)
  return hashlib.sha256(text.encode("utf-8")).hexdigest()


def row_sha256(row: data.Row) -> str:
  """The prompt hash of a supervision row (its own surface)."""
  return prompt_sha256(row.context, row.surface)


def row_record(row: data.Row) -> dict:
  """A supervision row as written to JSONL: its record plus the sha256 of the model input a
  learned policy on the row's surface reads (chat messages, not the row's `prompt` text)."""
  return {**row.to_json(), "prompt_sha256": row_sha256(row)}


def pool(name: str) -> list:
  """The episodes of an evaluation pool of `EVAL_POOLS`."""
  if name.startswith("visibility/"):
    return suites.visibility(name.split("/", 1)[1])
  return suites.suite(name)


def training_rows() -> list:
  """Every supervision row a GenCoord recipe or reference trains on."""
  rows = [r for recipe in training_recipes.TRAINING_RECIPES.values()
          for r in recipe.rows(suites.TRAIN_PER_TEMPLATE_MAX)]
  for name in EXTRA_TRAIN_SUITES:
    rows += data.forward_rows(suites.suite(name))
  return rows


def model_inputs(episodes) -> list:
  """Every stage context the closed loops give a policy on these episodes (see module doc)."""
  forward = [ep for ep in episodes if ep.suite != "capability"]
  feedback = [ep for ep in episodes if ep.suite == "capability"]
  rows = (data.forward_rows(forward) + data.forward_rows(forward, horizon="single") +
          data.dialogue_rows(forward) + data.capability_rows(feedback, centralized=True))
  out = [r.context for r in rows]
  for ep in forward:
    # The same request the forward loop's `alternative` condition delivers.
    alternative = request_line(Proposal((), (protocol._alternative(ep),)))
    out += [E.receiver_context(ep, None), E.receiver_context(ep, alternative)]
  for r in rows:
    if r.stage == "requester_initial":      # the counterfactual response after the same q0
      ep = next(e for e in feedback if e.episode_id == r.episode_id)
      out.append(_counterfactual_context(ep, r.target))
  return out


def _counterfactual_context(ep, initial: str) -> E.LocalContext:
  """The requester's second stage after the paired mode's response to its initial proposal."""
  args = (templates.get(ep.template), parse(initial).peer_requests[0], ep.sender, ep.receiver,
          ep.peer_mode)
  rho = capability.counterfactual(capability.respond(*args, k=ep.goal_count), *args,
                                  k=ep.goal_count)
  return E.requester_context(ep, initial, rho.wire())


def _stats(split: str, prompts: list, targets: list, train_prompts: set,
           train_targets: set) -> dict:
  shared = sum(p in train_prompts for p in prompts)
  return {"split": split, "rows": len(prompts), "distinct_prompts": len(set(prompts)),
          "distinct_targets": len(set(targets)),
          "prompts_in_train": shared,
          "targets_in_train": sum(t in train_targets for t in targets)}


def split_table(recipes, eval_suite: str, validation_split: str | None = None,
                train_per_template: int | None = None, drill_per_template: int = 0) -> list:
  """Per recipe: its training rows, the validation split and the evaluation suite.

  Args:
    recipes: training recipe names (training_recipes.TRAINING_RECIPES).
    eval_suite: the suite the closed loop evaluates.
    validation_split: the forward split the stop rule reads (None: none).
    train_per_template: the run's forward training clusters per template (None: 60).
    drill_per_template: the run's sender-drill worlds per template (0: no drill); its rows are
      a `drill` split and count as training rows in the overlap columns.
  Returns:
    One row per (recipe, split): rows, distinct prompts, distinct targets, prompts and targets
    that also occur in the recipe's training rows (prompts hashed on the recipe's surface;
    evaluation rows are the gold stage rows, the receiver holding the gold request).
  """
  out = []
  for name in recipes:
    recipe = training_recipes.get(name)
    train = recipe.rows(train_per_template)
    tp, tt = [row_sha256(r) for r in train], [r.target for r in train]
    out.append({"recipe": name, **_stats("train", tp, tt, set(), set())})
    out[-1]["prompts_in_train"] = out[-1]["targets_in_train"] = "-"
    if drill_per_template:
      drows = drill.drill_rows(drill_per_template, name)
      dp, dt = [drill.drill_sha256(r) for r in drows], [r.target for r in drows]
      out.append({"recipe": name, **_stats("drill", dp, dt, set(), set())})
      out[-1]["prompts_in_train"] = out[-1]["targets_in_train"] = "-"
      tp, tt = tp + dp, tt + dt
    splits = [s for s in (validation_split, eval_suite) if s]
    for split in splits:
      eps = suites.suite(split)
      if recipe.protocol == "forward":
        rows = data.forward_rows(eps, recipe.surface, recipe.horizon)
      else:
        rows = [r for r in data.capability_rows(eps, recipe.surface,
                                                centralized=name == "centralized")
                if r.stage in {t.stage for t in train}]
      out.append({"recipe": name, **_stats(split, [row_sha256(r) for r in rows],
                                           [r.target for r in rows], set(tp), set(tt))})
  return out
