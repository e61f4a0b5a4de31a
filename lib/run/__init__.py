"""What every launched run shares, below every other layer of `lib/`.

  config_blocks.py  the `model`, `plan`, `host`, `backend` config blocks (unknown fields raise)
  console.py        the console and log file of a launched run (quiet libraries, one-line errors)
  jsonl.py          whole JSONL files written atomically in strict JSON, and read back
  progress.py       progress bars for long loops (tqdm on a terminal, a line per 30 s in CI)
  results.py        resumable per-row results.jsonl and strict-JSON summaries
  run_env.py        run_env.json: the numerics settings and versions a run's numbers depend on
  stages.py         resumable pipeline stages with their wall and CPU seconds (stages.json)
  tb.py             one TensorBoard writer per run directory
"""
