"""The model-spec format of models/*.toml: reading, validating, and building the PyMC models it describes.

A spec names the data, the model (a GP kernel or BLR feature maps, written in the Python API's own
vocabulary), the priors of its hyperparameters, the fits, the prediction grid, the checks and the
report options. Expressions are parsed with Python's `ast` against a whitelist — numbers, lists,
`+`, `*`, unary minus, names of declared priors, and calls of whitelisted constructors — never `eval`
(`expressions`). Every problem is a `SpecError` naming the file, the key and the reason on one line
(`schema`), and sizes are bounded (`limits`) so that a spec the checks accept is one the machine can
run. `build` makes the data and the PyMC model of each candidate.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pymc as pm

from bayeskern import datasets
from bayeskern.spec import build, schema
from bayeskern.spec.expressions import FEATURES, KERNELS, PRIORS, parse_expression, parse_kernel
from bayeskern.spec.limits import (MAX_CANDIDATES, MAX_CHAINS, MAX_DEPTH, MAX_DRAWS, MAX_EXPRESSION, MAX_FILE, MAX_GRID,
                                   MAX_ITER, MAX_LIST, MAX_N, MAX_NAME, MAX_PRIOR_SAMPLES, MAX_RESTARTS, MAX_SEED, MAX_SIZE,
                                   MAX_STORED)
from bayeskern.spec.schema import (TOP_KEYS, ChecksSection, CVSection, DataSection, EmpiricalBayesSettings, KernelTrickOptions,
                                   MCMCSettings, ModelSection, PredictSection, ReportSection, SpecError, check_spec_seed)

__all__ = ["FEATURES", "KERNELS", "MAX_CANDIDATES", "MAX_CHAINS", "MAX_DEPTH", "MAX_DRAWS", "MAX_EXPRESSION", "MAX_FILE",
           "MAX_GRID", "MAX_ITER", "MAX_LIST", "MAX_N", "MAX_NAME", "MAX_PRIOR_SAMPLES", "MAX_RESTARTS", "MAX_SEED", "MAX_SIZE",
           "MAX_STORED", "PRIORS", "TOP_KEYS", "CVSection", "ChecksSection", "DataSection", "EmpiricalBayesSettings", "KernelTrickOptions",
           "MCMCSettings", "ModelSection", "PredictSection", "ReportSection", "Spec", "SpecError", "check_spec_seed", "load",
           "parse_expression", "parse_kernel"]


@dataclass(frozen=True)
class Spec:
    """A validated spec. `candidates`: the kernel (gp) or feature-map (blr) expressions; with more than one,
    each is fitted by empirical Bayes and the evidence decides which one is analysed in full."""

    path: Path
    name: str
    description: str
    seed: int
    data: DataSection
    kind: str
    candidates: tuple
    priors: dict
    sigma: object  # a number or a prior name
    prior_cov: object  # BLR: a number or a prior name; GP: None
    approx: str | None  # GP: the approximation's expression ("HSGP(m=200, c=1.5)"), None for the exact GP
    empirical_bayes: EmpiricalBayesSettings | None
    mcmc: MCMCSettings | None
    grid: np.ndarray | None
    include_noise: bool
    checks: ChecksSection
    report: ReportSection
    cv: CVSection | None = None

    def load_data(self) -> datasets.Data:
        """The data of the spec (X (n, d), y (n,), column names), checked against the rest of the spec: a SpecError
        for a file that cannot be read, more than MAX_N rows, a grid on inputs of several columns, kernel-trick
        features that do not fit the inputs, or an MCMC run that would keep more than MAX_STORED values."""
        return build.load_data(self)

    def model(self, candidate: str, data: datasets.Data) -> pm.Model:
        """The PyMC model of one candidate on the data: priors, then the GP or BLR likelihood of `y`.

        Everything a fit would reject is a SpecError naming its key: a prior whose shape does not fit
        where it is used (σ is one number; Σ is one number or one per feature; ARD length scales are
        one per input column), a feature map with more than MAX_SIZE features, invalid prior parameters.
        """
        return build.build_model(self, candidate, data)


def load(path) -> Spec:
    """Read and validate a spec; every problem is a SpecError naming the file and the key (the sections in file order)."""
    path = Path(path)
    raw = schema.read_toml(path)
    name = schema.read_name(raw, path)
    seed = schema.read_seed(raw, path)
    data = schema.read_data(raw, path)
    priors = schema.read_priors(raw, path)
    model = schema.read_model(raw, path, priors)
    eb, mc = schema.read_fit(raw, path, len(model.candidates))
    predict = schema.read_predict(raw, path)
    checks = schema.read_checks(raw, path, model.kind)
    report = schema.read_report(raw, path, name)
    description = schema.read_description(raw, path)
    cv = schema.read_cv(raw, path, eb)
    return Spec(path=path, name=name, description=description, seed=seed, data=data, kind=model.kind,
                candidates=model.candidates, priors=priors, sigma=model.sigma, prior_cov=model.prior_cov, approx=model.approx,
                empirical_bayes=eb, mcmc=mc, grid=predict.grid, include_noise=predict.include_noise, checks=checks, report=report, cv=cv)
