"""What a jax first call costs in a fresh process: eager first and warm calls of 20 jax.numpy
functions on two shapes, then trace, lower and compile of each separately (ms per call); and
what moving an input to jax costs for a new shape and dtype, the way the worker did it
(jnp.array with copy=True, which compiles a conversion) and the way it does now
(jax.device_put of a copy).

Run in the jax environment, with or without a compilation cache:
``JAX_PLATFORMS=cpu ~/.cache/xamt/envs/jax-cpu/bin/python bench/jax_first_call.py``
(``JAX_COMPILATION_CACHE_DIR=DIR JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0
JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=-1``, twice, for a warm cache).
"""

# ruff: noqa
import time, os

t0 = time.perf_counter()
import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np

print("import", round(time.perf_counter() - t0, 2))
fns = [
    "sin",
    "cos",
    "add",
    "multiply",
    "sum",
    "mean",
    "cumsum",
    "sort",
    "argmax",
    "tanh",
    "exp",
    "log1p",
    "maximum",
    "where",
    "clip",
    "round",
    "median",
    "var",
    "std",
    "matmul",
]


def args(name, shape):
    x = np.linspace(-1, 1, int(np.prod(shape))).reshape(shape).astype(np.float32)
    if name in ("add", "multiply", "maximum", "matmul"):
        return (x, x if name != "matmul" else x.T)
    if name == "where":
        return (x > 0, x, -x)
    if name == "clip":
        return (x, -0.5, 0.5)
    return (x,)


tot = {"eager_first": 0, "eager_warm": 0, "trace": 0, "lower": 0, "compile": 0}
for shape in [(3, 4), (5, 2)]:
    for n in fns:
        f = getattr(jnp, n)
        a = args(n, shape)
        t = time.perf_counter()
        jax.block_until_ready(f(*a))
        tot["eager_first"] += time.perf_counter() - t
        t = time.perf_counter()
        jax.block_until_ready(f(*a))
        tot["eager_warm"] += time.perf_counter() - t
for shape in [(7, 3)]:
    for n in fns:
        f = getattr(jnp, n)
        a = args(n, shape)
        j = jax.jit(f)
        t = time.perf_counter()
        tr = j.trace(*a)
        tot["trace"] += time.perf_counter() - t
        t = time.perf_counter()
        lo = tr.lower()
        tot["lower"] += time.perf_counter() - t
        t = time.perf_counter()
        co = lo.compile()
        tot["compile"] += time.perf_counter() - t
print(
    {k: round(v / (40 if k.startswith("eager") else 20) * 1000, 1) for k, v in tot.items()},
    "ms per call",
)


conv = {"jnp.array(copy=True)": 0.0, "device_put(copy)": 0.0}
count = 0
for rows in range(1, 21):
    for dtype in (np.float32, np.float64, np.int32, np.complex64):
        count += 1
        for i, (label, convert) in enumerate(
            (
                ("jnp.array(copy=True)", lambda x: jnp.array(x, dtype=x.dtype, copy=True)),
                ("device_put(copy)", lambda x: jax.device_put(np.array(x, copy=True))),
            )
        ):
            x = np.ones((rows, 3 + i), dtype)  # a shape neither way has met
            t = time.perf_counter()
            jax.block_until_ready(convert(x))
            conv[label] += time.perf_counter() - t
print({k: round(v / count * 1000, 2) for k, v in conv.items()}, "ms per input of a new shape")
