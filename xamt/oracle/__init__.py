"""Oracles: compare one case's outcomes across libraries, score divergence, sign findings.

Pure Python and numpy: nothing here imports a deep-learning library.
"""

from xamt.oracle.compare import IGNORED_STATUSES, compare, divergence
from xamt.oracle.signature import SIGNATURE_VERSION, normalize_message, signature_of
from xamt.tolerance import TOLERANCE, tolerance

__all__ = [
    "IGNORED_STATUSES",
    "SIGNATURE_VERSION",
    "TOLERANCE",
    "compare",
    "divergence",
    "normalize_message",
    "signature_of",
    "tolerance",
]
