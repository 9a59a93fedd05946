"""The judge's structure: how much operation knowledge lives in its code, and how large it is.

Prints, for ``xamt/replay.py`` and ``xamt/oracle/*.py``:

- the catalog operation names found in code: string literals (outside docstrings) that are,
  or whose regular-expression alternatives (``a|b(c)``) are, the name of an operation of the
  catalog, less the shared vocabulary (dtype names, finding kinds, role names) that some
  operations also carry as names (``bfloat16``, ``shape``, ``split``...); listed, so that a
  reader can see each;
- the operation names of the judge's data files (ops.toml, special_cases.toml, the formulas)
  found there (tests/test_ops.py holds this at zero);
- the longest functions, and the parameters of the verdict's entry point.

Run: ``python bench/structure.py``.
"""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from xamt.catalog import model  # noqa: E402
from xamt.catalog.model import ROLES  # noqa: E402
from xamt.catalog.normalize import _table  # noqa: E402
from xamt.findings import CLASSIFICATIONS, CONFIDENCES, KINDS  # noqa: E402
from xamt.oracle import verdict  # noqa: E402
from xamt.workers.protocol import DTYPE_NAMES  # noqa: E402

FILES = (ROOT / "xamt" / "replay.py", *sorted((ROOT / "xamt" / "oracle").glob("*.py")))
SCALAR_ROLES = set(_table("roles.toml").get("scalars", {}))
VOCABULARY = {
    *DTYPE_NAMES,
    *KINDS,
    *CLASSIFICATIONS,
    *CONFIDENCES,
    *ROLES,
    *SCALAR_ROLES,
    *("bool", "int", "float", "complex"),
}


def main() -> None:
    ops = {g.op for g in model.load().groups}
    sys.path.insert(0, str(ROOT / "tests"))
    from test_ops import _literals, _names_in_data  # (the rule tests/test_ops.py holds)

    data_names = _names_in_data()
    total: set[str] = set()
    lengths = []
    for path in FILES:
        tree = ast.parse(path.read_text())
        named = _literals(path) & ops
        total |= named
        in_data = sorted(named & data_names)
        rest = sorted(named - VOCABULARY)
        print(f"{path.relative_to(ROOT)}: {len(rest)} catalog operation names {rest}")
        if in_data:
            print(f"  of the data files' operations: {in_data}")
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                lengths.append((length, f"{path.name}:{node.lineno} {node.name}"))
    outside = sorted(total - VOCABULARY)
    print(f"catalog operation names in the judge's code: {len(outside)} (outside the shared")
    print(
        f"  vocabulary of dtypes, kinds and roles); of the data files' operations: "
        f"{len(total & data_names)}"
    )
    lengths.sort(reverse=True)
    print("longest functions: " + ", ".join(f"{name} ({n} lines)" for n, name in lengths[:5]))
    params = list(inspect.signature(verdict.judge).parameters)
    print(f"verdict.judge takes {len(params)} parameters: {', '.join(params)}")


if __name__ == "__main__":
    main()
