"""Names of a package resolved on first use, so `import bayeskern` does not import ArviZ and its plotting stack."""

import importlib
import sys
from collections.abc import Callable


def lazy_names(package: str, where: dict[str, str]) -> tuple[Callable[[str], object], Callable[[], list]]:
    """A module's `__getattr__` and `__dir__` (PEP 562) for `package`: name → the submodule defining it, imported on first access."""

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{where[name]}"), name)

    def __dir__() -> list:
        return sorted(set(sys.modules[package].__dict__) | set(where))

    return __getattr__, __dir__
