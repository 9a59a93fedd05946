"""Gradient repro scripts: one library's own autodiff on a gradient finding's case.

A gradient finding (:mod:`xamt.oracle.gradient`) is shown with the library's own gradient
API: torch autograd, ``tf.GradientTape``, ``jax.vjp``, ``paddle.grad``, ``mindspore.vjp``,
mxnet's ``autograd.record``. The script builds the inputs inline, calls the API once and
pulls back the cotangent xamt used (written inline too). Two endings:

- :func:`gradient_script` (``repro_<lib>.py``) prints each gradient, the finding's detail
  line saying what the float64 finite difference gave at the worst position;
- :func:`short_gradient_script` (the finding's short repro, ``short_<lib>.py``, which triage
  runs standalone) asserts at the position the oracle blamed
  (:class:`xamt.oracle.gradient.GradientCheck`): the library's gradient there, along the
  symmetric direction where the oracle compared those, against the expected value, within
  the tolerance the oracle applied. It fails while the bug is there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from xamt.catalog.bind import bind
from xamt.catalog.model import Member
from xamt.findings import Finding
from xamt.oracle.gradient import (
    GradientBlame,
    GradientCheck,
    array_of,
    grad_keys,
    wrt_roles,
)
from xamt.triage.repro import IMPORTS, _Renderer
from xamt.triage.short import (
    TO_NUMPY_BF16,
    ShortRepro,
    _ShortRenderer,
    exact_scalar,
    short_text,
)
from xamt.types import Case, Outcome
from xamt.workers.protocol import BFloat16

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
# A gradient as a numpy array ({} is the gradient); bfloat16, which numpy has no dtype for,
# through short.TO_NUMPY_BF16.
TO_NUMPY = {
    "torch": "{}.numpy()",
    "tensorflow": "{}.numpy()",
    "jax": "numpy.asarray({})",
    "paddle": "{}.numpy()",
    "mindspore": "{}.asnumpy()",
    "mxnet": "{}.asnumpy()",
}


@dataclass(frozen=True, kw_only=True)
class _Pullback:
    """A gradient script's inputs and its pullback, which leaves ``grads`` (one per key)."""

    inputs: list[str]  # the arrays and the differentiated variables
    lines: list[str]  # the call, the cotangent and the pullback
    keys: tuple[str, ...]  # the argument keys differentiated, in ``grads``' order
    names: dict[str, str]  # key -> the variable that holds it
    transpose: dict[str, tuple[int, ...]]  # key (or "return") -> the member's layout


def _pullback(
    library: str, member: Member, case: Case, r: _Renderer, cot: Callable[[str], list[str]]
) -> _Pullback | None:
    """The call of ``case`` in ``member``'s layout, differentiated with ``library``'s own
    API; ``cot(shape)`` the lines that set ``cot`` for a result of ``shape`` (an expression:
    the result's shape in xamt's layout). None where the library has no autodiff or the
    member takes none of the differentiated inputs."""
    if library not in PULLBACK:
        return None
    roles = wrt_roles(case.values, (*member.args, *member.kwargs.values()))
    keys = grad_keys(member, roles)
    if not keys:
        return None
    call = bind(member, case.values, seed=case.seed)
    names: dict[str, str] = {}
    inputs: list[str] = []
    args = []
    # an in-place variant writes to its input: it gets a copy of the differentiated leaf
    copy = ".clone()" if call.api.endswith("_") and library in ("torch", "paddle") else ""
    for i, a in enumerate(call.args):
        code = r.argument(a, call.transpose.get(str(i)))
        if str(i) in keys:
            names[str(i)] = f"x{i}"
            inputs.append(f"x{i} = {code}")
            code = f"x{i}{copy}"
        args.append(code)
    for k, v in call.kwargs.items():
        code = r.argument(v, call.transpose.get(k))
        if k in keys:
            names[k] = k
            inputs.append(f"{k} = {code}")
            code = f"{k}{copy}"
        args.append(f"{k}={code}")
    wrt = ", ".join(names[k] for k in keys)
    prepare = "\n".join(PREPARE.get(library, "").format(names[k]) for k in keys)
    native = "mxnet.np.array" if call.api.startswith("mxnet.np") else "mxnet.nd.array"
    back = call.transpose.get("return")
    # the cotangent is xamt's in its layout, transposed into the member's (as the worker does)
    if back:
        inverse = tuple(int(i) for i in np.argsort(back))
        cot_lines = [
            *cot(f"tuple(out.shape[p] for p in {tuple(back)!r})"),
            f"cot = numpy.ascontiguousarray(numpy.transpose(cot, {inverse!r}))  # its layout",
        ]
    else:
        cot_lines = cot("tuple(out.shape)")
    lines = []
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
            lines += [indent + c for c in cot_lines]
    return _Pullback(
        inputs=inputs,
        lines=lines,
        keys=keys,
        names=names,
        transpose=dict(call.transpose),
    )


def gradient_script(
    *, library: str, member: Member, case: Case, version: str, key: str, detail: str
) -> str | None:
    """The gradient repro of ``case`` for one library, printing each gradient (None: it has
    no autodiff or the member takes none of the differentiated inputs)."""
    r = _Renderer(library, member.api)
    made = _pullback(
        library, member, case, r, lambda shape: [f"cot = cotangent({shape}, {case.seed})"]
    )
    if made is None:
        return None
    lines = [
        f'"""xamt gradient finding {key}, with {library} {version} alone.',
        "",
        f"xamt found: {detail}",
        '"""',
        "",
        *(["from pathlib import Path"] if r.npz else []),
        "import numpy",
        IMPORTS[library],
        # large inputs are read from inputs.npz beside the script (written with the scripts)
        *(["_HERE = Path(__file__).resolve().parent"] if r.npz else []),
        "",
        "",
        "def cotangent(shape, seed):",
        '    """The cotangent xamt pulls back: the same numbers in every library."""',
        "    index = numpy.arange(int(numpy.prod(shape)))",
        "    return (((index * 5 + seed) % 8 - 3.5) / 4).reshape(shape)",
        "",
        "",
        *(line.strip() for line in r.arrays),
        *made.inputs,
        *made.lines,
    ]
    names_list = ", ".join(repr(made.names[k]) for k in made.keys)
    lines += [
        f"for name, g in zip([{names_list}], grads):",
        f"    print(name, None if g is None else {TO_NUMPY[library].format('g')}.tolist())",
    ]
    return "\n".join(lines) + "\n"


def gradient_check(blames: Sequence[GradientBlame], finding: Finding) -> GradientCheck | None:
    """The position ``finding`` blames, as the gradient oracle gave it on the re-run of its
    case (``blames``: :attr:`xamt.replay.Replayed.gradients`): the blame of its library
    by its oracle (the finding's trigger); None where the re-run does not show it."""
    for blame in blames:
        if blame.library == finding.library and blame.oracle == finding.trigger:
            return blame.check
    return None


def short_gradient_script(
    *,
    finding: Finding,
    member: Member,
    case: Case,
    check: GradientCheck,
    outcome: Outcome | None,
    version: str,
) -> ShortRepro | None:
    """The short repro of a gradient ``finding``: its minimized ``case`` differentiated with
    the blamed library's own API, then an assertion at the blamed position (``check``) that
    fails while the bug is there. ``outcome``: the library's outcome on the re-run, which
    says whether its gradient came back None (zeros). None where the library has no
    autodiff, the member does not take the blamed input, or the result is several arrays
    (the script pulls back one)."""
    library = finding.library
    value = outcome.value if outcome is not None else None
    if isinstance(value, tuple | list):
        return None
    r = _ShortRenderer(library, member.api)

    def cot(shape: str) -> list[str]:
        return [
            f"shape = {shape}  # the cotangent xamt pulls back: the same in every library",
            f"cot = (((numpy.arange(int(numpy.prod(shape))) * 5 + {case.seed}) % 8 - 3.5) / 4)"
            ".reshape(shape)",
        ]

    made = _pullback(library, member, case, r, cot)
    role_key = grad_keys(member, (check.role,))
    if made is None or not role_key or role_key[0] not in made.keys:
        return None
    index = made.keys.index(role_key[0])
    grad = outcome.grad if outcome is not None and outcome.grad is not None else ()
    recorded = grad[index] if index < len(grad) else None
    bf16 = isinstance(recorded, BFloat16)
    convert = (TO_NUMPY_BF16 if bf16 else TO_NUMPY).get(library, TO_NUMPY[library])
    variable = made.names[role_key[0]]
    take = f"{convert.format(f'grads[{index}]')}.astype('float64')"
    if index < len(grad) and recorded is None:  # no gradient: zeros, as xamt reads it
        shape = array_of(case.values[check.role]).shape
        take = f"numpy.zeros({shape!r}) if grads[{index}] is None else {take}"
    body = [f"g = {take}  # d<cot, out>/d{variable}"]
    perm = made.transpose.get(role_key[0])
    if perm:
        inverse = tuple(int(i) for i in np.argsort(perm))
        body.append(f"g = numpy.transpose(g, {inverse!r})  # back to xamt's layout")
    at = _index(check.position)
    actual = f"g[{at}]"
    if check.symmetric and _off_diagonal(check.position):
        mirror = _index((*check.position[:-2], check.position[-1], check.position[-2]))
        body.append(
            f"# {variable} is symmetric: xamt differentiates along symmetric directions,"
            f" here g[{at}] + g[{mirror}]"
        )
        actual = f"g[{at}] + g[{mirror}]"
    body += [
        f"# expected: {check.source}",
        f"numpy.testing.assert_allclose({actual}, {exact_scalar(check.expected, 'float64')},"
        f" rtol={check.rtol!r}, atol={check.atol!r})",
    ]
    says = "Run it: it fails (AssertionError) while the bug is there."
    text = short_text(finding, version, says, r, [*made.inputs, *made.lines, *body])
    return ShortRepro(text=text, arrays=dict(r.npz), shows="assertion")


def _index(position: Sequence[int]) -> str:
    """A numpy index of ``position``: ``1, 0, 0``; ``()`` for a 0-d array."""
    return ", ".join(str(i) for i in position) if position else "()"


def _off_diagonal(position: Sequence[int]) -> bool:
    return len(position) >= 2 and position[-1] != position[-2]
