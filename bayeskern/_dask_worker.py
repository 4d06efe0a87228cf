"""A Dask worker's set-up for bayeskern tasks, run as a preload before anything imports PyTensor (standard library only).

PyTensor's compilation is not safe for concurrent processes sharing one compile directory (pymc #7819), and its
compile directory cannot change once PyTensor is imported. So each worker process takes the first free slot
`<base_compiledir>/bayeskern-workers/slot-K` — free meaning nobody holds the slot's file lock, which this process
then holds for its lifetime — and points PYTENSOR_FLAGS there. Slots are reused by later workers, so each keeps a
warm cache from one run to the next. BLAS is limited to one thread per worker (one task per worker process).

Given to `dask worker --preload /path/to/bayeskern/_dask_worker.py` for a cluster started by hand (the `dask worker`
command imports no PyTensor before its preloads). The clusters `bayeskern.batch` starts claim the slots in the
parent process and give each worker its slot in its environment (BAYESKERN_WORKER_SLOT): a spawned worker
re-imports the parent's main module, which may import PyTensor before any preload runs; they load this module as a
preload too, for the rest of the set-up.
"""

import fcntl
import importlib
import os
import re
import signal
import threading
from pathlib import Path

_HELD = []  # the open lock file of a worker's own slot, held until the process exits


def _base_compiledir() -> Path:
    """PyTensor's base_compiledir as PYTENSOR_FLAGS gives it, else PyTensor's default ~/.pytensor."""
    found = re.search(r"(?:^|,)base_compiledir=([^,]+)", os.environ.get("PYTENSOR_FLAGS", ""))
    return Path(found.group(1)) if found else Path.home() / ".pytensor"


def claim_slots(count: int) -> tuple[list[Path], list]:
    """`count` free slot folders and their lock files, each locked (an exclusive, non-blocking lock) until the file is closed."""
    base = _base_compiledir() / "bayeskern-workers"
    base.mkdir(parents=True, exist_ok=True)
    slots, locks = [], []
    for k in range(4096):
        if len(slots) == count:
            break
        handle = open(base / f"slot-{k}.lock", "a")  # noqa: SIM115 — held open on purpose: the lock lives with the process
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        locks.append(handle)
        slots.append(base / f"slot-{k}")
    if len(slots) < count:
        for handle in locks:
            handle.close()
        raise RuntimeError(f"no free compile-directory slot under {base}")
    return slots, locks


def pytensor_flags(compiledir: Path) -> str:
    """PYTENSOR_FLAGS as this process has them, with base_compiledir replaced by `compiledir`."""
    others = re.sub(r"(?:^|,)base_compiledir=[^,]+", "", os.environ.get("PYTENSOR_FLAGS", "")).strip(",")
    return ",".join(filter(None, [others, f"base_compiledir={compiledir}"]))


def dask_setup(worker=None) -> None:
    """Dask's preload hook: the compile directory first, then one BLAS thread, then the tasks' imports in the background."""
    if "pytensor" not in __import__("sys").modules and "BAYESKERN_WORKER_SLOT" not in os.environ:
        slots, locks = claim_slots(1)
        _HELD.extend(locks)
        os.environ["PYTENSOR_FLAGS"] = pytensor_flags(slots[0])
    if "BAYESKERN_WORKER_SLOT" in os.environ:  # a worker of a cluster bayeskern started: Ctrl-C (SIGINT to the whole process
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # group) is for that process, which stops the cluster; no traceback here
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    if worker is not None:  # the statistical profiler's stack sampling slows PyTensor-heavy tasks ~2× (bayeskern.batch.WORKER_CONFIG)
        import dask

        dask.config.set({"distributed.worker.profile.enabled": False})
    # a task's first unpickling would import PyMC and PyTensor (~3 s): begin now, while the worker waits for work; the
    # task's own import then waits on the module lock for what is left
    threading.Thread(target=importlib.import_module, args=("bayeskern.cv",), name="bayeskern-imports", daemon=True).start()
