"""The one edge where a group's roles become a library call (``Member`` -> ``Call``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from xamt.catalog.layouts import ENCODERS, VALUE_ENCODERS, permutation
from xamt.catalog.model import Member
from xamt.types import Call
from xamt.workers.protocol import ApiRef


def bind(member: Member, values: Mapping[str, Any], *, seed: int | None = None) -> Call:
    """Make ``member``'s call from role values (``{"x": array, "axis": 0}``).

    Roles the member binds positionally go in order; keyword roles under the member's own
    parameter names; optional roles (``keepdims``, ``dtype``...) only when a value is given.
    A deep-learning member (:mod:`xamt.catalog.dlcore`) also spells values its own way
    (``encode``), takes its ``fixed`` parameters, and has its arrays transposed into its layout.
    """
    args = tuple(values[role] for role in member.args)
    kwargs = {param: values[role] for param, role in member.kwargs.items()}
    for role, param in member.optional.items():
        if role in values and param not in kwargs:
            kwargs[param] = values[role]
    if not (member.encode or member.fixed or member.layout or member.callables):
        return Call(api=member.api, args=args, kwargs=kwargs, seed=seed)
    return _bind_dl(member, values, args, kwargs, seed)


def _bind_dl(
    member: Member,
    values: Mapping[str, Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    seed: int | None,
) -> Call:
    x = values.get("x")
    d = max(1, len(np.shape(getattr(x, "values", x))) - 2) if x is not None else 1

    def encoded(encoder: str, value: Any) -> Any:
        # a value no spelling fits (a minimized kernel of another rank, a None pad) goes as
        # it is: the library's answer to it is the outcome, never an orchestrator error
        try:
            if encoder in VALUE_ENCODERS:
                return VALUE_ENCODERS[encoder](value, d, values)
            return ENCODERS[encoder](value, d)
        except (TypeError, ValueError, IndexError, KeyError):
            return value

    arg_list = list(args)
    for key, encoder in member.encode.items():
        if key.isdigit():
            arg_list[int(key)] = encoded(encoder, arg_list[int(key)])
        elif key in kwargs:
            kwargs[key] = encoded(encoder, kwargs[key])
    transpose: dict[str, tuple[int, ...]] = {}
    # where each array role goes (a role may also be read for an encoded parameter: mxnet's
    # kernel size from the weight)
    positions = {role: str(i) for i, role in enumerate(member.args) if str(i) not in member.encode}
    positions.update(
        {role: param for param, role in member.kwargs.items() if param not in member.encode}
    )
    for role, layout in member.layout.items():
        value = values.get(role)
        if role in positions and value is not None:
            perm = permutation(layout, len(np.shape(getattr(value, "values", value))))
            if perm is not None:
                transpose[positions[role]] = perm
    if "return" in member.layout and x is not None:
        perm = permutation(member.layout["return"], d + 2)
        if perm is not None:
            transpose["return"] = perm
    for param, value in member.fixed.items():
        kwargs.setdefault(param, value)
    for param, path in member.callables.items():
        kwargs.setdefault(param, ApiRef(path))
    return Call(api=member.api, args=tuple(arg_list), kwargs=kwargs, seed=seed, transpose=transpose)
