"""What `experiments/gencoord/eval.py` needs for `config.world = "live"`: open the runtime from the
config, and report per-operation and per-episode timing next to the paper's 22.6 s per episode."""
import os

import numpy as np

from envs.minecraft.live.runtime import LiveConfig, LiveRuntime
from lib.run.results import markdown_table

PAPER_EPISODE_S = 22.6        # paper: mean wall time of one executed episode on its server


def open_runtime(config, workdir: str) -> LiveRuntime:
  live = config.get("live", {})
  rt = LiveRuntime(LiveConfig(speed=float(live.get("speed", 1.0)),
                              startup_timeout_s=float(live.get("startup_timeout_s", 60.0)),
                              op_timeout_s=float(live.get("op_timeout_s", 30.0)),
                              log_dir=os.path.join(workdir, "live_logs")))
  rt.start()
  return rt


def timing_report(rt: LiveRuntime) -> tuple:
  """(summary dict, markdown notes) of the operations and episodes this runtime ran."""
  ops = [{k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items()}
         for r in rt.latency_table()]
  eps = np.asarray(rt.episode_times, dtype=float)
  episode = {"n": int(eps.size), "mean_s": float(eps.mean()) if eps.size else None,
             "p50_s": float(np.median(eps)) if eps.size else None,
             "max_s": float(eps.max()) if eps.size else None, "paper_mean_s": PAPER_EPISODE_S,
             "process_starts": rt.starts}
  notes = ("\n## Live backend timing (flying-squid + Mineflayer on 127.0.0.1)\n\n"
           + markdown_table(ops) + "\n\nEpisodes (reset + execution + readback): "
           + ", ".join(f"{k}={round(v, 2) if isinstance(v, float) else v}"
                       for k, v in episode.items()) + "\n")
  return {"operations": ops, "episodes": episode}, notes
