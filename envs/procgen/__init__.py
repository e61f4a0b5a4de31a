"""Procgen games (the `procgen2` wheel, easy mode) as host-loop text envs: `state` (decoder of the
serialized C++ game state), `text` (referents, state facts, text view, `ProcgenText`)."""
