"""Fitting hyperparameters: empirical Bayes (type-II maximum likelihood), the evidence approximation, MCMC."""

from bayeskern._lazy import lazy_names
from bayeskern.fit.empirical_bayes import EmpiricalBayesResult, Laplace, Optimum, empirical_bayes
from bayeskern.fit.evidence import EvidenceResult, evidence_approximation
from bayeskern.fit.mcmc import mcmc
from bayeskern.fit.predictive import predictive_bands
from bayeskern.fit.warning import FitWarning

# ArviZ-based: imported when first used (ArviZ and its plotting stack cost about 1.5 s to import)
__getattr__, __dir__ = lazy_names(__name__, {"EBvsMCMC": "compare", "compare_eb_mcmc": "compare", "Diagnostics": "diagnostics", "diagnose": "diagnostics",
                                          "check_chains_moved": "diagnostics"})

__all__ = [
    "Diagnostics",
    "EBvsMCMC",
    "EmpiricalBayesResult",
    "EvidenceResult",
    "FitWarning",
    "Laplace",
    "Optimum",
    "check_chains_moved",
    "compare_eb_mcmc",
    "diagnose",
    "empirical_bayes",
    "evidence_approximation",
    "mcmc",
    "predictive_bands",
]
