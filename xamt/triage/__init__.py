"""Triage: minimize findings, classify them against known differences, write repro scripts."""
