"""Host-loop environment API over the workcell world (gymnax field names, Python state).

  env = WorkcellEnv(layout, terminal)
  obs, info = env.reset(seed)
  obs, reward, terminated, truncated, info = env.step(action)

An action is one of the `world` NamedTuples. A refused action leaves the world unchanged and
is reported in `info["error"]`; reward is 1.0 on the step where the terminal predicate first
holds; `truncated` is set after `max_steps` actions.
"""
import copy

from envs.minecraft import predicates
from envs.minecraft.layout import make_layout
from envs.minecraft.world import ActionError, Layout


class WorkcellEnv:

  def __init__(self, layout: Layout, terminal=(), max_steps: int = 64):
    self.layout, self.terminal, self.max_steps = layout, tuple(terminal), max_steps
    self.world = None
    self.steps = 0

  def observe(self) -> dict:
    w = self.world
    return {"agents": {n: {"pos": a.pos, "inventory": dict(a.inventory)}
                       for n, a in w.agents.items()},
            "containers": copy.deepcopy(w.containers), "built": list(w.built),
            "ticks": w.ticks}

  def reset(self, seed: int = 0):
    del seed   # the layout is static; world variants come from `make_layout(variant)`
    self.world, self.steps = self.layout.reset(), 0
    return self.observe(), {"terminal": False}

  def step(self, action):
    if self.world is None:
      raise RuntimeError("call reset() before step()")
    self.steps += 1
    before = predicates.holds(self.world, self.terminal) if self.terminal else False
    info = {"error": None}
    try:
      self.world.apply(action)
    except ActionError as e:
      info["error"] = str(e)
    done = predicates.holds(self.world, self.terminal) if self.terminal else False
    info["terminal"] = done
    reward = 1.0 if done and not before else 0.0
    return self.observe(), reward, done, self.steps >= self.max_steps and not done, info


def make(variant: int = 0, terminal=(), max_steps: int = 64) -> WorkcellEnv:
  """Registry factory: the standard two-agent layout of world `variant`."""
  return WorkcellEnv(make_layout(variant), terminal, max_steps)
