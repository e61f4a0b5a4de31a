"""GenCoord model-free studies (experiments/gencoord/eval.py): one table row per study.

Each study is one suite run under several model-free conditions (backend x protocol condition);
the rows below hold only what differs between studies, `build` adds the shared fields. The
per-study files (configs/gencoord/request.py, feedback.py, composition.py, horizon.py,
template_shift.py, naturalized.py) are named entries of this table and keep their own commands.

python launch.py --config=configs/gencoord/eval.py:study=request --workdir=runs/gencoord_request
python launch.py --config=configs/gencoord/eval.py:study=horizon,debug=True --workdir=runs/gc_hz_dbg
  study=request            true / removed / same-template alternative REQ, 160 clusters (Table S12)
  study=feedback           Goal x Capability feedback, 40 clusters / 20 pairs (Table S18)
  study=composition        60 unseen binding cross-products (Table S15)
  study=horizon            multi-step vs single-step commitments, 80 held-out-template clusters
  study=template_shift     rule and lookup references, 80 held-out-template clusters
  study=naturalized_c1     naturalized private facts (Section S8.1), surface c1 (also _c2, _c3)
"""
import copy

import ml_collections

from configs import common

_SURFACES = ("c1", "c2", "c3")
# Paper success (%) of the naturalized references per surface (Section S8.1).
_NATURALIZED_PAPER = {"c1": (100.0, 100.0, 100.0, 0.0), "c2": (100.0, 0.0, 59.4, 0.0),
                      "c3": (100.0, 0.0, 62.5, 0.0)}


def _cond(name: str, backend: str, condition: str = "true", **extra) -> dict:
  """One condition: its name, model-free backend, protocol condition (and e.g. `horizon`)."""
  return dict(name=name, backend=backend, condition=condition, **extra)


def _study(title: str, suite: str, conditions: list, reference: str, paper: dict,
           protocol: str = "forward", train_suite: str = "train", debug_clusters: int = 16,
           **extra) -> dict:
  """A table row; `debug_clusters` is the debug run's max_clusters, `extra` more config fields.

  `paper` holds the paper's reported success (%) for side-by-side reading; it is never used in
  computation, and a condition the paper does not report is left out of it.
  """
  return dict(title=title, suite=suite, conditions=conditions, reference=reference, paper=paper,
              protocol=protocol, train_suite=train_suite, debug_clusters=debug_clusters, **extra)


STUDIES = {
    "request": _study(
        "GenCoord request intervention (160 clusters)", "intervention",
        [_cond("true_request", "program"),
         _cond("request_removed", "program", "removed"),
         _cond("same_template_alternative", "program", "alternative"),
         _cond("rule_minimal_request", "rule_minimal_request")],
        "true_request",
        dict(true_request=100.0, request_removed=50.0, same_template_alternative=0.0,
             rule_minimal_request=100.0)),
    "feedback": _study(
        "GenCoord Goal x Capability feedback (40 clusters, 20 matched pairs)", "capability",
        [_cond("requester_local", "program", "local"),
         _cond("correct_feedback", "program", "correct"),
         _cond("counterfactual_feedback", "program", "counterfactual"),
         _cond("centralized", "program", "centralized")],
        "correct_feedback",
        dict(requester_local=50.0, correct_feedback=100.0, counterfactual_feedback=0.0,
             centralized=100.0),
        protocol="feedback", debug_clusters=8, block_seed=8921),
    "composition": _study(
        "GenCoord composition reference (60 unseen cross-products)", "cross_product",
        [_cond("case_table", "case_table"),
         _cond("explicit_factor_composer", "explicit_factor")],
        "explicit_factor_composer", dict(case_table=0.0, explicit_factor_composer=100.0),
        train_suite="cross_product_seen", debug_clusters=12),
    "horizon": _study(
        "GenCoord commitment horizon (80 held-out-template clusters)", "heldout_template",
        [_cond("multi_step", "program", horizon="multi"),
         _cond("single_step", "program", horizon="single")],
        "multi_step", dict()),
    "template_shift": _study(
        "GenCoord template shift (80 held-out-template clusters)", "heldout_template",
        [_cond("rule_minimal_request", "rule_minimal_request"),
         _cond("program_reference", "program"),
         _cond("case_table", "case_table"),
         _cond("tfidf_nn", "tfidf_nn")],
        "rule_minimal_request", dict(rule_minimal_request=100.0)),
    **{f"naturalized_{s}": _study(
        f"GenCoord naturalized private facts ({s})", f"naturalized_{s}",
        [_cond(n, n) for n in ("oracle_factors", "frozen_parser", "tfidf_nn", "surface_table")],
        "oracle_factors",
        dict(zip(("oracle_factors", "frozen_parser", "tfidf_nn", "surface_table"),
                 _NATURALIZED_PAPER[s])),
        train_suite="naturalized_train") for s in _SURFACES},
}


def build(study: str, debug: bool) -> ml_collections.ConfigDict:
  """The gencoord/eval config of one table row.

  Args:
    study: a key of STUDIES.
    debug: the debug switch (a few clusters, 1,000 bootstrap resamples).
  Returns:
    The config: the row's fields plus the shared ones.
  Raises:
    ConfigArgError: `study` is not in the table.
  """
  if study not in STUDIES:
    raise common.ConfigArgError(f"unknown study {study!r}; valid: {', '.join(sorted(STUDIES))}")
  row = copy.deepcopy(STUDIES[study])   # a caller may edit its conditions; the table stays
  debug_clusters = row.pop("debug_clusters")
  c = ml_collections.ConfigDict()
  c.experiment = "gencoord/eval"
  c.debug = debug
  c.seed = 0
  c.world = "sim"                      # "live": configs/gencoord/live.py
  c.max_clusters = debug_clusters if debug else 0    # 0: the whole suite
  c.batch = 256
  c.n_resamples = 1000 if debug else 10_000
  c.bootstrap_seed = 8901
  c.paired_seed = 8911
  c.update(row)
  return c


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, study="request")
  return build(arg.study, arg.debug)
