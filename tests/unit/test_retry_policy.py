"""The one retry policy (docs/engine.md, "Retry policy"): budgets, jitter bounds, the time window."""

from __future__ import annotations

import pytest

from autonumber.engine import DEFAULT_MAX_RETRIES, RetryPolicy


def test_defaults_are_the_seeds_numbers() -> None:
    policy = RetryPolicy()
    assert policy.attempts == DEFAULT_MAX_RETRIES == 5
    assert (policy.cas_attempts, policy.fallback_attempts, policy.atomic_attempts) == (5, 10, 20)
    assert (policy.lazy_attempts, policy.group_attempts) == (10, 5)


def test_every_budget_follows_max_retries() -> None:
    policy = RetryPolicy(attempts=20)
    assert (policy.cas_attempts, policy.fallback_attempts, policy.atomic_attempts) == (20, 40, 80)
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(attempts=0)


@pytest.mark.parametrize(("retry", "bound_ms"), [(0, 8), (1, 16), (4, 128), (6, 512), (30, 512)])
def test_jitter_is_rand_0_to_2_pow_k_plus_3_ms_capped(retry: int, bound_ms: int) -> None:
    policy = RetryPolicy()
    sleeps = [policy.jitter(retry) for _ in range(200)]
    assert all(0 <= s <= bound_ms / 1000 for s in sleeps)
    assert len(set(sleeps)) > 100


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_attempts_alone_bound_an_unwindowed_lane() -> None:
    clock = FakeClock()
    tries = RetryPolicy().tries(5, clock.sleep, windowed=False, clock=clock)
    assert [tries.again() for _ in range(5)] == [True, True, True, True, False]
    assert tries.losses == 5


def test_a_windowed_lane_keeps_retrying_until_the_window_has_passed() -> None:
    clock = FakeClock()
    tries = RetryPolicy(window_s=10.0).tries(5, clock.sleep, clock=clock)
    while tries.again():
        pass
    assert tries.losses > 5, "the attempts ran out long before 10 s of jitter"
    assert 10.0 <= clock.now < 10.6


def test_engine_and_platform_share_one_default_strategy_and_budget() -> None:
    from inspect import signature

    from autonumber.engine import DEFAULT_STRATEGY, Engine
    from autonumber.runtime import Settings

    engine, settings = signature(Engine.__init__).parameters, Settings()
    assert engine["strategy"].default == settings.strategy == DEFAULT_STRATEGY == "combining"
    assert engine["max_retries"].default == settings.max_retries == DEFAULT_MAX_RETRIES
