"""Task suites and split generators with the paper's cluster counts.

A semantic cluster is one (template, binding, world); its two role views (which agent sends)
are the episodes. A world is a variant (named-location positions) and its instance facts, drawn
from the variant (facts.py): the goal count (1-4 orders) and every agent's starting inventory.
Clusters come in binding pairs that share the world, so the receiver's context is identical
within a pair until the request arrives (and a Goal x Capability pair shares the requester's).

  forward("train")            480 clusters (60 per template, balanced bindings); a recipe may
                              train on up to TRAIN_PER_TEMPLATE_MAX per template (the same
                              worlds first)
  forward("heldout")          128 clusters (16 per template)
  forward("intervention")     160 clusters (20 per template)
  forward("heldout_template")  80 clusters (20 per held-out template, one new template per
                               family, see templates_heldout.py)
  cross_product("unseen")      60 unseen binding cross-products (+ 60 seen for training)
  capability()                 40 clusters: 2 goals x 2 workcell modes x 10 world variants
  capability("train")         160 training clusters (40 other world variants)
  visibility(view)             96 clusters: 3 motifs x 32, under full / skeleton / node_only
  naturalized(surface)        the 160 intervention clusters with naturalized private notes
Variant ranges are disjoint across splits, so no world is shared between pools, and no
evaluation prompt is a training prompt: a training world's views all lie on the "train" side of
the view space and every other pool's on the "eval" side (facts.view_side), both drawn by the
same rule, so the pools are disjoint and alike in distribution.
"""
import dataclasses
import functools

from agents.gencoord import capability, crossproduct, facts, motifs, templates, templates_heldout
from agents.gencoord.episode import Episode
from envs.minecraft.layout import make_layout

AGENTS = ("agent_a", "agent_b")
CORE = ("build_site", "chest_ab", "chest_or_table", "planks_or_sticks", "deposit_or_build",
        "dual_build", "active_order", "remaining_terminal")
FORWARD_SPLITS = {"train": (60, 0), "heldout": (16, 10_000), "intervention": (20, 20_000),
                  "heldout_template": (20, 30_000)}
# The widest forward training pool a config may ask for (`per_template`); the split audit checks
# every row of it against the evaluation pools.
TRAIN_PER_TEMPLATE_MAX = 960
COUNTS = {"train": 480, "heldout": 128, "intervention": 160, "heldout_template": 80,
          "cross_product": 60, "capability": 40, "capability_train": 160, "visibility": 96}


@functools.lru_cache(maxsize=4096)
def _layout(variant: int, inventories: tuple):
  return make_layout(variant, AGENTS, extra_items={a: dict(inv) for a, inv in inventories})


@functools.lru_cache(maxsize=None)
def _world(template: str, bindings: tuple, variant: int, training: bool) -> facts.Facts:
  """The facts of a world shared by `bindings`, its views on the training or evaluation side."""
  counts = facts.GOAL_COUNTS if templates.get(template).counted else (1,)
  return facts.sample(template, bindings, variant, AGENTS, "train" if training else "eval",
                      goal_counts=counts)


def _views(cluster_id, suite, template, binding, variant, world, split, peer_mode="GENERAL",
           view="full") -> list[Episode]:
  out = []
  for role_view, (snd, rcv) in enumerate((AGENTS, AGENTS[::-1])):
    layout = _layout(variant, world.inventories)
    if peer_mode != "GENERAL":
      layout = layout.with_mode(rcv, peer_mode)
    out.append(Episode(f"{cluster_id}/r{role_view}", cluster_id, suite, template, binding,
                       snd, rcv, role_view, world.goal_count, variant, layout, peer_mode, view,
                       split))
  return out


def forward(split: str, templates_=None, per_template: int | None = None) -> list[Episode]:
  """The forward clusters of `split`; `per_template` (train only, even, at most
  TRAIN_PER_TEMPLATE_MAX) widens the training pool beyond the paper's 60 per template."""
  default, offset = FORWARD_SPLITS[split]
  if per_template is None:
    per_template = default
  elif split != "train" or per_template % 2 or not 0 < per_template <= TRAIN_PER_TEMPLATE_MAX:
    raise ValueError(f"per_template={per_template}: only the train split takes it, even and at "
                     f"most {TRAIN_PER_TEMPLATE_MAX}")
  if templates_ is None:
    templates_ = templates_heldout.HELDOUT if split == "heldout_template" else CORE
  eps = []
  for t_index, name in enumerate(templates_):
    bindings = templates.get(name).bindings
    for i in range(per_template):
      variant = offset + 1000 * t_index + i // 2
      world = _world(name, bindings, variant, split == "train")
      eps += _views(f"{split}/{name}/{i:03d}", "forward", name, bindings[i % 2], variant,
                    world, split)
  return eps


def naturalized(surface: str, split: str = "intervention") -> list[Episode]:
  """A forward pool whose sender sees a naturalized note instead of the binding id."""
  return [dataclasses.replace(ep, private_surface=surface) for ep in forward(split)]


def cross_product(split: str = "unseen") -> list[Episode]:
  """Cross-product clusters: `unseen` (the 60-cluster test pool) or `seen` (training cases)."""
  if split not in ("seen", "unseen"):
    raise ValueError(f"cross_product split must be seen/unseen, got {split!r}")
  codes = [c for c in crossproduct.CODES if crossproduct.is_unseen(c) == (split == "unseen")]
  eps = []
  for i, code in enumerate(codes):
    variant = 40_000 + i + (500 if split == "unseen" else 0)
    world = _world("order_xprod", (code,), variant, split == "seen")
    eps += _views(f"xprod_{split}/{i:03d}", "cross_product", "order_xprod", code, variant,
                  world, split)
  return eps


def capability_suite(split: str = "eval") -> list[Episode]:
  """Matched pairs: same goal and world variant, the peer's workcell mode flipped.

  eval: 10 world variants -> 40 clusters (20 pairs); train: 40 other variants -> 160 clusters,
  whose 320 role views give the 320 requester-initial + 320 after-response rows.
  """
  worlds, offset = {"eval": (10, 50_000), "train": (40, 55_000)}[split]
  eps = []
  for goal in capability.GOALS:
    for w in range(worlds):
      world = _world(f"capability_{goal}", capability.BRANCHES, offset + w, split == "train")
      for mode in ("RAW_PROCESSOR", "FINISHED_RECEIVER"):
        eps += _views(f"capability_{split}/{goal}/w{w}/{mode}", "capability",
                      f"capability_{goal}", capability.MODE_BRANCH[mode], offset + w, world,
                      f"capability_{split}", mode)
  return eps


def capability_pair(cluster_id: str) -> str:
  """The matched-pair block of a Goal x Capability cluster (its id without the mode)."""
  return cluster_id.rsplit("/", 1)[0]


def visibility(view: str = "full") -> list[Episode]:
  eps = []
  for motif in motifs.MOTIFS:
    name = motifs.MOTIF_TEMPLATES[motif]
    bindings = templates.get(name).bindings
    for i in range(32):
      variant = 60_000 + 100 * motifs.MOTIFS.index(motif) + i // 2
      eps += _views(f"visibility/{motif}/{i:03d}", "visibility", name, bindings[i % 2],
                    variant, _world(name, bindings, variant, False), "visibility", view=view)
  return eps


def clusters(episodes) -> dict:
  """cluster_id -> episodes of that cluster (role views)."""
  out: dict = {}
  for ep in episodes:
    out.setdefault(ep.cluster_id, []).append(ep)
  return out


def suite(name: str, **kwargs) -> list[Episode]:
  """Suite registry used by configs: forward splits, cross_product, capability, visibility."""
  if name in FORWARD_SPLITS:
    return forward(name, **kwargs)
  makers = {"cross_product": cross_product, "cross_product_seen": lambda: cross_product("seen"),
            "capability": capability_suite,
            "capability_train": lambda: capability_suite("train"), "visibility": visibility,
            "naturalized_train": lambda: naturalized("train", "train"),
            **{f"naturalized_{s}": (lambda s=s: naturalized(s)) for s in ("c1", "c2", "c3")}}
  if name not in makers:
    raise KeyError(f"unknown suite {name!r}; valid: {sorted([*FORWARD_SPLITS, *makers])}")
  return makers[name](**kwargs)
