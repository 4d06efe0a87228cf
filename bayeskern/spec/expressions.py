"""The expression language of specs: numbers, lists, +, *, unary minus, prior names and whitelisted calls, parsed by `ast`, never `eval`."""

import ast
import math

import pymc as pm

from bayeskern import approx, features, kernels
from bayeskern.spec.limits import MAX_DEPTH, MAX_EXPRESSION, MAX_LIST, MAX_SIZE

__all__ = ["FEATURES", "KERNELS", "PRIORS", "parse_expression", "parse_kernel"]


def _classes(module, base, excluded: set) -> dict:
    """The public subclasses of `base` in `module`, by name, but the `excluded` ones."""
    return {n: c for n in module.__all__ if isinstance(c := getattr(module, n), type) and issubclass(c, base) and n not in excluded}


#: kernel constructors a spec may call: the public kernels of bayeskern.kernels
KERNELS = _classes(kernels, kernels.Kernel, {"Kernel", "Sum", "Product", "Scaled", "FeatureKernel", "FisherKernel", "GenerativeModel"})
#: approximations model.approx may call
APPROXIMATIONS = {"HSGP": approx.HSGP, "VFE": approx.VFE}
#: feature-map constructors a spec may call
FEATURES = _classes(features, features.FeatureMap, {"FeatureMap", "MercerFeatures"})
#: prior distributions a spec may declare, by their PyMC names
PRIORS = {n: getattr(pm, n) for n in (
    "Normal", "HalfNormal", "LogNormal", "Gamma", "InverseGamma", "Exponential", "HalfCauchy",
    "HalfStudentT", "Uniform", "TruncatedNormal", "Beta", "Weibull",
)}


def parse_expression(text: str, callables: dict, names: dict | None = None):
    """Evaluate a whitelisted expression: numbers, True/False, lists, +, *, unary minus, `names`, calls of `callables`.

    Raises ValueError with the reason (an unknown name, a construct that is not allowed, a
    constructor's own complaint, a number that is not finite, an expression longer than
    MAX_EXPRESSION characters or nested deeper than MAX_DEPTH levels).
    """
    tree = _parse_whitelisted(text, callables)
    return _evaluate(tree.body, callables, names or {})


# the only syntax an expression may use; everything else is refused before anything is evaluated
_ALLOWED_SYNTAX = (ast.Expression, ast.Constant, ast.UnaryOp, ast.USub, ast.List, ast.Tuple, ast.BinOp, ast.Add,
                   ast.Mult, ast.Name, ast.Call, ast.keyword, ast.Load)

#: how a refused operator is named in the message (the parse tree has no text for it)
_OPERATORS = {ast.Sub: "-", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**", ast.MatMult: "@", ast.LShift: "<<",
              ast.RShift: ">>", ast.BitOr: "|", ast.BitXor: "^", ast.BitAnd: "&", ast.UAdd: "unary +", ast.Not: "not", ast.Invert: "~",
              ast.And: "and", ast.Or: "or", ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
              ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}


def _short(text, limit: int = 80) -> str:
    """`text` on one line, cut to `limit` characters (a message quotes expressions, never pages of them)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _finite(value) -> bool:
    """A number that is a finite float64 (an int too large for a float is not)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _depth(tree: ast.AST) -> int:
    """How deep the tree nests, counted without recursion (stopping once past MAX_DEPTH)."""
    deepest, stack = 0, [(tree, 1)]
    while stack and deepest <= MAX_DEPTH:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _parse_whitelisted(text: str, callables: dict) -> ast.Expression:
    """The parsed expression, or ValueError for bad syntax, a construct off the whitelist, an unknown callable,
    a number that is not finite, or an expression too long or too deeply nested."""
    if len(text) > MAX_EXPRESSION:
        raise ValueError(f"an expression may be at most {MAX_EXPRESSION:,} characters long, this one has {len(text):,}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as err:
        raise ValueError(f"not a valid expression: {err.msg}") from None
    except (RecursionError, MemoryError):  # CPython's parser gives up on very deep nesting (e.g. 10⁵ unary minuses)
        raise ValueError(f"too deeply nested to parse (an expression may nest at most {MAX_DEPTH} levels; "
                         "a sum or product of k terms nests k levels)") from None
    if _depth(tree) > MAX_DEPTH:
        raise ValueError(f"an expression may nest at most {MAX_DEPTH} levels (a sum or product of k terms nests k levels)")
    for node in ast.walk(tree):
        _refuse_operator(node)
        if not isinstance(node, _ALLOWED_SYNTAX) or isinstance(node, ast.Constant) and not isinstance(node.value, int | float):
            raise ValueError(f"not allowed in an expression: {_short(ast.unparse(node))!r}")
        if isinstance(node, ast.Constant) and not _finite(node.value):
            raise ValueError(f"numbers must be finite float64 values (|x| < 1.8e308), got {_short(ast.unparse(node), 40)}")
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in callables):
            raise ValueError(f"unknown name {_short(ast.unparse(node.func))!r}; known: {', '.join(sorted(callables))}")
    return tree


def _refuse_operator(node: ast.AST) -> None:
    """A ValueError naming the operator of `node` (a binary, unary, boolean operation or comparison) if it is not + or *
    (or - before a number): the operator itself has no text to quote."""
    for op in (getattr(node, "op", None), *getattr(node, "ops", ())):
        if isinstance(op, ast.operator | ast.unaryop | ast.cmpop | ast.boolop) and not isinstance(op, _ALLOWED_SYNTAX):
            raise ValueError(f"{_OPERATORS.get(type(op), type(op).__name__)!r} is not allowed in an expression "
                             f"({_short(ast.unparse(node))!r}): only + and * combine kernels and numbers (and - before a number)")


def parse_kernel(text: str, names: dict | None = None):
    """A kernel from an expression such as "2.0 * RBF(lengthscale=ell) + Constant(1.0)" (`ell` a prior name)."""
    k = parse_expression(text, KERNELS, names)
    if not isinstance(k, kernels.Kernel):
        raise ValueError(f"{_short(text)!r} is not a kernel")
    return k


def parse_approx(text: str):
    """An approximation of `bayeskern.approx` from an expression such as "HSGP(m=200, c=1.5)"."""
    a = parse_expression(text, APPROXIMATIONS)
    if not isinstance(a, tuple(APPROXIMATIONS.values())):
        raise ValueError(f"{_short(text)!r} is not an approximation; known: {', '.join(sorted(APPROXIMATIONS))}")
    return a


def _list_of_numbers(values: list, node) -> list:
    """The values of a list in an expression: numbers, or lists of numbers (a matrix), nothing else."""
    for v in values:
        inner = v if isinstance(v, list) else [v]
        if not all(isinstance(w, int | float) for w in inner):
            what = "lists nest at most two deep (a matrix)" if any(isinstance(w, list) for w in inner) else "a list holds numbers only"
            raise ValueError(f"{what}: {_short(ast.unparse(node))!r}")
    return values


def _evaluate(node, callables: dict, names: dict):
    """The value of one node of a whitelisted expression (numbers, lists, kernels, feature maps, priors …)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):  # numbers, True and False
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _evaluate(node.operand, callables, names)
        if not isinstance(value, int | float):
            raise ValueError(f"unary minus applies to numbers only: {_short(ast.unparse(node))!r}")
        return -value
    if isinstance(node, ast.List | ast.Tuple):
        if len(node.elts) > MAX_LIST:
            raise ValueError(f"a list may hold at most {MAX_LIST} values")
        return _list_of_numbers([_evaluate(e, callables, names) for e in node.elts], node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mult):
        left, right = _evaluate(node.left, callables, names), _evaluate(node.right, callables, names)
        if isinstance(left, list) or isinstance(right, list):  # no list repetition or concatenation
            raise ValueError(f"+ and * apply to numbers and kernels, not to lists: {_short(ast.unparse(node))!r}")
        try:
            value = left + right if isinstance(node.op, ast.Add) else left * right
        except TypeError:
            raise ValueError(f"cannot combine these: {_short(ast.unparse(node))!r}") from None
        if isinstance(value, int | float) and not _finite(value):
            raise ValueError(f"the number overflows float64: {_short(ast.unparse(node))!r}")
        return value
    if isinstance(node, ast.Name):
        if node.id not in names:
            known = ", ".join(sorted(names)) or "none declared"
            raise ValueError(f"unknown name {node.id!r} (priors: {known})")
        return names[node.id]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):  # a known callable (_parse_whitelisted)
        return _call(node, callables, names)
    raise ValueError(f"not allowed in an expression: {_short(ast.unparse(node))!r}")


def _call(node: ast.Call, callables: dict, names: dict):
    """The value of a call of a whitelisted constructor; its own complaints become ValueErrors naming it."""
    args = [_evaluate(a, callables, names) for a in node.args]
    if any(k.arg is None for k in node.keywords):
        raise ValueError("**keyword unpacking is not allowed")
    kwargs = {k.arg: _evaluate(k.value, callables, names) for k in node.keywords}
    _check_counts(callables[node.func.id], args, kwargs)
    try:
        return callables[node.func.id](*args, **kwargs)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{node.func.id}: {_short(err, 300)}") from None
    except (MemoryError, RecursionError):
        raise ValueError(f"{node.func.id}: too large to build with these arguments") from None


def _check_counts(func, args: list, kwargs: dict) -> None:
    """Whole numbers given to a kernel or feature map (degrees, orders, numbers of features, depths) are at most
    MAX_SIZE, so that building one cannot exhaust the memory; a `seed` is not a count."""
    if isinstance(func, type) and issubclass(func, kernels.Kernel | features.FeatureMap):
        for name, value in [*((None, a) for a in args), *kwargs.items()]:
            if isinstance(value, int) and not isinstance(value, bool) and name != "seed" and abs(value) > MAX_SIZE:
                raise ValueError(f"{func.__name__}: whole-number arguments (degrees, orders, numbers of features, depths) "
                                 f"may be at most {MAX_SIZE:,}, got {_short(value, 40)}")


def _names_in(text: str) -> set[str]:
    """The bare names an expression refers to (prior names), not the called constructors."""
    tree = ast.parse(text, mode="eval")
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called}

