"""JSON values from results: the one conversion behind every result's `to_dict` and `summary.json`."""

import dataclasses
import math

import numpy as np

__all__ = ["jsonable", "record_dict"]


def jsonable(value):
    """Plain JSON values: arrays to lists, numpy scalars to Python, NaN and ±inf to None (JSON has neither).

    A result record nested in `value` becomes its own `to_dict()`.
    """
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
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return value.to_dict() if hasattr(value, "to_dict") else record_dict(value)
    return value


def record_dict(record) -> dict:
    """The fields of a result record (a dataclass) as JSON values: field name → `jsonable(value)`."""
    return {f.name: jsonable(getattr(record, f.name)) for f in dataclasses.fields(record)}
