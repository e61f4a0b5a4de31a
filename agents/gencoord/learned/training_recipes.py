"""Training recipes of the learned policies: which supervision rows, on which surface, for which
loop (not a crafting recipe: those are `envs/minecraft/recipes.py`).

Row counts per seed follow Table S6 (480 training clusters x 2 role views):
  direct_dsl    960 sender_initial + 960 receiver_after_request, Short DSL targets
  factor        the same stages, targets are the binding code (Factor-Code + Rule)
  json          the same stages, JSON targets
  freeform      controlled free-form dialogue (dialogue.py), one row per turn: 960 proposal +
                960 commitment turns, plus 240 intent + 240 state-reply turns where a fixed
                quarter of the views opens with an extra round: 1,200 sender + 1,200 receiver
  single_step   960 sender_initial (first step + REQ) + 960 sender_after_obtain + 960 receiver
  requester     Goal x Capability: 320 requester_initial + 320 requester_after_response
  centralized   Goal x Capability: 320 centralized rows on the merged views
  composition   Direct Short DSL on the 60 seen binding cross-products (120 + 120 rows)
"""
import dataclasses

from agents.gencoord import data, suites


@dataclasses.dataclass(frozen=True)
class TrainingRecipe:
  """One learned policy's training data and the closed loop it serves."""
  name: str
  surface: str          # dsl / json / freeform / factor: what the model writes
  protocol: str         # forward / feedback: the closed loop it serves
  horizon: str = "multi"
  train_suite: str = "train"

  def rows(self, train_per_template: int | None = None) -> list:
    """The supervision rows (`agents.gencoord.data.Row`) of this recipe's train suite.

    train_per_template: forward clusters per template of the `train` suite (None: the paper's
    60; suites.TRAIN_PER_TEMPLATE_MAX at most). Recipes on another train suite ignore it."""
    kw = {"per_template": train_per_template} if self.train_suite == "train" else {}
    eps = suites.suite(self.train_suite, **kw)
    if self.protocol == "forward":
      return data.forward_rows(eps, self.surface, self.horizon)
    rows = data.capability_rows(eps, self.surface, centralized=self.name == "centralized")
    stages = ("centralized",) if self.name == "centralized" else (
        "requester_initial", "requester_after_response")
    return [r for r in rows if r.stage in stages]


TRAINING_RECIPES = {r.name: r for r in (
    TrainingRecipe("direct_dsl", "dsl", "forward"),
    TrainingRecipe("factor", "factor", "forward"),
    TrainingRecipe("json", "json", "forward"),
    TrainingRecipe("freeform", "freeform", "forward"),
    TrainingRecipe("single_step", "dsl", "forward", horizon="single"),
    TrainingRecipe("requester", "dsl", "feedback", train_suite="capability_train"),
    TrainingRecipe("centralized", "dsl", "feedback", train_suite="capability_train"),
    # Composition: trained on the 60 seen cross-product cases, evaluated on the 60 unseen.
    TrainingRecipe("composition", "dsl", "forward", train_suite="cross_product_seen"),
)}


def get(name: str) -> TrainingRecipe:
  """The training recipe called `name` (a key of `TRAINING_RECIPES`)."""
  if name not in TRAINING_RECIPES:
    raise KeyError(f"unknown recipe {name!r}; valid: {', '.join(sorted(TRAINING_RECIPES))}")
  return TRAINING_RECIPES[name]
