"""Large arrays kept from one evaluation to the next while a block is open (the numpy mode's results without new pages),
and the block shared across threads that opens it."""

import contextlib
import math
import sys
import threading
from collections.abc import Iterator

import numpy as np

__all__ = ["REUSE_MAX_BYTES", "REUSE_MIN_SIZE", "SharedScope", "reused_arrays"]

#: from this many entries (128 KiB of float64, where glibc starts to map memory apart) an elementwise result is taken from `reused_arrays` while one is open
REUSE_MIN_SIZE = 2**14
#: `reused_arrays` keeps at most this many bytes; beyond, results are allocated as usual
REUSE_MAX_BYTES = 2**30


class SharedScope:
    """A block that may be open in several threads at once: `_first_opened` runs when the first scope opens,
    `_last_closed` when the last one closes (one depth count under a lock, not a restore per scope)."""

    def __init__(self):
        self.lock, self.depth = threading.Lock(), 0

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        with self.lock:
            if self.depth == 0:
                self._first_opened()
            self.depth += 1
        try:
            yield
        finally:
            with self.lock:
                self.depth -= 1
                if self.depth == 0:
                    self._last_closed()

    def _first_opened(self) -> None:
        pass

    def _last_closed(self) -> None:
        pass


class _ReusedArrays(SharedScope):
    """Inside this block (in any thread), the large elementwise results of numpy-mode functions (`_IntoOneArray`) are
    arrays kept from earlier evaluations that nothing else holds any more, instead of new memory.

    Each evaluation of an objective over the pairs of points frees and allocates the same arrays again; the allocator
    returns freed memory at the top of its heap to the system and every new page costs a page fault: measured at
    n = 500 on the 11-parameter additive kernel, ~6300 page faults per evaluation and 60–70 ms of it, against
    31–46 ms with glibc told to keep its memory (MALLOC_TRIM_THRESHOLD_). That setting would reach every array of the
    process; this block keeps only these arrays, only while it is open (an empirical-Bayes fit), and lets them go at its
    end. An array is free when its only references are the block's own (no view of it, no storage holds it).
    """

    def __init__(self):
        super().__init__()
        self.arrays, self.nbytes = {}, 0

    def _last_closed(self) -> None:
        self.arrays, self.nbytes = {}, 0

    def empty(self, shape: tuple, dtype) -> np.ndarray:
        """A free kept array of this shape and dtype, else a new one (kept while the block is open)."""
        dtype = np.dtype(dtype)
        if self.depth == 0 or math.prod(shape) < REUSE_MIN_SIZE:
            return np.empty(shape, dtype=dtype)
        with self.lock:  # taking one is not atomic under the GIL: two threads could find the same array free
            if self.depth == 0:  # the block closed meanwhile: nothing is kept now
                return np.empty(shape, dtype=dtype)
            kept = self.arrays.setdefault((shape, dtype), [])
            for k in range(len(kept)):
                if sys.getrefcount(kept[k]) == 2:  # the list's reference and getrefcount's argument: nothing else holds it
                    return kept[k]
            out = np.empty(shape, dtype=dtype)
            if self.nbytes + out.nbytes <= REUSE_MAX_BYTES:
                kept.append(out)
                self.nbytes += out.nbytes
            return out

    def zeros(self, shape: tuple, dtype) -> np.ndarray:
        """`empty`, filled with zeros."""
        out = self.empty(shape, dtype)
        out.fill(0)
        return out


reused_arrays = _ReusedArrays()
