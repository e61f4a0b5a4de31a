"""ExecuteAndVerify(D, ω): discharge a dispatch plan in the world and read back the outcome.

A handoff passes only when the recipient's inventory changed by exactly the intended item and
quantity; the episode succeeds only when the terminal world predicate holds afterwards.
Returns one of SUCCESS, EXECUTION_FAILURE, HANDOFF_FAILURE, TERMINAL_FAILURE.
"""
import dataclasses

from agents.gencoord.compile import compile_plan
from agents.gencoord.materialize import DispatchPlan
from envs.minecraft import executor, predicates
from envs.minecraft.world import World


@dataclasses.dataclass(frozen=True)
class Outcome:
  status: str
  actions: int
  handoff_verified: bool
  detail: str = ""


def handoff_ok(record) -> bool:
  check, before, after = record
  return after - before == check.count


def execute_and_verify(plan: DispatchPlan, world: World, terminal) -> Outcome:
  steps = compile_plan(plan, world.locations)
  trace = executor.execute(world, steps)
  verified = bool(trace.handoffs) and all(handoff_ok(r) for r in trace.handoffs)
  if trace.error is not None:
    return Outcome("EXECUTION_FAILURE", trace.actions, verified,
                   f"{trace.failed_task}: {trace.error}")
  if not verified:
    check = trace.handoffs[-1][0] if trace.handoffs else None
    return Outcome("HANDOFF_FAILURE", trace.actions, False,
                   f"recipient inventory did not change by {check}")
  if not predicates.holds(world, terminal):
    return Outcome("TERMINAL_FAILURE", trace.actions, True, f"terminal predicate {terminal}")
  return Outcome("SUCCESS", trace.actions, True)
