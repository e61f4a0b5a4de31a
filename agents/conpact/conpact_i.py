"""ConPAct-I: inference-time reconciliation of planner-actor state contradictions.

At each comparator check (see plan_act.py), if the roles' assertions contradict and the correction
trigger is on, a bounded discussion runs for up to `max_rounds` rounds:
  1. with planner participation, the planner is shown the conflicts (or, without conflict feedback,
     only asked to re-check its report) and may revise its assertions and sub-goal;
  2. the actor likewise, seeing the planner's (revised) sub-goal, and may revise its assertions and
     action; the action it ends with is the one executed.
Revisions override only the fields a role restates (an omitted field keeps its earlier value).
The switches reproduce the paper's Table 18 ablation: correction trigger, conflict feedback,
planner participation. Each check records initial/final conflicts, whether a discussion ran and
whether it repaired the disagreement, and the reconciled state (agreed fields).
"""
from agents.conpact import compare, parse, prompts
from agents.conpact.plan_act import PlanActAgent


class ConPActAgent(PlanActAgent):

  def _revise(self, old: parse.Assertion, text: str) -> parse.Assertion:
    new = self.assertion(text)
    values = {k: (v if v is not None else old.values[k]) for k, v in new.values.items()}
    return parse.Assertion(values, old.found or new.found, new.invalid, new.extra)

  def check(self, planner: dict, actor: dict, subgoal: str):
    cfg = self.config
    p0, a0 = self.assertion(planner["text"]), self.assertion(actor["text"])
    initial = compare.contradictions(p0.values, a0.values, self.schema)
    rec = self.record("pair", planner=p0.to_json(), actor=a0.to_json(),
                      conflicts=[c.to_json() for c in initial], discussion=None,
                      calls={"planner": planner["call"], "actor": actor["call"]})
    if not initial or not cfg.correction_trigger:
      return actor["text"], None
    p, a, conflicts = p0, a0, initial
    p_text, a_text, new_subgoal = planner["text"], actor["text"], None
    p_hist, a_hist, rounds = [], [], []
    for _ in range(cfg.max_rounds):
      feedback = compare.describe_conflicts(conflicts) if cfg.conflict_feedback else None
      entry = {}
      if cfg.planner_participation:
        p_hist += [{"role": "assistant", "content": p_text},
                   {"role": "user", "content": prompts.discussion_user(feedback, "planner")}]
        p_text = yield self.request(planner["system"], planner["user"], "planner_discuss", p_hist)
        entry["planner_call"] = self.last_call
        p = self._revise(p, p_text)
        new_subgoal = parse.extract_tag(p_text, "subgoal") or new_subgoal
      note = f"\nThe planner's sub-goal is now: {new_subgoal}" if new_subgoal else ""
      a_hist += [{"role": "assistant", "content": a_text},
                 {"role": "user", "content": prompts.discussion_user(feedback, "actor") + note}]
      a_text = yield self.request(actor["system"], actor["user"], "actor_discuss", a_hist)
      entry["actor_call"] = self.last_call
      a = self._revise(a, a_text)
      conflicts = compare.contradictions(p.values, a.values, self.schema)
      entry["conflicts"] = [c.to_json() for c in conflicts]
      rounds.append(entry)
      if not conflicts:
        break
    rec["discussion"] = {"rounds": rounds, "planner": p.to_json(), "actor": a.to_json(),
                         "final_conflicts": [c.to_json() for c in conflicts],
                         "repaired": not conflicts,
                         "agreed": prompts.state_json(compare.reconcile(p.values, a.values,
                                                                        self.schema))}
    return a_text, new_subgoal
