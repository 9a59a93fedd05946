"""Repro scripts: one standalone script per library (that library and numpy only), plus a
cross-library script that uses xamt.

A library's script holds the finding's minimized inputs inline (exactly: -0.0, NaN, inf and
every digit survive), or in ``inputs.npz`` beside it when they are large, converts them the
way a user would, calls the API, prints the output, and names the library version the
finding was made on. Its last line, ``RESULT {...}``, is machine-readable.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xamt.catalog.bind import bind
from xamt.catalog.model import Member
from xamt.paths import check_identifier, replace_file
from xamt.serialize import case_to_jsonable
from xamt.types import Case
from xamt.workers.protocol import ApiRef, BFloat16, DType

INLINE_LIMIT = 64  # elements; larger inputs go to inputs.npz

IMPORTS = {
    "numpy": "import numpy",
    "torch": "import torch",
    "tensorflow": "import os\nos.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '3')\n"
    "import tensorflow",
    "jax": "import jax\njax.config.update('jax_enable_x64', True)\nimport jax.numpy",
    "paddle": "import paddle",
    "mindspore": "import mindspore",
    "mxnet": "import mxnet\nmxnet.util.set_np_shape(True)  # 0 is a size, as xamt runs mxnet",
}
# How a numpy array ``v`` becomes the library's tensor ({} is the array's variable name).
TO_NATIVE = {
    "numpy": "{}",
    "torch": "torch.from_numpy({})",
    "tensorflow": "tensorflow.constant({})",
    "jax": "jax.numpy.asarray({})",
    "paddle": "paddle.to_tensor({})",
    "mindspore": "mindspore.Tensor({})",
    "mxnet": "mxnet.nd.array({0}, dtype={0}.dtype)",
}
MXNET_NP = "mxnet.np.array({0}, dtype={0}.dtype)"
BF16_CAST = {
    "torch": "{}.to(torch.bfloat16)",
    "tensorflow": "tensorflow.cast({}, tensorflow.bfloat16)",
    "jax": "{}.astype(jax.numpy.bfloat16)",
    "paddle": "{}.astype('bfloat16')",
    "mindspore": "{}.astype(mindspore.bfloat16)",
}
DTYPE_EXPR = {
    "numpy": "numpy.dtype('{}')",
    "torch": "torch.{}",
    "tensorflow": "tensorflow.{}",
    "jax": "jax.numpy.{}",
    "paddle": "'{}'",
    "mindspore": "mindspore.{}",
    "mxnet": "numpy.dtype('{}')",
}
VERSION_OF = {"tensorflow": "tensorflow.__version__", "numpy": "numpy.__version__"}

FOOTER = '''

def _plain(out):
    """The output as numpy-level data (bfloat16 widened to float32)."""
    if isinstance(out, (tuple, list)):
        return [_plain(o) for o in out]
    for method in ("detach", "cpu"):
        if hasattr(out, method) and callable(getattr(out, method)):
            out = getattr(out, method)()
    if str(getattr(out, "dtype", "")).endswith("bfloat16"):
        out = out.astype("float32") if hasattr(out, "astype") else out.float()
    for method in ("asnumpy", "numpy"):
        if hasattr(out, method) and callable(getattr(out, method)):
            return numpy.asarray(getattr(out, method)())
    return numpy.asarray(out)


def _layout(value):
    if isinstance(value, list):
        return [_layout(v) for v in value]
    if OUT_TRANSPOSE and value.ndim == len(OUT_TRANSPOSE):
        return numpy.transpose(value, OUT_TRANSPOSE)
    return value


def _json(value):
    if isinstance(value, list):
        return {"seq": [_json(v) for v in value]}
    flat = value.reshape(-1)
    if value.dtype.kind == "c":
        data = [[_num(complex(z).real), _num(complex(z).imag)] for z in flat]
    else:
        data = [_num(x) for x in flat.tolist()]
    return {"dtype": value.dtype.name, "shape": list(value.shape), "data": data}


def _num(x):
    if isinstance(x, float) and x != x:
        return "nan"
    if isinstance(x, float) and x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    if isinstance(x, float) and x == 0.0 and str(x).startswith("-"):
        return "-0.0"
    return x


def _resolve(path):
    import importlib

    parts = path.split(".")
    obj = importlib.import_module(parts[0])
    for i, part in enumerate(parts[1:], 1):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(".".join(parts[: i + 1]))
    return obj


if __name__ == "__main__":
    import json

    print(f"{LIBRARY} {_version()} (finding made on {MADE_ON})")
    try:
        out = _resolve(API)(*ARGS(), **KWARGS())
        value = _layout(_plain(out))
        print(value)
        print("RESULT " + json.dumps({"status": "ok", "value": _json(value)}))
    except Exception as exc:  # the disagreement may be that this library raises
        print(f"{type(exc).__name__}: {exc}")
        print("RESULT " + json.dumps({"status": "error", "type": type(exc).__name__,
                                     "message": str(exc)[:500]}))
'''


def _scalar(x: Any) -> str:
    if isinstance(x, (bool, np.bool_)):
        return repr(bool(x))
    if isinstance(x, (int, np.integer)):
        return repr(int(x))
    if isinstance(x, complex | np.complexfloating):
        return f"complex({_scalar(complex(x).real)}, {_scalar(complex(x).imag)})"
    value = float(x)
    if math.isnan(value):
        return "float('nan')"
    if math.isinf(value):
        return "float('inf')" if value > 0 else "float('-inf')"
    return repr(value)


def _array_literal(arr: np.ndarray, dtype: str) -> str:
    values = ", ".join(_scalar(x) for x in arr.reshape(-1).tolist())
    return f"numpy.array([{values}], dtype='{dtype}').reshape({tuple(arr.shape)!r})"


class ValueCode:
    """Python code for a call's values (arrays, dtypes, tuples, lists, scalars); subclasses
    say how an array, a dtype and a scalar look for their library."""

    def value(self, v: Any) -> str:
        if isinstance(v, BFloat16 | np.ndarray):
            return self.array(v)
        if isinstance(v, DType):
            return self.dtype(v.name)
        if isinstance(v, ApiRef):
            return f"_resolve({v.path!r})"
        if isinstance(v, tuple):
            inner = ", ".join(self.value(x) for x in v)
            return f"({inner},)" if len(v) == 1 else f"({inner})"
        if isinstance(v, list):
            return "[" + ", ".join(self.value(x) for x in v) + "]"
        if v is None or isinstance(v, str):
            return repr(v)
        if isinstance(v, np.generic):
            v = v.item()
        return self.scalar(v)

    def array(self, v: BFloat16 | np.ndarray) -> str:
        raise NotImplementedError

    def dtype(self, name: str) -> str:
        raise NotImplementedError

    def scalar(self, x: Any) -> str:
        return _scalar(x)


class _Renderer(ValueCode):
    """Turns call values into code for one library, collecting large arrays for an npz."""

    INDENT = "    "
    NPZ_LOAD = "numpy.load(_HERE / 'inputs.npz')['{}']"  # how a large array is read back

    def __init__(self, library: str, api: str) -> None:
        self.library = library
        self.api = api
        self.arrays: list[str] = []
        self.npz: dict[str, np.ndarray] = {}
        self.perm: tuple[int, ...] | None = None  # the layout of the array being rendered

    def array(self, v: BFloat16 | np.ndarray) -> str:
        bf16 = isinstance(v, BFloat16)
        arr = v.values if isinstance(v, BFloat16) else v
        dtype = "float32" if bf16 else arr.dtype.name
        name = f"a{len(self.arrays)}"
        if arr.size <= INLINE_LIMIT:
            self.arrays.append(f"{self.INDENT}{name} = {self.literal(arr, dtype)}")
        else:
            self.npz[name] = arr
            self.arrays.append(f"{self.INDENT}{name} = {self.NPZ_LOAD.format(name)}")
        template = TO_NATIVE[self.library]
        if self.library == "mxnet" and self.api.startswith(("mxnet.np.", "mxnet.npx.")):
            template = MXNET_NP
        if self.perm is not None and arr.ndim == len(self.perm):
            # the member computes in another layout: xamt transposed the array for it
            name = f"numpy.ascontiguousarray(numpy.transpose({name}, {self.perm}))"
        code = template.format(name)
        if bf16:
            code = BF16_CAST.get(self.library, "{}").format(code)  # none: float32 stays
        return code

    def dtype(self, name: str) -> str:
        return DTYPE_EXPR[self.library].format(name)

    def argument(self, value: Any, perm: Sequence[int] | None) -> str:
        """``value`` as code, an array in the layout ``perm`` the member computes in (the
        call's ``transpose`` of that argument; None: as it is)."""
        self.perm = tuple(perm) if perm is not None else None
        try:
            return self.value(value)
        finally:
            self.perm = None

    def literal(self, arr: np.ndarray, dtype: str) -> str:
        """The exact inline literal of a small array."""
        return _array_literal(arr, dtype)


def library_script(
    *, library: str, member: Member, case: Case, version: str, signature: str, key: str
) -> tuple[str, dict[str, np.ndarray]]:
    """The standalone script for one library, and the arrays for inputs.npz (if any)."""
    call = bind(member, case.values)
    r = _Renderer(library, call.api)
    args = [r.argument(a, call.transpose.get(str(i))) for i, a in enumerate(call.args)]
    args_arrays = len(r.arrays)
    kwargs = [f"{k!r}: {r.argument(v, call.transpose.get(k))}" for k, v in call.kwargs.items()]
    out_perm = call.transpose.get("return")
    version_expr = VERSION_OF.get(library, f"{library}.__version__")
    lines = [
        f'"""Reproduces xamt finding {signature} ({key}) with {library} alone.',
        "",
        f"The finding was made on {library} {version}. Needs only {library} and numpy.",
        '"""',
        "",
        "from pathlib import Path",
        "",
        "import numpy",
        IMPORTS[library],
        "",
        "_HERE = Path(__file__).resolve().parent",
        f"LIBRARY = {library!r}",
        f"MADE_ON = {version!r}",
        f"API = {call.api!r}",
        "# the result's layout is transposed back by this permutation before it is compared",
        f"OUT_TRANSPOSE = {tuple(out_perm) if out_perm else None!r}",
        "",
        "",
        "def _version():",
        f"    return {version_expr}",
        "",
        "",
        "def ARGS():",
        *r.arrays[:args_arrays],
    ]
    lines.append(f"    return ({', '.join(args)}{',' if len(args) == 1 else ''})")
    kw_code = "{" + ", ".join(kwargs) + "}"
    lines += ["", "", "def KWARGS():", *r.arrays[args_arrays:], f"    return {kw_code}"]
    return "\n".join(lines) + "\n" + FOOTER, r.npz


CROSS_SCRIPT = '''"""Reproduces xamt finding {signature} ({key}) across libraries, with xamt.

Needs xamt and its library environments (`xamt env install --all`). The case is case.json.
"""

from pathlib import Path

from xamt.triage.repro import run_case_file

if __name__ == "__main__":
    run_case_file(Path(__file__).resolve().with_name("case.json"))
'''


def write_repro(
    folder: Path,
    *,
    case: Case,
    members: Mapping[str, Member],
    versions: Mapping[str, str],
    signature: str,
    key: str,
    gradient_detail: str | None = None,
) -> dict[str, str]:
    """Write the scripts of one finding into ``folder``; return library -> script path.

    A gradient finding (``gradient_detail``: its detail line) gets each library's short
    gradient script instead (:mod:`xamt.triage.grad_repro`), where the library has autodiff.

    ``folder`` must already be checked to lie inside the output folder (``xamt.paths.inside``);
    the library names, which name the scripts, are checked here, and each file is replaced
    (written aside, then renamed), so a link left in the folder is replaced, never followed.
    """
    for library in members:
        check_identifier("library", library, f"{folder}: a repro script")
    folder.mkdir(parents=True, exist_ok=True)
    scripts: dict[str, str] = {}
    npz: dict[str, np.ndarray] = {}
    for library, member in members.items():
        text, arrays = library_script(
            library=library,
            member=member,
            case=case,
            version=versions.get(library, "unknown"),
            signature=signature,
            key=key,
        )
        npz.update(arrays)
        if gradient_detail is not None:
            from xamt.triage.grad_repro import gradient_script

            text = (
                gradient_script(
                    library=library,
                    member=member,
                    case=case,
                    version=versions.get(library, "unknown"),
                    key=key,
                    detail=gradient_detail,
                )
                or text
            )
        scripts[library] = str(_replace(folder, f"repro_{library}.py", text.encode()))
    if npz:
        buffer = io.BytesIO()
        np.savez(buffer, **npz)  # type: ignore[arg-type]
        _replace(folder, "inputs.npz", buffer.getvalue())
    _replace(folder, "case.json", json.dumps(case_to_jsonable(case), indent=1).encode())
    cross = CROSS_SCRIPT.format(signature=signature, key=key).encode()
    scripts["xamt"] = str(_replace(folder, "repro_xamt.py", cross))
    return scripts


def _replace(folder: Path, name: str, data: bytes) -> Path:
    """Write ``folder/name`` whole (:func:`xamt.paths.replace_file`): whatever was there (a
    file, or a link to somewhere else) is replaced, and nothing outside ``folder`` is touched."""
    return replace_file(folder / name, data)


def run_case_file(path: Path) -> None:
    """Run a stored case on every library it names and print what each did and the verdict."""
    from xamt import envs
    from xamt.catalog import model
    from xamt.outcomes import outcome_text
    from xamt.replay import Replay
    from xamt.serialize import case_from_jsonable
    from xamt.workers.pool import WorkerPool

    case = case_from_jsonable(json.loads(path.read_text()))
    group = model.load().group(case.group)
    with WorkerPool({lib: envs.interpreter(lib) for lib in case.apis}) as pool:
        versions = {lib: h.version for lib, h in pool.start().items()}
        (result,) = Replay(pool, [group]).run([case])
    for lib, o in result.outcomes.items():
        print(f"{lib} {versions[lib]}: {case.apis[lib]} -> {o.status}: {outcome_text(o)}")
    for s in result.signed:
        print(f"{s.key} ({s.blame.confidence}): {s.blame.detail}")
