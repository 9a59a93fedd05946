"""Seeded, framework-neutral inputs: values by class, shapes, parameters by role, tags."""
