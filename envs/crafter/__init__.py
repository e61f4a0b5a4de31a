"""Crafter (the `crafter` package) as a host-loop text env: `text` (text view, admissible actions,
state facts, `CrafterText`)."""
