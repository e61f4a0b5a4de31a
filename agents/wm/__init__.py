"""The world-model post-training audit (Che et al., 2026): agent, data, metrics, judges, pass@k.

  trajectory  Step/Trajectory records, expert/noisy/random policies, host-loop row conversion
  prompts     agent (list / no-list) and world-model prompts, tolerant <action> parser
  agent       WorldModelAuditAgent on the lib.backends host-loop protocol
  metrics     success, turns, action failure, TIDE loop ratio, consecutive-repeat ratio
  data        next-observation samples, seed-42 sampling, held-out transitions, MIS targets
  judge       LLM judge prompt (four rules) + verdict parser; offline rule-based judge
  passk       pass@k curves, shared-draw task-bootstrap bands, McNemar + Holm, PNG plot
  probes      action-distribution overlap, prediction preference (model-free part)
  scripted    ScriptedAuditModel: the random stand-in model of CPU mechanics checks

The stages that experiments/wm/ run (the single-stage experiments and the demo / study alike):
  offline_data  expert / noisy-expert episodes -> train, MIS and held-out samples (wm/data)
  train         post-training under one audit condition (wm/train)
  evaluate      every condition: pass@k, coverage tests, behaviour, prediction accuracy
  pipeline      the warm start (BASE) and the probes of the demo and the study
"""
