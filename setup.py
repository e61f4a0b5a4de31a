"""Accord: JAX research code for LLM agents that act in environments.

Runs from the repository root without installation (`python launch.py ...`); `pip install -e .`
installs the dependencies and makes the packages importable elsewhere.
"""
from setuptools import find_packages, setup

# Lower bounds are the versions the test suite ran with (2026-12-01); older ones are untested.
# transformers 4.x still reads the tokenizers we export (tests/lib/models/test_tokenizer.py).
# transformers and numpy: the suite passes on the newest (what a fresh install picks) and on
# 5.20.2 / 2.3.5, which the `gpu` extra's vLLM needs (docs/gpu.md: its mistral-common takes
# numpy < 2.4 on Python <= 3.12).
CORE = [
    "jax>=0.10.2,<0.11",
    "flax>=0.12.8,<0.13",
    "optax>=0.2.8,<0.3",
    "orbax-checkpoint>=0.12.8,<0.13",
    "absl-py>=2.5,<3",
    "ml-collections>=1.1,<2",
    "tensorboardX>=2.6.5,<3",
    "transformers>=5.20.2,<6",
    "tokenizers>=0.23,<1",
    "safetensors>=0.8,<1",
    "numpy>=2.3.5,<3",
    "scipy>=1.17,<2",
    "tqdm>=4.70,<5",
    "matplotlib>=3.11,<4",
    "jinja2>=3.1.6,<4",  # chat templates (transformers' apply_chat_template) need it
    "gymnax>=1.0.1,<2",  # envs/base.py: every JAX env is a gymnax Environment with gymnax spaces
    "six>=1.17",  # importing gymnax imports its bundled MNIST env, which imports six
    "cloudpickle>=3.1,<4",  # env factories (lambdas too) travel to env worker processes
    # Structured output (lib/generate/token_dfa.py): regex / JSON schema -> token DFA for the
    # sampler.
    "outlines-core>=0.2.14,<0.3",
]

ENVS = [
    "minigrid>=3.2,<4",
    "crafter>=1.8.3,<2",
    "cffi>=1.17",  # gym3 (Procgen's interface); procgen2 itself installs with --no-deps
    "scienceworld>=1.2.3,<1.3",  # needs a Java 11+ runtime
    "alfworld>=0.4,<0.5",  # brings textworld
]

# Peers that tests and benchmarks compare against.
PEERS = [
    "jumanji>=1.1.2,<1.2",
]

# Every peer the benchmarks under configs/bench/ and configs/gencoord/bench.py measure against,
# so a fresh machine measures all of their rows: transformers + torch (sampler, qwen3_5, train),
# Farama minigrid (minigrid), jumanji (envs), navix and xminigrid (minigrid's JAX peers).
# navix imports rlax, which needs distrax (named here: without it navix's row is an import error).
BENCH = [
    "torch==2.13.0",  # the CPU wheel, as in `test`; install `bench` beside `test`, not `gpu`
    "minigrid>=3.2,<4",
    *PEERS,
    "navix==0.7.4",
    "distrax>=0.1.9,<0.2",
    "xminigrid==0.9.3",
]

TPU = ["jax[tpu]==0.10.2"]

# The host loop's `ray` env executor (host.executor="ray", lib/hostloop/ray_executor.py).
RAY = ["ray>=2.60,<3"]

EXTRAS = {
    "envs": ENVS,
    "bench": BENCH,
    "test": [
        "pytest>=9.2,<10",
        "chex>=0.1.92,<0.2",  # jit-once checks (assert_max_traces); product code does not use it
        "pytest-xdist>=3.8,<4",
        "hypothesis>=6.170,<7",
        "openai>=3.57,<4",  # the official SDK drives experiments/serve.py in the server tests
        "jsonschema>=4.26,<5",  # structured-output tests validate outputs against their schema
        "lm-eval[api]==0.4.13",  # lm-evaluation-harness's local-completions client, in the server tests
        # Exactly this version: it installs from the CPU wheel on disk; any other pulls CUDA.
        "torch==2.13.0",
        *ENVS,
        *PEERS,
        *TPU,
        *RAY,
    ],
    # libtpu's compiler, for `--plan --config.plan.target=tpu:<topology>` on a machine without
    # TPUs (and for running on one). Exactly the pinned jax: libtpu is built against it.
    "tpu": TPU,
    "ray": RAY,
    "gpu": [
        "jax[cuda12]>=0.10.2,<0.11",
        # runner="pooling" (the embedding backend) exists from 0.10.1. 0.33 is pinned so pip
        # resolves at once: it takes transformers 5.16.1-5.20 (with the core bound: 5.20.2), and
        # 0.34's flashinfer-python==0.7.3 had no installable wheel (2026-12-06). vLLM's torch pin
        # differs from `test`'s CPU torch==2.13.0: `gpu` and `test` go in separate environments.
        "vllm>=0.33,<0.34",
    ],
}

setup(
    name="accord",
    version="0.1.0",
    description="JAX research code for LLM agents: ConPAct, GenCoord, world-model audit",
    python_requires=">=3.11",
    packages=find_packages(include=["configs*", "lib*", "envs*", "agents*", "experiments*"]),
    py_modules=["launch"],
    install_requires=CORE,
    extras_require=EXTRAS,
)
