"""What a run will need, known before it starts (`launch.py --plan` and every training run).

  memory_plan.py       the memory plan of a training run: analytic, and compiled for this machine
  memory_breakdown.py  the analytic bytes per device of weights, optimizer, activations, logits
  plan_table.py        the printed table and plan.json of a plan
  rollout_plan.py      the rollout sampler's program compiled with abstract inputs
  compile_target.py    where a plan compiles: this machine's devices or a TPU slice (libtpu)
  roofline.py          the machine's peak FLOP/s and bandwidth, and a step's FLOPs and bytes
  launch_checks.py     configured inputs (checkpoints, files) that exist, checked before a run
"""
