"""Multi-process JAX: one process per host joins one run before anything touches a JAX backend.

    distributed.initialize("host0:1234", num_processes=2, process_id=i)   # launch.py does this
    mesh = sharding.make_mesh(data=2, fsdp=-1)       # spans every process's devices
    batch = sharding.shard_batch(global_rows, mesh)  # the same rows on every process, or
    batch = sharding.shard_process_batch(my_rows, mesh)   # this process's slice only

After `initialize`, `jax.devices()` lists the devices of every process (process 0's first) and a
jitted step over a mesh of them is one SPMD program that every process runs on its own devices;
collectives between processes go over NCCL on GPUs, ICI/DCN on TPUs and gloo (TCP) on CPUs.
`launch.py --jax_coordinator=host:port --jax_num_processes=N --jax_process_id=i` calls
`initialize`; `--jax_coordinator=auto` lets JAX detect the cluster (Cloud TPU, SLURM, Open MPI).
tests/lib/parallel/test_distributed.py runs two processes on one machine against one with the
same four devices (docs/running.md#multi-host).
"""
import jax

AUTO = "auto"   # --jax_coordinator=auto: JAX reads the cluster's own environment


def check_args(coordinator: str | None, num_processes: int | None,
               process_id: int | None) -> str | None:
  """What is wrong with a multi-process command line, in one line, or None when it is usable.

  Args:
    coordinator: "host:port" of process 0, "auto", or None (single process).
    num_processes: N, required with an explicit coordinator.
    process_id: this process's index in [0, N), required with an explicit coordinator.
  """
  if coordinator is None:
    if num_processes is not None or process_id is not None:
      return "--jax_num_processes / --jax_process_id need --jax_coordinator=host:port"
    return None
  if coordinator == AUTO:
    return None
  host, _, port = coordinator.rpartition(":")
  if not host or not port.isdigit():
    return f"--jax_coordinator={coordinator}: expected host:port (or auto)"
  if num_processes is None or process_id is None:
    return "--jax_coordinator=host:port needs --jax_num_processes=N and --jax_process_id=i"
  if num_processes < 1 or not 0 <= process_id < num_processes:
    return (f"--jax_process_id={process_id} is not in [0, --jax_num_processes={num_processes})")
  return None


def initialize(coordinator: str, num_processes: int | None = None, process_id: int | None = None,
               timeout_s: int = 300) -> str:
  """Joins this process to the run (`jax.distributed.initialize`); call it once, before any
  JAX computation, device query or mesh.

  Args:
    coordinator: "host:port" of process 0 (every process passes the same), or "auto": JAX
      detects coordinator, process count and index from the cluster (Cloud TPU metadata,
      SLURM, Open MPI).
    num_processes: N (None with "auto").
    process_id: this process's index in [0, N) (None with "auto").
    timeout_s: how long to wait for every process to join before raising.

  Returns:
    One line saying which process this is and how many devices it joined.
  Raises:
    ValueError: the arguments do not describe a run (`check_args`).
  """
  problem = check_args(coordinator, num_processes, process_id)
  if problem is not None:
    raise ValueError(problem)
  # gloo is the CPU backend's cross-process collective implementation (the default in
  # jax 0.10; older releases had none and hung or failed at the first cross-process
  # all-reduce). GPU and TPU collectives are unaffected.
  jax.config.update("jax_cpu_collectives_implementation", "gloo")
  if coordinator == AUTO:
    jax.distributed.initialize(initialization_timeout=timeout_s)
  else:
    jax.distributed.initialize(coordinator, num_processes, process_id,
                               initialization_timeout=timeout_s)
  return (f"process {jax.process_index()} of {jax.process_count()} joined: "
          f"{jax.device_count()} devices, {jax.local_device_count()} here")
