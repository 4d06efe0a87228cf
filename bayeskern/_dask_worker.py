"""A Dask worker's set-up for bayeskern tasks, run as a preload before anything imports PyTensor (standard library only).

PyTensor's compilation is not safe for concurrent processes sharing one compile directory (pymc #7819), and its
compile directory cannot change once PyTensor is imported. So each worker process takes the first free slot
`<base_compiledir>/bayeskern-workers/slot-K` — free meaning nobody holds the slot's file lock, which this process
then holds for its lifetime — and points PYTENSOR_FLAGS there. Slots are reused by later workers, so each keeps a
warm cache from one run to the next. BLAS is limited to one thread per worker (one task per worker process).

Given to `dask worker --preload /path/to/bayeskern/_dask_worker.py` for a cluster started by hand; `bayeskern.batch`
passes it to the clusters it starts.
"""

import fcntl
import os
import re
from pathlib import Path

_SLOT_LOCK = None  # the open lock file of this process's slot, held until the process exits


def _base_compiledir() -> Path:
    """PyTensor's base_compiledir as PYTENSOR_FLAGS gives it, else PyTensor's default ~/.pytensor."""
    found = re.search(r"(?:^|,)base_compiledir=([^,]+)", os.environ.get("PYTENSOR_FLAGS", ""))
    return Path(found.group(1)) if found else Path.home() / ".pytensor"


def claim_compiledir() -> Path:
    """Take the first free slot (an exclusive, non-blocking lock on its file) and make it this process's compile dir."""
    global _SLOT_LOCK
    base = _base_compiledir() / "bayeskern-workers"
    base.mkdir(parents=True, exist_ok=True)
    for k in range(4096):
        handle = open(base / f"slot-{k}.lock", "a")  # noqa: SIM115 — held open on purpose: the lock lives with the process
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _SLOT_LOCK = handle
        slot = base / f"slot-{k}"
        others = re.sub(r"(?:^|,)base_compiledir=[^,]+", "", os.environ.get("PYTENSOR_FLAGS", "")).strip(",")
        os.environ["PYTENSOR_FLAGS"] = ",".join(filter(None, [others, f"base_compiledir={slot}"]))
        return slot
    raise RuntimeError(f"no free compile-directory slot under {base}")


def dask_setup(worker=None) -> None:
    """Dask's preload hook: the compile directory first, then one BLAS thread."""
    if "pytensor" not in __import__("sys").modules:
        claim_compiledir()
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
