"""JSON values from results: the one conversion behind every `to_dict` of the smoothers and `summary.json`."""

import math

import numpy as np

__all__ = ["jsonable"]


def jsonable(value):
    """Plain JSON values: arrays to lists, numpy scalars to Python, NaN and ±inf to None (JSON has neither)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
