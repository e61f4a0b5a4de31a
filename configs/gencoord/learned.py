"""GenCoord learned-backend studies (train + closed-loop evaluation), one `study` per run.

python launch.py --config=configs/gencoord/learned.py:study=representation --workdir=runs/gl_repr
  study=representation  DSL vs JSON vs controlled free-form on 128 held-out clusters (Table 2)
  study=backend         Direct Short DSL vs Factor-Code + Rule, 128 held-out clusters (Table 3)
  study=request         true / removed / same-template alternative REQ, 160 clusters (Fig. 4b)
  study=horizon         multi-step vs single-step controller, 80 held-out-template clusters
  study=feedback        E1/E2: A-only / correct / counterfactual feedback + centralized, 40
  study=composition     60 unseen binding cross-products (trained on the 60 seen ones)
  study=visibility      Direct Short DSL, controlled free-form (trained once, Full view) and
                        the factorized rule x Full / Skeleton / Node-only x 3 motifs (Fig. S5)
Add `:seeds=3` for the paper's three seeds, `:debug=True` for a seconds-to-minutes smoke run.
`:scale=paper` plans Qwen3.5-0.8B at micro 4 x accumulation 4 = batch 16, up to 2,048 tokens
(configs/paper_scale.py; add `--config.model.checkpoint=<HF dir>` for a real run), e.g. its memory
plan for one 40 GB A100 (the paper's) and compiled for one v6e chip:
python launch.py --config=configs/gencoord/learned.py:scale=paper --workdir=runs/gl_plan --plan \
    --config.plan.device_memory_gib=40 --config.plan.compile=False
python launch.py --config=configs/gencoord/learned.py:scale=paper --workdir=runs/gl_plan_v6e \
    --plan --config.plan.target=tpu:v6e:1x1
"""
from configs import common, paper_scale
from configs.gencoord.learned_common import base

_VIEWS = ("full", "skeleton", "node_only")
_S5 = {"dsl": ((100, 0, 0), (100, 0, 0), (18.2, 0, 0)),
       "freeform": ((100, 0, 24.5), (97.4, 0, 16.7), (35.9, 0, 0.5)),
       "rule": ((100, 100, 100), (100, 46.9, 62.5), (100, 78.1, 100))}
# Recipes trained on other pools than the forward `train` suite (Goal x Capability, seen
# cross-products): no forward validation split to stop on, no sender drill (it draws forward
# training worlds), and plain row permutations (half the requester rows and every cross-product
# row lack a binding x role-view contrast partner).
_NOT_FORWARD = dict(select=None, batching="rows", drill=dict(clusters_per_template=0))
_STUDIES = {
    "representation": dict(
        recipes=["direct_dsl", "json", "freeform"], suite="heldout", reference="dsl",
        conditions=[dict(name="dsl", recipe="direct_dsl"), dict(name="json", recipe="json"),
                    dict(name="freeform", recipe="freeform")],
        paper={"dsl": "128/128; 2.00 calls; out 78.6 tok; wire 76.3 B; TTC p50 2.27 s",
               "json": "128/128; 2.00 calls; out 267.6 tok; wire 303.4 B; TTC p50 7.07 s",
               "freeform": "128/128; 2.50 calls; out 265.8 tok; wire 1061.1 B; TTC p50 7.13 s"}),
    "backend": dict(
        recipes=["direct_dsl", "factor"], suite="heldout", reference="direct",
        conditions=[dict(name="direct", recipe="direct_dsl"),
                    dict(name="factor", recipe="factor")],
        paper={"direct": "128/128; out 79.1 tok; wire 76.6 B; TTC p50 2.453 s",
               "factor": "128/128; out 19.4 tok; wire 76.6 B; TTC p50 0.824 s"}),
    "request": dict(
        recipes=["direct_dsl"], suite="intervention", reference="true",
        conditions=[dict(name=n, recipe="direct_dsl", condition=n)
                    for n in ("true", "removed", "alternative")],
        paper={"true": "100%", "removed": "50%", "alternative": "0%"},
        # Its clusters are the validation split, so no stop is read off them: the whole budget.
        train=dict(select=None)),
    "horizon": dict(
        recipes=["direct_dsl", "single_step"], suite="heldout_template", reference="multi",
        conditions=[dict(name="multi", recipe="direct_dsl"),
                    dict(name="single", recipe="single_step", horizon="single")],
        paper={"multi": "98.1%; 1.98 decisions/ep", "single": "91.3%; 2.91 decisions/ep"}),
    "feedback": dict(
        recipes=["requester", "centralized"], suite="capability", reference="correct",
        conditions=[dict(name="correct", recipe="requester", condition="correct"),
                    dict(name="local", recipe="requester", condition="local"),
                    dict(name="counterfactual", recipe="requester", condition="counterfactual"),
                    dict(name="centralized", recipe="centralized", condition="centralized")],
        paper={"local": "50.0% [35, 65]", "correct": "100.0%", "counterfactual": "0.0%",
               "centralized": "100.0%"},
        train=dict(_NOT_FORWARD)),
    "composition": dict(
        recipes=["composition"], suite="cross_product", reference="dsl",
        conditions=[dict(name="dsl", recipe="composition")],
        paper={"dsl": "60/60 (Direct Short DSL and explicit-factor composer)"},
        train=dict(_NOT_FORWARD)),
    "visibility": dict(
        recipes=["direct_dsl", "freeform"], suite="visibility", reference="dsl/full",
        # Frozen train-suite (Full view) checkpoints evaluated under each view; the rule is
        # model-free. Names are method/view.
        conditions=[dict(name=f"{m}/{v}", view=v, **kw) for m, kw in (
            ("dsl", dict(recipe="direct_dsl")), ("freeform", dict(recipe="freeform")),
            ("rule", dict(backend="factorized_rule"))) for v in _VIEWS],
        # Figure S5, terminal success % per motif (familiar, post_transform, pre_transform).
        paper={f"{m}/{v}": "familiar {} / post {} / pre {}".format(*cells)
               for m, per_view in _S5.items() for v, cells in zip(_VIEWS, per_view)}),
}


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, seeds=1, study="representation", scale="")
  if arg.study not in _STUDIES:
    raise common.ConfigArgError(f"unknown study {arg.study!r}; valid: {sorted(_STUDIES)}")
  s = _STUDIES[arg.study]
  c = base(arg)
  c.title = f"GenCoord learned backends: {arg.study}"
  c.seed = 0
  c.recipes = list(s["recipes"])
  # Every recipe trains as the quickstart does (configs/gencoord/learned_common.py), except
  # where the study's pools rule a part of it out.
  for key, value in s.get("train", {}).items():
    if isinstance(value, dict):
      c.train[key].update(value)
    else:
      c.train[key] = value
  c.eval.suite = s["suite"]
  c.eval.reference = s["reference"]
  c.eval.conditions = [dict(d) for d in s["conditions"]]
  # Debug pools take clusters spread over the sorted ids (every motif), not the first ones.
  c.eval.spread_clusters = arg.study == "visibility"
  if arg.study == "visibility":     # success matrix only: no timing pool, no throughput pass
    c.eval.update(timing_clusters=0, throughput=False)
  c.paper = dict(s["paper"])
  if paper_scale.check_scale(arg.scale):   # Qwen3.5-0.8B, paper batch 16, lr 1e-5, 2 epochs
    paper_scale.apply(c, "gencoord")
    # micro 4 x accumulation 4 (paper_scale.PRESETS["gencoord"]); the plan's micro-batch follows
    # The paper's recipe: no validation stop, no drill, plain row permutations
    c.train.update(batch=16, lr=1e-5, epochs=2, batching="rows", schedule="cosine")
    c.train.select = None
    c.train.drill.clusters_per_template = 0
    c.train.accum_steps = 4
    c.plan.rows = c.train.get_ref("batch")
    c.plan.micro_rows = c.train.get_ref("batch") // c.train.get_ref("accum_steps")
    # Every row is left-padded to the data's longest row (lib.sft.batches.left_padded), not to
    # 2,048: given the rows' token lengths (`--config.plan.lengths=...`), the plan pads as the run
    # does; "buckets" plans length-grouped batches (lib.sft.batches.length_grouped_batches).
    c.plan.padding = "longest"
  return c
