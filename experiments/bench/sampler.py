"""Decode throughput of `lib.generate.sampling.generate` against transformers `generate()` on this
CPU.

Both sides hold the same random weights: transformers builds the model from our preset's config,
writes a checkpoint, and we load it with `load_pretrained`. The timing loop (greedy, no EOS,
median of interleaved rounds, compile and warm-up excluded, load recorded, greedy agreement, the
bytes each decode step reads and our share of the memory bandwidth probed in the same run) is
`lib.bench.decode_throughput.compare_generation`, shared with experiments/bench/qwen3_5.py.
"""
import torch
import transformers

from lib import models
from lib.bench.decode_throughput import compare_generation
from lib.models import model_setup
from lib.run import config_blocks


def _hf_model(config: models.QwenConfig, seed: int, init_std: float):
  torch.manual_seed(seed)
  hf_dict = {k: v for k, v in config.to_hf().items() if k not in ("architectures", "model_type")}
  hf_class, lm_class = ((transformers.Qwen2Config, transformers.Qwen2ForCausalLM)
                        if config.model_type == "qwen2" else
                        (transformers.Qwen3Config, transformers.Qwen3ForCausalLM))
  return lm_class(hf_class(**hf_dict, initializer_range=init_std)).eval()


def run(config, workdir):
  cfg = models.preset(config.preset)
  hf = _hf_model(cfg, config.seed, config.init_std)
  ckpt = f"{workdir}/model"
  hf.save_pretrained(ckpt)
  model, _, _ = model_setup.build_model(config_blocks.model_block(checkpoint=ckpt), seed=config.seed)
  return compare_generation(model, hf, cfg, config, workdir, tag="bench_sampler",
                            title="Sampler throughput vs transformers generate()")
