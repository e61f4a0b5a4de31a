"""OpenAI-compatible server over a Flax model (embedded tiny default or a local HF checkpoint).

python launch.py --config=configs/serve.py --workdir=runs/serve
python launch.py --config=configs/serve.py:checkpoint=runs/sft/export,port=8001 --workdir=runs/serve
python launch.py --config=configs/serve.py:debug=True --workdir=runs/serve_debug   # 20 s, free port
python launch.py --config=configs/serve.py --config.limits.max_new_tokens=4096 --workdir=runs/serve

Clients: `lib.backends.openai_http.OpenAIBackend(base_url="http://127.0.0.1:8000/v1",
model="accord")`, or any OpenAI SDK. The chosen port is written to <workdir>/server.json.
"""
import ml_collections

from configs import common
from lib.run.config_blocks import model_block


def get_config(arg=None):
  arg = common.parse_arg(arg, debug=False, checkpoint="", port=8000, model_name="accord")
  c = ml_collections.ConfigDict()
  c.experiment = "serve"
  c.seed = 0
  # checkpoint: HF-format dir with tokenizer; "" = embedded tiny random model
  c.model = model_block(checkpoint=arg.checkpoint)
  c.model_name = arg.model_name
  c.host = "127.0.0.1"  # loopback by default; set 0.0.0.0 deliberately to expose it
  c.port = 0 if arg.debug else arg.port
  c.max_batch = 32
  c.min_batch = 1  # sampler batches pad to a power of two >= this (fewer compiles when larger)
  c.batch_window_s = 0.01  # how long the model worker waits to grow a batch
  c.chunk_size = 16  # decode steps between checks for cancelled / finished requests
  c.api_key_env = ""  # env var holding a bearer key clients must send; "" = no auth
  # POST /update_weights_from_disk {"model_path": dir}: an RL trainer's weight push
  # (lib/serve/weights.py; configs/agentic/babyai.py with served.url)
  c.weight_updates = False
  c.drain_s = 10.0  # on SIGTERM: how long the running batch may finish before it is cancelled
  # Per-request limits (lib/serve/admission.py ServerLimits); a request over one gets a 400
  # naming it. max_batch above is also the largest n.
  c.limits = dict(
      context_length=0,  # prompt + max_tokens per row; 0 = the model's max_position_embeddings
      max_prompt_tokens=4096, max_new_tokens=1024,
      max_queue=256,  # waiting requests; more get 503 + Retry-After
      request_timeout_s=600.0,  # unanswered after this -> cancelled at the next chunk, 504
      socket_timeout_s=30.0,  # idle / half-sent connections are closed after this
      stuck_after_s=120.0,  # /health fails when a batch makes no progress for this long
      max_body_bytes=8 << 20, max_embed_inputs=256,
      max_constraint_cells=1 << 25)  # structured output: DFA states x token classes per table
  c.duration_s = 20.0 if arg.debug else 0.0  # 0: serve until killed
  return c
