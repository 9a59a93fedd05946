"""A campaign stopped as GitHub Actions cancels a job (SIGINT, then SIGTERM 7.5 s later; or
SIGTERM arriving during the wind-down), resumed with `xamt fuzz --resume --out DIR` alone, runs
exactly the cases and candidates of the uninterrupted campaign of the same seed, and stops
within seconds with a partial findings.json (bench/interrupt.py runs every scenario: SIGINT at
three points, to the process group, SIGTERM, kill -9)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import interrupt  # noqa: E402

WIND_DOWN_S = 5.0  # the target: what is there is written within 5 s


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, pythons: dict[str, str]) -> Path:
    return interrupt.reference_run(tmp_path_factory.mktemp("interrupt"))


@pytest.mark.parametrize(
    ("scenario", "code"),
    [("sigint-then-sigterm", 130), ("sigint-then-sigterm-fast", 130), ("sigterm", 143)],
)
def test_a_cancelled_campaign_resumes_to_the_uninterrupted_one(
    reference: Path, tmp_path: Path, scenario: str, code: int
) -> None:
    o = interrupt.run_scenario(scenario, tmp_path, reference)
    assert o.at < interrupt.CASES, "the campaign ended before the signal"
    assert o.code == code, o
    assert o.wind_down < WIND_DOWN_S, o
    # findings.json counts the cases the store holds: none that did not run
    assert o.partial is True and o.stopped_cases == o.stored >= o.at, o
    assert o.resumed_code == 0, o
    assert o.identical, o.detail
