"""The model-spec format of models/*.toml: loading, validation, and a safe parser for kernel expressions."""

import ast
import tomllib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bayeskern import datasets, kernels

__all__ = ["Spec", "SpecError", "load", "parse_kernel"]

#: the names a kernel expression may call: the public kernels of bayeskern.kernels
KERNEL_NAMES = {name: getattr(kernels, name) for name in kernels.__all__ if name not in {"Kernel", "Sum", "Product", "Scaled", "FeatureKernel"}}


class SpecError(ValueError):
    """A bad spec: names the file, the key and the reason, on one line."""

    def __init__(self, path, key: str, reason: str):
        self.path, self.key, self.reason = str(path), key, reason
        super().__init__(f"{self.path}: {key}: {reason}")


@dataclass(frozen=True)
class Spec:
    """A validated spec: where the data come from, the candidate kernels, the noise, the grid."""

    path: Path
    name: str
    description: str
    data: dict
    kernels: tuple[str, ...]
    sigma: float
    grid: np.ndarray
    include_noise: bool

    def load_data(self, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """X (n, 1) and t (n,) from the data section (a bundled generator); `seed` overrides data.seed."""
        d = dict(self.data)
        if seed is not None:
            d["seed"] = seed
        return datasets.sinusoid(n=d["n"], noise=d["noise"], seed=d["seed"])


def parse_kernel(text: str):
    """Build a kernel from an expression such as "2.0 * RBF(lengthscale=0.5) + Constant(1.0)".

    Only numbers, lists of numbers, +, *, unary minus and calls of the names in `KERNEL_NAMES` are
    allowed (Python's `ast`, no `eval`). Raises ValueError with the reason.
    """
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        raise ValueError(f"not a valid expression: {err.msg}") from None
    return _evaluate(tree.body)


def _evaluate(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand)
    if isinstance(node, ast.List | ast.Tuple):
        return [_evaluate(e) for e in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = _evaluate(node.left), _evaluate(node.right)
        return left + right if isinstance(node.op, ast.Add) else left * right
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        if node.func.id not in KERNEL_NAMES:
            raise ValueError(f"unknown kernel {node.func.id!r}; known: {', '.join(sorted(KERNEL_NAMES))}")
        args = [_evaluate(a) for a in node.args]
        kwargs = {k.arg: _evaluate(k.value) for k in node.keywords if k.arg is not None}
        try:
            return KERNEL_NAMES[node.func.id](*args, **kwargs)
        except TypeError as err:
            raise ValueError(str(err)) from None
    raise ValueError(f"not allowed in a kernel expression: {ast.unparse(node)!r}")


def _get(table: dict, key: str, path, where: str, kind, default=...):
    if key not in table:
        if default is ...:
            raise SpecError(path, f"{where}{key}", "missing")
        return default
    value = table[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise SpecError(path, f"{where}{key}", f"must be {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _known(table: dict, keys: set, path, where: str) -> None:
    unknown = sorted(set(table) - keys)
    if unknown:
        raise SpecError(path, f"{where}{unknown[0]}", f"unknown key; known: {', '.join(sorted(keys))}")


def load(path) -> Spec:
    """Read and validate a spec; every problem is a SpecError naming the file and the key."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(path, "(file)", "no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise SpecError(path, "(file)", f"not valid TOML: {err}") from None
    _known(raw, {"name", "description", "data", "model", "predict"}, path, "")
    name = _get(raw, "name", path, "", str, path.stem)
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise SpecError(path, "name", f"must be letters, digits, - or _, got {name!r}")

    data = _get(raw, "data", path, "", dict)
    _known(data, {"source", "n", "noise", "seed"}, path, "data.")
    source = _get(data, "source", path, "data.", str)
    if source != "sinusoid":
        raise SpecError(path, "data.source", f"unknown source {source!r}; available: 'sinusoid'")
    n = _get(data, "n", path, "data.", int, 25)
    noise = _get(data, "noise", path, "data.", int | float, 0.2)
    seed = _get(data, "seed", path, "data.", int, 0)
    if n < 2:
        raise SpecError(path, "data.n", f"must be at least 2, got {n}")
    if noise < 0:
        raise SpecError(path, "data.noise", f"must be non-negative, got {noise}")

    model = _get(raw, "model", path, "", dict)
    _known(model, {"kind", "kernels", "sigma"}, path, "model.")
    kind = _get(model, "kind", path, "model.", str)
    if kind != "gp":
        raise SpecError(path, "model.kind", f"unknown kind {kind!r}; available: 'gp'")
    texts = _get(model, "kernels", path, "model.", list)
    if not texts:
        raise SpecError(path, "model.kernels", "must list at least one kernel")
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise SpecError(path, f"model.kernels[{i}]", f"must be a string, got {text!r}")
        try:
            parse_kernel(text)
        except ValueError as err:
            raise SpecError(path, f"model.kernels[{i}]", str(err)) from None
    sigma = float(_get(model, "sigma", path, "model.", int | float))
    if not sigma > 0:
        raise SpecError(path, "model.sigma", f"must be positive, got {sigma}")

    predict = _get(raw, "predict", path, "", dict, {})
    _known(predict, {"start", "stop", "num", "include_noise"}, path, "predict.")
    start = float(_get(predict, "start", path, "predict.", int | float, 0.0))
    stop = float(_get(predict, "stop", path, "predict.", int | float, 1.0))
    num = _get(predict, "num", path, "predict.", int, 101)
    if not (stop > start and num >= 2):
        raise SpecError(path, "predict", f"need start < stop and num ≥ 2, got {start}, {stop}, {num}")
    include_noise = _get(predict, "include_noise", path, "predict.", bool, False)
    return Spec(
        path=path, name=name, description=_get(raw, "description", path, "", str, ""),
        data={"source": source, "n": n, "noise": float(noise), "seed": seed}, kernels=tuple(texts),
        sigma=sigma, grid=np.linspace(start, stop, num), include_noise=include_noise,
    )
