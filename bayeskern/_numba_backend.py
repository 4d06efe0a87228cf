"""bayeskern's Ops under PyTensor's Numba backend, registered when that backend's dispatch is first imported.

Numba and PyTensor's Numba dispatch are imported only by what compiles with Numba (a fit beyond NUMPY_MAX_N, NUTS,
a user's `pm.sample`): importing them cost the README's 25-point fit ~0.3 s of its whole process (2.5 → 2.2 s,
measured when this was made), and it runs none of their code. Whoever imports `pytensor.link.numba.dispatch` first — PyTensor's Numba linker, nutpie,
a user — gets bayeskern's implementations registered right after it, through a one-shot import hook
(`install`, called by `import bayeskern`). At that moment it also gives PyTensor a folder for the Python source of the
functions it generates for Numba (`_keep_generated_source`).
"""

import importlib.abc
import importlib.util
import sys

__all__ = ["install"]

_DISPATCH = "pytensor.link.numba.dispatch"


def _keep_generated_source() -> None:
    """Point PyTensor's `generated_src_dir` at `<base_compiledir>/generated_src` unless the user set it (to anything).

    Left empty, PyTensor writes the source of every function it generates for Numba to a new file in the system's
    temporary directory and never removes it (measured: 12–23 files a NUTS fit of the README's model, ~900 a warm
    test suite). In a named folder the files are named by their content, written once, reused by later processes,
    and pruned by PyTensor when unused for as long as its compile cache keeps a module (24 days and a week).
    The numbers are unchanged: the file only holds the source that PyTensor compiles (Numba's cache is keyed apart).
    `pytensor-cache clear` does not see this folder (it clears the folder its own flags name): remove it by hand.
    """
    from pytensor import config

    if config._config_var_dict["generated_src_dir"].is_default:  # (one set to "" in PYTENSOR_FLAGS is the user's too)
        config.generated_src_dir = str(config.base_compiledir / "generated_src")


def _register() -> None:
    """Register the Numba implementations of GaussianLogp, WeightSpaceEvidence, LowerPairs and TitsiasBound with PyTensor's Numba dispatch."""
    _keep_generated_source()
    import bayeskern._gaussian_logp_numba  # noqa: F401
    import bayeskern._lower_pairs_numba  # noqa: F401
    import bayeskern._weight_space_evidence_numba  # noqa: F401
    import bayeskern.approx._titsias_numba  # noqa: F401


class _AfterImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when the module `fullname` is imported, it lets the other finders find it and runs `action`
    once the module has executed; then it leaves `sys.meta_path`."""

    def __init__(self, fullname: str, action):
        self.fullname, self.action = fullname, action

    def find_spec(self, fullname, path, target=None):
        if fullname != self.fullname:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            self.action()

        spec.loader.exec_module = exec_module
        return spec


#: the modules whose import triggers an action: PyTensor's writer of generated source (the numpy mode's Python linker
#: writes through it too, where no Numba dispatch is ever imported: 3 files in /tmp a README fit), and the Numba dispatch
_HOOKS = (("pytensor.link.utils", _keep_generated_source), (_DISPATCH, _register))


def install() -> None:
    """For each hook: act now if its module is already imported, else when it is."""
    for fullname, action in _HOOKS:
        if fullname in sys.modules:
            action()
        elif not any(isinstance(f, _AfterImport) and f.fullname == fullname for f in sys.meta_path):
            sys.meta_path.insert(0, _AfterImport(fullname, action))
