"""The hosts' allocator tuning: applied on glibc, and switchable off."""

from __future__ import annotations

import platform

import pytest

from cdc_smt.connector.tuning import tune_allocator


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt tuning is glibc-only")
def test_applies_on_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CDC_SMT_MALLOC_TUNING", raising=False)
    assert tune_allocator() is True


@pytest.mark.parametrize("value", ["off", "0", "false", "NO"])
def test_can_be_switched_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CDC_SMT_MALLOC_TUNING", value)
    assert tune_allocator() is False
