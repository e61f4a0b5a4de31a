"""Naturalized private facts (Section S8.1): the binding id replaced by a described fact.

The sender no longer sees `active_binding`; it sees `private_note`, a sentence built from a
key phrase for its binding inside a sentence frame. Surfaces:
  train  training frames with the training key phrases
  c1     unseen frames, training key phrases (held-out syntactic recombination)
  c2     training frames, unseen paraphrased key phrases (lexical shift)
  c3     c2 plus a distractor clause that names the other branch's training phrase
The frame is picked deterministically from the world variant.
"""
from agents.gencoord import templates

# binding -> (training key phrase, paraphrase never used in training)
PHRASES = {
    "SITE_A": ("build site A", "the plot by the river"),
    "SITE_B": ("build site B", "the plot on the hill"),
    "CHEST_A": ("chest A", "the oak box near the gate"),
    "CHEST_B": ("chest B", "the oak box behind the barn"),
    "CHEST": ("a storage chest", "somewhere to keep things"),
    "CRAFTING_TABLE": ("a crafting table", "a workbench"),
    "PLANKS": ("plain planks", "unworked boards"),
    "STICKS": ("sticks", "thin rods"),
    "BUILD": ("foundation duty for the receiver", "base-laying by the partner"),
    "DEPOSIT": ("depot duty for the receiver", "storehouse stocking by the partner"),
    "ROOF": ("roof duty for the receiver", "top covering by the partner"),
    "WALL": ("wall duty for the receiver", "side panels by the partner"),
    "STORAGE_BRANCH": ("the storage order", "the keep-things job"),
    "WORK_BRANCH": ("the work order", "the workshop job"),
    "DEPOT": ("the depot", "the storehouse"),
    "MARKER": ("the marker post", "the signpost"),
}
TRAIN_FRAMES = ("The active order is {p}.", "Order note: {p}.", "Today we need {p}.")
C1_FRAMES = ("The foreman confirmed {p} this morning.", "Going with {p}, as agreed.")
SURFACES = ("train", "c1", "c2", "c3")


def describe(binding: str, template: str, surface: str, variant: int) -> str:
  """The naturalized private note for `binding` on `surface`."""
  if surface not in SURFACES:
    raise ValueError(f"unknown naturalized surface {surface!r}; valid: {SURFACES}")
  train_phrase, paraphrase = PHRASES[binding]
  if surface == "train":
    return TRAIN_FRAMES[variant % len(TRAIN_FRAMES)].format(p=train_phrase)
  if surface == "c1":
    return C1_FRAMES[variant % len(C1_FRAMES)].format(p=train_phrase)
  note = TRAIN_FRAMES[variant % len(TRAIN_FRAMES)].format(p=paraphrase)
  if surface == "c3":
    other = next(b for b in templates.get(template).bindings if b != binding)
    note += f" Disregard the old memo about {PHRASES[other][0]}."
  return note
