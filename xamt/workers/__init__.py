"""Workers: one long-lived process per library, started with that library's own interpreter.

Everything in this package except :mod:`xamt.workers.pool` and :mod:`xamt.workers.health` runs
inside a library environment and may import only the standard library and numpy (and, in one
adapter, its one library).
"""
