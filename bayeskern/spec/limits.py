"""The size limits of a spec, so that what `check` accepts one machine can run and report (the README's spec section lists them)."""

__all__ = ["MAX_CANDIDATES", "MAX_CHAINS", "MAX_DEPTH", "MAX_DRAWS", "MAX_EXPRESSION", "MAX_FILE", "MAX_GRID", "MAX_ITER",
           "MAX_LIST", "MAX_N", "MAX_N_APPROX", "MAX_NAME", "MAX_PRIOR_SAMPLES", "MAX_RESTARTS", "MAX_SEED", "MAX_SIZE", "MAX_STORED",
           "MIN_CHAINS", "MIN_DRAWS"]

#: rows of data: an exact GP or the LOO of a BLR stores n × n float64 matrices (800 MB at n = 10⁴)
MAX_N = 10_000
#: rows of data for a GP with model.approx: the approximation stores O(n·M) at most (the CSV reader's own limit)
MAX_N_APPROX = 1_000_000
#: predict.num: the grid's posterior covariance and the prior sample functions need num × num matrices
MAX_GRID = 2_000
#: report.prior_samples: sample functions drawn per panel of the prior figure
MAX_PRIOR_SAMPLES = 100
#: values in one prior (its shape), in one list of an expression, and features of one feature map
MAX_SIZE = 10_000
MAX_LIST = MAX_SIZE
#: seeds (spec, data, --seed): results.nc stores them as 64-bit integers
MAX_SEED = 2**63 - 1
#: values an MCMC run keeps in memory: chains × draws × (2n + 4·num/thin) float64 (2 GB)
MAX_STORED = 250_000_000
#: fit settings: EB starts and iterations, MCMC draws (tuning and kept) and chains
MAX_RESTARTS, MAX_ITER, MAX_DRAWS, MAX_CHAINS = 1_000, 1_000_000, 1_000_000, 64
#: the fewest kept draws and chains the report's diagnostics work with: R-hat and the rank plot compare chains, and
#: ArviZ's PSIS-LOO fits a tail of min(S/5, 3√(S/r_eff)) of the S draws that must hold 5 (2 chains × 10 draws raised)
MIN_DRAWS, MIN_CHAINS = 50, 2
#: candidates compared by evidence, characters of one expression, nesting levels of an expression
MAX_CANDIDATES, MAX_EXPRESSION, MAX_DEPTH = 100, 200_000, 50
#: characters of a spec's name (the report folder's name) and bytes of a spec file
MAX_NAME, MAX_FILE = 100, 10_000_000
