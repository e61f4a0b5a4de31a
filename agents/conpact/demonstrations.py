"""Supervision rows for a base ConPAct planner and actor: expert play on the SOURCE split.

Expert trajectories: Sokoban levels of `envs.splits.sokoban_instances("source")` solved by the BFS
solver (`envs.sokoban.solver`); BabyAI tasks played by Farama's `BabyAIBot` on Farama's level at
a source seed (`MINIGRID_SOURCE_SEEDS`, disjoint from the evaluation seeds 1000-1004), each frame
converted to our state (`envs.minigrid.convert.from_minigrid`) and rendered by our text view.

Rows are rendered exactly as `agents.conpact.plan_act.PlanActAgent` prompts a model with assertions
on: the planner sees the current frame plus up to two earlier sub-goal-start frames and answers
`<think>…</think><state>{…}</state><subgoal>…</subgoal>`; the actor sees the last three frames
(paper Table 9) and the sub-goal and answers `<think>…</think><state>{…}</state><action>…</action>
<status>…</status>`. A sub-goal spans `SUBGOAL_STEPS` expert actions.

Misperception, not label noise: with probability `noise` (per row, own seeded stream per role) the
demonstrator holds a corrupted belief (the scripted perception noise of `agents.conpact.scripted`:
a box or the player one column off / the target one cell off; where that changes nothing, a stale
belief, the previous frame's). Its assertion states the belief, and its action or sub-goal is the
expert's for the believed state (Sokoban: first BFS move / next moves of the believed board;
BabyAI: the scripted greedy approach to the believed target, since the bot cannot run on a belief).
The trajectory itself follows the expert, so every episode still solves its level.

Discussion rows (`discuss` > 0: with that probability per row, own seeded stream): the row's reply
is followed by ConPAct-I's conflict turn (`prompts.discussion_user` listing the contradicted
fields, exactly as agents/conpact/conpact_i.py asks) against a teammate who holds the truth when
the row's belief is wrong, or a misperceived belief when it is right. What the target does
depends on `recheck`:
- `recheck=None` (the redraw control): a fresh look at the whole belief -- a new misperception
  draw at the same rate `noise` -- so a second look is exactly as reliable as the first, and the
  fields nobody contested are re-rolled too.
- `recheck=r` (targeted re-check): the demonstrator re-reads the *contested* fields only, failing
  with probability r (one draw per discussion), and keeps every uncontested field as it stated
  it. A successful re-check states the true values of the contested fields (keeping its own when
  they were right: a teammate's wrong claim is not adopted); a failed one keeps its own wrong
  values, or, when its own were right, adopts the teammate's wrong claim. The sub-goal or action
  is the one the resulting belief implies (the expert's when the belief is the truth).
Either way the base roles learn the discussion format, not an oracle. ReAct rows (`actor_rows(..., react=True)`): the single-role prompt of
agents/conpact/react.py (no sub-goal, no assertion), the believed state's action.

Each row: {"messages": [system, user], "target": reply, "meta": {env, instance, t, role, noisy,
wrong, truth, belief}}; `messages` + `target` is the format `agents.conpact.curate.sft_batch` consumes.
"""
import contextlib
import functools
import io

import numpy as np

from agents.conpact import compare, parse, prompts, schemas, scripted, textenv
from agents.conpact.demonstration_spec import (ACTOR_WINDOW, BABYAI_TASKS, PLANNER_STARTS,
                                               SUBGOAL_STEPS)
from envs import splits
from envs.minigrid.limits import LIMITS
from envs.minigrid import text as minigrid_text
from envs.minigrid.convert import from_minigrid
from envs.sokoban import text as sokoban_text

MINIGRID_SOURCE_SEEDS = textenv.MINIGRID_SOURCE_SEEDS  # BabyAI source seeds (evaluation: 1000-1004)


def schema_name(env_id: str) -> str:
  """The assertion schema of an env id: "sokoban" or a BabyAI task id ("minigrid")."""
  if env_id == "sokoban":
    return "sokoban"
  if env_id in LIMITS:
    return "minigrid"
  raise KeyError(f"no demonstrations for {env_id!r}; valid: sokoban, {', '.join(BABYAI_TASKS)}")


# ---- expert trajectories ----------------------------------------------------------------------

@functools.lru_cache(maxsize=512)
def expert_episode(env_id: str, index: int) -> tuple[tuple[str, ...], tuple[dict, ...],
                                                       tuple[str, ...], bool]:
  """One expert episode on source instance `index`.

  Args:
    env_id: "sokoban" or a BabyAI task id.
    index: source instance (Sokoban level index; BabyAI: `MINIGRID_SOURCE_SEEDS[index]`).

  Returns:
    (frames, state_facts, actions, success): frames[t] and state_facts[t] are the observation and
    true facts before actions[t]; frames has one more entry (the final observation).
  """
  if schema_name(env_id) == "sokoban":
    return _sokoban_episode(index)
  return _babyai_episode(env_id, MINIGRID_SOURCE_SEEDS[index])


def _sokoban_episode(index: int):
  levels = splits.sokoban_instances("source").levels
  env = sokoban_text.text_env(levels)
  obs, info = env.reset(index)
  frames, facts, actions = [obs], [info["state_facts"]], []
  percept = scripted.SokobanPerception()
  sol = scripted.solve_board(percept.clean(obs))
  success = False
  for a in sol.actions:
    obs, _, terminated, truncated, info = env.step(a)
    actions.append(scripted.MOVES[a])
    frames.append(obs)
    facts.append(info["state_facts"])
    success = bool(info.get("success"))
    if terminated or truncated:
      break
  return tuple(frames), tuple(facts), tuple(actions), success


def _babyai_episode(task_id: str, seed: int):
  # Farama's gymnasium/minigrid (the `envs` extra) host the BabyAI bot and the levels it plays
  import gymnasium as gym  # pylint: disable=import-outside-toplevel
  from minigrid.utils.baby_ai_bot import BabyAIBot  # pylint: disable=import-outside-toplevel
  env = gym.make(task_id)
  # Farama's level generator prints a line per rejected sample ("Sampling rejected: ...") to
  # stdout; thousands of them would bury the run's log
  with contextlib.redirect_stdout(io.StringIO()):
    env.reset(seed=seed)
  bot = BabyAIBot(env.unwrapped)
  state, _ = from_minigrid(env)
  frames, facts, actions = [minigrid_text.render_text(state)], [minigrid_text.state_facts(state)], []
  success = False
  for _ in range(LIMITS[task_id]):
    a = int(bot.replan())
    _, reward, terminated, truncated, _ = env.step(a)
    state, _ = from_minigrid(env)
    actions.append(minigrid_text.ACTION_TEXT[a])
    frames.append(minigrid_text.render_text(state))
    facts.append(minigrid_text.state_facts(state))
    if terminated or truncated:
      success = bool(terminated and reward > 0)
      break
  env.close()
  return tuple(frames), tuple(facts), tuple(actions), success


# ---- beliefs ----------------------------------------------------------------------------------

def _truth_json(schema: schemas.Schema, facts: dict) -> dict:
  return {k: schemas.to_json(v) for k, v in schema.truth(facts).items()}


def believe(env_id: str, frames, facts, t: int, noisy: bool, rng) -> tuple[dict, dict]:
  """The demonstrator's belief at step t: (perceived board, asserted facts as JSON values).

  Args:
    env_id: "sokoban" or a BabyAI task id.
    frames, facts: an expert episode's observations and true state facts.
    t: the step.
    noisy: misperceive (one column-off object / off-by-one target; else the previous frame's,
      stale, belief); a clean belief is the true state.
    rng: numpy Generator of the row's stream.

  Returns:
    (board, assertion): the board the plan or action is computed on, and the assertion (true
    values, except the fields the corrupted belief changes).
  """
  name = schema_name(env_id)
  schema, percept = schemas.get(name), scripted.PERCEPTION[name]()
  clean = percept.clean(frames[t])
  truth = _truth_json(schema, facts[t])
  if not noisy:
    return clean, truth
  base = percept.facts(clean)
  board = percept.misread(clean, rng)
  seen = percept.facts(board)
  if seen == base and t > 0:  # nothing to misread: a stale belief (the previous frame)
    board = percept.clean(frames[t - 1])
    seen = percept.facts(board)
  changed = {k for k in seen if seen[k] != base.get(k)}
  return board, {k: (seen[k] if k in changed else v) for k, v in truth.items()}


def _decide(env_id: str, board: dict, clean_action: str | None, noisy: bool, rng) -> str:
  """The action: the expert's on a clean belief, the expert's for the believed board otherwise."""
  if not noisy or clean_action is None:
    return clean_action
  percept = scripted.PERCEPTION[schema_name(env_id)]()
  return percept.act(board, rng, "")


def _subgoal(env_id: str, board: dict, actions, t: int, noisy: bool, rng) -> str:
  percept = scripted.PERCEPTION[schema_name(env_id)]()
  if schema_name(env_id) == "sokoban" and not noisy:
    return "moves: " + ", ".join(actions[t:t + SUBGOAL_STEPS])
  return percept.subgoal(board, rng)


def _state_text(assertion: dict) -> str:
  return prompts.state_json({k: v for k, v in assertion.items() if v is not None}) \
      if any(v is not None for v in assertion.values()) else "{}"


# ---- rows -------------------------------------------------------------------------------------

def _task(env_id: str) -> textenv.Task:
  return textenv.task(schema_name(env_id))


def _streams(seed: int, role: int):
  """(who misperceives, how): two generators, so the misperception share is a plain binomial."""
  return np.random.default_rng([seed, role, 0]), np.random.default_rng([seed, role, 1])


def _noisy(noise: float, rng) -> bool:
  if not 0.0 <= noise <= 1.0:
    raise ValueError(f"noise must lie in [0, 1], got {noise}")
  return bool(rng.random() < noise)


def _meta(env_id, index, t, role, noisy, facts, assertion) -> dict:
  truth = _truth_json(schemas.get(schema_name(env_id)), facts[t])
  # "wrong": the belief differs from the truth (a drawn misperception can change nothing)
  return {"env": env_id, "instance": index, "t": t, "role": role, "noisy": noisy,
          "wrong": assertion != truth, "truth": truth, "belief": assertion}


def _discussion(env_id, frames, facts, t, role, row, board, reply, noise, rngs,
                recheck: float | None = None) -> dict | None:
  """A discussion row after `row` (module docstring), or None when no conflict arises.

  The teammate's claim: the truth when the row's belief is wrong, else a misperceived belief
  (no conflict -> no row). The reply (`reply(board, assertion, noisy)`) is a fresh look at rate
  `noise` (`recheck=None`) or a targeted re-check of the contested fields at rate `recheck`;
  `board` is the board the row's own belief was computed on."""
  draw, rng = rngs
  schema = schemas.get(schema_name(env_id))
  mine, truth = row["meta"]["belief"], row["meta"]["truth"]
  other, other_board = (truth, None) if row["meta"]["wrong"] else \
      believe(env_id, frames, facts, t, True, rng)[::-1]
  parsed = lambda a: parse.parse_assertion(f"<state>{_state_text(a)}</state>", schema).values
  mine_p, other_p = parsed(mine), parsed(other)
  pair = (mine_p, other_p) if role == "planner" else (other_p, mine_p)
  conflicts = compare.contradictions(*pair, schema)
  if not conflicts:
    return None
  extra = {}
  if recheck is None:
    noisy = _noisy(noise, draw)
    board, assertion = believe(env_id, frames, facts, t, noisy, rng)
  else:
    contested = sorted({c.field for c in conflicts})
    failed = _noisy(recheck, draw)
    board, assertion = _rechecked(env_id, frames, facts, t, board, mine, other, other_board,
                                  contested, failed, rng)
    noisy = assertion != truth
    extra = {"recheck": True, "recheck_failed": failed, "contested": contested}
  messages = row["messages"] + [
      {"role": "assistant", "content": row["target"]},
      {"role": "user", "content": prompts.discussion_user(compare.describe_conflicts(conflicts),
                                                          role)}]
  meta = {**_meta(env_id, row["meta"]["instance"], t, role, noisy, facts, assertion),
          "discussion": True, "teammate": other, **extra}
  target = reply(board, assertion, noisy, "check the observation again")
  return {"messages": messages, "target": target, "meta": meta}


def _rechecked(env_id, frames, facts, t, board, mine, other, other_board, contested, failed,
               rng) -> tuple[dict, dict]:
  """The belief after a targeted re-check of the `contested` fields (module docstring):
  (board the reply is computed on, assertion)."""
  truth = _truth_json(schemas.get(schema_name(env_id)), facts[t])
  own_right = all(mine.get(f) == truth.get(f) for f in contested)
  if failed and own_right:       # misread again: the teammate's wrong claim looks right
    return other_board, {**mine, **{f: other.get(f) for f in contested}}
  if failed:                     # misread again: its own wrong values stay
    return board, dict(mine)
  assertion = {**mine, **{f: truth.get(f) for f in contested}}
  if assertion == truth:
    return believe(env_id, frames, facts, t, False, rng)[0], assertion
  return board, assertion        # uncontested wrong fields are kept, and drive the decision


def planner_rows(env_id: str, instances, noise: float, seed: int, discuss: float = 0.0,
                 recheck: float | None = None) -> list[dict]:
  """Planner SFT rows: one per sub-goal start of each expert episode.

  Args:
    env_id: "sokoban" or a BabyAI task id.
    instances: source instance indices (an int n means range(n)).
    noise: probability that a row's demonstrator misperceives.
    seed: seed of the planner's noise stream.
    discuss: probability that a row is followed by a discussion row (module docstring).
    recheck: None (a discussion redraws the whole belief at rate `noise`) or the targeted
      re-check's failure rate (module docstring).

  Returns:
    rows {"messages", "target", "meta"} (module docstring).
  """
  task, schema = _task(env_id), schemas.get(schema_name(env_id))
  system = prompts.planner_system(task, schema, True)
  (draw, rng), rows = _streams(seed, 0), []
  talk = _streams(seed, 2)
  for index in _indices(instances):
    frames, facts, actions, _ = expert_episode(env_id, index)
    starts, prev = [], None
    for t in range(0, len(actions), SUBGOAL_STEPS):
      def reply(board, assertion, noisy, think="plan the next moves"):
        subgoal = _subgoal(env_id, board, actions, t, noisy, rng)
        return (f"<think>{think}</think><state>{_state_text(assertion)}</state>"
                f"<subgoal>{subgoal}</subgoal>")
      noisy = _noisy(noise, draw)
      board, assertion = believe(env_id, frames, facts, t, noisy, rng)
      shown = [frames[i] for i in starts[-PLANNER_STARTS:]] + [frames[t]]
      user = prompts.planner_user(shown, prev, None if prev is None else "done", [])
      target = reply(board, assertion, noisy)
      row = {"messages": [{"role": "system", "content": system},
                          {"role": "user", "content": user}], "target": target,
             "meta": _meta(env_id, index, t, "planner", noisy, facts, assertion)}
      rows.append(row)
      if discuss and talk[0].random() < discuss:
        extra = _discussion(env_id, frames, facts, t, "planner", row, board, reply, noise, talk,
                            recheck)
        rows += [extra] if extra else []
      starts.append(t)
      prev = parse.extract_tag(target, "subgoal")
  return rows


def actor_rows(env_id: str, instances, noise: float, seed: int, discuss: float = 0.0,
               react: bool = False, recheck: float | None = None) -> list[dict]:
  """Actor SFT rows: one per expert action, with the 3-frame window and the active sub-goal.

  Args:
    env_id: "sokoban" or a BabyAI task id.
    instances: source instance indices (an int n means range(n)).
    noise: probability that a row's demonstrator misperceives.
    seed: seed of the actor's noise stream (independent of the planner's).
    discuss: probability that a row is followed by a discussion row (module docstring).
    react: ReAct format instead (agents/conpact/react.py: no planner, no sub-goal, no assertion,
      no status; the action is still the believed state's) -- own noise stream.
    recheck: None (whole-belief redraw) or the targeted re-check's failure rate (module doc).

  Returns:
    rows {"messages", "target", "meta"}; meta["action"] is the demonstrated action.
  """
  task, schema = _task(env_id), schemas.get(schema_name(env_id))
  system = (prompts.actor_system(task, schema, False, with_planner=False) if react else
            prompts.actor_system(task, schema, True, with_planner=True))
  (draw, rng), rows = _streams(seed, 3 if react else 1), []
  talk = _streams(seed, 4)
  for index in _indices(instances):
    frames, facts, actions, _ = expert_episode(env_id, index)
    subgoal = None
    for t, expert in enumerate(actions):
      if t % SUBGOAL_STEPS == 0:
        subgoal = _subgoal(env_id, believe(env_id, frames, facts, t, False, rng)[0], actions, t,
                           False, rng)
      last = t % SUBGOAL_STEPS == SUBGOAL_STEPS - 1 or t == len(actions) - 1

      def reply(board, assertion, noisy, think="next step toward the sub-goal"):
        action = _decide(env_id, board, expert, noisy, rng)
        if react:
          return f"<think>next step toward the goal</think><action>{action}</action>"
        return (f"<think>{think}</think><state>{_state_text(assertion)}</state><action>{action}"
                f"</action><status>{'done' if last else 'ongoing'}</status>")
      noisy = _noisy(noise, draw)
      board, assertion = believe(env_id, frames, facts, t, noisy, rng)
      window = list(frames[max(0, t - ACTOR_WINDOW + 1):t + 1])
      user = prompts.actor_user(window, None if react else subgoal, [])
      target = reply(board, assertion, noisy)
      meta = _meta(env_id, index, t, "actor", noisy, facts, assertion)
      row = {"messages": [{"role": "system", "content": system},
                          {"role": "user", "content": user}], "target": target,
             "meta": {**meta, "action": parse.parse_action(target, task.action_names),
                      "expert_action": expert, "react": react}}
      rows.append(row)
      if discuss and not react and talk[0].random() < discuss:
        extra = _discussion(env_id, frames, facts, t, "actor", row, board, reply, noise, talk,
                            recheck)
        rows += [extra] if extra else []
  return rows


def _indices(instances) -> list[int]:
  return list(range(instances)) if isinstance(instances, int) else [int(i) for i in instances]
