"""The numpy mode's rewritten graphs kept on disk (`_graph_cache`): a later process rewrites nothing and gets the same numbers."""

import json
import os
import pickle
import subprocess
import sys

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.maker import FunctionMaker

from bayeskern import _graph_cache
from bayeskern._compile import numpy_function

#: the README's empirical-Bayes fit in a process of its own, counting the graphs PyTensor rewrites
_README_FIT = """
import json, sys, warnings
import numpy as np, pymc as pm
from pytensor.compile.maker import FunctionMaker
rewritten = []
prepare = FunctionMaker.prepare_fgraph
def counting(inputs, outputs, additional_outputs, fgraph, mode, profile):
    rewritten.append(len(fgraph.apply_nodes))
    return prepare(inputs, outputs, additional_outputs, fgraph, mode, profile)
FunctionMaker.prepare_fgraph = staticmethod(counting)
import bayeskern as bk
X, t = bk.datasets.sinusoid(n=25, noise=0.2, seed=0)
with pm.Model() as model:
    theta = pm.HalfNormal("theta", 5.0, shape=4)
    s = pm.HalfNormal("s", 1.0)
    bk.gp.marginal_likelihood("y", X=X, y=t, kernel=bk.kernels.PRML(*theta), sigma=s)
warnings.simplefilter("ignore")
eb = bk.fit.empirical_bayes(model, restarts=5, seed=0)
params = {k: np.ravel(v).tolist() for k, v in eb.params.items()}
print(json.dumps(rewritten))
print(json.dumps({"lml": eb.log_marginal_likelihood.hex(), "params": params, "n": eb.n_evaluations,
                  "sd": {k: [x.hex() for x in np.ravel(v).tolist()] for k, v in eb.laplace.sd.items()}}))
"""


def _fit_in_a_new_process(compiledir) -> tuple[list, str]:
    """(the sizes of the graphs PyTensor rewrote, the fit's numbers as text: floats as hex, NaN included)."""
    env = dict(os.environ, PYTENSOR_FLAGS=f"base_compiledir={compiledir}")
    done = subprocess.run([sys.executable, "-c", _README_FIT], env=env, capture_output=True, text=True, check=True)
    rewritten, numbers = done.stdout.splitlines()[-2:]
    return json.loads(rewritten), numbers


def test_a_later_process_fits_the_readme_model_without_rewriting_a_graph_and_to_the_bit(tmp_path):
    """The first process on an empty compile directory rewrites every graph of the fit (and the Laplace step's) and
    keeps them; a second process loads them all: PyTensor's rewriter does not run once, and the optimum, its log
    marginal likelihood, the evaluations and the Laplace sds are the first process's (compared as hex floats)."""
    (rewritten, first), (rewritten_again, second) = _fit_in_a_new_process(tmp_path), _fit_in_a_new_process(tmp_path)
    assert len(rewritten) >= 5
    assert rewritten_again == []
    assert second == first


@pytest.fixture
def kept_in(tmp_path, monkeypatch):
    """The kept graphs in a folder of this test's own, and the number of graphs PyTensor's rewriter runs on."""
    monkeypatch.setattr(_graph_cache, "_folder", lambda: tmp_path)
    rewritten = []
    prepare = FunctionMaker.prepare_fgraph

    def counting(*args):
        rewritten.append(args)
        return prepare(*args)

    monkeypatch.setattr(FunctionMaker, "prepare_fgraph", staticmethod(counting))
    return tmp_path, rewritten


def _scaled_exp(scale: float):
    x = pt.vector("x")
    return [x], [pt.exp(x) * scale, pt.sum(x**2)]


def test_the_same_structure_is_loaded_and_another_constant_or_operation_is_compiled_anew(kept_in):
    """Built anew (new variables), the same graph is loaded from its file, not rewritten, and computes the same; a graph
    with another constant, or another operation, gets a file of its own."""
    folder, rewritten = kept_in
    x = np.array([0.5, -1.0, 2.0])
    first = numpy_function(*_scaled_exp(2.0))
    assert len(rewritten) == 1 and len(list(folder.iterdir())) == 1
    again = numpy_function(*_scaled_exp(2.0))
    assert len(rewritten) == 1  # loaded
    for a, b in zip(first(x), again(x), strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(again(x)[0], np.exp(x) * 2.0)  # numpy from the formula; the same ufuncs: exact
    numpy_function(*_scaled_exp(3.0))
    y = pt.vector("y")
    numpy_function([y], [pt.log1p(y) * 2.0, pt.sum(y**2)])
    assert len(rewritten) == 3 and len(list(folder.iterdir())) == 3


def test_a_loaded_function_takes_its_inputs_by_the_names_of_the_graph_it_stands_for(kept_in):
    """Names are no part of a structure: a graph loaded for inputs named otherwise answers to the new names."""
    x, y = pt.vector("x"), pt.vector("y")
    numpy_function([x], [pt.exp(x)])
    loaded = numpy_function([y], [pt.exp(y)])
    np.testing.assert_array_equal(loaded(y=np.array([0.0, 1.0])), [np.exp([0.0, 1.0])])
    with pytest.raises(TypeError, match="Unknown input"):
        loaded(x=np.array([0.0]))


def test_a_loaded_function_returns_arrays_of_its_own(kept_in):
    """The outputs of a loaded function are not its storage: a later call does not change what an earlier one returned
    (the rewritten graph keeps the copies PyTensor inserted for that)."""
    numpy_function(*_scaled_exp(2.0))
    loaded = numpy_function(*_scaled_exp(2.0))
    a = loaded(np.array([0.0, 1.0]))[0]
    kept = a.copy()
    loaded(np.array([5.0, 6.0]))
    np.testing.assert_array_equal(a, kept)


def test_an_unreadable_file_is_compiled_anew_and_replaced(kept_in):
    folder, rewritten = kept_in
    numpy_function(*_scaled_exp(2.0))
    [path] = folder.iterdir()
    path.write_bytes(b"half a pickle")
    fn = numpy_function(*_scaled_exp(2.0))
    assert len(rewritten) == 2
    np.testing.assert_array_equal(fn(np.array([1.0]))[0], np.exp([1.0]) * 2.0)
    graph, borrow = pickle.loads(path.read_bytes())  # written whole again
    assert len(graph.outputs) == len(borrow) == 2


def test_the_least_recently_used_graphs_make_room_for_a_new_one(kept_in, monkeypatch):
    """With MAX_FILES kept, storing another removes the least recently used quarter; loading a graph marks it used."""
    folder, rewritten = kept_in
    monkeypatch.setattr(_graph_cache, "MAX_FILES", 4)
    for k, scale in enumerate([1.0, 2.0, 3.0, 4.0]):
        before = set(folder.iterdir())
        numpy_function(*_scaled_exp(scale))
        [new] = set(folder.iterdir()) - before
        os.utime(new, (1e9 + k, 1e9 + k))  # stored in this order, a second apart
    numpy_function(*_scaled_exp(1.0))  # loaded: now the most recently used
    assert len(rewritten) == 4
    numpy_function(*_scaled_exp(5.0))  # a fifth: the least recently used (2.0's) goes
    assert len(list(folder.iterdir())) == 4
    for scale in (1.0, 3.0, 4.0, 5.0):
        numpy_function(*_scaled_exp(scale))
    assert len(rewritten) == 5
    numpy_function(*_scaled_exp(2.0))
    assert len(rewritten) == 6


def test_a_graph_over_shared_storage_is_not_kept(kept_in):
    """A shared variable's storage is its process's own: such a graph is compiled as usual and no file is written."""
    folder, rewritten = kept_in
    x, w = pt.vector("x"), pytensor.shared(np.array([1.0, 2.0]), name="w")
    fn = numpy_function([x], [x * w])
    np.testing.assert_array_equal(fn(np.array([3.0, 4.0]))[0], [3.0, 8.0])
    assert len(rewritten) == 1 and list(folder.iterdir()) == []


def test_a_graph_with_an_inner_graph_is_not_kept(kept_in):
    """An Op holding a graph of its own (OpFromGraph, as the inducing-point kernels use) has no fingerprint of its
    identity here: compiled as usual, not kept."""
    from pytensor.compile.builders import OpFromGraph

    folder, rewritten = kept_in
    a = pt.vector("a")
    doubled = OpFromGraph([a], [a * 2.0])
    x = pt.vector("x")
    fn = numpy_function([x], [doubled(x) + 1.0])
    np.testing.assert_array_equal(fn(np.array([1.0, 2.0]))[0], [3.0, 5.0])
    assert len(rewritten) == 1 and list(folder.iterdir()) == []


def test_a_graph_with_an_inner_graph_its_props_build_is_kept(kept_in):
    """A SymbolicOp builds its inner graph from its props and its operands' types (AllocDiag, which pt.diag makes, as
    the BLR's prior covariance does): it is fingerprinted by them, kept, and loaded in place of a second rewrite; another
    offset is another graph. Computes np.diag's numbers."""
    from pytensor.tensor.basic import AllocDiag

    folder, rewritten = kept_in

    def build(offset=0):
        x = pt.vector("x")
        return [x], [pt.sum(pt.diag(x, k=offset) * 3.0, axis=0)]

    inputs, outputs = build()
    assert any(isinstance(node.op, AllocDiag) for node in pytensor.graph.traversal.applys_between(inputs, outputs))
    first = numpy_function(*build())
    again = numpy_function(*build())
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_array_equal(first(x)[0], np.sum(np.diag(x) * 3.0, axis=0))
    np.testing.assert_array_equal(again(x)[0], first(x)[0])
    assert len(rewritten) == 1 and len(list(folder.iterdir())) == 1  # loaded, not rewritten
    assert _graph_cache._fingerprint(*build(0)) != _graph_cache._fingerprint(*build(1))


def test_a_graph_built_under_another_floatx_or_cast_policy_is_another_graph(kept_in):
    """Flags read while a graph is built change its types, not its operations: x / 2 on integers (a division in floatX),
    a pad's zeros (floatX), logsumexp of float32 under cast_policy numpy+floatX. The key reads the flags at compile
    time, so the fingerprint states each result's type: built under float32 and under float64, two graphs, two files,
    and each computes as a fresh compile does (found by a review: the second one loaded the first's function)."""
    folder, rewritten = kept_in
    x = np.array([16777217, 3], dtype=np.int64)  # 2²⁴ + 1: not a float32
    builds = [  # (the graph, numpy's float64 result from the formula)
        (lambda v: ([v], [v / 2]), x / 2.0),
        (lambda v: ([v], [pt.pad(v, (1, 1), mode="constant")]), np.pad(x, 1).astype(np.float64)),
    ]
    for build, expected in builds:
        with pytensor.config.change_flags(floatX="float32"):
            narrow = build(pt.vector("x", dtype="int64"))
        wide = build(pt.vector("x", dtype="int64"))
        assert _graph_cache._fingerprint(*narrow) != _graph_cache._fingerprint(*wide)
        numpy_function(*narrow)
        got = numpy_function(*wide)(x)[0]
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, expected)
    with pytensor.config.change_flags(cast_policy="numpy+floatX"):
        y = pt.vector("y", dtype="float32")
        promoted = ([y], [pt.logsumexp(y)])
    y32 = pt.vector("y", dtype="float32")
    assert _graph_cache._fingerprint(*promoted) != _graph_cache._fingerprint([y32], [pt.logsumexp(y32)])
    assert len(rewritten) == 4 and len(list(folder.iterdir())) == 4


class _Twice(pytensor.graph.op.Op):
    """An Op of the user's own: its code is no part of a kept graph's key."""

    __props__ = ()

    def make_node(self, x):
        return pytensor.graph.basic.Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = 2.0 * inputs[0]


def test_a_graph_with_an_op_of_the_users_own_is_not_kept(kept_in):
    """Only Ops (and types, and functions in props) from the packages whose versions key a graph are fingerprinted: an
    edited Op of the user's would otherwise be loaded as rewritten before the edit."""
    folder, rewritten = kept_in
    x = pt.vector("x")
    fn = numpy_function([x], [_Twice()(x) + 1.0])
    np.testing.assert_array_equal(fn(np.array([1.0, 2.0]))[0], [3.0, 5.0])
    assert len(rewritten) == 1 and list(folder.iterdir()) == []


def test_one_output_or_a_list_of_one_share_a_graph_and_answer_as_asked(kept_in):
    """A single output returns an array, a list of one a list: one kept graph serves both. An output given as PyTensor's
    `Out` (a specification, not a variable) is compiled as given, not kept."""
    folder, rewritten = kept_in
    x = pt.vector("x")
    single = numpy_function([x], pt.exp(x))
    listed = numpy_function([x], [pt.exp(x)])
    assert len(rewritten) == 1 and len(list(folder.iterdir())) == 1
    np.testing.assert_array_equal(single(np.array([0.0])), np.exp([0.0]))
    np.testing.assert_array_equal(listed(np.array([0.0]))[0], np.exp([0.0]))
    assert isinstance(single(np.array([0.0])), np.ndarray) and isinstance(listed(np.array([0.0])), list)
    given = numpy_function([x], [pytensor.Out(x * 2.0, borrow=True)])
    np.testing.assert_array_equal(given(np.array([1.0]))[0], [2.0])
    assert len(rewritten) == 2 and len(list(folder.iterdir())) == 1


def test_an_unused_input_still_raises_where_asked(kept_in):
    x, y = pt.vector("x"), pt.vector("y")
    numpy_function([x, y], [x * 2.0], on_unused_input="ignore")
    with pytest.raises(pytensor.compile.UnusedInputError):
        numpy_function([x, y], [x * 2.0], on_unused_input="raise")


def test_the_fingerprint_tells_graphs_apart_as_pytensor_would():
    """Equal for two graphs built apart alike; different for another constant, another dtype, swapped operands."""
    def fingerprint(build):
        inputs, outputs = build()
        return _graph_cache._fingerprint(inputs, outputs)

    def graph(scale=2.0, dtype="float64", swapped=False):
        def build():
            x, y = pt.vector("x", dtype=dtype), pt.vector("y", dtype=dtype)
            return [x, y], [(y - x if swapped else x - y) * scale]
        return build

    assert fingerprint(graph()) == fingerprint(graph())
    assert len({fingerprint(g) for g in (graph(), graph(3.0), graph(dtype="float32"), graph(swapped=True))}) == 4
