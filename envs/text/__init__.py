"""Host-loop text environments: `reset(seed) -> (obs, info)`, `step(action) -> (obs, reward,
terminated, truncated, info)` with the shared info keys of `envs.text.base`.

  scienceworld_env  ScienceWorld (30 tasks) over a supervised JVM (restart on death/hang)
  textworld_env     TextWorld games (tw-make, offline) and the TextWorld engine for ALFWorld
  alfworld_env      ALFWorld games from an ALFWORLD_DATA directory
  alfworld_game     writes a tiny game in ALFWorld's own format (tests, CPU demos)
  pool              reuses envs across episodes of a host loop
  sources           a config's ScienceWorld / TextWorld / ALFWorld level sets and env factories
"""
