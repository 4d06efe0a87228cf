"""The spec format: safe expressions, the models a spec builds, the data sources, and one clear error per bad spec."""

import re
from pathlib import Path

import numpy as np
import pytest

import bayeskern as bk
from bayeskern import cli, spec

ROOT = Path(__file__).resolve().parents[1]

BASE = """
name = "base"
[data]
source = "sinusoid"
n = 8
noise = 0.1
seed = 3
[priors]
ell = "Gamma(alpha=2.0, beta=4.0)"
noise = "HalfNormal(sigma=0.5)"
[model]
kind = "gp"
kernel = "2.0 * RBF(lengthscale=ell)"
sigma = "noise"
"""


def _write(tmp_path, text, name="spec.toml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_kernel_expressions_are_parsed_safely():
    k = spec.parse_kernel("2.0 * RBF(lengthscale=0.5) + Constant(1.0) + Linear()")
    X = np.linspace(0, 1, 4)
    expected = (2.0 * bk.kernels.RBF(0.5) + bk.kernels.Constant(1.0) + bk.kernels.Linear()).evaluate(X)
    np.testing.assert_allclose(k.evaluate(X), expected, rtol=1e-15)
    np.testing.assert_allclose(spec.parse_kernel("RBF([0.5, 2.0])").evaluate(np.ones((2, 2))), np.ones((2, 2)))
    for bad in ["os.system('x')", "RBF(0.5).__class__", "[c for c in 'ab']", "lambda: 1", "RBF(1) - Linear()", "RBF(",
                "__import__('os')", "RBF(**{'lengthscale': 1})", "'text'", "ell"]:
        with pytest.raises(ValueError):
            spec.parse_kernel(bad)


def test_the_model_a_spec_builds_has_its_priors_and_the_exact_likelihood(tmp_path):
    s = spec.load(_write(tmp_path, BASE))
    data = s.load_data()
    X, t = bk.datasets.sinusoid(8, 0.1, 3)
    np.testing.assert_array_equal(data.X, X)
    model = s.model(s.candidates[0], data)
    assert sorted(rv.name for rv in model.free_RVs) == ["ell", "noise"]
    point = {"ell_log__": np.log(0.3), "noise_log__": np.log(0.2)}
    # the model's log-likelihood term against a numpy GP at ℓ = 0.3, σ = 0.2 (plain solves; rtol 1e-10 for round-off)
    import reference

    K = 2.0 * reference.rbf(X, X, 0.3)
    expected = reference.gp_posterior(K, K, K, t, 0.2)[2]
    logp = model.compile_logp(vars=[model["y"]], jacobian=False)(point)
    np.testing.assert_allclose(logp, expected, rtol=1e-10)
    # the priors as declared: Gamma(2, 4) at 0.3 and HalfNormal(0.5) at 0.2 (scipy's densities, rtol 1e-12)
    from scipy import stats

    prior = model.compile_logp(vars=[model["ell"], model["noise"]], jacobian=False)(point)
    np.testing.assert_allclose(prior, stats.gamma(2.0, scale=1 / 4.0).logpdf(0.3) + stats.halfnorm(scale=0.5).logpdf(0.2), rtol=1e-12)


def test_the_priors_are_checked_once_per_process_for_models_that_share_them(tmp_path, monkeypatch):
    """The folds of a cross-validation build a model each with the same priors: their check (PyMC's initial point and
    prior log densities, compiled) runs once; other priors, or a bad prior, are checked anew."""
    import dataclasses
    from collections import OrderedDict

    from bayeskern.spec import build

    monkeypatch.setattr(build, "_CHECKED", OrderedDict())
    calls = []
    check = build._check_priors
    monkeypatch.setattr(build, "_check_priors", lambda path, model: calls.append(model) or check(path, model))
    s = spec.load(_write(tmp_path, BASE))
    data = s.load_data()
    fold = dataclasses.replace(data, X=data.X[:5], y=data.y[:5])
    first, second = s.model(s.candidates[0], data), s.model(s.candidates[0], fold)
    assert calls == [first] and len(second.coords["obs"]) == 5
    assert build._checked_priors(s.path, second, ()) == check(s.path, second)  # a new key: checked, the same values
    other = spec.load(_write(tmp_path, BASE.replace("beta=4.0", "beta=5.0"), "other.toml"))
    other.model(other.candidates[0], data)
    assert len(calls) == 3
    bad = spec.load(_write(tmp_path, BASE.replace("sigma=0.5", "sigma=-0.5"), "bad.toml"))
    for _ in range(2):
        with pytest.raises(spec.SpecError, match="priors.noise"):
            bad.model(bad.candidates[0], data)
    assert len(calls) == 5


def test_blr_spec_with_several_feature_maps(tmp_path):
    text = BASE.replace('kind = "gp"\nkernel = "2.0 * RBF(lengthscale=ell)"', 'kind = "blr"\nfeatures = ["Polynomial(degree=1)", "Polynomial(degree=3)"]\nprior_cov = "a"')
    text = text.replace('ell = "Gamma(alpha=2.0, beta=4.0)"', 'a = "HalfNormal(sigma=10.0)"')
    s = spec.load(_write(tmp_path, text))
    assert s.kind == "blr" and s.candidates == ("Polynomial(degree=1)", "Polynomial(degree=3)")
    model = s.model(s.candidates[1], s.load_data())
    assert sorted(rv.name for rv in model.free_RVs) == ["a", "noise"]


def test_blr_features_too_ill_conditioned_for_float64_are_refused_by_check(tmp_path, capsys):
    """x from 0 to 1000 with a degree-12 polynomial: ΦᵀΦ spans 10⁷² and the BLR's log density is −inf at every point.
    `check` conditions a BLR candidate at the priors' initial values and names the features (it said "ok", and `run`
    then failed with "K + sigma^2 I is not positive definite … check the kernel")."""
    x = np.linspace(0, 1000, 40)
    np.savetxt(tmp_path / "far.csv", np.c_[x, np.sin(x / 100)], delimiter=",", header="x,y", comments="")
    text = BASE.replace('source = "sinusoid"\nn = 8\nnoise = 0.1\nseed = 3', 'source = "csv"\npath = "far.csv"\nx = ["x"]\ny = "y"')
    text = text.replace('kind = "gp"\nkernel = "2.0 * RBF(lengthscale=ell)"', 'kind = "blr"\nfeatures = ["Polynomial(degree=12)"]\nprior_cov = "a"')
    text = text.replace('ell = "Gamma(alpha=2.0, beta=4.0)"', 'a = "HalfNormal(sigma=10.0)"')
    assert cli.main(["check", str(_write(tmp_path, text))]) == 2
    err = capsys.readouterr().err
    assert "model.features: 'Polynomial(degree=12)' at the priors' initial values: the features Monomials(degree=12)" in err
    assert "too ill-conditioned for float64" in err and "standardise X" in err


def test_csv_and_package_data_sources(tmp_path):
    rng = np.random.default_rng(0)
    table = np.column_stack([rng.normal(size=12), rng.normal(size=12), rng.normal(size=12)])
    np.savetxt(tmp_path / "d.csv", table, delimiter=",", header="a,b,target", comments="")
    text = BASE.replace('source = "sinusoid"\nn = 8\nnoise = 0.1\nseed = 3', 'source = "csv"\npath = "d.csv"\nx = ["b", "a"]\ny = "target"')
    s = spec.load(_write(tmp_path, text))
    data = s.load_data()
    np.testing.assert_array_equal(data.X, table[:, [1, 0]])
    np.testing.assert_array_equal(data.y, table[:, 2])
    assert cli.main(["check", str(tmp_path / "spec.toml")]) == 0

    pytest.importorskip("sklearn")
    from sklearn.datasets import load_diabetes

    d = bk.datasets.load("sklearn.diabetes", x=["bmi", "bp"], n=50, seed=1, standardize=True)
    ref = load_diabetes()
    rows = np.sort(np.random.default_rng(1).choice(442, size=50, replace=False))
    X = ref.data[rows][:, [2, 3]]
    np.testing.assert_allclose(d.X, (X - X.mean(0)) / X.std(0), rtol=1e-12)
    np.testing.assert_allclose(d.y, (ref.target[rows] - ref.target[rows].mean()) / ref.target[rows].std(), rtol=1e-12)


BAD = [
    # (what, replacement in BASE, the key the message must name, a word of the reason)
    ("[cv] without folds", ('sigma = "noise"', 'sigma = "noise"\n[fit.empirical_bayes]\nrestarts = 1\n[cv]\nshuffle = true'), "cv.folds", "missing"),
    ("subtraction in a kernel", ("2.0 * RBF(lengthscale=ell)", "2.0 - RBF(lengthscale=ell)"), "model.kernel", "'-' is not allowed"),
    ("a power in a kernel", ("2.0 * RBF(lengthscale=ell)", "RBF(lengthscale=ell) ** 2"), "model.kernel", "'**' is not allowed"),
    ("a keyword as a prior's name", ('ell = "Gamma', 'lambda = "Gamma'), "priors.lambda", "not a keyword"),
    ("a prior below 0 on sigma", ('noise = "HalfNormal(sigma=0.5)"', 'noise = "Normal(mu=0.3, sigma=0.1)"'), "priors.noise",
     "sigma must be positive, but its prior (noise: Normal) puts mass below 0"),
    ("the same candidate twice", ('kernel = "2.0 * RBF(lengthscale=ell)"', 'kernel = ["2.0 * RBF(lengthscale=ell)", "2.0*RBF( lengthscale = ell )"]'),
     "model.kernel[1]", "repeats candidate 0"),
    ("a kernel not PSD at the priors' initial values", ("2.0 * RBF(lengthscale=ell)", "-2.0 * ell * RBF(lengthscale=ell)"), "model.kernel",
     "at the priors' initial values: -1 * RBF(lengthscale=0.5) is not positive semi-definite on these 8 inputs"),
    ("unknown kernel name", ("RBF(lengthscale=ell)", "Foo(lengthscale=ell)"), "model.kernel", "unknown name 'Foo'"),
    ("unknown top-level key", ("[data]", "colour = 1\n[data]"), "colour", "unknown key"),
    ("unknown key in a table", ("[model]", "[model]\ncolour = 1"), "model.colour", "unknown key"),
    ("wrong type", ("n = 8", 'n = "eight"'), "data.n", "must be an integer"),
    ("wrong type of a table", ("seed = 3", "seed = 3.5"), "data.seed", "must be an integer"),
    ("arbitrary Python call", ("2.0 * RBF(lengthscale=ell)", "__import__('os').system('touch pwned')"), "model.kernel", "unknown name"),
    ("attribute access", ("2.0 * RBF(lengthscale=ell)", "RBF(1.0).__class__"), "model.kernel", "not allowed"),
    ("Python in a prior", ('HalfNormal(sigma=0.5)', "exec('1')"), "priors.noise", "unknown name 'exec'"),
    ("unknown prior distribution", ('HalfNormal(sigma=0.5)', "Cauchy2(beta=1.0)"), "priors.noise", "unknown name"),
    ("undeclared prior name", ('sigma = "noise"', 'sigma = "tau"'), "model.sigma", "unknown name 'tau'"),
    ("prior given as a table", ('[model]', '[priors.extra]\n[model]'), "priors.extra", "must be a string"),
    ("negative noise", ('sigma = "noise"', "sigma = -0.1"), "model.sigma", "must be positive"),
    ("unknown data source", ('source = "sinusoid"', 'source = "mystery"'), "data.source", "unknown source"),
    ("unknown model kind", ('kind = "gp"', 'kind = "svm"'), "model.kind", "unknown kind"),
    ("bad kernel hyperparameter", ("2.0 * RBF(lengthscale=ell)", "RBF(lengthscale=ell) + RBF(lengthscale=-1.0)"), "model.kernel", "lengthscale"),
    ("bad prior argument", ('HalfNormal(sigma=0.5)', "HalfNormal(sigma=-0.5)"), "priors.noise", "invalid parameters: sigma > 0"),
    ("bad grid", ("[model]", "[predict]\nstart = 1.0\nstop = 0.0\n[model]"), "predict", "start < stop"),
    ("not TOML", ("[data]", "[data"), "(file)", "not valid TOML"),
    ("a prior's keyword that is not its parameter", ('HalfNormal(sigma=0.5)', "HalfNormal(sigma=0.5, observed=[1.0, 2.0])"),
     "priors.noise", "has no parameter 'observed'"),
    ("list repetition", ("2.0 * RBF(lengthscale=ell)", "RBF(lengthscale=ell) * RBF(lengthscale=[0.3] * 10000000000000)"),
     "model.kernel", "not to lists"),
    ("a kernel plus a list", ("2.0 * RBF(lengthscale=ell)", "RBF(lengthscale=ell) + [1.0]"), "model.kernel", "not to lists"),
    ("minus a kernel", ("2.0 * RBF(lengthscale=ell)", "RBF(lengthscale=ell) * -RBF(lengthscale=1.0)"), "model.kernel", "unary minus"),
    ("no prior at all", ('sigma = "noise"', "sigma = 0.1"), "priors.noise", "not used"),
    ("grid options without a grid", ("[model]", "[predict]\nnum = 5\n[model]"), "predict", "needs start and stop"),
    # the fuzzing campaign of issue 17: each once gave a traceback, a MemoryError, or an "ok" from check and a failed run
    ("data.n beyond memory", ("n = 8", "n = 10000000000"), "data.n", "at most 10,000"),
    ("a grid beyond memory", ("[model]", "[predict]\nstart = 0.0\nstop = 1.0\nnum = 1000000000000\n[model]"), "predict.num", "at most 2,000"),
    ("a prior shape beyond memory", ("Gamma(alpha=2.0, beta=4.0)", "Gamma(alpha=2.0, beta=4.0, shape=100000000000)"), "priors.ell", "at most 10,000"),
    ("prior samples beyond memory", ("[model]", "[report]\nprior_samples = 100000000\n[model]"), "report.prior_samples", "at most 100"),
    ("EB restarts beyond memory", ("[model]", "[fit.empirical_bayes]\nrestarts = 10000000000\n[model]"), "fit.empirical_bayes.restarts", "at most 1,000"),
    ("MCMC keeping too much", ("[model]", "[fit.empirical_bayes]\n[fit.mcmc]\ndraws = 1000000\nchains = 64\n[model]"), "fit.mcmc", "would be kept"),
    ("an integer too large for a float", ("2.0 * RBF", "1" + "0" * 400 + " * RBF"), "model.kernel", "finite float64"),
    ("a float literal that overflows", ("2.0 * RBF", "1e999 * RBF"), "model.kernel", "finite float64"),
    ("a product that overflows", ("2.0 * RBF", "1e200 * 1e200 * RBF"), "model.kernel", "overflows float64"),
    ("100,000 unary minuses", ("2.0 * RBF", "-" * 100_000 + "2.0 * RBF"), "model.kernel", "too deeply nested to parse"),
    ("a 3,000-term sum", ("2.0 * RBF(lengthscale=ell)", " + ".join(["RBF(lengthscale=ell)"] * 3000)), "model.kernel", "nest at most 50 levels"),
    ("a 60-term sum", ("2.0 * RBF(lengthscale=ell)", " + ".join(["RBF(lengthscale=ell)"] * 60)), "model.kernel", "nest at most 50 levels"),
    ("a 50-deep list", ("lengthscale=ell", "lengthscale=ell) * RBF(lengthscale=" + "[" * 50 + "1.0" + "]" * 50), "model.kernel", "nest at most 50"),
    ("a list three deep", ("lengthscale=ell", "lengthscale=ell) * RBF(lengthscale=[[[1.0]]]"), "model.kernel", "lists nest at most two deep"),
    ("a name in a list", ("lengthscale=ell", "lengthscale=[ell, 1.0]"), "model.kernel", "a list holds numbers only"),
    ("an expression too long", ("2.0 * RBF", "2.0" + " " * 200_000 + "* RBF"), "model.kernel", "at most 200,000 characters"),
    ("a count beyond memory in a constructor", ("2.0 * RBF(lengthscale=ell)", "RBF(lengthscale=ell) * Polynomial(degree=100000000)"),
     "model.kernel", "at most 10,000"),
    ("a negative seed", ("[data]", "seed = -5\n[data]"), "seed", "[0, 2**63 - 1]"),
    ("a seed too large for results.nc", ("[data]", "seed = 99999999999999999999\n[data]"), "seed", "[0, 2**63 - 1]"),
    ("a negative data seed", ("seed = 3", "seed = -3"), "data.seed", "[0, 2**63 - 1]"),
    ("an infinite end of the grid", ("[model]", "[predict]\nstart = 0.0\nstop = inf\n[model]"), "predict.stop", "finite"),
    ("a grid that overflows", ("[model]", "[predict]\nstart = -1e308\nstop = 1e308\n[model]"), "predict", "overflows float64"),
    ("NaN noise in the data", ("noise = 0.1", "noise = nan"), "data.noise", "finite"),
    ("an infinite sigma", ('sigma = "noise"', "sigma = inf"), "model.sigma", "finite"),
    ("a vector prior as sigma", ("HalfNormal(sigma=0.5)", "HalfNormal(sigma=0.5, shape=3)"), "model.sigma", "σ is one number"),
    ("three ARD length scales on 1-D inputs", ("Gamma(alpha=2.0, beta=4.0)", "Gamma(alpha=2.0, beta=4.0, shape=3)"), "model.kernel",
     "lengthscale has 3 ARD entries but the inputs have 1 column(s) (priors with a shape: ell (3,))"),
    ("a prior that is not one distribution", ("HalfNormal(sigma=0.5)", "2.0 * HalfNormal(sigma=0.5)"), "priors.noise", "one distribution"),
    ("a Σ prior of the wrong length",
     ('ell = "Gamma(alpha=2.0, beta=4.0)"\nnoise = "HalfNormal(sigma=0.5)"\n[model]\nkind = "gp"\nkernel = "2.0 * RBF(lengthscale=ell)"',
      'ell = "Gamma(alpha=2.0, beta=4.0, shape=2)"\nnoise = "HalfNormal(sigma=0.5)"\n[model]\nkind = "blr"\n'
      'features = "Polynomial(degree=3)"\nprior_cov = "ell"'),
     "model.prior_cov", "one per feature (shape=4"),
    ("a BLR with too many features",
     ('kind = "gp"\nkernel = "2.0 * RBF(lengthscale=ell)"', 'kind = "blr"\nfeatures = "Fourier(order=9000)"\nprior_cov = "ell"'),
     "model.features", "gives 18,001 features"),
    ("a name too long for a folder", ('name = "base"', f'name = "{"a" * 300}"'), "name", "1 to 100 letters"),
    ("kernel-trick features a constructor refuses", ("[model]", '[checks]\nkernel_trick = { features = "Polynomial(degree=-1)" }\n[model]'),
     "checks.kernel_trick.features", "degree must be an integer ≥ 0"),
    ("kernel-trick features beyond memory", ("[model]", '[checks]\nkernel_trick = { features = "Fourier(order=9000)" }\n[model]'),
     "checks.kernel_trick.features", "gives 18,001 features"),
    ("a folder as the CSV file", ('source = "sinusoid"\nn = 8\nnoise = 0.1\nseed = 3', 'source = "csv"\npath = "."\nx = ["a"]\ny = "b"'),
     "data.path", "is a folder, not a CSV file"),
    ("TOML nested too deeply", ("[data]", "deep = " + "[" * 5000 + "]" * 5000 + "\n[data]"), "(file)", "not valid TOML"),
]


@pytest.mark.parametrize("what, change, key, reason", BAD, ids=[b[0] for b in BAD])
def test_bad_spec_gets_one_line_naming_file_key_and_reason_and_exit_code_2(tmp_path, capsys, monkeypatch, what, change, key, reason):
    assert BASE.count(change[0]) == 1
    path = _write(tmp_path, BASE.replace(*change))
    out = tmp_path / "never"

    def no_fitting(*args, **kwargs):
        raise AssertionError("a bad spec must be refused before any fitting")

    monkeypatch.setattr("bayeskern.analysis.empirical_bayes", no_fitting)
    monkeypatch.setattr("bayeskern.analysis.mcmc", no_fitting)
    assert cli.main(["run", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"bayeskern: error: {path}: {key}:"), err[0]
    assert reason in err[0], err[0]
    assert not out.exists()
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", str(path)]) == 2
    assert not (tmp_path / "pwned").exists()


def test_a_prior_that_is_not_used_is_named(tmp_path, capsys):
    path = _write(tmp_path, BASE.replace('noise = "HalfNormal(sigma=0.5)"', 'noise = "HalfNormal(sigma=0.5)"\nspare = "HalfNormal(sigma=1.0)"'))
    assert cli.main(["check", str(path)]) == 2
    assert re.search(r"priors\.spare: declared but not used", capsys.readouterr().err)


def test_csv_columns_a_spec_does_not_use_may_hold_text_and_bad_cells_are_named(tmp_path, capsys):
    """Only the columns of data.x and data.y must hold numbers; a ragged row, a missing column and a text cell in a used
    column are named (a review: an unused text column made the file unusable, and hid a missing column)."""
    (tmp_path / "d.csv").write_text("a,b,target,label\n" + "".join(f"{i / 10},{i},{i % 3},row{i}\n" for i in range(8)))
    (tmp_path / "ragged.csv").write_text("a,b,target,label\n0.1,1,0,x\n0.2,2,1,y,extra\n")
    (tmp_path / "blank.csv").write_text("a,b,target,label\n\n0.1,1,0,x\n\n0.2,two,1,y\n")  # blank lines are skipped
    (tmp_path / "twice.csv").write_text("a,b,a,target\n0.1,1,0,0\n0.2,2,1,1\n")
    (tmp_path / "one.csv").write_text("a,b,target,label\n0.1,1,0,x\n")  # a review: accepted, then σ fitted to 0.0065
    (tmp_path / "nan.csv").write_text("a,b,target,label\n0.1,1,0,x\n0.2,2, NaN,y\n")  # a review: "must be finite", no line
    text = BASE.replace('source = "sinusoid"\nn = 8\nnoise = 0.1\nseed = 3', 'source = "csv"\npath = "d.csv"\nx = ["a", "b"]\ny = "target"')
    data = spec.load(_write(tmp_path, text)).load_data()
    np.testing.assert_array_equal(data.X, np.column_stack([np.arange(8) / 10, np.arange(8)]))
    for change, message in ((('x = ["a", "b"]', 'x = ["a", "z"]'), "no column 'z'"),
                            (('x = ["a", "b"]', 'x = ["a", "label"]'), "column 'label' (data.x) must hold numbers; line 2 has 'row0'"),
                            (('path = "d.csv"', 'path = "ragged.csv"'), "every row must have 4 values, like the header; line 3 has 5"),
                            (('path = "d.csv"', 'path = "blank.csv"'), "column 'b' (data.x) must hold numbers; line 5 has 'two'"),
                            (('path = "d.csv"', 'path = "twice.csv"'), "the header has the column 'a' 2 times"),
                            (('path = "d.csv"', 'path = "one.csv"'), "data: the data have 1 row; at least 2 are needed"),
                            (('path = "d.csv"', 'path = "nan.csv"'), "column 'target' (data.y) must hold finite numbers; line 3 has 'NaN'")):
        assert cli.main(["check", str(_write(tmp_path, text.replace(*change), "bad.toml"))]) == 2
        assert message in capsys.readouterr().err


def test_two_specs_of_one_name_are_a_bad_command_exit_2(tmp_path, capsys, monkeypatch):
    first, second = _write(tmp_path, BASE, "a.toml"), _write(tmp_path, BASE, "b.toml")
    monkeypatch.chdir(tmp_path)  # (refused before any report folder is made)
    assert cli.main(["run", str(first), str(second)]) == 2
    assert not (tmp_path / "reports").exists()
    assert re.search(r"b\.toml: name: .*both named 'base'", capsys.readouterr().err)
    assert cli.main(["run", str(first), str(first)]) == 2
    assert re.search(r"a\.toml: \(file\): given twice on the command line", capsys.readouterr().err)


def test_missing_data_file_is_named(tmp_path, capsys):
    text = BASE.replace('source = "sinusoid"\nn = 8\nnoise = 0.1\nseed = 3', 'source = "csv"\npath = "nowhere.csv"\nx = ["a"]\ny = "b"')
    path = _write(tmp_path, text)
    assert cli.main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}: data.path: no such file" in err and "nowhere.csv" in err


def test_missing_spec_file():
    assert cli.main(["check", "no/such/spec.toml"]) == 2


def test_no_hyperparameters_to_fit_is_named(tmp_path, capsys):
    text = BASE.replace('ell = "Gamma(alpha=2.0, beta=4.0)"\nnoise = "HalfNormal(sigma=0.5)"\n', "").replace("lengthscale=ell", "lengthscale=0.3").replace('sigma = "noise"', "sigma = 0.1")
    assert cli.main(["check", str(_write(tmp_path, text))]) == 2
    assert "priors: the model has no hyperparameter with a prior" in capsys.readouterr().err


def test_data_problems_are_named(tmp_path, capsys):
    (tmp_path / "d.csv").write_text("\ufeffu,v,y\n1,2,3\n\n4,5,6\n7,8,9\n")  # a byte-order mark and a blank line
    csv = BASE.replace('source = "sinusoid"\nn = 8\nnoise = 0.1\nseed = 3', 'source = "csv"\npath = "d.csv"\nx = ["u", "v"]\ny = "y"')
    data = spec.load(_write(tmp_path, csv)).load_data()
    np.testing.assert_array_equal(data.X, [[1, 2], [4, 5], [7, 8]])
    leak = csv.replace('x = ["u", "v"]', 'x = ["u", "y"]')
    assert cli.main(["check", str(_write(tmp_path, leak))]) == 2
    assert "data: the target column 'y' is also an input" in capsys.readouterr().err
    grid = csv + "[predict]\nstart = 0.0\nstop = 1.0\n"
    assert cli.main(["check", str(_write(tmp_path, grid))]) == 2
    assert "predict: a grid needs 1-D inputs, but the data have 2 columns" in capsys.readouterr().err


def test_a_folder_that_is_not_a_report_is_never_replaced(tmp_path):
    from bayeskern.report import write_atomically

    precious = tmp_path / "project"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    with pytest.raises(ValueError, match="is not a bayeskern report"):
        write_atomically(precious, {"summary.json": "{}"})
    assert (precious / "thesis.tex").read_text() == "years of work"
    report = write_atomically(tmp_path / "r", {"summary.json": "{}", "a.txt": "old"})
    write_atomically(report, {"summary.json": "{}"})  # an earlier report is replaced whole
    assert sorted(p.name for p in report.iterdir()) == ["summary.json"]


@pytest.mark.parametrize(
    ("approx", "match"),
    [('"HSGP(m=0)"', "m must be a positive integer"), ('"Periodic(1.0, 1.0)"', "unknown name 'Periodic'"),
     ('"HSGP(c=1.0)"', "c must be > 1"), ("3", "must be a string")],
)
def test_a_bad_approximation_is_a_spec_error_naming_model_approx(tmp_path, approx, match):
    with pytest.raises(spec.SpecError, match=f"model.approx.*{match}"):
        spec.load(_write(tmp_path, BASE + f"approx = {approx}\n"))


def test_an_approximation_raises_the_row_limit_and_builds_the_hsgp_likelihood(tmp_path):
    exact = BASE.replace("n = 8", "n = 20000")
    with pytest.raises(spec.SpecError, match="data.n.*at most 10,000 can be analysed by an exact GP"):
        spec.load(_write(tmp_path, exact)).load_data()
    s = spec.load(_write(tmp_path, exact + 'approx = "HSGP(m=30, c=1.5)"\n'))
    data = s.load_data()
    model = s.model(s.candidates[0], data)
    record = bk.likelihood.find_likelihood(model)[1]
    assert isinstance(record, bk.approx.hsgp.HSGPLikelihood) and record.basis.m == (30,)


def test_vfe_in_a_spec_builds_the_inducing_point_likelihood(tmp_path):
    s = spec.load(_write(tmp_path, BASE.replace("n = 8", "n = 60") + 'approx = "VFE(n_inducing=12)"\n'))
    data = s.load_data()
    record = bk.likelihood.find_likelihood(s.model(s.candidates[0], data))[1]
    assert isinstance(record, bk.approx.vfe.VFELikelihood) and record.inducing.shape == (12, 1)
    with pytest.raises(spec.SpecError, match="model.approx.*n_inducing must be an integer ≥ 1"):
        spec.load(_write(tmp_path, BASE + 'approx = "VFE(n_inducing=0)"\n'))


@pytest.mark.parametrize("setting, message", [
    ("chains = 1", r"fit\.mcmc\.chains: must be at least 2 \(R-hat and the rank plot compare chains\), got 1"),
    ("draws = 10", r"fit\.mcmc\.draws: must be at least 50 \(fewer leave PSIS-LOO's tail fit .*\), got 10"),
])
def test_mcmc_settings_the_report_cannot_diagnose_are_refused_by_check(tmp_path, setting, message):
    """A review: `check` passed chains = 1 and draws of 1–10, then `run` failed after the fit (the rank plot needs two
    chains; ArviZ's PSIS-LOO an IndexError or "n_draws_tail must be at least 5"), with no report."""
    path = tmp_path / "s.toml"
    path.write_text('name = "s"\n[data]\nsource = "sinusoid"\nn = 20\n[priors]\nell = "Gamma(alpha=2.0, beta=5.0)"\n'
                    '[model]\nkind = "gp"\nkernel = "RBF(lengthscale=ell)"\nsigma = 0.2\n[fit.mcmc]\n' + setting + "\n")
    with pytest.raises(bk.spec.SpecError, match=message):
        bk.spec.load(path)
