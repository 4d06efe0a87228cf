"""Names of a package resolved on first use, so `import bayeskern` does not import ArviZ and its plotting stack."""

import importlib
from collections.abc import Callable


def lazy_names(package: str, where: dict[str, str]) -> Callable[[str], object]:
    """A module `__getattr__` (PEP 562) for `package`: name → the submodule defining it, imported on first access."""

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{where[name]}"), name)

    return __getattr__
