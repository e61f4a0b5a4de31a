"""Farama MiniGrid's integer encodings, kept identical so grids and views compare bit for bit.

A grid cell is (object type, color, state); state is the door state 0 open / 1 closed / 2 locked.
Directions are 0 east (+x), 1 south (+y), 2 west, 3 north, as in Farama's DIR_TO_VEC.
"""
import numpy as np

OBJECT_NAMES = ("unseen", "empty", "wall", "floor", "door", "key", "ball", "box", "goal", "lava",
                "agent")
OBJ = {name: i for i, name in enumerate(OBJECT_NAMES)}
UNSEEN, EMPTY, WALL, FLOOR, DOOR, KEY, BALL, BOX, GOAL, LAVA = range(10)

COLOR_NAMES = ("red", "green", "blue", "purple", "yellow", "grey")
COLOR = {name: i for i, name in enumerate(COLOR_NAMES)}
N_COLORS = len(COLOR_NAMES)
GREY = COLOR["grey"]
# Farama draws colors uniformly from the sorted names; a uniform color index is the same law.

DOOR_OPEN, DOOR_CLOSED, DOOR_LOCKED = 0, 1, 2
DOOR_STATE_NAMES = ("open", "closed", "locked")

DIR_TO_VEC = np.array([[1, 0], [0, 1], [-1, 0], [0, -1]], np.int32)
DIR_NAMES = ("east", "south", "west", "north")

ACTION_NAMES = ("left", "right", "forward", "pickup", "drop", "toggle", "done")
LEFT, RIGHT, FORWARD, PICKUP, DROP, TOGGLE, DONE = range(7)
ACTION_DESCRIPTIONS = ("turn left", "turn right", "move forward", "pick up the object in front",
                       "drop the carried object in front", "open/close the door or box in front",
                       "do nothing")

VIEW_SIZE = 7
# Mission kinds (BabyAI instructions used by the six tasks).
GOTO, PICKUP_MISSION = 0, 1
ANY_COLOR = -1
