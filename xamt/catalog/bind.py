"""The one edge where a group's roles become a library call (``Member`` -> ``Call``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xamt.catalog.model import Member
from xamt.types import Call


def bind(member: Member, values: Mapping[str, Any], *, seed: int | None = None) -> Call:
    """Make ``member``'s call from role values (``{"x": array, "axis": 0}``).

    Roles the member binds positionally go in order; keyword roles under the member's own
    parameter names; optional roles (``keepdims``, ``dtype``...) only when a value is given.
    """
    args = tuple(values[role] for role in member.args)
    kwargs = {param: values[role] for param, role in member.kwargs.items()}
    for role, param in member.optional.items():
        if role in values and param not in kwargs:
            kwargs[param] = values[role]
    return Call(api=member.api, args=args, kwargs=kwargs, seed=seed)
