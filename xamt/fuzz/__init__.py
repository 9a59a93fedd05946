"""Fuzz campaigns: schedules, the campaign loop, reproduction."""
