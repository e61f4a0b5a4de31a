"""Key tables (tunix style): how a model family's parameters are named and laid out in Hugging Face
checkpoints, one table used both ways by `lib.models.safetensors_io`.

Each family's `params.py` lists (HF key template, our parameter path template, layout) rows, `{i}`
standing for a layer index and `{p}` for a projection name. A row's layout is a `Layout` (one
checkpoint tensor <-> one parameter, e.g. transposed) or a `Fused` one (several checkpoint tensors,
the `{p}` parts of the row, <-> one parameter of ours, e.g. q/k/v as one kernel).
"""
import dataclasses
import re
from typing import Callable

import jax


@dataclasses.dataclass(frozen=True)
class Layout:
  """How a tensor is stored in the checkpoint relative to our parameter (both directions)."""
  name: str
  to_ours: Callable[[jax.Array], jax.Array]
  to_hf: Callable[[jax.Array], jax.Array]


AS_IS = Layout("as is", lambda x: x, lambda x: x)
# torch's Linear.weight is [out, in]; our Dense kernel is [in, out].
TRANSPOSED = Layout("transposed", lambda x: x.T, lambda x: x.T)


@dataclasses.dataclass(frozen=True)
class Fused:
  """Several checkpoint tensors held as one parameter of ours: each of `parts` (the row's `{p}`
  values, in order) goes through `part`, then `join` makes the parameter; `split` undoes `join`."""
  name: str
  parts: tuple[str, ...]
  part: Layout
  join: Callable[[list], jax.Array]
  split: Callable[[jax.Array], list]

  def to_ours(self, tensors: list) -> jax.Array:
    """The checkpoint's tensors, in `parts` order -> our parameter."""
    return self.join([self.part.to_ours(t) for t in tensors])

  def to_hf(self, value) -> list:
    """Our parameter -> the checkpoint's tensors, in `parts` order (shapes too, under
    `jax.eval_shape`: what a checkpoint must store for a model)."""
    return [self.part.to_hf(p) for p in self.split(value)]


def _pattern(template: str, parts: tuple[str, ...] | None = None) -> re.Pattern:
  names = "|".join(map(re.escape, parts)) if parts else "[a-z]+"
  p = re.escape(template).replace(r"\{i\}", r"(?P<i>\d+)").replace(r"\{p\}", f"(?P<p>{names})")
  return re.compile(p + "$")


class KeyTable:
  """A model family's (HF key template, our path template, Layout or Fused) rows, usable both ways;
  the first matching row wins, so fused rows come before the generic `{p}` rows they narrow."""

  def __init__(self, rows):
    self.rows = tuple(rows)
    self._hf_to_ours = [(_pattern(hf, getattr(layout, "parts", None)), ours, layout)
                        for hf, ours, layout in self.rows]
    self._ours_to_hf = [(_pattern(ours), hf, layout) for hf, ours, layout in self.rows]

  def to_ours(self, hf_key: str) -> tuple[str | None, Layout | Fused | None, str | None]:
    """Translates a checkpoint key to our parameter path.

    Args:
      hf_key: e.g. 'model.layers.3.mlp.down_proj.weight'.

    Returns:
      (our key, layout, part): e.g. ('layers.3.mlp.down_proj.kernel', TRANSPOSED, None); for a
      fused row, part is the key's `{p}` value ('up' for 'model.layers.3.mlp.up_proj.weight');
      (None, None, None) when no row matches.
    """
    for pattern, template, layout in self._hf_to_ours:
      m = pattern.match(hf_key)
      if m:
        part = m.group("p") if isinstance(layout, Fused) else None
        return template.format(**m.groupdict()), layout, part
    return None, None, None

  def to_hf(self, our_key: str) -> tuple[list[str], Layout | Fused | None]:
    """Translates our parameter path to its checkpoint keys (the inverse of `to_ours`).

    Args:
      our_key: e.g. 'layers.3.mlp.down_proj.kernel'.

    Returns:
      (HF keys, layout): e.g. (['model.layers.3.mlp.down_proj.weight'], TRANSPOSED); a fused
      parameter has one key per part, in `parts` order; ([], None) when no row matches.
    """
    for pattern, template, layout in self._ours_to_hf:
      m = pattern.match(our_key)
      if m:
        names = m.groupdict()
        if isinstance(layout, Fused):
          return [template.format(**names, p=part) for part in layout.parts], layout
        return [template.format(**names)], layout
    return [], None
