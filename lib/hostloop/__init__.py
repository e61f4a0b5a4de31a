"""The host loop: many episodes at once, one batched backend call per step.

  agent.py             the agent <-> loop protocol (ModelRequest / Act), the host-loop env protocol
  loop.py              HostLoop: every live episode's request in one backend call per step
  prompt_agent.py      PromptAgent: the minimal one-role reference agent
  executors.py         where envs step: inline or in worker processes, timeouts, dead workers
  ray_executor.py      envs in Ray actors (`host.executor = "ray"`)
  executor_factory.py  the executor a config's `host` block names
  rollouts.py          episodes as token-in/token-out samples of the current params, one RL iteration
"""
