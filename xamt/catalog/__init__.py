"""The catalog: execution-validated groups of equivalent APIs across libraries."""
