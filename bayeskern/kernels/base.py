"""The kernel base class: a covariance function k(x, x′) as a PyTensor graph, composed by + and *."""

from collections.abc import Callable
from functools import reduce
from operator import add, mul

import numpy as np
import pytensor.tensor as pt

from bayeskern._fills import filled
from bayeskern._linalg import mirror_lower
from bayeskern._lower_pairs import lower_pairs
from bayeskern._parameterised import Parameterised, bind_given
from bayeskern._validation import as_inputs, check_finite_result, check_flag, check_kernel, check_number, is_symbolic, same_columns

__all__ = ["Kernel", "Product", "Scaled", "Sum"]


def _input_tensor(X, name: str):
    """A symbolic (n, d) input with d known: numeric data become constants."""
    if X is None:
        return None
    if is_symbolic(X):
        if X.ndim != 2 or X.type.shape[1] is None:
            raise ValueError(f"{name} must be a 2-D tensor with a known number of columns")
        return X
    return pt.as_tensor_variable(as_inputs(X, name))


class Kernel(Parameterised):
    """A covariance function k(x, x′) whose hyperparameters are numbers, arrays or PyMC random variables.

    A leaf kernel implements `_full(X, Xs, p)` (and `_diag(X, p)` when the diagonal is cheaper than the
    matrix, `_pairs(X, rows, cols, p)` when k at given pairs of rows is cheaper than reading them off the
    matrix), where `p` maps hyperparameter names to tensors. `+`, `*` and scaling are defined here once.
    `full`/`diag`/`lower_triangle` give PyTensor graphs for PyMC models; `evaluate` gives numbers. The tree of parts,
    the signature of the compiled graph and `map_parameters` come from `Parameterised`.
    """

    __array_ufunc__ = None  # numpy scalars and arrays defer to Kernel.__radd__ / __rmul__

    @property
    def hyperparameters(self) -> dict:
        """This kernel's own hyperparameters {name: value}: `parameters()` under the kernels' name."""
        return self.parameters()

    #: the kernels' name for `map_parameters`: a copy of the tree with every hyperparameter v replaced by fn(v)
    map_hyperparameters = Parameterised.map_parameters

    # -- what a leaf kernel implements ---------------------------------------------------------
    def _full(self, X, Xs, p: dict):
        raise NotImplementedError

    def _diag(self, X, p: dict):
        return pt.diagonal(self._full(X, None, p))

    def _pairs(self, X, rows, cols, p: dict):
        """k(x_rows[i], x_cols[i]) for each i, a vector: by default read off K(X, X); a leaf with a cheaper form overrides it."""
        return self._full(X, None, p)[rows, cols]

    # -- graph building ------------------------------------------------------------------------
    def _build(self, X, Xs, diag: bool, bind: Callable[[Parameterised], dict]):
        p = bind(self)
        return self._diag(X, p) if diag else self._full(X, Xs, p)

    def _build_pairs(self, X, rows, cols, bind: Callable[[Parameterised], dict]):
        return self._pairs(X, rows, cols, bind(self))

    def full(self, X, Xs=None):
        """The symbolic covariance matrix K(X, Xs) (Xs = X when not given).

        K(X, X) is ½(K + Kᵀ): Numba's fastmath may round k(xᵢ, xⱼ) and k(xⱼ, xᵢ) differently. Where PyTensor proves the
        graph symmetric (it reorders a commutative product) it drops that average, and the two may then differ in the
        last bit; `evaluate` mirrors its result, and `lower_triangle` evaluates each pair once.
        """
        X, Xs = _input_tensor(X, "X"), _input_tensor(Xs, "Xs")
        self._check_dims(X.type.shape[1], None if Xs is None else Xs.type.shape[1])
        K = self._build(X, Xs, False, bind_given)
        return K if Xs is not None else 0.5 * (K + K.T)

    def lower_triangle(self, X):
        """K(X, X) on and below its diagonal, zeros above: for a consumer that reads one triangle only
        (the Cholesky factorisation of the marginal likelihood).

        Each pair i ≥ j is evaluated once, as a vector of n(n + 1)/2 entries, and placed in the
        matrix: half the kernel's work of `full`, forward and in the gradient. It is placed at flat
        positions i·n + j of the row-major matrix (one index array: at n = 500 in numpy, setting 0.2 ms
        and, in the gradient, gathering 0.1 ms, against 0.6 and 0.4 ms with the pairs' two index arrays).
        """
        X = _input_tensor(X, "X")
        self._check_dims(X.type.shape[1], None)
        n = X.shape[0]
        rows, cols, flat = lower_pairs(n)
        placed = pt.set_subtensor(filled(0.0, n * n)[flat], self._build_pairs(X, rows, cols, bind_given))
        return placed.reshape((n, n))

    def diag(self, X):
        """The symbolic diagonal k(xᵢ, xᵢ)."""
        X = _input_tensor(X, "X")
        self._check_dims(X.type.shape[1], None)
        return self._build(X, None, True, bind_given)

    def __call__(self, X, Xs=None, diag: bool = False):
        return self.diag(X) if diag else self.full(X, Xs)

    def _check_dims(self, d: int, ds: int | None) -> None:
        if ds is not None and ds != d:
            raise ValueError(f"Xs has {ds} column(s) but X has {d}")
        self._check_tree_input_dim(d)

    def _symbolic_parameter_message(self, name: str, node: Parameterised) -> str:
        return (f"evaluate needs numeric hyperparameters, but {name!r} of {type(node).__name__} "
                "is symbolic (a PyMC random variable?); use k.full(X) inside the model instead")

    def evaluate(self, X, Xs=None, diag: bool = False) -> np.ndarray:
        """K(X, Xs) as a numpy array (n, m); X is (n, d), a 1-D X means d = 1.

        With `diag=True`, the vector k(xᵢ, xᵢ) (n,). K(X, X) is symmetric to the bit, its upper triangle mirrored from
        the lower: k(xᵢ, xⱼ) and k(xⱼ, xᵢ) sit at different places in memory, where numpy's vectorised and scalar loops
        (of tanh, sin, …) may round them apart. The graph is compiled once per kernel structure and input dimension;
        hyperparameter values are fed in, so kernels that differ only in their numbers share one compiled function.
        """
        X = as_inputs(X, "X")
        Xs = None if Xs is None else as_inputs(Xs, "Xs")
        if Xs is not None:
            same_columns(X, Xs, "X", "Xs")
        diag = check_flag(diag, "diag")
        self._check_dims(X.shape[1], None)
        K = self._values(X, Xs, diag)
        return K if diag or Xs is not None else mirror_lower(K)

    def _values(self, X: np.ndarray, Xs: np.ndarray | None = None, diag: bool = False) -> np.ndarray:
        """`evaluate` for inputs already checked (float64 (n, d), same d, dimensions accepted): the solvers' path,
        so one input is validated once, where it enters, not at every prediction."""
        pairs = X.shape[0] * (1 if diag else X.shape[0] if Xs is None else Xs.shape[0])
        K = self._run_graph("kernel", X, Xs, lambda Xt, Xst, bind: self._build(Xt, Xst, diag, bind), diag, pairs=pairs)
        # finite inputs and hyperparameters, yet inf/NaN out: an overflow, reported rather than returned
        return check_finite_result(K, lambda: f"{self!r} evaluated on X{'' if Xs is None else ' and Xs'}")

    # -- algebra -------------------------------------------------------------------------------
    def __add__(self, other):
        if isinstance(other, Kernel):
            return Sum(self, other)
        if not is_symbolic(other) and np.ndim(other) == 0 and other == 0:
            return self  # so that sum([k1, k2, ...]) works
        if is_symbolic(other) or np.ndim(other) == 0:
            from bayeskern.kernels.constant import Constant

            return Sum(self, Constant(other))
        return NotImplemented

    __radd__ = __add__

    def __mul__(self, other):
        if isinstance(other, Kernel):
            return Product(self, other)
        if is_symbolic(other) or np.ndim(other) == 0:
            return Scaled(self, other)
        return NotImplemented

    __rmul__ = __mul__

    def __repr__(self) -> str:
        args = ", ".join(f"{n}={_show(v)}" for n, v in self.hyperparameters.items())
        return f"{type(self).__name__}({args})"


def _show(v) -> str:
    if is_symbolic(v):
        return v.name or "<symbolic>"
    a = np.asarray(v)
    return f"{a.item():g}" if a.ndim == 0 else np.array2string(a, precision=4, separator=", ")


class _Combination(Kernel):
    op: Callable = add
    symbol = " + "

    def __init__(self, *kernels: Kernel):
        super().__init__()
        if not kernels:
            raise ValueError(f"{type(self).__name__} needs at least one kernel in kernels")
        for k in kernels:
            check_kernel(k, "kernels")
        flat = []
        for k in kernels:
            flat.extend(k.children if type(k) is type(self) else (k,))
        self.children = tuple(flat)

    def _build(self, X, Xs, diag, bind):
        return reduce(self.op, (k._build(X, Xs, diag, bind) for k in self.children))

    def _build_pairs(self, X, rows, cols, bind):
        return reduce(self.op, (k._build_pairs(X, rows, cols, bind) for k in self.children))

    def __repr__(self) -> str:
        return self.symbol.join(f"({k!r})" if isinstance(k, Sum) and self.op is mul else repr(k) for k in self.children)


class Sum(_Combination):
    """k(x, x′) = Σᵢ kᵢ(x, x′)."""


class Product(_Combination):
    """k(x, x′) = Πᵢ kᵢ(x, x′)."""

    op = mul
    symbol = " * "


class Scaled(Kernel):
    """k(x, x′) = s · k₀(x, x′) with s ≥ 0 a number or a scalar PyMC random variable."""

    def __init__(self, kernel: Kernel, scale):
        check_kernel(kernel)
        super().__init__(scale=check_number(scale, "scale", nonnegative=True, scalar=True))
        self.children = (kernel,)

    def _build(self, X, Xs, diag, bind):
        return bind(self)["scale"] * self.children[0]._build(X, Xs, diag, bind)

    def _build_pairs(self, X, rows, cols, bind):
        return bind(self)["scale"] * self.children[0]._build_pairs(X, rows, cols, bind)

    def __repr__(self) -> str:
        inner = self.children[0]
        inner_s = f"({inner!r})" if isinstance(inner, Sum) else repr(inner)
        return f"{_show(self.hyperparameters['scale'])} * {inner_s}"
