"""Plan-Act: a planner sets sub-goals, an actor executes them (paper Table 9 observation limits).

The planner sees the current frame plus up to `planner_starts` earlier sub-goal-start frames; the
actor sees up to `actor_window` recent frames and the active sub-goal. The planner is called again
when the actor reports the sub-goal done (after acting) or failed (instead of acting), or after
`max_subgoal_steps` actions on one sub-goal.

With `assertions=True` both roles report the state schema; the first actor reply after each plan is
about the same frame as the plan, and that pair goes through the comparator (`check`). Plain
Plan-Act records the conflicts; ConPAct-I overrides `check` to discuss them. Every action is also
logged in `plan_trace` with the sub-goal it was taken under and its index within that sub-goal.
"""
from agents.conpact import compare, parse, prompts
from agents.conpact.base import GeneratorAgent

FALLBACK_SUBGOAL = "make progress on the task"


class PlanActAgent(GeneratorAgent):

  def planner_prompt(self, starts: list[int], prev: str | None, status: str | None):
    cur = len(self.frames) - 1
    idx = [i for i in starts if i != cur][-self.config.planner_starts:] if self.config.planner_starts \
        else []
    frames = [self.frames[i] for i in idx + [cur]]
    system = prompts.planner_system(self.task, self.schema, self.config.assertions)
    return system, prompts.planner_user(frames, prev, status, self.extras("planner"))

  def actor_prompt(self, subgoal: str):
    system = prompts.actor_system(self.task, self.schema, self.config.assertions, with_planner=True)
    frames = self.frames[-self.config.actor_window:]
    return system, prompts.actor_user(frames, subgoal, self.extras("actor"))

  def episode(self):
    starts, prev, status = [], None, None
    while True:
      p_sys, p_user = self.planner_prompt(starts, prev, status)
      p_text = yield self.request(p_sys, p_user, "planner")
      p_call = self.last_call
      subgoal = parse.extract_tag(p_text, "subgoal") or FALLBACK_SUBGOAL
      starts.append(len(self.frames) - 1)
      steps, status = 0, "ongoing"
      while True:
        a_sys, a_user = self.actor_prompt(subgoal)
        a_text = yield self.request(a_sys, a_user, "actor")
        if steps == 0 and self.config.assertions:
          planner = dict(system=p_sys, user=p_user, text=p_text, call=p_call)
          actor = dict(system=a_sys, user=a_user, text=a_text, call=self.last_call)
          a_text, new_subgoal = yield from self.check(planner, actor, subgoal)
          subgoal = new_subgoal or subgoal
        elif self.config.assertions:  # scored against truth (metrics, curation), not compared
          self.record("step", actor=self.assertion(a_text).to_json(),
                      calls={"actor": self.last_call})
        name, _ = self.action(a_text)
        status = parse.parse_status(a_text)
        if status == "failed":
          break
        # What the action was meant to follow: read back by attribution.py (sub-goal adherence).
        self.plan_trace.append({"t": len(self.frames) - 1, "subgoal": subgoal, "step": steps,
                                "action": name})
        yield self.act(name)
        steps += 1
        if status == "done" or steps >= self.config.max_subgoal_steps:
          break
      prev = subgoal
      status = status if status != "ongoing" else "step limit reached"

  def check(self, planner: dict, actor: dict, subgoal: str):
    """Compares the two roles' assertions about the sub-goal-start frame; returns the actor's reply
    to act on and a revised sub-goal (None: unchanged)."""
    p, a = self.assertion(planner["text"]), self.assertion(actor["text"])
    conflicts = compare.contradictions(p.values, a.values, self.schema)
    self.record("pair", planner=p.to_json(), actor=a.to_json(),
                conflicts=[c.to_json() for c in conflicts], discussion=None,
                calls={"planner": planner["call"], "actor": actor["call"]})
    return actor["text"], None
    yield  # pylint: disable=unreachable  (makes this a generator)
