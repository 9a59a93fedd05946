"""Cases for the deep-learning core (convolution, pooling, normalization, padding...).

Shapes come from the group's kind: ``x`` is (N, C, *spatial) at the group's spatial rank, and
the other arrays follow it (a convolution kernel's input channels are C / groups, per-channel
statistics have C). Beside ordinary shapes the drawer picks the edges where these kernels
break: spatial size 0 and 1, an empty batch, one channel, a kernel larger than the input.
Parameters are mostly their canonical value and otherwise at an edge: stride and dilation
beyond the input, zero or negative padding, padding larger than the kernel, ``groups`` that
does not divide the channels, eps of 0 or NaN. Arrays other than ``x`` (kernels, running
statistics) are drawn ordinary or of the case's value class alike, so NaN and inf reach
weights and statistics too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xamt.catalog.dlcore import (
    CANONICAL_KERNEL,
    OUT_CHANNELS,
    arrangement_of,
    role_shapes,
    spatial_rank,
)
from xamt.catalog.model import DL_ARRAY_ROLES, Group
from xamt.catalog.normalize import canonical_param
from xamt.inputs.values import draw_array, round_to_bfloat16
from xamt.types import Case
from xamt.workers.protocol import BFloat16

# Input shapes per spatial rank: ordinary ones, then edges (drawn a quarter of the time).
ORDINARY_X: dict[int, tuple[tuple[int, ...], ...]] = {
    1: ((2, 4, 9), (1, 4, 6), (3, 4, 16)),
    2: ((2, 4, 7, 6), (1, 4, 5, 8), (2, 4, 12, 12)),
    3: ((2, 4, 5, 6, 4), (1, 4, 4, 3, 5), (1, 4, 8, 8, 8)),
}
EDGE_X: dict[int, tuple[tuple[int, ...], ...]] = {
    1: ((2, 4, 1), (2, 4, 0), (0, 4, 9), (2, 1, 9), (1, 4, 2)),
    2: ((2, 4, 1, 1), (2, 4, 0, 5), (0, 4, 7, 6), (2, 1, 7, 6), (1, 4, 2, 1)),
    3: ((1, 4, 1, 1, 1), (1, 4, 0, 3, 3), (0, 4, 5, 6, 4), (1, 1, 5, 6, 4), (1, 4, 2, 1, 2)),
}
EDGE_SHARE = 0.25
# Parameter values at their edges, per role.
EDGES: dict[str, tuple[Any, ...]] = {
    "stride": (0, -1, 3, 100),
    "padding": (0, -1, 2, 5, 100),
    "dilation": (0, -1, 3, 50),
    "groups": (0, -1, 3, 4, 8),
    "kernel_size": (0, -1, 1, 5, 20),
    "output_size": (0, 1, 10, -1),
    "eps": (0.0, -1e-3, 1e30, float("nan")),
    "num_groups": (0, -1, 3, 4, 8),
    "pad_value": (float("nan"), float("inf"), -0.0, 1e30),
    "block": (0, -1, 1, 3),
    "norm_type": (0.0, 1.0, float("inf"), -1.0),
}
CANONICAL_SHARE = 0.65
DL_FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
# Padding moves values without arithmetic: integer and bool inputs are ordinary for it.
PAD_DTYPES = (*DL_FLOAT_DTYPES, "int32", "int64", "bool")


def dl_dtypes(group: Group) -> tuple[str, ...]:
    return PAD_DTYPES if group.family == "padding" else DL_FLOAT_DTYPES


def edge_param(rng: np.random.Generator, group: Group, role: str, d: int) -> Any:
    """A value of ``role`` at one of its edges (its canonical value where it has none)."""
    if role == "pad":
        choices: list[Any] = [
            ((-1, 1),) * d,
            ((0, 0),) * d,
            ((5, 5),) * d,
            ((100, 0),) + ((0, 0),) * (d - 1),
            ((0, 9),) * d,
        ]
        return choices[int(rng.integers(0, len(choices)))]
    edges = EDGES.get(role)
    if not edges:
        return canonical_param(group, role)
    return edges[int(rng.integers(0, len(edges)))]


def draw_dl_case(
    group: Group,
    rng: np.random.Generator,
    dtype: str,
    value_class: str,
    apis: dict[str, str],
    seed: int = 0,
) -> Case:
    """A fresh case for a deep-learning group (:func:`xamt.catalog.dlcore.is_dl`)."""
    d = spatial_rank(group.shapes)
    own = tuple(tuple(s) for s in group.params.get("x_shapes", ()))
    menu = EDGE_X[d] if rng.random() < EDGE_SHARE else (own or ORDINARY_X[d])
    x_shape = menu[int(rng.integers(0, len(menu)))]
    values: dict[str, Any] = {}
    for role in group.roles:
        if role in DL_ARRAY_ROLES or role == "x":
            continue
        if rng.random() < CANONICAL_SHARE:
            values[role] = canonical_param(group, role)
        else:
            values[role] = edge_param(rng, group, role, d)
    kernel = CANONICAL_KERNEL[d]
    pick = rng.random()
    if pick < 0.1:
        kernel = tuple(s + 2 for s in x_shape[2:])  # larger than the input
    elif pick < 0.2:
        kernel = (1,) * d
    groups = values.get("groups", 1)
    arrangement = arrangement_of(group.shapes)
    shapes = role_shapes(
        arrangement,
        x_shape,
        kernel,
        groups=groups if isinstance(groups, int) and groups > 0 else 1,
        out_channels=int(group.params.get("out_channels", OUT_CHANNELS)),
    )
    for role in group.roles:
        if role not in shapes:
            continue
        own_class = value_class if role == "x" or rng.random() < 0.5 else "ordinary"
        arr = draw_array(rng, shapes[role], dtype, own_class)
        if role == "running_var" and own_class == "ordinary" and isinstance(arr, np.ndarray):
            arr = np.abs(arr)
        if arrangement == "pair" and own_class == "ordinary":
            arr = _probabilities(arr)  # a loss's ordinary inputs: in (0, 1), as for BCE
        values[role] = arr
    return Case(
        group=group.id, dtype=dtype, value_class=value_class, values=values, apis=apis, seed=seed
    )


def _probabilities(arr: np.ndarray | BFloat16) -> np.ndarray | BFloat16:
    """The values squashed into (0, 1) by the logistic function, in the array's dtype."""
    if isinstance(arr, BFloat16):
        return BFloat16(round_to_bfloat16(_probabilities(arr.values)))  # type: ignore[arg-type]
    if arr.dtype.kind != "f":
        return arr
    with np.errstate(over="ignore"):
        squashed = 1.0 / (1.0 + np.exp(-arr.astype(np.float64)))
    # (kept off 0 and 1 after rounding to the narrowest dtype, bfloat16)
    return np.clip(squashed, 0.01, 0.98).astype(arr.dtype)


def mutate_param(
    values: dict[str, Any], group: Group, rng: np.random.Generator
) -> dict[str, Any] | None:
    """``values`` with one parameter moved to an edge (None if the group has none)."""
    params = [r for r in group.roles if r not in DL_ARRAY_ROLES and r != "x"]
    if not params:
        return None
    role = params[int(rng.integers(0, len(params)))]
    out = dict(values)
    out[role] = edge_param(rng, group, role, spatial_rank(group.shapes))
    return out
