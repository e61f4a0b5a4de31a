"""OpenAI-compatible server over a Flax model (embedded tiny default or a local HF checkpoint).

python launch.py --config=configs/serve.py --workdir=runs/serve
python launch.py --config=configs/serve.py:checkpoint=runs/sft/export,port=8001 --workdir=runs/serve
python launch.py --config=configs/serve.py:debug=True --workdir=runs/serve_debug   # 20 s, free port

Clients: `lib.llm.openai_http.OpenAIBackend(base_url="http://127.0.0.1:8000/v1", model="accord")`,
or any OpenAI SDK. The chosen port is written to <workdir>/server.json.
"""
import ml_collections

from configs import common


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, checkpoint="", port=8000, model_name="accord")
  c = ml_collections.ConfigDict()
  c.experiment = "serve"
  c.seed = 0
  c.checkpoint = arg.checkpoint  # HF-format dir with tokenizer; "" = embedded tiny random model
  c.dtype = "float32"
  c.model_name = arg.model_name
  c.host = "127.0.0.1"  # loopback by default; set 0.0.0.0 deliberately to expose it
  c.port = 0 if arg.debug else arg.port
  c.max_batch = 32
  c.min_batch = 1  # sampler batches pad to a power of two >= this (fewer compiles when larger)
  c.batch_window_s = 0.01  # how long the model worker waits to grow a batch
  c.duration_s = 20.0 if arg.debug else 0.0  # 0: serve until killed
  return c
