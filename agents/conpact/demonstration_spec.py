"""What the supervision rows of agents/conpact/demonstrations.py cover and how they are cut.

Standard library only (no JAX), so configs/conpact/study.py reads the task list and matches the
online agents' re-planning interval to the demonstrations' sub-goal span without importing the
environments.
"""
from envs.minigrid.limits import LIMITS

SUBGOAL_STEPS = 4  # expert actions per sub-goal
ACTOR_WINDOW = 3  # frames the actor sees, current included (paper Table 9)
PLANNER_STARTS = 2  # earlier sub-goal-start frames the planner sees
BABYAI_TASKS = tuple(sorted(LIMITS))  # every task of the BabyAI split has demonstrations
