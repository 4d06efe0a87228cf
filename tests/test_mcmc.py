"""MCMC: exact LOO densities, LOO model comparison, reproducible draws, diagnostics, predictive coverage, EB vs MCMC."""

import os
import warnings

import arviz as az
import numpy as np
import pymc as pm
import pytest
import scipy.stats
import xarray as xr

import bayeskern as bk
import reference as ref
from bayeskern import kernels as K
from bayeskern.fit import FitWarning

f64 = np.float64  # PyTensor would make a Python float 2.0 a float32 constant


def _brute_force_loo(kernel, X, y, sigma):
    """log p(tᵢ | t₋ᵢ) by refitting on n − 1 points, from the numpy reference posterior."""
    out = []
    for i in range(len(y)):
        keep = np.arange(len(y)) != i
        Kx = kernel(X[keep], X[keep])
        mean, cov, _ = ref.gp_posterior(Kx, kernel(X[keep], X[i : i + 1]), kernel(X[i : i + 1], X[i : i + 1]), y[keep], sigma)
        out.append(scipy.stats.norm(mean[0], np.sqrt(cov[0, 0] + sigma**2)).logpdf(y[i]))
    return np.array(out)


@pytest.mark.parametrize(
    "kernel, kref",
    [
        (K.RBF(0.3), lambda A, B: ref.rbf(A, B, 0.3)),
        (K.PRML(1.0, 16.0, 0.5, 0.3), lambda A, B: ref.prml(A, B, 1.0, 16.0, 0.5, 0.3)),
        (0.8 * K.Matern32(0.4) + K.Periodic(0.5, 1.0), lambda A, B: 0.8 * ref.matern(A, B, 1.5, 0.4) + ref.periodic(A, B, 0.5, 1.0)),
    ],
    ids=["rbf", "prml", "matern32+periodic"],
)
def test_closed_form_loo_equals_refits_on_n_minus_one_points(kernel, kref):
    X, y = bk.datasets.sinusoid(14, 0.2, 3)
    post = bk.gp.posterior(kernel, X, y, sigma=0.2)
    # R&W 5.12 against 14 refits: the same numbers by different O(n³) routes; 1e-9 relative
    np.testing.assert_allclose(post.loo_log_predictive, _brute_force_loo(kref, X, y, 0.2), rtol=1e-9)


def _rbf_model(X, y):
    with pm.Model() as model:
        amp = pm.HalfNormal("amp", f64(2.0))
        ls = pm.Gamma("ls", f64(2.0), f64(8.0))
        s = pm.HalfNormal("s", f64(1.0))
        bk.gp.marginal_likelihood("y", X, y, amp * K.RBF(ls), s)
    return model


@pytest.fixture(scope="module")
def sinusoid_run():
    X, y = bk.datasets.sinusoid(25, 0.2, 0)
    Xnew = np.linspace(0, 1, 9)[:, None]
    dt = bk.fit.mcmc(_rbf_model(X, y), draws=300, tune=300, chains=2, seed=1, Xnew=Xnew, thin=3)
    return X, y, Xnew, dt


def test_predictive_bands_take_the_group_as_arviz_gives_it(sinusoid_run):
    """`predictive_bands` of the posterior_predictive group as a Dataset, as its DataTree node (`dt["posterior_predictive"]`,
    `dt.posterior_predictive`: ArviZ 1's natural objects, which said "pass Xnew to bayeskern.fit.mcmc" though Xnew was
    passed) or the whole DataTree: the same bands."""
    dt = sinusoid_run[3]
    expected = bk.fit.predictive_bands(dt["posterior_predictive"].to_dataset())
    for given in (dt["posterior_predictive"], dt.posterior_predictive, dt):
        xr.testing.assert_identical(bk.fit.predictive_bands(given), expected)


def test_the_draws_warnings_are_said_once_a_kind_not_once_a_draw():
    """What conditioning at each draw warns (a VFE bound's jitter cost, an inaccurate posterior: numbers that change
    from draw to draw) is said once per kind — its category and its text with the numbers masked — with how many draws
    said it (a review: 56 warnings for 60 draws once they were no longer silenced); jitter is left to its own report."""
    from bayeskern._linalg import JitterWarning
    from bayeskern.fit.predictive import _say_once_each

    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        for k in range(3):
            warnings.warn(f"the bound is lower by {20 + k}.5 nats at sigma^2 = 1e-{k + 3}", RuntimeWarning)
            warnings.warn(f"added jitter {k}e-9", JitterWarning)
        warnings.warn("inputs beyond the box", RuntimeWarning)
    with warnings.catch_warnings(record=True) as out:
        warnings.simplefilter("always")
        _say_once_each(said, 60)
    assert [(w.category, str(w.message)) for w in out] == [
        (RuntimeWarning, "the bound is lower by 20.5 nats at sigma^2 = 1e-3 (said at 3 of 60 posterior draws; the first's numbers)"),
        (RuntimeWarning, "inputs beyond the box")]
    assert {w.filename for w in out} == {__file__}


def test_log_likelihood_is_the_exact_loo_density_at_each_draw(sinusoid_run):
    X, y, _, dt = sinusoid_run
    post, ll = dt["posterior"].to_dataset(), dt["log_likelihood"].to_dataset()["y"]
    assert ll.dims == ("chain", "draw", "y_dim_0") and ll.shape == (2, 300, 25)
    for c, d in [(0, 0), (1, 137)]:
        amp, ls, s = (float(post[n].values[c, d]) for n in ("amp", "ls", "s"))
        expected = _brute_force_loo(lambda A, B: amp * ref.rbf(A, B, ls), X, y, s)
        np.testing.assert_allclose(ll.values[c, d], expected, rtol=1e-9)
    groups = set(dt.children)
    assert {"posterior", "sample_stats", "observed_data", "log_likelihood", "posterior_predictive"} <= groups
    assert set(post.data_vars) == {"amp", "ls", "s"}


def test_identical_seeds_give_identical_draws():
    X, y = bk.datasets.sinusoid(15, 0.2, 1)
    first = {}
    for sampler in ("nutpie", "pymc"):
        runs = [bk.fit.mcmc(_rbf_model(X, y), draws=40, tune=40, chains=2, seed=7, sampler=sampler, compute_convergence_checks=False) for _ in range(2)]
        a, b = (r["posterior"].to_dataset() for r in runs)
        for name in ("amp", "ls", "s"):
            np.testing.assert_array_equal(a[name].values, b[name].values)
        np.testing.assert_array_equal(runs[0]["log_likelihood"]["y"].values, runs[1]["log_likelihood"]["y"].values)
        first[sampler] = a
    other = bk.fit.mcmc(_rbf_model(X, y), draws=40, tune=40, chains=2, seed=8, compute_convergence_checks=False)  # nutpie, another seed
    assert not np.array_equal(other["posterior"]["ls"].values, first["nutpie"]["ls"].values)


def test_loo_compare_prefers_the_kernel_the_data_came_from():
    # data from a periodic GP (period 0.25) over four periods; the rival is a plain RBF
    rng = np.random.default_rng(11)
    X = np.sort(rng.uniform(0, 1, 40))[:, None]
    f = bk.gp.prior_samples(K.Periodic(0.25, 0.8), X, 1, seed=11)[0]
    y = f + 0.1 * rng.standard_normal(40)

    def model(kernel_of):
        with pm.Model() as m:
            amp = pm.HalfNormal("amp", f64(2.0))
            ls = pm.Gamma("ls", f64(2.0), f64(4.0))
            s = pm.HalfNormal("s", f64(0.5))
            bk.gp.marginal_likelihood("y", X, y, amp * kernel_of(ls), s)
        return m

    runs = {
        "periodic": bk.fit.mcmc(model(lambda ls: K.Periodic(0.25, ls)), draws=300, tune=300, chains=2, seed=3, compute_convergence_checks=False),
        "rbf": bk.fit.mcmc(model(lambda ls: K.RBF(ls)), draws=300, tune=300, chains=2, seed=3, compute_convergence_checks=False),
    }
    table = az.compare(runs)
    assert table.index[0] == "periodic"
    assert az.loo(runs["periodic"]).elpd > az.loo(runs["rbf"]).elpd + 2 * table.loc["rbf", "dse"]


def test_diagnostics_agree_with_arviz_and_name_what_failed(sinusoid_run):
    dt = sinusoid_run[3]
    d = bk.fit.diagnose(dt, warn=False)
    rhat = az.rhat(dt)
    np.testing.assert_allclose(d.table["ls__rhat"].values, np.asarray(rhat["ls"].values), rtol=1e-12)
    np.testing.assert_allclose(d.table["s__ess_bulk"].values, np.asarray(az.ess(dt, method="bulk")["s"].values), rtol=1e-12)
    assert d.divergences == int(dt["sample_stats"]["diverging"].sum())

    # chains stuck in different places: R-hat far above 1.01, named in the verdict
    rng = np.random.default_rng(0)
    draws = np.stack([rng.normal(0, 1, 500), rng.normal(3, 1, 500)])
    fake = xr.DataTree.from_dict({
        "posterior": xr.Dataset({"theta": (("chain", "draw"), draws)}),
        "sample_stats": xr.Dataset({
            "diverging": (("chain", "draw"), np.zeros((2, 500), bool)),
            "energy": (("chain", "draw"), rng.normal(size=(2, 500)).cumsum(1)),
        }),
    })
    with pytest.warns(FitWarning, match="R-hat of theta"):
        bad = bk.fit.diagnose(fake)
    assert not bad.passed and any("R-hat of theta" in p for p in bad.problems)
    assert any("E-BFMI below 0.3" in p for p in bad.problems)  # a random walk in energy: very low E-BFMI


def _iid_tree(chains: int, draws: int, seed: int = 0) -> xr.DataTree:
    """Independent N(0, 1) draws of one parameter: bulk and tail ESS ≈ chains × draws, R-hat ≈ 1."""
    rng = np.random.default_rng(seed)
    shape = (chains, draws)
    return xr.DataTree.from_dict({"posterior": xr.Dataset({"theta": (("chain", "draw"), rng.standard_normal(shape))}),
                                  "sample_stats": xr.Dataset({"diverging": (("chain", "draw"), np.zeros(shape, bool))})})


def test_diagnose_asks_100_effective_draws_per_chain():
    """Vehtari et al. (2021) and PyMC's convergence checks: bulk and tail ESS ≥ 100 per chain. 2 × 150 and 4 × 75
    independent draws both have a bulk and tail ESS between 200 and 400 (checked below): enough for 2 chains, not for 4."""
    two, four = _iid_tree(2, 150), _iid_tree(4, 75)
    for dt in (two, four):
        assert all(200 < float(az.ess(dt, method=method)["theta"]) < 400 for method in ("bulk", "tail"))
    assert bk.fit.diagnose(two, warn=False).passed and bk.fit.diagnose(two, warn=False).thresholds["ess_min"] == 200
    failed = bk.fit.diagnose(four, warn=False)
    assert failed.thresholds["ess_min"] == 400 and any(p.startswith("bulk ESS of theta is") and p.endswith("< 400") for p in failed.problems)
    assert not [p for p in bk.fit.diagnose(four, ess_min=200, warn=False).problems if "ESS" in p]  # a number given is used
    # one chain: R-hat compares chains, so it is said once that it could not, not "R-hat of theta is nan"
    one = bk.fit.diagnose(_iid_tree(1, 400), warn=False)
    assert one.problems == ("R-hat needs at least 2 chains, 1 was run: whether the chains agree is unchecked",)


def test_mcmc_warns_when_its_diagnostics_fail_and_not_when_they_pass():
    """As `pm.sample` checks convergence after sampling: 2 × 30 draws fall short of 200 effective draws and are
    warned of, naming the ESS; `compute_convergence_checks=False` turns the check off; 2 × 300 draws pass it (no false
    alarm: the sinusoid fixture's run, whose diagnostics pass)."""
    X, y = bk.datasets.sinusoid(25, 0.2, 0)
    with pytest.warns(FitWarning, match=r"diagnostics failed: .*bulk ESS of \w+ is \d+ < 200"):
        bk.fit.mcmc(_rbf_model(X, y), draws=30, tune=30, chains=2, seed=1)
    with warnings.catch_warnings(record=True) as said:  # 3 draws: NaN statistics, named; not numpy's warnings from ArviZ
        warnings.simplefilter("always")
        bk.fit.mcmc(_rbf_model(X, y), draws=3, tune=30, chains=2, seed=1)
    assert [w.category for w in said] == [FitWarning] and "bulk ESS of amp is nan" in str(said[0].message)
    assert said[0].filename == __file__  # at the caller's line
    for kwargs in ({"draws": 30, "tune": 30, "compute_convergence_checks": False}, {"draws": 300, "tune": 300}):
        with warnings.catch_warnings():
            warnings.simplefilter("error", FitWarning)
            model = _rbf_model(X, y)
            with model:  # a constant Deterministic has no R-hat: the check is of the sampled hyperparameters, as PyMC's
                pm.Deterministic("one", 0.0 * model["amp"] + 1.0)
            bk.fit.mcmc(model, chains=2, seed=1, **kwargs)


def test_an_rhat_just_above_the_limit_is_shown_above_it(monkeypatch):
    """R-hat 1.01005 against 1.01 read "R-hat of theta is 1.010 > 1.01" (a review): the digits that put it above are shown."""
    rng = np.random.default_rng(0)
    fake = xr.DataTree.from_dict({"posterior": xr.Dataset({"theta": (("chain", "draw"), rng.normal(size=(2, 100)))}),
                                  "sample_stats": xr.Dataset({"diverging": (("chain", "draw"), np.zeros((2, 100), bool))})})
    monkeypatch.setattr(az, "rhat", lambda dt, **kwargs: xr.Dataset({"theta": 1.01005}))
    [said] = [p for p in bk.fit.diagnose(fake, warn=False).problems if p.startswith("R-hat")]
    assert said == "R-hat of theta is 1.01005 > 1.01"


def test_a_bad_parametrisation_gets_its_divergences_reported():
    # five points and wide, heavy-tailed priors on amplitude and noise: the posterior has a funnel
    # (amp → 0 with s free) that NUTS with a high step size cannot follow. Which transitions diverge is round-off
    # (it moves with the BLAS kernel a CPU picks); measured over seeds 0–19 on one machine: 0–15 divergences
    # with 300 draws per chain (seed 5: none on an AVX-512 machine, some on an AVX2 one), 15–56 with 1000
    X, y = bk.datasets.sinusoid(5, 0.1, 2)
    with pm.Model() as model:
        amp = pm.HalfCauchy("amp", f64(5.0))
        ls = pm.HalfCauchy("ls", f64(5.0))
        s = pm.HalfCauchy("s", f64(5.0))
        bk.gp.marginal_likelihood("y", X, y, amp * K.RBF(ls), s)
    with pytest.warns(FitWarning, match="divergent transitions"):  # the sampler's own check, after sampling
        dt = bk.fit.mcmc(model, draws=1000, tune=100, chains=2, seed=5, sampler="pymc", target_accept=0.6)
    with pytest.warns(FitWarning, match="divergent transitions"):
        d = bk.fit.diagnose(dt)
    assert d.divergences > 0 and not d.passed


def test_predictive_bands_cover_the_truth_at_about_the_nominal_rate():
    """Five data sets drawn from the model's own prior; 95 % bands for f and for new y at 12 points each."""
    Xnew = np.linspace(0.02, 0.98, 12)[:, None]
    covered_f, covered_y, total = 0, 0, 0
    for rep in range(5):
        rng = np.random.default_rng(100 + rep)
        X = np.sort(rng.uniform(0, 1, 20))[:, None]
        allX = np.vstack([X, Xnew])
        f = bk.gp.prior_samples(1.0 * K.RBF(0.2), allX, 1, seed=rep)[0]
        y = f[:20] + 0.2 * rng.standard_normal(20)
        y_new = f[20:] + 0.2 * rng.standard_normal(12)
        with pm.Model() as model:
            amp = pm.LogNormal("amp", 0.0, f64(0.5))
            ls = pm.LogNormal("ls", np.log(0.2), f64(0.5))
            s = pm.LogNormal("s", np.log(0.2), f64(0.5))
            bk.gp.marginal_likelihood("y", X, y, amp * K.RBF(ls), s)
        dt = bk.fit.mcmc(model, draws=200, tune=200, chains=2, seed=rep, Xnew=Xnew, thin=2, compute_convergence_checks=False)
        bands = bk.fit.predictive_bands(dt["posterior_predictive"].to_dataset(), prob=0.95)
        covered_f += int(np.sum((bands.f_lower.values <= f[20:]) & (f[20:] <= bands.f_upper.values)))
        covered_y += int(np.sum((bands.y_lower.values <= y_new) & (y_new <= bands.y_upper.values)))
        total += 12
    # 60 points, but correlated within a data set (about 5 × 3 independent pieces): a binomial(15, 0.95)
    # falls below 12/15 = 0.8 with probability < 1 %; both bands must reach that
    assert covered_f / total >= 0.8 and covered_y / total >= 0.8, (covered_f, covered_y, total)


def test_eb_and_mcmc_side_by_side(sinusoid_run):
    X, y, Xnew, dt = sinusoid_run
    eb = bk.fit.empirical_bayes(_rbf_model(X, y), restarts=2, seed=0)
    cmp = bk.fit.compare_eb_mcmc(eb, dt, prob=0.94)
    post = dt["posterior"].to_dataset()
    for name in ("amp", "ls", "s"):
        row = cmp.params[name]
        draws = post[name].values.ravel()
        assert row["eb"] == eb.params[name] and row["eb_sd"] == eb.laplace.sd[name]
        np.testing.assert_allclose(row["mean"], draws.mean(), rtol=1e-12)
        np.testing.assert_allclose(row["z"], (eb.params[name] - draws.mean()) / draws.std(), rtol=1e-9)
        np.testing.assert_allclose([row["lower"], row["upper"]], np.quantile(draws, [0.03, 0.97]), rtol=1e-12)
    assert cmp.params["s"]["eb_in_interval"]  # the noise level is well determined by 25 points
    np.testing.assert_allclose(cmp.elpd_loo_eb, np.sum(eb.posterior().loo_log_predictive), rtol=1e-12)
    np.testing.assert_allclose(cmp.elpd_loo_mcmc, az.loo(dt).elpd, rtol=1e-12)
    # the predictive comparison against numpy: the mixture sd by the law of total variance, which
    # must also match the spread of the f samples (Monte Carlo, 200 draws: sd of an sd ≈ 5 %)
    pp = dt["posterior_predictive"].to_dataset()
    f_mean = pp.f_mean.values.reshape(-1, len(Xnew))
    mix_mean = f_mean.mean(0)
    mix_sd = np.sqrt(pp.f_var.values.reshape(-1, len(Xnew)).mean(0) + f_mean.var(0))
    np.testing.assert_allclose(pp.f.values.reshape(-1, len(Xnew)).std(0), mix_sd, rtol=0.2)
    at_eb = eb.posterior(Xnew)
    np.testing.assert_allclose(cmp.max_mean_gap_sd, np.max(np.abs(at_eb.mean - mix_mean) / mix_sd), rtol=1e-10)
    ratio = at_eb.std / mix_sd
    np.testing.assert_allclose(cmp.sd_ratio, (ratio.min(), np.median(ratio), ratio.max()), rtol=1e-10)
    assert cmp.max_mean_gap_sd < 1.0  # EB and MCMC agree about the mean on 25 informative points


def test_bad_arguments_are_named():
    X, y = bk.datasets.sinusoid(10, 0.2, 0)
    with pytest.raises(ValueError, match="sampler must be one of nutpie, pymc"):
        bk.fit.mcmc(_rbf_model(X, y), sampler="metropolis")
    with pytest.raises(ValueError, match="draws must be"):
        bk.fit.mcmc(_rbf_model(X, y), draws=0)
    with pytest.raises(ValueError, match="Xnew has 2 column"):
        bk.fit.mcmc(_rbf_model(X, y), Xnew=np.zeros((3, 2)))
    with pm.Model() as plain:
        pm.Normal("y", pm.Normal("m"), 1.0, observed=y)
    with pytest.raises(ValueError, match="marginal Gaussian likelihood"):
        bk.fit.mcmc(plain)


def test_diagnostics_and_comparison_to_dict_are_plain_json():
    """One to_dict convention (bayeskern._json.jsonable): lists, and None where a statistic is NaN or ±inf."""
    import json

    table = xr.Dataset({"theta__rhat": ("theta_dim", [np.nan, 1.0]), "theta__ess_bulk": ("theta_dim", [5.0, 800.0]),
                        "theta__ess_tail": ("theta_dim", [7.0, 900.0])})
    d = bk.fit.Diagnostics(table, 0, 0, np.array([0.9, np.nan]), False, ("R-hat of theta is nan > 1.01",),
                           {"rhat_max": 1.01, "ess_min": 400.0, "ebfmi_min": 0.3}).to_dict()
    assert d["table"] == {"theta": {"rhat": [None, 1.0], "ess_bulk": [5.0, 800.0], "ess_tail": [7.0, 900.0]}}
    assert d["ebfmi"] == [0.9, None] and d["problems"] == ["R-hat of theta is nan > 1.01"]
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    row = {"eb": np.float64(0.5), "eb_sd": np.nan, "mean": 0.4, "sd": 0.1, "lower": 0.2, "upper": 0.6, "z": 1.0, "eb_in_interval": True}
    c = bk.fit.EBvsMCMC({"ls": row}, -3.0, -3.5, 0.2, None, (0.9, 1.0, np.inf), 0.94).to_dict()
    assert c["params"]["ls"]["eb_sd"] is None and c["params"]["ls"]["eb"] == 0.5 and c["sd_ratio"] == [0.9, 1.0, None]
    assert json.loads(json.dumps(c, allow_nan=False)) == c


def _lognormal_rbf_model(seed: int, n: int, ls_median: float = 0.2, amp_name: str = "amp"):
    rng = np.random.default_rng(seed)
    X = np.sort(rng.uniform(0, 1, n))[:, None]
    y = np.sin(6 * X[:, 0]) + 0.2 * rng.standard_normal(n)
    with pm.Model() as model:
        amp = pm.LogNormal(amp_name, 0.0, f64(0.5))
        ls = pm.LogNormal("ls", np.log(ls_median), f64(0.5))
        s = pm.LogNormal("s", np.log(0.2), f64(0.5))
        bk.gp.marginal_likelihood("y", X, y, amp * K.RBF(ls), s)
    return model


def test_nutpie_compiles_once_per_model_structure_and_draws_what_pm_sample_draws(monkeypatch, tmp_path):
    from threadpoolctl import threadpool_limits

    from bayeskern import _graph_cache
    from bayeskern._compile import exact_arithmetic
    from bayeskern.fit import _nutpie

    monkeypatch.setattr(_nutpie, "_MODELS", [])  # nothing compiled by earlier tests
    monkeypatch.setattr(_graph_cache, "_folder", lambda: tmp_path)  # nor kept on disk by them: every structure built
    compiles = []
    real = _nutpie._compile
    monkeypatch.setattr(_nutpie, "_compile", lambda model, *kept: compiles.append(model) or real(model, *kept))
    models = [_lognormal_rbf_model(0, 20), _lognormal_rbf_model(2, 31), _lognormal_rbf_model(3, 20, 0.3)]
    ours = [bk.fit.mcmc(model, draws=60, tune=60, chains=2, seed=7, compute_convergence_checks=False) for model in models]
    # the first model compiled; its callbacks reused for other data (31 rows); another prior (a different constant) compiled anew
    assert [next(i for i, m in enumerate(models) if m is c) for c in compiles] == [0, 2]
    model, dt = models[1], ours[1]  # the model that reused another's callbacks, against pm.sample compiling its own
    with exact_arithmetic(), threadpool_limits(1):  # as bk.fit.mcmc samples: no fastmath, one BLAS thread per chain
        theirs = pm.sample(draws=60, tune=60, chains=2, random_seed=7, nuts_sampler="nutpie", model=model,
                           progressbar=False, compute_convergence_checks=False)
    for name in ("amp", "ls", "s"):  # to the last bit: the same callbacks, pointed at this model's data
        np.testing.assert_array_equal(dt["posterior"][name].values, theirs["posterior"][name].values, err_msg=name)
    np.testing.assert_array_equal(dt["observed_data"]["y"].values, theirs["observed_data"]["y"].values)


def test_a_later_process_samples_from_the_graphs_kept_on_disk_with_nothing_built_and_draws_the_same(monkeypatch, tmp_path):
    """The graphs one compile of a structure keeps (`_graph_cache`) are linked as they are when memory holds nothing (a
    later process): nutpie's `_make_functions` does not run, and a model of the same structure on other data draws what
    it draws compiled anew. Another structure (a different prior constant), the same graph under another variable name
    (which the graph's fingerprint does not see, nutpie's description does), or a file that cannot be read, is built."""
    import pickle

    import nutpie.compile_pymc

    from bayeskern import _graph_cache
    from bayeskern.fit import _nutpie

    built = []
    real = nutpie.compile_pymc._make_functions
    monkeypatch.setattr(nutpie.compile_pymc, "_make_functions", lambda model, **options: built.append(model) or real(model, **options))
    monkeypatch.setattr(_nutpie, "_MODELS", [])

    def draws(model, folder):
        monkeypatch.setattr(_graph_cache, "_folder", lambda: folder)
        _nutpie._MODELS.clear()  # as in a new process: only the disk holds compiled structures
        dt = bk.fit.mcmc(model, draws=30, tune=30, chains=2, seed=3, compute_convergence_checks=False)
        return {name: dt["posterior"][name].values for name in ("amp", "ls", "s")}

    first, other, another_prior = _lognormal_rbf_model(0, 20), _lognormal_rbf_model(2, 31), _lognormal_rbf_model(3, 20, 0.3)
    draws(first, tmp_path / "kept")
    assert built == [first]
    from_disk = draws(other, tmp_path / "kept")  # 31 rows: the kept graphs on this model's data
    assert built == [first]
    compiled_anew = draws(other, tmp_path / "empty")
    assert built == [first, other]
    for name, values in compiled_anew.items():  # to the last bit: the same graphs, linked as they are
        np.testing.assert_array_equal(from_disk[name], values, err_msg=name)
    draws(another_prior, tmp_path / "kept")
    assert built == [first, other, another_prior]
    renamed = _lognormal_rbf_model(0, 20, amp_name="a")
    monkeypatch.setattr(_graph_cache, "_folder", lambda: tmp_path / "kept")
    _nutpie._MODELS.clear()
    assert set(bk.fit.mcmc(renamed, draws=10, tune=10, chains=1, seed=3, compute_convergence_checks=False)["posterior"].data_vars) == {"a", "ls", "s"}
    assert built[-1] is renamed and len(built) == 4
    for content in (pickle.dumps({"n_dim": 3}), b"cut short"):  # read but not what a compile keeps; not read at all
        for file in (tmp_path / "kept").glob("*.pkl"):
            file.write_bytes(content)
        assert all(np.array_equal(draws(other, tmp_path / "kept")[name], values) for name, values in compiled_anew.items())
        assert built[-1] is other
    assert len(built) == 6
    draws(other, tmp_path / "kept")  # the graphs built again were kept again
    assert len(built) == 6


def test_the_log_density_nutpie_calls_is_the_models_and_a_non_finite_gradient_is_a_divergence():
    from bayeskern._compile import NUMPY, data_stand_ins
    from bayeskern.fit import _nutpie

    model = _lognormal_rbf_model(0, 20)
    compiled, reads = _nutpie._compile(model, None, data_stand_ins(_nutpie._graphs(model))[0])
    assert reads == {"y_X", "y_y"}
    log_density = compiled._make_logp_func()  # what each of nutpie's chains calls
    # the model's log density as PyMC compiles it, on PyTensor's Python linker: every Op's own `perform`, not Numba
    logp, dlogp = model.compile_logp(mode=NUMPY), model.compile_dlogp(mode=NUMPY)
    for z in np.random.default_rng(0).normal(0.0, 1.0, (5, 3)):
        point = dict(zip([v.name for v in model.value_vars], z))
        value, grad = log_density(z, **compiled._shared_data)
        np.testing.assert_allclose(value, logp(point), rtol=1e-12)  # numpy and Numba: round-off apart
        np.testing.assert_allclose(grad, dlogp(point), rtol=1e-10, atol=1e-12)
    # another model's data (`with_data`, n = 30): what depends on the data alone is computed again for the new arrays
    other = _lognormal_rbf_model(1, 30)
    other_logp, other_dlogp = other.compile_logp(mode=NUMPY), other.compile_dlogp(mode=NUMPY)
    other_data = _nutpie._data(data_stand_ins([other.logp()])[0])  # its shared data variables, y_X and y_y
    assert other_data.keys() == compiled._shared_data.keys()
    for data, (expected, dexpected) in ((other_data, (other_logp, other_dlogp)), (compiled._shared_data, (logp, dlogp))):
        z = np.array([0.3, -0.2, 0.1])
        point = dict(zip([v.name for v in model.value_vars], z))
        value, grad = log_density(z, **data)
        np.testing.assert_allclose(value, expected(point), rtol=1e-12)
        np.testing.assert_allclose(grad, dexpected(point), rtol=1e-10, atol=1e-12)
    # amp = e⁸⁰⁰ overflows: nutpie's cfunc returns code 3 there (a divergence), and so does this callback
    with pytest.raises(_nutpie._BadPoint, match="not finite") as raised:
        log_density(np.array([800.0, 0.0, 0.0]), **compiled._shared_data)
    assert raised.value.is_recoverable


def test_the_chains_run_in_parallel_on_every_available_core_unless_a_gradient_is_cheap(monkeypatch):
    import os

    import nutpie

    from bayeskern.fit import _nutpie

    asked = {}

    def stop(compiled, **options):  # the options nutpie is called with; no sampling
        asked.update(options)
        raise KeyboardInterrupt

    monkeypatch.setattr(nutpie, "sample", stop)
    monkeypatch.setattr(_nutpie, "_compiled", lambda model: None)
    for chains in (1, 4):
        with pytest.raises(KeyboardInterrupt):
            _nutpie.sample(None, draws=10, tune=10, chains=chains, seed=0, progressbar=False, problem_size=_nutpie.SEQUENTIAL_CHAINS_MAX_N + 1)
        # pm.sample would take half the cores (PyMC counts every other one a hyperthread): one on a 2-core machine
        assert asked["cores"] == min(chains, len(os.sched_getaffinity(0)))
        # a model whose gradient is too cheap for two threads to pass Python's lock back and forth: one after the other
        with pytest.raises(KeyboardInterrupt):
            _nutpie.sample(None, draws=10, tune=10, chains=chains, seed=0, progressbar=False, problem_size=_nutpie.SEQUENTIAL_CHAINS_MAX_N)
        assert asked["cores"] == 1


def test_chains_one_after_the_other_draw_what_parallel_chains_draw(monkeypatch):
    """Small models sample their chains in one thread (`SEQUENTIAL_CHAINS_MAX_N`): the draws must not depend on it."""
    from bayeskern.fit import _nutpie

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: the chains run one after the other either way")
    model = _lognormal_rbf_model(0, 20)
    runs = []
    for threshold in (0, 10**9):  # parallel, then one after the other
        monkeypatch.setattr(_nutpie, "SEQUENTIAL_CHAINS_MAX_N", threshold)
        runs.append(bk.fit.mcmc(model, draws=30, tune=30, chains=2, seed=5, compute_convergence_checks=False)["posterior"].to_dataset())
    for name in ("amp", "ls", "s"):
        np.testing.assert_array_equal(runs[0][name].values, runs[1][name].values)


def test_nutpie_models_whose_shapes_follow_the_data_are_compiled_each_time(monkeypatch):
    from bayeskern.fit import _nutpie

    monkeypatch.setattr(_nutpie, "_MODELS", [])
    compiles = []
    real = _nutpie._compile
    monkeypatch.setattr(_nutpie, "_compile", lambda model, *kept: compiles.append(model) or real(model, *kept))
    runs = []
    for n in (20, 31):  # nutpie fixes a deterministic's size when it compiles; this one has n entries
        model = _lognormal_rbf_model(0, n)
        with model:
            pm.Deterministic("scaled_x", model["amp"] * pm.Data("x", np.linspace(0, 1, n)))
        runs.append(bk.fit.mcmc(model, draws=30, tune=30, chains=1, seed=1, compute_convergence_checks=False))
    assert len(compiles) == 2
    assert [dt["posterior"]["scaled_x"].shape[-1] for dt in runs] == [20, 31]


def test_one_credible_mass_by_default():
    """compare_eb_mcmc and predictive_bands take the report's 0.95 when not told (compare_eb_mcmc took 0.94, a review)."""
    import inspect

    assert {inspect.signature(f).parameters["prob"].default for f in (bk.fit.compare_eb_mcmc, bk.fit.predictive_bands)} == {0.95}

def test_chains_that_never_moved_are_named():
    """A review's spec with tune = 0: NUTS rejected every step and ArviZ's LOO then failed ("All tail values are the
    same"); `check_chains_moved` names the stuck chain first. A chain stuck in one variable but moving in another moved."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(3, 50)), rng.normal(size=(3, 50, 2))
    a[1], b[1] = a[1, 0], b[1, 0]  # chain 1: one point throughout
    a[2] = a[2, 0]  # chain 2: a still, b moving
    dt = xr.DataTree.from_dict({"posterior": xr.Dataset({"a": (("chain", "draw"), a), "b": (("chain", "draw", "k"), b)})})
    with pytest.raises(ValueError, match=r"chain\(s\) 1 of 3 never moved: each of their 50 draws is the same point"):
        bk.fit.check_chains_moved(dt)
    b[1, 7, 0] += 1e-12  # the least move is a move
    bk.fit.check_chains_moved(xr.DataTree.from_dict({"posterior": xr.Dataset({"a": (("chain", "draw"), a), "b": (("chain", "draw", "k"), b)})}))
