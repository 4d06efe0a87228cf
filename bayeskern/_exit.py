"""Skips the interpreter's last cyclic garbage collection when a process that imported bayeskern exits.

At exit CPython collects and tears down every object still in a reference cycle. After `import pymc` that is ~180 000
tracked objects (PyTensor graphs, pandas, xarray), and it took 0.26 s of a whole `python -c "import pymc"` and
0.5-0.6 s after the README's fit (measured on the 2-core machine of BENCHMARKS.md, session 21) — a fifth of that
process, spent on memory the operating system frees at once anyway. `gc.freeze()` as the last exit handler moves
those objects out of the collector's sight, so the final collection finds nothing to do.

What a user gives up: `__del__` methods of objects that are still in a reference cycle at exit are not called. Python
does not promise to call them (the data model's note on `__del__`); `atexit` handlers, `weakref.finalize` callbacks
and the closing of files held by plain references run as before.
"""

import atexit
import gc

__all__ = ["install"]


def install() -> None:
    """Register `gc.freeze` to run at exit, after the exit handlers registered later (atexit runs last-in, first-out)."""
    atexit.register(gc.freeze)
