"""Layouts and encoders of the deep-learning core (:mod:`xamt.catalog.dlcore`): how a member's
arrays are transposed into the layout it computes in, and how it spells a role's value.

A member names them (``layout``, ``encode``); :mod:`xamt.catalog.model` checks the names when it
loads the catalog and :func:`xamt.catalog.bind.bind` applies them. This module imports no other
module of :mod:`xamt.catalog`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

# --- layouts -------------------------------------------------------------------------------


def _channels_last(n: int) -> tuple[int, ...]:
    return (0, *range(2, n), 1)


def _channels_first(n: int) -> tuple[int, ...]:
    return (0, n - 1, *range(1, n - 1))


def _spatial_in_out(n: int) -> tuple[int, ...]:
    return (*range(2, n), 1, 0)


def _spatial_out_in(n: int) -> tuple[int, ...]:
    """(C * M, 1, *kernel) -> (*kernel, C, 1): a depthwise kernel as tensorflow takes it."""
    return (*range(2, n), 0, 1)


def _batch_last2(n: int) -> tuple[int, ...]:
    """(B, H, T, D) <-> (B, T, H, D): attention's heads-first and sequence-first layouts."""
    return (0, 2, 1, *range(3, n))


# Layout name -> the permutation (from the group's logical layout to the member's) for an array
# of ``n`` dimensions. Arrays of fewer than 3 dimensions are never transposed.
LAYOUTS: dict[str, Callable[[int], tuple[int, ...]]] = {
    "channels_last": _channels_last,  # NCHW -> NHWC (and NCL -> NLC, NCDHW -> NDHWC)
    "channels_first": _channels_first,  # NHWC -> NCHW: a result computed channels-last
    "spatial_in_out": _spatial_in_out,  # OIHW -> HWIO (tensorflow's filters)
    "spatial_out_in": _spatial_out_in,  # OIHW -> HWOI (tensorflow's depthwise filters)
    "swap_1_2": _batch_last2,
}


def permutation(layout: str, ndim: int) -> tuple[int, ...] | None:
    """The axis permutation of ``layout`` for an ``ndim``-dimensional array; None where it
    leaves the array as it is (identity, or too few dimensions)."""
    if ndim < 3:
        return None
    perm = LAYOUTS[layout](ndim)
    return None if perm == tuple(range(ndim)) else perm


# --- encoders ------------------------------------------------------------------------------


def _per_dim(value: Any, d: int) -> tuple[Any, ...]:
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value,) * d


def _pairs(value: Any, d: int) -> tuple[tuple[Any, Any], ...]:
    """A padding as (before, after) per spatial dimension: an int pads both sides alike."""
    if isinstance(value, (tuple, list)) and value and isinstance(value[0], (tuple, list)):
        return tuple((int(a), int(b)) for a, b in value)
    return tuple((p, p) for p in _per_dim(value, d))


def _shape(value: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in np.shape(value.values if hasattr(value, "values") else value))


def _dim(value: Any, axis: int) -> int:
    """One dimension of an array role; 1 where a drawn or minimized array has too few (the
    call is then invalid for every library, which the comparison sees)."""
    shape = _shape(value)
    return shape[axis] if -len(shape) <= axis < len(shape) else 1


Encoder = Callable[[Any, int], Any]
# Encoder name -> f(role value, spatial rank): the value as the member's parameter takes it.
# (Encoders that also need other roles' values are in VALUE_ENCODERS.)
ENCODERS: dict[str, Encoder] = {
    "tuple": lambda v, d: _per_dim(v, d),
    "list": lambda v, d: list(_per_dim(v, d)),
    "pairs": lambda v, d: _pairs(v, d),
    # tensorflow's explicit padding, channels-last: [[0, 0], [b, a]..., [0, 0]]
    "tf_explicit": lambda v, d: [[0, 0], *[[b, a] for b, a in _pairs(v, d)], [0, 0]],
    # tensorflow's pooling window and strides: one per dimension of the channels-last input
    "tf_window": lambda v, d: [1, *_per_dim(v, d), 1],
    # a window over the whole array (jax.lax.reduce_window): 1 on batch and channels
    "window": lambda v, d: (1, 1, *_per_dim(v, d)),
    "full_pairs": lambda v, d: ((0, 0), (0, 0), *_pairs(v, d)),
    # numpy.pad's pad_width for the whole array: nothing on batch and channels
    "np_pad": lambda v, d: ((0, 0), (0, 0), *_pairs(v, d)),
    # torch.nn.functional.pad: (before, after) pairs from the last dimension backwards, flat
    "torch_pad": lambda v, d: tuple(x for pair in reversed(_pairs(v, d)) for x in pair),
    # mxnet.nd.pad: (before, after) for every dimension, flat
    "flat_pad": lambda v, d: (0, 0, 0, 0, *(x for pair in _pairs(v, d) for x in pair)),
    # values read off an array role's shape (the role's value is the array)
    "kernel": lambda v, d: _shape(v)[2:],
    "out_channels": lambda v, d: _dim(v, 0),
    "out_channels_t": lambda v, d: _dim(v, 1),
    "last_dim": lambda v, d: _shape(v)[-1:],
    "trailing_dims": lambda v, d: _shape(v)[1:],
    "spatial_size": lambda v, d: _shape(v)[2:],
}


def _resized(x: Any, size: Any, d: int) -> tuple[int, ...]:
    shape = _shape(x)
    return (*shape[:2], *_per_dim(size, d))


# Encoder name -> f(role value, spatial rank, every role value): spellings read off two roles.
VALUE_ENCODERS: dict[str, Callable[[Any, int, Mapping[str, Any]], Any]] = {
    # jax.image.resize's output shape: x's batch and channels, then the size
    "resized_shape": lambda v, d, vs: _resized(vs["x"], v, d),
    # jax.lax.conv_transpose pads the dilated input: torch's padding p is k - 1 - p there
    "transpose_pairs": lambda v, d, vs: tuple(
        (k - 1 - p, k - 1 - p)
        for k, p in zip(_shape(vs["kernel"])[2:], _per_dim(v, d), strict=False)
    ),
    # a transposed convolution without padding, as explicit pairs: (k - 1, k - 1) per side
    "transpose_full_pairs": lambda v, d, vs: tuple(
        (k - 1, k - 1) for k in _shape(vs["kernel"])[2:]
    ),
    # tensorflow's transposed convolutions take the output shape (channels-last, no padding)
    "tf_convt_valid_shape": lambda v, d, vs: [
        _dim(vs["x"], 0),
        *(
            (n - 1) * s + k
            for n, s, k in zip(
                _shape(vs["x"])[2:], _per_dim(v, d), _shape(vs["kernel"])[2:], strict=False
            )
        ),
        _dim(vs["kernel"], 1),
    ],
    # tensorflow.image.resize's size: the spatial sizes only
    "size_tuple": lambda v, d, vs: _per_dim(v, d),
}
