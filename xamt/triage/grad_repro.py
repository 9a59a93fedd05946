"""Short gradient repro scripts: one library's own autodiff on a gradient finding's case.

A gradient finding (:mod:`xamt.oracle.gradient`) is shown with the library's own gradient
API: torch autograd, ``tf.GradientTape``, ``jax.vjp``, ``paddle.grad``, ``mindspore.vjp``,
mxnet's ``autograd.record``. The script builds the inputs inline, calls the API once, pulls
back the cotangent xamt used (written inline too) and prints each gradient beside what the
float64 finite difference gave at the worst position (the finding's detail line).
"""

from __future__ import annotations

from xamt.catalog.bind import bind
from xamt.catalog.model import Member
from xamt.oracle.gradient import grad_keys, wrt_roles
from xamt.triage.repro import IMPORTS, _Renderer
from xamt.types import Case

# How each library differentiates ``out = API(...)`` for the cotangent ``cot`` (a numpy array)
# with respect to the variables ``{wrt}`` (comma-separated), leaving ``grads``.
PULLBACK = {
    "torch": (
        "{prepare}",
        "out = {call}",
        "grads = torch.autograd.grad(out, [{wrt}], torch.from_numpy(cot).to(out.dtype),"
        " allow_unused=True)",
    ),
    "tensorflow": (
        "with tensorflow.GradientTape() as tape:",
        "{prepare}",
        "    out = {call}",
        "grads = tape.gradient(out, [{wrt}], output_gradients=tensorflow.cast(cot, out.dtype))",
    ),
    "jax": (
        "out, pullback = jax.vjp(lambda {wrt}: {call}, {wrt})",
        "grads = pullback(jax.numpy.asarray(cot, dtype=out.dtype))",
    ),
    "paddle": (
        "{prepare}",
        "out = {call}",
        "grads = paddle.grad([out], [{wrt}], [paddle.to_tensor(cot).astype(out.dtype)],"
        " allow_unused=True)",
    ),
    "mindspore": (
        "out, pullback = mindspore.vjp(lambda {wrt}: {call}, {wrt})",
        "grads = pullback(mindspore.Tensor(cot).astype(out.dtype))",
        "grads = grads if isinstance(grads, tuple) else (grads,)",
    ),
    "mxnet": (
        "{prepare}",
        "with mxnet.autograd.record():",
        "    out = {call}",
        "out.backward({cot_native})",
        "grads = [{grads}]",
    ),
}
# What marks a variable as differentiated before the call ({} is the variable).
PREPARE = {
    "torch": "{}.requires_grad_()",
    "tensorflow": "    tape.watch({})",
    "paddle": "{}.stop_gradient = False",
    "mxnet": "{}.attach_grad()",
}
TO_NUMPY = {
    "torch": "g.numpy()",
    "tensorflow": "g.numpy()",
    "jax": "numpy.asarray(g)",
    "paddle": "g.numpy()",
    "mindspore": "g.asnumpy()",
    "mxnet": "g.asnumpy()",
}


def gradient_script(
    *, library: str, member: Member, case: Case, version: str, key: str, detail: str
) -> str | None:
    """The short gradient repro of ``case`` for one library (None: it has no autodiff or
    the member takes none of the differentiated inputs)."""
    if library not in PULLBACK:
        return None
    roles = wrt_roles(case.values, (*member.args, *member.kwargs.values()))
    keys = grad_keys(member, roles)
    if not keys:
        return None
    call = bind(member, case.values, seed=case.seed)
    r = _Renderer(library, call.api)
    names: dict[str, str] = {}
    lines_in: list[str] = []
    args = []
    # an in-place variant writes to its input: it gets a copy of the differentiated leaf
    copy = ".clone()" if call.api.endswith("_") and library in ("torch", "paddle") else ""
    for i, a in enumerate(call.args):
        code = r.value(a)
        if str(i) in keys:
            names[str(i)] = f"x{i}"
            lines_in.append(f"x{i} = {code}")
            code = f"x{i}{copy}"
        args.append(code)
    for k, v in call.kwargs.items():
        code = r.value(v)
        if k in keys:
            names[k] = k
            lines_in.append(f"{k} = {code}")
            code = f"{k}{copy}"
        args.append(f"{k}={code}")
    wrt = ", ".join(names[k] for k in keys)
    lines = [
        f'"""xamt gradient finding {key}, with {library} {version} alone.',
        "",
        f"xamt found: {detail}",
        '"""',
        "",
        "import numpy",
        IMPORTS[library],
        "",
        "",
        "def cotangent(shape, seed):",
        '    """The cotangent xamt pulls back: the same numbers in every library."""',
        "    index = numpy.arange(int(numpy.prod(shape)))",
        "    return (((index * 5 + seed) % 8 - 3.5) / 4).reshape(shape)",
        "",
        "",
        *(line.strip() for line in r.arrays),
        *lines_in,
    ]
    prepare = "\n".join(PREPARE.get(library, "").format(names[k]) for k in keys)
    native = "mxnet.np.array" if call.api.startswith("mxnet.np") else "mxnet.nd.array"
    for template in PULLBACK[library]:
        if "{prepare}" in template and not prepare:
            continue
        line = template.format(
            prepare=prepare,
            call=f"{call.api}({', '.join(args)})",
            wrt=wrt,
            cot_native=f"{native}(cot, dtype=out.dtype)",
            grads=", ".join(f"{names[k]}.grad" for k in keys),
        )
        lines.append(line)
        if line.lstrip().startswith(("out =", "out, pullback =")):
            indent = line[: len(line) - len(line.lstrip())]
            lines.append(f"{indent}cot = cotangent(tuple(out.shape), {case.seed})")
    names_list = ", ".join(repr(names[k]) for k in keys)
    lines += [
        f"for name, g in zip([{names_list}], grads):",
        f"    print(name, None if g is None else {TO_NUMPY[library]}.tolist())",
    ]
    return "\n".join(lines) + "\n"
