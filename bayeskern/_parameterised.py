"""The one base of kernels and feature maps: a tree of parts with named parameters, compiled once per structure."""

import copy
from collections.abc import Callable, Hashable, Iterator

import numpy as np
import pytensor.tensor as pt

from bayeskern._compile import compiled, numpy_function
from bayeskern._validation import is_symbolic

#: graphs on up to this many pairs (n·m points for a kernel, n·M for M features) run in numpy (`_compile.NUMPY`): Numba's compilation
#: of a new structure costs seconds, numpy loses ~10 ms at this size (a Gram matrix up to n ≈ 700;
#: predictions in blocks of 2048 points beyond n ≈ 250 are compiled)
NUMPY_MAX_SIZE = 500_000

__all__ = ["Parameterised", "bind_given", "parameter"]


def bind_given(node: "Parameterised") -> dict:
    """Bind a node's parameters to themselves: numbers become constants, random variables stay."""
    return {name: pt.as_tensor_variable(v) for name, v in node.parameters().items()}


def parameter(name: str, doc: str = "") -> property:
    """A read-only attribute that is the parameter `name`, so that `map_parameters` keeps the two one thing."""
    return property(lambda self: self.parameters()[name], doc=doc or f"the parameter {name!r}")


def static_shape(v) -> tuple:
    """A parameter's shape: a number's, or a symbolic one's as far as it is known before any value (None where not)."""
    return tuple(v.type.shape) if is_symbolic(v) else np.shape(v)


def known_shape(v) -> tuple:
    """A parameter's shape before any value of it, for the checks of its sizes against the inputs (`_check_input_dim`):
    its static shape, else — a PyMC variable sized by coords or by data (`dims=`, `pm.Data`), whose static shape is
    open — its shape read off the model's shared sizes (PyTensor's shape rewrites turn `v.shape` into the size's own
    graph, so nothing is drawn; ~10 ms in numpy mode). Where that graph cannot be evaluated either, the static shape
    (None where open): the conditioning checks the numbers."""
    shape = static_shape(v)
    if None not in shape:
        return shape
    try:
        return tuple(int(side) for side in numpy_function([], v.shape)())
    except Exception:  # noqa: BLE001 — a best-effort check before the fit; the exact one comes with the numbers
        return shape


def _rank_and_trailing(v) -> tuple[int, tuple]:
    """The rank of a parameter and its shape after the first axis (what a compiled graph depends on)."""
    shape = static_shape(v)
    return len(shape), shape[1:]


class Parameterised:
    """A graph-building object with named parameters (numbers, arrays or PyTensor variables) and child parts.

    A subclass passes its parameters to `__init__`, puts settings that change the graph's structure
    (a degree, a flag, a plain callable) in `_config()`, and its sub-objects in `children`. Graphs
    are built with `bind(node) -> {name: tensor}`: `bind_given` for symbolic use, placeholders for
    the compiled function of `_run_graph`, which is shared by every tree of the same `signature()`
    (objects that differ only in their numbers).
    """

    children: tuple["Parameterised", ...] = ()

    def __init__(self, **parameters):
        self._parameters = parameters

    def parameters(self) -> dict:
        """This node's own parameters, {name: value} (not its children's)."""
        return self._parameters

    def _config(self) -> Hashable:
        """Settings that are not tensors but change the graph (a polynomial degree, a flag)."""
        return ()

    def _check_input_dim(self, d: int) -> None:
        """Raise a ValueError if this node cannot take inputs with d columns."""

    def _check_tree_input_dim(self, d: int) -> None:
        """Raise a ValueError if any node of the tree cannot take inputs with d columns."""
        for node in self.walk():
            node._check_input_dim(d)

    def walk(self) -> Iterator["Parameterised"]:
        """This node, then its children's trees, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()

    _walk = walk

    def signature(self) -> Hashable:
        """What the compiled graph depends on: the type, the settings, the parameters' ranks and trailing shapes, the children's signatures."""
        shapes = tuple((name, *_rank_and_trailing(v)) for name, v in self.parameters().items())
        return (type(self).__qualname__, self._config(), shapes, tuple(child.signature() for child in self.children))

    def placeholders(self) -> dict:
        """One symbolic input per parameter of this node (leading length free), for compiled graphs."""
        out = {}
        for name, v in self.parameters().items():
            rank, trailing = _rank_and_trailing(v)
            out[name] = pt.tensor(name, shape=(None, *trailing) if rank else (), dtype="float64")
        return out

    def map_parameters(self, fn: Callable) -> "Parameterised":
        """A copy of this tree with every parameter v replaced by fn(v) (e.g. a number for a random variable)."""
        new = copy.copy(self)
        new._parameters = {name: fn(v) for name, v in self.parameters().items()}
        new.children = tuple(child.map_parameters(fn) for child in self.children)
        return new

    def _symbolic_parameter_message(self, name: str, node: "Parameterised") -> str:
        return (f"{type(self).__name__} gives numbers for numeric parameters only, but {name!r} of {type(node).__name__} "
                "is symbolic (a PyMC random variable?)")

    def require_numeric(self) -> None:
        """A ValueError naming the first symbolic parameter of this tree (numbers are needed, not PyMC random variables)."""
        for node in self.walk():
            for name, v in node.parameters().items():
                if is_symbolic(v):
                    raise ValueError(self._symbolic_parameter_message(name, node))

    def _run_graph(self, tag: str, X: np.ndarray, Xs: np.ndarray | None, graph: Callable, *settings, pairs: int) -> np.ndarray:
        """graph(X, Xs, bind) evaluated on numeric X (n, d) and Xs (m, d) or None, with this tree's numbers fed in.

        The function is compiled once per (`tag`, `signature()`, d, whether Xs is given, `settings`),
        with one input per parameter of every node, so trees that differ only in their numbers share it.
        `pairs`: the size of the output (n·m for a kernel, n·M for features): up to
        NUMPY_MAX_SIZE it runs in numpy, not compiled.
        """
        self.require_numeric()
        nodes = list(self.walk())
        values = [v for node in nodes for v in node.parameters().values()]
        d = X.shape[1]

        def build():
            Xt = pt.tensor("X", shape=(None, d), dtype="float64")
            Xst = None if Xs is None else pt.tensor("Xs", shape=(None, d), dtype="float64")
            slots = {id(node): node.placeholders() for node in nodes}
            out = graph(Xt, Xst, lambda node: slots[id(node)])
            data = [Xt] if Xst is None else [Xt, Xst]
            return data + [t for node in nodes for t in slots[id(node)].values()], out

        fn = compiled((tag, self.signature(), d, Xs is not None, *settings), build, numpy=pairs <= NUMPY_MAX_SIZE)
        return np.asarray(fn(*([X] if Xs is None else [X, Xs]), *values))
