"""The role vocabulary and the reviewed tables it is read from: the lowest layer of the catalog.

Array roles are fixed here; scalar roles (their names and canonical values) come from
``data/roles.toml``. Every other module of :mod:`xamt.catalog` may import this one, and this one
imports none of them.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

from xamt.errors import XamtError

DATA = Path(__file__).resolve().parent / "data"
# The role vocabulary. Array roles first.
ARRAY_ROLES = ("x", "x1", "x2", "x3")
# Array roles of the deep-learning core (convolution kernels and biases, normalization scales,
# offsets and statistics, loss targets, attention keys and values): shaped from ``x`` by the
# group's shape kind (xamt.catalog.dlcore).
DL_ARRAY_ROLES = (
    "kernel",
    "bias",
    "scale",
    "offset",
    "running_mean",
    "running_var",
    "target",
    "key",
    "value",
)
SEQUENCE_ROLE = "xs"  # several arrays given as one list argument
ROLES = (*ARRAY_ROLES, *DL_ARRAY_ROLES, SEQUENCE_ROLE, "axis", "keepdims", "dtype")


class CatalogError(XamtError):
    """A catalog file that cannot be used as it is."""

    exit_code = 8


def read_table(name: str) -> dict[str, Any]:
    """One of the reviewed tables in ``data/`` (``roles.toml``...), parsed."""
    path = DATA / name
    try:
        return tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{path}: cannot read: {exc}") from None


@cache
def scalar_specs() -> dict[str, Any]:
    """Scalar role -> the spec of its canonical value (see ``data/roles.toml``)."""
    table = read_table("roles.toml")
    specs = {role: spec["value"] for role, spec in table.get("scalars", {}).items()}
    specs.update({role: spec["value"] for role, spec in table.get("dl", {}).items()})
    return specs


def role_vocabulary() -> tuple[str, ...]:
    """Every role name: array roles, ``axis``/``keepdims``/``dtype``, then scalar roles."""
    return (*ROLES, *sorted(scalar_specs()))
