"""Executor: runs compiled steps against a `World`, recording what verification needs.

A step is any object with `task_id`, `actions` and `check` (a handoff check with `taker`,
`item`, `count`, or None). For a handoff step the recipient's inventory count of the item is
read before and after the step, so the verifier can test the intended transfer.
"""
import dataclasses

from envs.minecraft.world import ActionError, World


@dataclasses.dataclass
class Trace:
  actions: int = 0
  error: str | None = None           # first ActionError, if any
  failed_task: str | None = None
  handoffs: list = dataclasses.field(default_factory=list)   # (check, before, after)


def execute(world: World, steps) -> Trace:
  trace = Trace()
  for step in steps:
    check = step.check
    before = world.count(check.taker, check.item) if check is not None else 0
    for action in step.actions:
      trace.actions += 1
      try:
        world.apply(action)
      except ActionError as e:
        trace.error, trace.failed_task = str(e), step.task_id
        return trace
    if check is not None:
      trace.handoffs.append((check, before, world.count(check.taker, check.item)))
      if world.count(check.taker, check.item) - before != check.count:
        return trace               # the verifier reports the failed transfer
  return trace
