"""Fitting hyperparameters: empirical Bayes (type-II maximum likelihood), the evidence approximation, MCMC."""

from bayeskern.fit.compare import EBvsMCMC, compare_eb_mcmc
from bayeskern.fit.diagnostics import Diagnostics, diagnose
from bayeskern.fit.empirical_bayes import EmpiricalBayesResult, Laplace, Optimum, empirical_bayes
from bayeskern.fit.evidence import EvidenceResult, evidence_approximation
from bayeskern.fit.mcmc import mcmc
from bayeskern.fit.predictive import predictive_bands
from bayeskern.fit.warning import FitWarning

__all__ = [
    "Diagnostics",
    "EBvsMCMC",
    "EmpiricalBayesResult",
    "EvidenceResult",
    "FitWarning",
    "Laplace",
    "Optimum",
    "compare_eb_mcmc",
    "diagnose",
    "empirical_bayes",
    "evidence_approximation",
    "mcmc",
    "predictive_bands",
]
