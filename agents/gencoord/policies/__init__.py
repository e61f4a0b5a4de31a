"""GenCoord commitment policies: model-visible local contexts in, Short DSL text out.

  base.py            the `CommitmentPolicy` / `RawTextPolicy` protocols the closed loops read
  prompted.py        `PromptPolicy`: any batched text generator on the dsl/json/freeform/factor
                     surfaces, and the surface -> Short DSL / wire-payload decoding
  composer.py        public-codebook composers: program, rule_minimal_request, explicit_factor
  structure_view.py  factorized_rule: composes from the episode's visible task structure (S9)
  lookup.py          baselines fitted on training rows: case_table, tfidf_nn
  naturalized.py     naturalized-fact references (S8.1): frozen_parser, surface_table,
                     oracle_factors
  registry.py        the explicit name -> class table of the model-free policies (`make`)
Learned models answer through `agents/gencoord/learned/policy.py` (`LearnedPolicy`).
"""
