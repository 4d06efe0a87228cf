"""Compile a PyTensor graph once per structure and reuse it: the one path from symbols to numbers."""

from collections import OrderedDict
from collections.abc import Callable, Hashable

import pytensor

__all__ = ["compiled"]

_MAX_ENTRIES = 512
_CACHE: OrderedDict = OrderedDict()


def compiled(key: Hashable, build: Callable[[], tuple[list, object]]):
    """The compiled function for `key`, built by `build() -> (inputs, outputs)` on first use.

    Compilation costs from a fraction of a second to seconds; evaluating a cached function
    costs microseconds. The cache keeps the most recently used `_MAX_ENTRIES` functions.
    """
    fn = _CACHE.get(key)
    if fn is None:
        inputs, outputs = build()
        fn = pytensor.function(inputs, outputs, on_unused_input="ignore")
        _CACHE[key] = fn
        if len(_CACHE) > _MAX_ENTRIES:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return fn
