"""Rewritten graphs kept on disk by structure, so that a later process runs them without rewriting them again."""

import contextlib
import functools
import hashlib
import os
import pickle
import sys
import tempfile
import time
import types
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pytensor
from pytensor.compile.builders import SymbolicOp
from pytensor.compile.io import In, SymbolicOutput
from pytensor.compile.maker import FunctionMaker
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.op import HasInnerGraph
from pytensor.graph.type import Type
from pytensor.graph.traversal import io_toposort
from pytensor.scalar.basic import ScalarOp

__all__ = ["function", "function_of", "keep", "kept", "structure_key"]

#: a rewritten graph whose pickle is larger is not kept (a graph holding large constant arrays)
MAX_FILE_BYTES = 16 * 2**20
#: at most this many graphs are kept (each 5–100 kB): beyond, the least recently used quarter is removed. A new version
#: of a library or of bayeskern's source keys every graph anew, so the old ones go this way
MAX_FILES = 2000

#: compile options a kept graph is valid for; a call with others compiles as usual
_OPTIONS = {"mode", "on_unused_input"}
#: the packages whose versions key a kept graph: a graph holding an Op, type or function from any other is not kept
_VERSIONED = {"builtins", "numpy", "scipy", "pytensor", "pymc", "bayeskern"}


class _Unkeyable(Exception):
    """The graph holds something whose identity a fingerprint cannot state (a closure, a shared variable, an object
    without `__props__`, an Op from a package whose version is not in the key): it is compiled as usual, not kept."""


def function(inputs: list, outputs, compile_: Callable[[], object], context: str = "", **options):
    """`compile_()` (PyTensor's `function(inputs, outputs, **options)`, `options["mode"]` a mode on PyTensor's Python
    linker: bayeskern's NUMPY or NUMPY_OBJECTIVE), or the same function assembled from the rewritten graph an earlier call of the same
    structure kept under PyTensor's compile directory.

    Rewriting a graph costs from ~10 ms to a few hundred; loading the rewritten one costs ~1–10 ms. Two graphs share a
    file when their fingerprints match: the same operations (type and `__props__`, what PyTensor's own Op equality
    compares), constants (type and data), input types and wiring, under the same versions of PyTensor, PyMC, numpy, SciPy
    and bayeskern's source (`_versions`). A graph with an Op from another package (the user's own: its code is no part
    of the key) is not kept. A file that cannot be read or written is ignored: the function is compiled as usual.
    `context`: what else the rewritten graph depends on (a mode's rewrites beyond NUMPY's), part of the key.
    """
    key = _key(inputs, outputs, options, context)
    if key is None:
        return compile_()
    loaded = _load(key, options["mode"], inputs, single=not isinstance(outputs, list | tuple))
    if loaded is None:
        fn = compile_()
        _store(key, fn, len(inputs))
        return fn
    if options.get("on_unused_input", pytensor.config.on_unused_input) != "ignore":  # the check compiling would make,
        FunctionMaker.check_unused_inputs([In(v) for v in inputs], [SymbolicOutput(v) for v in _as_list(outputs)],
                                          options.get("on_unused_input"))  # on the graph as given
    return loaded


def _as_list(outputs) -> list:
    return list(outputs) if isinstance(outputs, list | tuple) else [outputs]


def _key(inputs: list, outputs, options: dict, context: str) -> str | None:
    if set(options) - _OPTIONS or outputs is None or not all(isinstance(v, Variable) for v in [*inputs, *_as_list(outputs)]):
        return None  # other options, or In/Out specifications: compiled as given
    return structure_key(inputs, _as_list(outputs), repr(sorted((k, v) for k, v in options.items() if k != "mode")) + context)


def structure_key(inputs: list, outputs: list, context: str) -> str | None:
    """The name under which what is made of the graph `inputs → outputs` is kept: its fingerprint (`_fingerprint`), the
    versions it depends on (`_versions`), floatX and `context` (whatever else the thing kept depends on). None where
    the graph cannot be fingerprinted (`_Unkeyable`): nothing of it is kept."""
    try:
        text = "\n".join([_versions(), f"floatX {pytensor.config.floatX} cxx {bool(pytensor.config.cxx)}", context,
                          _fingerprint(list(inputs), list(outputs))])
    except (_Unkeyable, RecursionError):
        return None
    return hashlib.sha256(text.encode()).hexdigest()


def kept(key: str):
    """What `keep(key, …)` kept, in this or an earlier process, or None where there is nothing that can be read here."""
    path = _folder() / f"{key}.pkl"
    try:
        with open(path, "rb") as f:
            thing = pickle.load(f)
    except Exception:  # none yet, or cut short by an interrupted writer, or of classes changed since
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # used now: the last to go (`_make_room`)
    return thing


def keep(key: str, thing) -> None:
    """Keep `thing` (graphs, and what a later process needs with them) under `key` (`structure_key`) for `kept`: written
    whole to a file of its own, then renamed (atomic for a reader). Nothing is kept of a thing that does not pickle or
    whose pickle exceeds MAX_FILE_BYTES, nor where the compile directory cannot be written."""
    try:
        data = pickle.dumps(thing, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # an Op holding something that does not pickle
        return
    if len(data) > MAX_FILE_BYTES:
        return
    folder = _folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _make_room(folder)
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
    except OSError:  # a compile directory this process cannot write: nothing kept
        return
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(data)
        os.replace(temporary, folder / f"{key}.pkl")
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _fingerprint(inputs: list, outputs: list) -> str:
    """The graph as text: input types, then each node in topological order as `outputs: types = Op(props)(operands)`,
    operands named by position (inputs), by number (node outputs) or by type and value (constants)."""
    names = {v: f"i{k}" for k, v in enumerate(inputs)}
    lines = [" ".join(_describe(v.type) for v in inputs)]

    def name(v) -> str:
        if v not in names:
            if not isinstance(v, Constant):  # a root that is neither an input nor a constant: a shared variable, whose
                raise _Unkeyable(v)  # storage is the process's own
            names[v] = f"c({_describe(v.type)}, {_describe(v.data)})"
        return names[v]

    for node in io_toposort(inputs, outputs):
        operands = ", ".join(name(v) for v in node.inputs)
        for v in node.outputs:
            names[v] = f"v{len(names)}"
        # each result's type too: a node's type can depend on flags read when the graph was built (floatX: x / 2 on
        # integers; a pad's zeros), which the key's flags, read at compile time, do not see
        results = " ".join(f"{names[v]}: {_describe(v.type)}" for v in node.outputs)
        lines.append(f"{results} = {_describe(node.op)}({operands})")
    lines.append("return " + ", ".join(name(v) for v in outputs))
    return "\n".join(lines)


def _describe(x) -> str:
    """A text that two values share only if PyTensor would find them equal: objects with `__props__` by class and
    props (what their equality compares; a SymbolicOp's inner graph follows from them), scalar Ops and types by class and
    their whole state; anything else is `_Unkeyable`."""
    if x is None or isinstance(x, bool | int | float | str | bytes | np.generic | np.dtype):
        return repr(x)
    if isinstance(x, np.ndarray):
        if x.dtype.hasobject:
            raise _Unkeyable(x.dtype)  # its bytes are addresses
        return f"array({x.dtype}, {x.shape}, {hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()})"
    if isinstance(x, tuple | list | frozenset | set):
        parts = sorted(map(_describe, x)) if isinstance(x, frozenset | set) else map(_describe, x)
        return f"{type(x).__name__}({', '.join(parts)})"
    if isinstance(x, Mapping):
        return f"dict({', '.join(sorted(f'{_describe(k)}: {_describe(v)}' for k, v in x.items()))})"
    if isinstance(x, slice):
        return f"slice({_describe(x.start)}, {_describe(x.stop)}, {_describe(x.step)})"
    if isinstance(x, type | types.FunctionType | types.BuiltinFunctionType | np.ufunc):
        return _qualified(x)
    if isinstance(x, SymbolicOp) and isinstance(getattr(type(x), "__props__", None), tuple):
        # an inner graph its class builds from its props and the operand types it was built for (`build_inner_graph`;
        # AllocDiag, which pt.diag makes): those, what else it was made with, and its results' types (which show the
        # flags read while building it, as floatX in Pad's zeros) state it
        props = ", ".join(_describe(getattr(x, p)) for p in type(x).__props__)
        built_for = _describe(tuple(getattr(x, "input_types", ())))  # the operand types its inner graph was built for
        return f"{_qualified(type(x))}({props}, {_describe(getattr(x, '_init_kwargs', {}))}, {built_for})"
    if isinstance(x, HasInnerGraph):
        raise _Unkeyable(type(x))  # an inner graph (OpFromGraph, Composite, Scan): its props do not state it
    props = getattr(type(x), "__props__", None)
    if isinstance(props, tuple):
        return f"{_qualified(type(x))}({', '.join(_describe(getattr(x, p)) for p in props)})"
    if isinstance(x, ScalarOp | Type):  # no props: its whole state (name, output types), a superset of what its
        return f"{_qualified(type(x))}({_describe(vars(x))})"  # equality compares
    raise _Unkeyable(type(x))  # an object of unknown identity


def _qualified(x) -> str:
    """module.name of a class or function from one of the libraries whose versions key the graphs (`_versions`)."""
    module = getattr(x, "__module__", None) or ""
    name = f"{module}.{getattr(x, '__qualname__', getattr(x, '__name__', None))}"
    if module.split(".")[0] not in _VERSIONED or "<locals>" in name or "<lambda>" in name:
        raise _Unkeyable(name)  # the user's own Op (its code is no part of the key), or a closure (one name, many values)
    return name


@functools.cache
def _versions() -> str:
    """What a rewritten graph depends on besides itself and floatX: the versions of the libraries its Ops and rewrites
    come from (`_VERSIONED`; bayeskern's by its source), and PyTensor's flags that choose rewrites and are fixed at
    start-up (`cxx`, which limits elemwise fusion, is not: `numpy_mode` clears it, and `structure_key` reads it).

    A rewrite the user registers with PyTensor is not in it: such a process should use a compile directory of its own.
    """
    import pymc
    import scipy

    source = hashlib.sha256()
    for file in sorted(Path(__file__).parent.rglob("*.py")):
        source.update(file.read_bytes())
    config = pytensor.config
    return (f"python {sys.version_info[:2]} pytensor {pytensor.__version__} pymc {pymc.__version__} numpy {np.__version__} "
            f"scipy {scipy.__version__} bayeskern {source.hexdigest()} rewrites +{config.optimizer_including} "
            f"-{config.optimizer_excluding} !{config.optimizer_requiring} optdb {config.optdb__max_use_ratio} "
            f"{config.optdb__position_cutoff} cast {config.cast_policy}")


def _folder() -> Path:
    return Path(pytensor.config.compiledir) / "bayeskern_numpy"  # named when it held numpy-mode graphs alone


def _load(key: str, mode, inputs: list, single: bool):
    """The function of the graph kept under `key`, its inputs named as `inputs` are (a call may name them), or None where
    there is none that can be read here."""
    kept_graph = kept(key)
    if kept_graph is None:
        return None
    try:
        graph, borrow = kept_graph
        return function_of(graph, mode, [given.name for given in inputs], borrow, single)
    except Exception:  # of classes changed since: compiled anew
        return None


def function_of(graph: FunctionGraph, mode, names: list | None = None, borrow: list | None = None, single: bool = False):
    """PyTensor's function of `graph`, rewritten already (kept, or prepared for linking), linked by `mode`'s linker as
    it is: nothing rewritten. `names`: the inputs' names (a call may name them); `borrow`: per output, as compiled;
    `single`: it returns its one output, not a list."""
    names, borrow = names or [None] * len(graph.inputs), borrow or [False] * len(graph.outputs)
    outputs = [SymbolicOutput(v, borrow=b) for v, b in zip(graph.outputs, borrow, strict=True)]
    inputs = [In(v, name=name) for v, name in zip(graph.inputs, names, strict=True)]
    return FunctionMaker(inputs, outputs[0] if single else outputs, mode=mode, fgraph=graph, no_fgraph_prep=True,
                         accept_inplace=True, on_unused_input="ignore").create()


def _store(key: str, fn, n_inputs: int) -> None:
    """Keep `fn`'s rewritten graph under `key`."""
    graph = fn.maker.fgraph
    if len(graph.inputs) != n_inputs or graph.update_mapping:
        return  # inputs added by compilation (shared storage, updates): not a function of its inputs alone
    keep(key, (graph, [o.borrow for o in fn.maker.outputs]))


def _make_room(folder: Path) -> None:
    """Remove the least recently used quarter of the kept graphs when there are MAX_FILES (another process may remove
    the same files meanwhile), and temporary files an interrupted writer left. Counting the graphs costs a directory
    listing (~0.5 ms for 2000), not a stat of each."""
    names = []
    for entry in os.scandir(folder):
        if entry.name.endswith(".pkl"):
            names.append(entry.name)
        elif entry.name.endswith(".tmp"):  # left by a writer killed before its rename, an hour ago or more
            with contextlib.suppress(OSError):
                if time.time() - entry.stat().st_mtime > 3600:
                    os.unlink(entry.path)
    if len(names) < MAX_FILES:
        return
    kept = []
    for name in names:
        with contextlib.suppress(OSError):
            kept.append((os.stat(folder / name).st_mtime, name))
    for _, name in sorted(kept)[: len(kept) - MAX_FILES * 3 // 4]:
        (folder / name).unlink(missing_ok=True)
