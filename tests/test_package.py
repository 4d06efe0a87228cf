"""The package's house rules, checked on its source: short functions, one machine epsilon, one result vocabulary."""

import ast
import dataclasses
import inspect
import subprocess
import sys
from pathlib import Path

import bayeskern as bk

PACKAGE = Path(bk.__file__).parent


def _functions():
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield path, node


def _body_lines(node) -> int:
    """Lines from the first statement after the docstring to the end of the function."""
    body = node.body
    first = body[1] if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else body[0]
    return node.end_lineno - first.lineno + 1


def test_no_function_body_is_over_60_lines():
    long = [f"{p.relative_to(PACKAGE)}:{n.lineno} {n.name} ({_body_lines(n)} lines)" for p, n in _functions()
            if _body_lines(n) > 60]
    assert long == []


def test_every_subpackage_and_module_the_readme_names_is_an_attribute_of_bayeskern():
    """`import bayeskern as bk; bk.batch.run(...)`: the fan-out's module is reached as the others are (a user trial found
    an AttributeError: it needed `import bayeskern.batch`)."""
    import types

    assert {"batch", "fit", "gp", "blr", "checks", "approx"} <= set(bk.__all__)
    assert all(isinstance(getattr(bk, name), types.ModuleType) for name in bk.__all__)
    assert callable(bk.batch.run)


def test_machine_epsilon_is_read_in_one_module():
    readers = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if ".eps" in p.read_text() and "finfo" in p.read_text())
    assert readers == ["_linalg.py"]


def test_every_check_result_has_passed():
    results = [obj for name in bk.checks.__all__ if dataclasses.is_dataclass(obj := getattr(bk.checks, name)) and inspect.isclass(obj)]
    assert len(results) >= 6  # FeatureError, KernelTrickResult, PSDCheck, RFFConvergence, RidgeDualityResult, SamplingCheckResult
    assert [r.__name__ for r in results if "passed" not in {f.name for f in dataclasses.fields(r)}] == []


def test_fitters_and_the_analysis_do_not_branch_on_a_kind_string():
    # records and solvers answer for themselves (bayeskern.likelihood, bayeskern.conditioned); the spec's
    # model.kind is only read where the spec is read or described (spec/, report/)
    fitters = [*PACKAGE.glob("fit/*.py"), PACKAGE / "analysis.py", PACKAGE / "gp.py", PACKAGE / "blr.py", PACKAGE / "conditioned.py"]
    offenders = [str(p.relative_to(PACKAGE)) for p in fitters if ".kind" in p.read_text() or '"gp"' in p.read_text()]
    assert offenders == []


def test_import_bayeskern_leaves_arviz_and_plotting_for_first_use():
    """`import bayeskern` must not pay for ArviZ, matplotlib, nutpie or scipy.stats (~1.5 s); their names still resolve."""
    code = (
        "import sys, bayeskern as bk\n"
        "heavy = [m for m in ('arviz', 'arviz_plots', 'arviz_stats', 'matplotlib', 'nutpie', 'scipy.stats') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert callable(bk.fit.diagnose) and callable(bk.checks.kernel_trick_mcmc) and 'arviz' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_a_run_sends_its_cross_validation_before_it_imports_arviz_or_plotting(tmp_path):
    """On a cluster the fold fits are sent once the spec is read and its models built: the report's plotting stack and
    ArviZ (~1 s to import) wait for the figures, and a run without MCMC needs no ArviZ until then."""
    code = (
        "import sys, bayeskern.cli as cli, bayeskern.analysis as an\n"
        "sent = []\n"
        "an._start_cv = lambda *a, **k: sent.append([m for m in ('arviz', 'matplotlib', 'scipy.stats') if m in sys.modules]) or 1 / 0\n"
        "try:  # the command's own path, as `bayeskern run` takes it with a cluster (its tasks never sent here)\n"
        "    cli.run('benchmarks/cv_400.toml', sys.argv[1], tasks=lambda fn, args: None)\n"
        "except ZeroDivisionError:\n"
        "    pass\n"
        "assert sent == [[]], sent\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "report")], capture_output=True, text=True,
                          timeout=300, cwd=PACKAGE.parent)
    assert done.returncode == 0, done.stderr


_NUMPY_MODE_FIT = """
import sys, warnings
import numpy as np, pymc as pm, bayeskern as bk
warnings.simplefilter("error")  # nothing to warn about in a small fit
X, y = bk.datasets.sinusoid(20, 0.2, 0)
with pm.Model() as model:
    amp, ls, s = pm.HalfNormal("amp", 2.0), pm.HalfNormal("ls", 3.0), pm.HalfNormal("s", 1.0)
    bk.gp.marginal_likelihood("y", X, y, amp * bk.kernels.RBF(ls), s)
fit = bk.fit.empirical_bayes(model, restarts=2, seed=0)
assert fit.converged and "numba" not in sys.modules, "a numpy-mode fit imported Numba"
assert "scipy.stats" not in sys.modules, "drawing HalfNormal starts imported scipy.stats"
assert "setuptools" not in sys.modules, "a random variable's draws compiled with PyTensor's C/VM linker"
assert "bayeskern.approx" not in sys.modules, "an exact GP loaded the approximations (and BLR, features, scipy.special)"
"""

_NUMBA_COMPILE = """
import sys, warnings
import numpy as np, pytensor, pytensor.tensor as pt
{first}
from bayeskern._gaussian_logp import gaussian_logp
from bayeskern.approx._titsias import titsias_bound
warnings.simplefilter("error")  # an Op without a Numba implementation would fall back to object mode, with a warning
K, t = pt.dmatrix("K"), pt.dvector("t")
f = pytensor.function([K, t], [gaussian_logp(K, t, 0.1), titsias_bound(K, K, pt.diagonal(K), t[:3], 0.2)], mode="NUMBA")
logp, bound = f(np.eye(3), np.ones(3))
assert abs(logp - (-1.5 * np.log(2 * np.pi * 1.1) - 1.5 / 1.1)) < 1e-12 and np.isfinite(bound)
"""


def test_a_numpy_mode_fit_imports_neither_numba_nor_scipy_stats():
    """Numba and PyTensor's Numba dispatch cost ~0.35 s of a small fit's process, scipy.stats ~0.3 s (PyTensor's
    HalfNormal draws call scipy.stats.halfnorm), the approximations with BLR and the feature maps
    ~0.05 s: a numpy-mode fit of an exact GP with HalfNormal priors needs none of them."""
    done = subprocess.run([sys.executable, "-c", _NUMPY_MODE_FIT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


_CYCLE_AT_EXIT = """
import atexit, sys
{imports}
class Cycle:
    def __del__(self):
        sys.stdout.write("collected ")
cycle = Cycle()
cycle.me = cycle
atexit.register(sys.stdout.write, "atexit ran ")
del cycle
import gc; gc.disable()  # the cycle stays uncollected until exit
"""


def test_at_exit_a_process_with_bayeskern_skips_the_final_cyclic_collection_and_runs_its_exit_handlers():
    """`bayeskern._exit`: the interpreter's last collection of reference cycles (0.3-0.6 s after a fit) is skipped —
    a cycle's `__del__` is not called at exit with bayeskern imported, and is without it — while exit handlers still run."""
    outputs = {
        imports: subprocess.run([sys.executable, "-c", _CYCLE_AT_EXIT.format(imports=imports)], capture_output=True, text=True, timeout=300)
        for imports in ("import bayeskern", "")
    }
    for done in outputs.values():
        assert done.returncode == 0, done.stderr
    assert outputs["import bayeskern"].stdout == "atexit ran "
    assert outputs[""].stdout == "atexit ran collected "


def test_the_ops_numba_implementations_are_registered_whoever_imports_the_dispatch_first():
    """bayeskern registers its Numba implementations when PyTensor's Numba dispatch is imported: before or after it."""
    for first in ("import bayeskern", "import pytensor.link.numba.dispatch, bayeskern"):
        done = subprocess.run([sys.executable, "-c", _NUMBA_COMPILE.format(first=first)], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (first, done.stderr[-3000:])
