"""The environment a library's worker starts with (xamt/workers/pool.py worker_env)."""

from __future__ import annotations

from xamt.workers.pool import JAX_CACHE_ENV, jax_cache_dir, worker_env


def test_jax_keeps_every_kernel_in_its_cache_whoever_names_the_folder() -> None:
    """A user who names the cache folder (JAX_COMPILATION_CACHE_DIR) still gets the thresholds
    that make jax keep every compiled kernel: without them jax keeps only kernels that took a
    second to compile, none of a campaign's (a whole campaign left 16 entries)."""
    default = worker_env("jax", {"PATH": "/bin", "PYTHONPATH": "/x"})
    assert default["JAX_COMPILATION_CACHE_DIR"] == str(jax_cache_dir())
    assert "PYTHONPATH" not in default and default["PATH"] == "/bin"
    named = worker_env("jax", {"JAX_COMPILATION_CACHE_DIR": "/tmp/mine"})
    assert named["JAX_COMPILATION_CACHE_DIR"] == "/tmp/mine"
    for name, value in JAX_CACHE_ENV.items():
        assert default[name] == named[name] == value
    own = worker_env("jax", {"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "2"})
    assert own["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "2"  # the user's choice stays
    assert "JAX_COMPILATION_CACHE_DIR" not in worker_env("torch", {})
