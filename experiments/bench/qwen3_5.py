"""Decode throughput of the Qwen3.5 port in `lib.generate.sampling.generate` against transformers
`generate()`.

Both sides hold the same random weights: transformers builds `Qwen3_5ForCausalLM` from our preset's
config (its own initialisation), writes a checkpoint, and we load it. Greedy decoding with no EOS,
so every row produces exactly `new_tokens` tokens; tokens/s = batch * new_tokens (response tokens
only, both sides) per call, median over interleaved rounds (`lib.bench.decode_throughput`, which
also records the load and marks a noisy run). Our first call (the XLA compile) is timed apart and
excluded, as are the warm-up calls. transformers runs its reference torch path for the DeltaNet
layers (chunked prefill, recurrent decode) since the fused kernels need a GPU. The summary also
reports how many greedy tokens the two sides agree on, and the bytes each decode step reads (the
DeltaNet layers' recurrent and conv states whole, the attention layers' filled KV slots) with our
share of the memory bandwidth probed in the same run (`lib.plan.roofline`).
"""
import torch
import transformers

from lib.bench.decode_throughput import compare_generation
from lib.models import preset
from lib.models.qwen3_5.params import load_qwen3_5


def run(config, workdir):
  cfg = preset(config.preset)
  torch.manual_seed(config.seed)
  hf_dict = {k: v for k, v in cfg.to_hf().items() if k not in ("architectures", "model_type")}
  hf = transformers.Qwen3_5ForCausalLM(transformers.Qwen3_5TextConfig(**hf_dict)).eval()
  ckpt = f"{workdir}/model"
  hf.save_pretrained(ckpt)
  model, _ = load_qwen3_5(ckpt)
  return compare_generation(
      model, hf, cfg, config, workdir, tag="bench_qwen3_5",
      title="Qwen3.5 sampler throughput vs transformers generate()")
