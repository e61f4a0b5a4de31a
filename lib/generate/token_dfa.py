"""Token-level DFAs for structured output: a regex (or a JSON schema, as a regex) compiled over a
tokenizer's vocabulary into a dense transition table that the jitted sampler reads on device.

`compile_regex(tokenizer, regex, eos_ids)` builds the automaton with outlines-core (`Index` over
the tokenizer's `Vocabulary`, a maintained engine; we write no grammar code) and exports it as
`TokenDFA`: the dense transition table [S, V] (state after token t in state s, -1 when t is not
allowed; every EOS id allowed exactly in the accepting states), stored with its identical columns
merged: `table` int32 [S, C] over token classes and `classes` int32 [V] (most of a large
vocabulary behaves alike under a grammar, so C << V). `stack` puts several DFAs (and
unconstrained rows) into one table, so one sampler batch serves rows with different constraints:
state 0 is FREE (every token allowed, EOS included, and it stays 0).

In the sampler (`lib.generate.sampling.generate(..., constraint=...)`) each row carries one DFA
state; a step masks the logits with `table[state][classes] >= 0` (`allowed_logits`) and moves on
with `table[state, classes[token]]` (`advance`): a few gathers per step, no host call per token.

`json_schema_regex` turns a JSON schema into a regex (outlines-core's
`build_regex_from_schema`); `{"type": "json_object"}` (any JSON object) is recursive, so it is
the bounded-depth regex of `JSON_OBJECT_DEPTH` nesting levels.
"""
import dataclasses
import functools
import json
import re
from typing import NamedTuple, Sequence

import jax.numpy as jnp
import numpy as np
import outlines_core

WHITESPACE = r"[ ]?"  # between JSON tokens: one optional space (a random model cannot pad forever)
JSON_OBJECT_DEPTH = 2  # container levels of response_format json_object (json_object_regex)
MAX_CELLS = 1 << 25  # default bound on states x token classes (128 MiB of int32)
FREE = 0


class ConstraintError(ValueError):
  """A regex or schema that cannot be compiled, or whose table would exceed the size bound."""


@dataclasses.dataclass(frozen=True, eq=False)  # compared and cached by identity
class TokenDFA:
  """A regex's automaton over token ids. table: int32 [S, C], the next state per token class,
  -1 = not allowed (EOS ids allowed, as a self-loop, exactly in accepting states); classes:
  int32 [V], each token's class; initial: the start state; regex: its source; eos_ids: the ids
  that end a row."""
  table: np.ndarray
  classes: np.ndarray
  initial: int
  regex: str
  eos_ids: tuple[int, ...]

  @property
  def accepting(self) -> np.ndarray:
    """bool [S]: states where the output may end (the table allows EOS there)."""
    return self.table[:, self.classes[self.eos_ids[0]]] >= 0

  def row(self, state: int) -> np.ndarray:
    """int32 [V]: the next state after each token in `state` (-1: not allowed)."""
    return self.table[state][self.classes]


class Constraint(NamedTuple):
  """What the sampler takes (on device): table int32 [S, C], classes int32 [V] and states
  int32 [B], each row's start state (FREE = unconstrained)."""
  table: jnp.ndarray
  classes: jnp.ndarray
  states: jnp.ndarray


def _byte_decoder() -> dict[str, int]:
  """GPT-2's byte-level alphabet (printable stand-ins for the 256 bytes), reversed."""
  printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
               + list(range(ord("®"), ord("ÿ") + 1)))
  chars, extra = list(printable), 0
  for b in range(256):
    if b not in printable:
      printable.append(b)
      chars.append(256 + extra)
      extra += 1
  return {chr(c): b for b, c in zip(printable, chars)}


def token_bytes(tokenizer) -> dict[int, bytes]:
  """The bytes each ordinary token decodes to (special tokens left out).

  Args:
    tokenizer: a HF fast tokenizer with a byte-level BPE (Qwen's and ours); added non-special
      tokens (Qwen's <tool_call>) are their literal text.
  Returns:
    {token id: bytes}.
  Raises:
    ConstraintError: for a tokenizer that is not byte-level.
  """
  decoder = _byte_decoder()
  added = tokenizer.added_tokens_decoder
  out = {}
  for token, i in tokenizer.get_vocab().items():
    if i in added:
      if not added[i].special:
        out[i] = added[i].content.encode("utf-8")
      continue
    try:
      out[i] = bytes(decoder[ch] for ch in token)
    except KeyError:
      raise ConstraintError(f"token {token!r} is not byte-level BPE; structured output needs a "
                            "byte-level tokenizer") from None
  return out


@functools.lru_cache(maxsize=8)
def _vocabulary(tokenizer, eos_id: int) -> outlines_core.Vocabulary:
  by_bytes: dict[bytes, list[int]] = {}
  for i, b in token_bytes(tokenizer).items():
    if b and i != eos_id:
      by_bytes.setdefault(b, []).append(i)
  return outlines_core.Vocabulary(eos_id, by_bytes)


def compile_regex(tokenizer, regex: str, eos_ids: Sequence[int], max_cells: int = MAX_CELLS
                  ) -> TokenDFA:
  """The token-level DFA of `regex`, cached per (tokenizer, regex, eos_ids, max_cells); see
  `build_dfa`."""
  return _cached_build(tokenizer, regex, tuple(sorted(int(e) for e in eos_ids)), max_cells)


@functools.lru_cache(maxsize=16)
def _cached_build(tokenizer, regex, eos_ids, max_cells):
  return build_dfa(tokenizer, regex, eos_ids, max_cells)


def build_dfa(tokenizer, regex: str, eos_ids: Sequence[int], max_cells: int = MAX_CELLS
              ) -> TokenDFA:
  """The token-level DFA of `regex` (anchored at both ends) over `tokenizer`'s vocabulary.

  Args:
    tokenizer: a byte-level HF tokenizer (see `token_bytes`).
    regex: the pattern the whole output must match.
    eos_ids: the ids that end a row; all of them are allowed in accepting states only.
    max_cells: bound on states x token classes of the table.
  Returns:
    The TokenDFA (states renumbered 0..S-1).
  Raises:
    ConstraintError: an invalid regex, one no token sequence can match, or a table over
      max_cells.
  """
  eos_ids = tuple(sorted(int(e) for e in eos_ids))
  if not eos_ids:
    raise ConstraintError("structured output needs an EOS token id")
  vocab = max(len(tokenizer), max(tokenizer.get_vocab().values()) + 1)
  try:
    index = outlines_core.Index(regex, _vocabulary(tokenizer, eos_ids[0]))
  except Exception as e:  # outlines-core raises ValueError/RuntimeError with the parser's text
    raise ConstraintError(f"cannot compile the pattern: {str(e).splitlines()[0][:200]}") from None
  transitions, finals = index.get_transitions(), set(index.get_final_states())
  ids = {s: k for k, s in enumerate(sorted(set(transitions) | finals))}

  def row(s) -> np.ndarray:  # one dense row at a time: memory O(V), never O(S x V)
    r = np.full(vocab, -1, np.int32)
    moves = transitions.get(s, {})
    if moves:
      r[np.fromiter(moves.keys(), np.int64, len(moves))] = [ids[n] for n in moves.values()]
    if s in finals:
      r[list(eos_ids)] = ids[s]
    return r

  # Tokens whose columns are equal share a class: a random linear hash of each column, then an
  # exact check of every row against its class representative.
  weights = np.random.default_rng(0).integers(1, 1 << 62, len(ids), dtype=np.int64)
  hashes = np.zeros(vocab, np.int64)
  for s, k in ids.items():
    hashes += weights[k] * (row(s).astype(np.int64) + 1)  # wraps modulo 2^64
  _, first, classes = np.unique(hashes, return_index=True, return_inverse=True)
  if len(ids) * len(first) > max_cells:
    raise ConstraintError(f"the constraint needs {len(ids)} states x {len(first)} token classes "
                          f"= {len(ids) * len(first)} table cells, over the limit of {max_cells}")
  table = np.empty((len(ids), len(first)), np.int32)
  for s, k in ids.items():
    r = row(s)
    table[k] = r[first]
    if not np.array_equal(table[k][classes], r):
      raise ConstraintError("token classes collided; report this pattern")  # p ~ 2^-60
  return TokenDFA(table, classes.astype(np.int32), ids[index.get_initial_state()], regex,
                  eos_ids)


def escape(text: str) -> str:
  """`text` as a literal in outlines-core's regex syntax (only its metacharacters escaped)."""
  return re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", text)


def json_schema_regex(schema, whitespace: str = WHITESPACE, depth: int = JSON_OBJECT_DEPTH
                      ) -> str:
  """The regex of the JSON documents `schema` accepts (outlines-core's translation).

  Args:
    schema: a JSON schema (a dict, or its JSON text).
    whitespace: the pattern allowed between JSON tokens.
    depth: how deeply a recursive or open-ended schema (an object without properties) nests.
  Returns:
    The regex.
  Raises:
    ConstraintError: a schema outlines-core cannot translate.
  """
  text = schema if isinstance(schema, str) else json.dumps(schema)
  try:
    return outlines_core.json_schema.build_regex_from_schema(text, whitespace, depth)
  except Exception as e:  # outlines-core raises ValueError/TypeError naming the schema part
    raise ConstraintError(f"unsupported JSON schema: {str(e).splitlines()[0][:200]}") from None


_STRING = r'"([^"\\\x00-\x1f]|\\(["\\/bfnrt]|u[0-9a-fA-F]{4}))*"'
_NUMBER = r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?"


def json_object_regex(depth: int = JSON_OBJECT_DEPTH, whitespace: str = WHITESPACE) -> str:
  """Any JSON object whose containers nest at most `depth` levels (depth 2: the object's values
  may be objects or arrays of scalars). Its DFA grows about 4x per level: over our 384-token
  vocabulary depth 2 has 449 states (0.3 s to build), depth 3 1,825 (18 s).

  Args:
    depth: container levels, >= 1. whitespace: the pattern allowed between JSON tokens.
  """
  w, scalar = whitespace, f"{_STRING}|{_NUMBER}|true|false|null"
  value = scalar
  for level in range(depth):
    members = f"({_STRING}{w}:{w}({value})({w},{w}{_STRING}{w}:{w}({value}))*)?"
    obj = rf"\{{{w}{members}{w}\}}"
    if level == depth - 1:
      return obj
    value = rf"{scalar}|{obj}|\[{w}(({value})({w},{w}({value}))*)?{w}\]"
  raise ValueError(f"depth must be >= 1, got {depth}")


def stack(dfas: Sequence[TokenDFA | None], vocab: int, min_states: int = 16
          ) -> tuple[np.ndarray, np.ndarray, list[int]]:
  """One table for a batch: FREE (state 0) followed by each distinct DFA's states, over the
  token classes of all of them together.

  Args:
    dfas: per row, its TokenDFA or None (unconstrained, state FREE).
    vocab: the table width in tokens (the model's vocabulary; ids past a DFA's are never
      allowed by it).
    min_states: the row count is padded to a power of two >= this (few compiled programs).
  Returns:
    (table int32 [S, C], classes int32 [vocab], start state per row).
  """
  distinct = list({id(d): d for d in dfas if d is not None}.values())
  keys, tables = [], []
  for d in distinct:  # an extra all -1 class for ids past the DFA's vocabulary
    k = np.full(vocab, d.table.shape[1], np.int32)
    k[:min(vocab, len(d.classes))] = d.classes[:vocab]
    keys.append(k)
    tables.append(np.concatenate([d.table, np.full((d.table.shape[0], 1), -1, np.int32)], 1))
  if keys:
    combos, classes = np.unique(np.stack(keys), axis=1, return_inverse=True)
  else:
    combos, classes = np.zeros((0, 1), np.int32), np.zeros(vocab, np.int64)
  blocks, offsets, used = [np.zeros((1, combos.shape[1]), np.int32)], {}, 1
  for i, d in enumerate(distinct):
    t = tables[i][:, combos[i]]
    blocks.append(np.where(t >= 0, t + used, -1).astype(np.int32))
    offsets[id(d)] = used
    used += t.shape[0]
  rows = max(min_states, 1 << max(0, used - 1).bit_length())
  blocks.append(np.full((rows - used, combos.shape[1]), -1, np.int32))
  starts = [FREE if d is None else offsets[id(d)] + d.initial for d in dfas]
  return np.concatenate(blocks), classes.reshape(-1).astype(np.int32), starts


def constraint(dfas: Sequence[TokenDFA | None], vocab: int) -> Constraint:
  """`stack`'s table on device, as the sampler takes it.

  Args:
    dfas: per row, its TokenDFA or None (unconstrained).
    vocab: the model's vocabulary size.
  """
  table, classes, starts = stack(dfas, vocab)
  return Constraint(jnp.asarray(table), jnp.asarray(classes), jnp.asarray(starts, jnp.int32))


def allowed_logits(logits, tables, states):
  """Logits [B, V] with the tokens each row's state forbids set to -inf.

  Args:
    logits: [B, V]. tables: (table int32 [S, C], classes int32 [V]). states: int32 [B].
  """
  table, classes = tables
  return jnp.where(jnp.take(table[states], classes, axis=1) >= 0, logits, -jnp.inf)


def advance(tables, states, tokens, done):
  """Each live row's next state after its token (done rows keep theirs).

  Args:
    tables: (table int32 [S, C], classes int32 [V]). states, tokens: int32 [B]. done: bool [B].
  """
  table, classes = tables
  return jnp.where(done, states, table[states, classes[tokens]])
