"""Ctrl-C that Python swallowed (raised inside a gc callback or a `__del__`) still stops a run: standard library only."""

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["ctrl_c_remembered", "raise_a_lost_ctrl_c"]

#: read ends of the signal wake-up pipes of the open `ctrl_c_remembered` scopes
_WAKEUPS: list = []


@contextmanager
def ctrl_c_remembered() -> Iterator[None]:
    """Every signal this process receives is also written to a pipe (`signal.set_wakeup_fd`), so that a Ctrl-C whose
    KeyboardInterrupt was swallowed — raised inside a gc callback or a `__del__`, where Python prints and ignores
    exceptions; distributed installs gc callbacks — still stops the run at `raise_a_lost_ctrl_c` (before a report replaces the previous one, at the latest); and such a swallowed
    KeyboardInterrupt is not printed as a traceback (`sys.unraisablehook`; any other ignored exception still is). Only
    in the main thread, and only where nobody else (an event loop of the caller's) uses the wake-up fd."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    previous = signal.set_wakeup_fd(write)
    if previous != -1:  # taken: leave it to its owner
        signal.set_wakeup_fd(previous)
        os.close(read), os.close(write)
        yield
        return
    _WAKEUPS.append(read)
    hook = sys.unraisablehook

    def unless_ctrl_c(unraisable) -> None:  # the Ctrl-C is in the pipe: the run stops at `raise_a_lost_ctrl_c`
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            hook(unraisable)

    sys.unraisablehook = unless_ctrl_c
    try:
        yield
    finally:
        sys.unraisablehook = hook
        signal.set_wakeup_fd(-1)
        _WAKEUPS.remove(read)
        os.close(read), os.close(write)


def raise_a_lost_ctrl_c() -> None:
    """KeyboardInterrupt if a SIGINT reached this process since the last look (one that was not swallowed has already
    ended the run before this is reached)."""
    for read in _WAKEUPS:
        try:
            received = os.read(read, 512)
        except BlockingIOError:  # nothing since the last look
            continue
        if signal.SIGINT in received:
            raise KeyboardInterrupt
