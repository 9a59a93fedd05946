"""xamt: a cross-framework differential fuzzer for deep-learning library APIs.

Importing xamt imports no deep-learning library: every library runs in its own worker process.
"""

__version__ = "0.1.0"
