"""Hugging Face checkpoint directories <-> NNX parameters, through a model family's key table.

Files: `config.json` plus `model.safetensors` or a sharded `model.safetensors.index.json`, local
only. Every problem with them (absent, unreadable, truncated, malformed JSON, a missing field) is a
`WeightsError` whose message starts with the offending file's path.

Each family's `params.py` holds a key table (`lib.models.key_table`). `load_params` maps every
tensor through it: `nnx.eval_shape` model -> file headers -> keys and layouts -> shapes checked
against the abstract model, each part of a fused parameter on its own (one `WeightsError` lists
every missing, unexpected and mis-shaped key) -> tensors read, converted (fused parts joined),
cast and placed -> `nnx.merge`. `save_params` runs the table backwards.
"""
import contextlib
import dataclasses
import json
import os
from pathlib import Path
from typing import Callable, Iterator

import jax
import jax.numpy as jnp
import numpy as np
import safetensors
import safetensors.flax
from flax import nnx

from lib.models.key_table import Fused, KeyTable, Layout
from lib.parallel import placement as sharding_lib

CONFIG_FILE = "config.json"
SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"


class WeightsError(ValueError):
  """A checkpoint directory that cannot be read, or whose config.json contradicts its weights; the
  message names the file (and the field or tensor) at fault."""


@contextlib.contextmanager
def _reading(file: Path):
  """Turns the errors of reading `file` into a WeightsError that names it."""
  try:
    yield
  except FileNotFoundError as err:
    raise WeightsError(f"{file}: no such file") from err
  except (OSError, safetensors.SafetensorError) as err:
    raise WeightsError(f"{file}: cannot read ({err})") from err
  except json.JSONDecodeError as err:
    raise WeightsError(f"{file}: not valid JSON ({err})") from err


def read_json(file: Path) -> dict:
  """Parses a JSON object from `file`.

  Args:
    file: e.g. `<dir>/config.json`.

  Returns:
    The parsed dict; a WeightsError naming the file if it is absent, not JSON or not an object.
  """
  with _reading(file):
    value = json.loads(Path(file).read_text())
  if not isinstance(value, dict):
    raise WeightsError(f"{file}: expected a JSON object, got {type(value).__name__}")
  return value


def read_config(path, parse: Callable[[dict], object]) -> tuple[object, dict]:
  """Reads `<path>/config.json` and parses it with a family's `from_hf`.

  Args:
    path: the checkpoint directory.
    parse: e.g. `QwenConfig.from_hf`; its ValueErrors name the field at fault.

  Returns:
    (parsed config, the raw dict). Every error is a WeightsError that starts with the file's
    path: `<path>/config.json: missing field 'hidden_size'`.
  """
  file = Path(path) / CONFIG_FILE
  raw = read_json(file)
  try:
    return parse(raw), raw
  except (ValueError, TypeError) as err:
    raise WeightsError(f"{file}: {err}") from err


def weights_source(path: Path) -> Path:
  """The file that lists a directory's weights: the shard index if present, else the single file.

  Args:
    path: a checkpoint directory.

  Returns:
    `model.safetensors.index.json` or `model.safetensors` under `path`; a WeightsError when
    the directory is missing or holds neither.
  """
  path = Path(path)
  if (path / INDEX_FILE).exists():
    return path / INDEX_FILE
  if (path / SINGLE_FILE).exists():
    return path / SINGLE_FILE
  if not path.is_dir():
    raise WeightsError(f"{path}: no such directory")
  raise WeightsError(f"{path}: holds neither {SINGLE_FILE} nor {INDEX_FILE}")


def weight_files(path: Path) -> list[Path]:
  """The safetensors files of a checkpoint directory, in a stable order.

  Args:
    path: a directory holding `model.safetensors` or `model.safetensors.index.json` + shards.

  Returns:
    The file paths; a WeightsError names an index without `weight_map` or a missing shard.
  """
  source = weights_source(path)
  if source.name == SINGLE_FILE:
    return [source]
  weight_map = read_json(source).get("weight_map")
  if not isinstance(weight_map, dict):
    raise WeightsError(f"{source}: missing field 'weight_map'")
  files = [source.parent / name for name in sorted(set(weight_map.values()))]
  for file in files:
    if not file.exists():
      raise WeightsError(f"{source}: weight_map names {file.name}, which does not exist")
  return files


def read_shapes(file: Path) -> dict[str, tuple[int, ...]]:
  """Tensor name -> shape from one safetensors header (no tensor data is read).

  Args:
    file: a safetensors file (a WeightsError names it when unreadable).

  Returns:
    {tensor key: shape tuple} as stored.
  """
  with _reading(file), safetensors.safe_open(str(file), framework="flax") as f:
    return {key: tuple(f.get_slice(key).get_shape()) for key in f.keys()}


def read_tensors(file: Path, keys) -> Iterator[tuple[str, jax.Array]]:
  """Reads tensors of one safetensors file, one at a time.

  Args:
    file: a safetensors file (a WeightsError names it when unreadable).
    keys: the tensor keys to read, in the order yielded.

  Yields:
    (key, array in the file's dtype and layout).
  """
  with _reading(file), safetensors.safe_open(str(file), framework="flax") as f:
    for key in keys:
      yield key, f.get_tensor(key)


def write_safetensors(tensors: dict, path: Path, max_shard_bytes: int) -> None:
  """Writes HF-named `tensors` as `model.safetensors`, or as shards + an index above the limit.

  Args:
    tensors: HF key -> array, already in the Hugging Face layout.
    path: an existing directory.
    max_shard_bytes: the largest single file; more bytes in all means several shards.
  """
  shards, current, size = [], {}, 0
  for key in sorted(tensors):
    nbytes = tensors[key].size * tensors[key].dtype.itemsize
    if current and size + nbytes > max_shard_bytes:
      shards.append(current)
      current, size = {}, 0
    current[key], size = tensors[key], size + nbytes
  shards.append(current)
  metadata = {"format": "pt"}  # transformers refuses safetensors files without a known format
  if len(shards) == 1:
    safetensors.flax.save_file(shards[0], str(path / SINGLE_FILE), metadata=metadata)
    return
  weight_map = {}
  for n, shard in enumerate(shards, 1):
    name = f"model-{n:05d}-of-{len(shards):05d}.safetensors"
    safetensors.flax.save_file(shard, str(path / name), metadata=metadata)
    weight_map.update({k: name for k in shard})
  total = sum(t.size * t.dtype.itemsize for t in tensors.values())
  index = {"metadata": {"total_size": total}, "weight_map": weight_map}
  (path / INDEX_FILE).write_text(json.dumps(index, indent=2))


@dataclasses.dataclass(frozen=True)
class TensorRef:
  """One tensor of a checkpoint, located but not read: its key and shape as the file stores them."""
  key: str
  file: Path
  shape: tuple[int, ...]
  layout: Layout

  def read(self) -> jax.Array:
    """The tensor in the file's dtype and layout."""
    with _reading(self.file), safetensors.safe_open(str(self.file), framework="flax") as f:
      return f.get_tensor(self.key)

  def refs(self) -> dict[str | None, "TensorRef"]:
    """{None: self}, as `FusedRef.refs` lists its parts."""
    return {None: self}

  def mismatches(self, ours: str, shape: tuple[int, ...]) -> list[str]:
    """[] when the tensor fits our parameter `ours` of `shape`, else one line saying how not."""
    try:
      stored = jax.ShapeDtypeStruct(self.shape, jnp.float32)
      converted = tuple(jax.eval_shape(self.layout.to_ours, stored).shape)
    except (TypeError, ValueError):  # e.g. a reshape that the stored shape does not allow
      converted = None
    if converted == tuple(shape):
      return []
    return [f"{self.key}: file {self.shape} vs model {tuple(shape)} (as {ours}, "
            f"{self.layout.name})"]


@dataclasses.dataclass(frozen=True)
class FusedRef:
  """The checkpoint tensors of one fused parameter found so far: {part: TensorRef}."""
  layout: Fused
  parts: dict

  def refs(self) -> dict[str, TensorRef]:
    """{part: TensorRef} of the parts found."""
    return self.parts

  def mismatches(self, ours: str, shape: tuple[int, ...]) -> list[str]:
    """One line per found part whose stored shape is not what our parameter `ours` of `shape`
    splits into."""
    wanted = jax.eval_shape(self.layout.to_hf, jax.ShapeDtypeStruct(tuple(shape), jnp.float32))
    lines = []
    for part, want in zip(self.layout.parts, wanted):
      ref = self.parts.get(part)
      if ref is not None and tuple(ref.shape) != tuple(want.shape):
        lines.append(f"{ref.key}: file {ref.shape} vs model {tuple(want.shape)} (part {part!r} "
                     f"of {ours} {tuple(shape)}, {self.layout.name})")
    return lines


def flat_params(state) -> dict[str, nnx.Variable]:
  """Flattens an `nnx.State` to dotted paths.

  Args:
    state: an nnx.State (e.g. `nnx.state(model)` or from `nnx.eval_shape`).

  Returns:
    {'layers.0.attn.o_proj.kernel': its Variable, ...} for every Variable.
  """
  return {".".join(str(p) for p in path): var for path, var in nnx.to_flat_state(state)}


def locate_tensors(path: Path, table: KeyTable,
                   rename=None) -> tuple[dict[str, TensorRef | FusedRef], list[str]]:
  """Reads the headers of a checkpoint's weights and maps each tensor through `table`.

  Args:
    path: the checkpoint directory.
    table: the family's KeyTable.
    rename: optional `keys of one file -> {file key: key in the table's naming, or None to skip}`.

  Returns:
    ({our key: TensorRef, or FusedRef for a fused parameter}, [file keys that no row matches]).
  """
  found, unknown = {}, []
  for file in weight_files(path):
    shapes = read_shapes(file)
    names = rename(list(shapes)) if rename else {k: k for k in shapes}
    for file_key, hf_key in names.items():
      if hf_key is None:
        continue
      ours, layout, part = table.to_ours(hf_key)
      if ours is None:
        unknown.append(file_key)
      elif part is None:
        found[ours] = TensorRef(file_key, file, shapes[file_key], layout)
      else:
        fused = found.setdefault(ours, FusedRef(layout, {}))
        fused.parts[part] = TensorRef(file_key, file, shapes[file_key], layout.part)
  return found, unknown


def _missing_keys(table: KeyTable, expected: dict, found: dict) -> list[str]:
  """Checkpoint keys (in the table's naming) that no found tensor provides."""
  missing = []
  for ours in expected:
    hf_keys, layout = table.to_hf(ours)
    if ours not in found:
      missing += hf_keys or [ours]
    elif isinstance(layout, Fused):
      missing += [k for k, part in zip(hf_keys, layout.parts) if part not in found[ours].parts]
  return missing


def load_params(path, abstract_model: nnx.Module, table: KeyTable, *, dtype, mesh=None,
                rename=None, check=None) -> nnx.Module:
  """Fills an abstract model from a checkpoint directory through a key table.

  Args:
    path: the checkpoint directory.
    abstract_model: `nnx.eval_shape(lambda: Model(config, ...))`, nothing allocated.
    table: the family's KeyTable.
    dtype: every parameter is cast to it.
    mesh: if given, each tensor goes straight onto its sharding (`lib.parallel.placement`).
    rename: see `locate_tensors`.
    check: `{our key: ref} -> {our key: ref}` (refs as `locate_tensors` returns them), run on
      the headers before any tensor is read; raises WeightsError where config.json contradicts
      the weights, may drop entries.

  Returns:
    The concrete model. Raises one WeightsError listing every missing, unexpected and
    mis-shaped tensor.
  """
  path = Path(path)
  graphdef, state = nnx.split(abstract_model)
  expected = flat_params(state)
  found, unexpected = locate_tensors(path, table, rename)
  if check is not None:
    found = check(found)
  mismatched = []
  for ours, ref in list(found.items()):
    if ours not in expected:
      unexpected += [r.key for r in ref.refs().values()]
      del found[ours]
      continue
    mismatched += ref.mismatches(ours, expected[ours].shape)
  missing = _missing_keys(table, expected, found)
  if missing or unexpected or mismatched:
    lines = [f"{weights_source(path)}: cannot load"]
    lines += [f"  missing: {k}" for k in missing]
    lines += [f"  unexpected: {k}" for k in unexpected]
    lines += [f"  shape mismatch: {m}" for m in mismatched]
    raise WeightsError("\n".join(lines))
  shardings = {}
  if mesh is not None:
    named = flat_params(sharding_lib.param_shardings(state, mesh))
    shardings = {k: v.get_value() for k, v in named.items()}
  by_file, fused_parts = {}, {}
  for ours, ref in found.items():
    for part, r in ref.refs().items():
      by_file.setdefault(r.file, {})[r.key] = ours, part
  for file, keys in by_file.items():
    for key, tensor in read_tensors(file, list(keys)):
      ours, part = keys[key]
      layout = found[ours].layout
      if part is None:
        tensor = layout.to_ours(tensor)
      else:  # a fused parameter is joined once all its parts are read (they may span shards)
        parts = fused_parts.setdefault(ours, {})
        parts[part] = tensor
        if len(parts) < len(layout.parts):
          continue
        del fused_parts[ours]
        tensor = layout.to_ours([parts[p] for p in layout.parts])
      tensor = tensor.astype(dtype)
      if ours in shardings:
        tensor = jax.device_put(tensor, shardings[ours])
      expected[ours].set_value(tensor)
  return nnx.merge(graphdef, state)


def save_params(model: nnx.Module, hf_config: dict, path, table: KeyTable,
                max_shard_bytes: int = 4 << 30) -> None:
  """Writes `config.json` + safetensors of `model` in the Hugging Face naming and layout.

  Args:
    model: a concrete NNX model; parameters keep its dtype.
    hf_config: the `config.json` dict (the family config's `to_hf`).
    path: the output directory (created).
    table: the family's KeyTable; a parameter it does not name is an error.
    max_shard_bytes: shard above this many bytes (with an index, as transformers does).
  """
  path = Path(path)
  path.mkdir(parents=True, exist_ok=True)
  tensors = {}
  for key, var in flat_params(nnx.state(model, nnx.Param)).items():
    hf_keys, layout = table.to_hf(key)
    if not hf_keys:
      raise ValueError(f"parameter {key} has no Hugging Face name in the key table")
    value = jax.device_get(var.get_value())
    values = layout.to_hf(value) if isinstance(layout, Fused) else [layout.to_hf(value)]
    for hf_key, part in zip(hf_keys, values):
      tensors[hf_key] = jnp.asarray(np.ascontiguousarray(part))
  write_safetensors(tensors, path, max_shard_bytes)
  (path / CONFIG_FILE).write_text(json.dumps(hf_config, indent=2) + os.linesep)
