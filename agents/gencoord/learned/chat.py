"""Chat rendering of an agent's model-visible local context (the prompt of every learned policy).

system: the shared executable prior K that every agent holds -- skill catalog with its typed
        schema (required | optional keys) and the Short DSL answer grammar.
user:   this agent's local context x_i: stage, decision agent, peer, local observation, history,
        incoming message (delivered REQ or bounded response) and the public task structure of
        the episode's template in its visibility view (Full DAG / Skeleton / Node-only), as
        rendered by `agents.gencoord.prompt.render`.
The messages go through the tokenizer's chat template (`lib.models.tokenizer.render_chat`) for the
Flax sampler and unchanged to OpenAI-compatible endpoints, so every model reads the same input.
"""
import functools

from agents.gencoord import prompt, skills
from agents.gencoord.episode import LocalContext
from lib.models.tokenizer import render_chat

_GRAMMAR = "reply: SELF <task> > ... | SELF -, newline, REQ <peer> <task> > ... | REQ -"
_SURFACE_NOTE = {
    "dsl": _GRAMMAR,
    "json": "reply: JSON {self: [{skill, args}], req: {target, plan} | null}",
    "freeform": "reply: plain sentences, what you will do, then what you ask the peer",
    "factor": "reply: the binding code of the active branch",
}


@functools.lru_cache(maxsize=None)
def system_prompt(surface: str = "dsl") -> str:
  """K: skill catalog and typed schema (shared, identical for every agent and episode)."""
  if surface not in _SURFACE_NOTE:
    raise ValueError(f"unknown surface {surface!r}; valid: {sorted(_SURFACE_NOTE)}")
  catalog = " ".join(f"{name}({','.join(s.required)}|{','.join(k for k in s.optional)})"
                     for name, s in sorted(skills.SCHEMAS.items()))
  return f"skills (required|optional): {catalog}\n{_SURFACE_NOTE[surface]}"


# Shared, slowly varying sections first; this agent's decisive facts (observation with its
# private fact, history, incoming message, who decides for whom) last, next to the answer.
_IDENTITY = ("stage", "agent", "peer")
_ORDER = ("prior", "structure", "observation", "history", "incoming", "stage", "agent", "peer",
          "task")


# The sections of a short-context drill row (agents/gencoord/learned/drill.py): the agent's own
# facts and its task, without the template's prior and structure lines (and no system prompt).
OWN_SECTIONS = ("observation", "history", "incoming", "stage", "agent", "peer", "task")


def user_message(ctx: LocalContext, keep: tuple = _ORDER) -> str:
  """`prompt.render(ctx)` with its sections in `_ORDER` (same lines, same content); only the
  sections named in `keep` (all by default)."""
  rank = {k: i for i, k in enumerate(_ORDER)}
  sections: list = []
  for line in prompt.render(ctx).split("\n"):
    key = line.split(":", 1)[0].split("[", 1)[0]
    if key in rank:
      sections.append((rank[key], len(sections), [line], key in keep))
    else:                       # continuation of a multi-line value (a two-line DSL history)
      sections[-1][2].append(line)
  ordered = ["\n".join(lines) for _, _, lines, kept in sorted(sections) if kept]
  # "agent: agent_a" -> "agent=agent_a": one pre-token, so who decides (and for whom) is a
  # single token the model can read directly instead of a two-token pattern.
  return "\n".join(line.replace(": ", "=", 1) if line.split(":", 1)[0] in _IDENTITY else line
                   for line in ordered)


def messages(ctx: LocalContext, surface: str = "dsl") -> list[dict]:
  """The conversation a learned policy answers for one local context."""
  return [{"role": "system", "content": system_prompt(surface)},
          {"role": "user", "content": user_message(ctx)}]


def own_messages(ctx: LocalContext) -> list[dict]:
  """The agent's own sections only (`OWN_SECTIONS`), no system prompt: the input of a
  short-context drill row. Never a policy's input (policies read `messages`)."""
  return [{"role": "user", "content": user_message(ctx, OWN_SECTIONS)}]


def sft_pairs(rows, surface: str = "dsl") -> list[tuple[list[dict], str]]:
  """Supervision rows -> (messages, target) chat rows for `lib.sft.chat_rows.encode_rows`."""
  return [(messages(r.context, surface), r.target) for r in rows]


def tokenizer_texts(rows, surface: str = "dsl") -> list[str]:
  """The texts a recipe's from-scratch BPE is trained on: system prompt, prompt and target of
  each row (experiments/gencoord/learned.py; the drill probe trains the same BPE)."""
  system = system_prompt(surface)
  return [system + "\n" + r.prompt + "\n" + r.target for r in rows]


def prompt_text(tokenizer, ctx: LocalContext, surface: str = "dsl") -> str:
  """messages(ctx) through the tokenizer's chat template, ending with the assistant opener."""
  return render_chat(tokenizer, messages(ctx, surface), add_generation_prompt=True)
