"""Devices: the one ("data", "fsdp", "model") mesh and where arrays go on it.

  sharding.py     the mesh (`make_mesh`, `mesh_from_config`), FSDP specs, batches, jitted steps
  placement.py    model parameters on the mesh from their logical `out_sharding` names
  distributed.py  multi-process JAX: joining one run before any backend starts
"""
