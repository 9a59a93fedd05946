"""Library adapters: one module per library, loaded by name inside its worker."""
