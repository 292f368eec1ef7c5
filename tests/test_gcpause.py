"""Tests of gpuconf.gcpause: the collector is paused inside, and its previous state comes back whatever happens."""

from __future__ import annotations

import gc

import pytest

from gpuconf.gcpause import gc_paused


@gc_paused
def _state(fail: bool = False) -> bool:
    if fail:
        raise ValueError("boom")
    return gc.isenabled()


def test_paused_inside_and_enabled_again_after() -> None:
    assert gc.isenabled()
    assert _state() is False
    assert gc.isenabled()


def test_enabled_again_after_an_exception() -> None:
    with pytest.raises(ValueError, match="boom"):
        _state(fail=True)
    assert gc.isenabled()


def test_a_caller_that_disabled_the_collector_keeps_it_disabled() -> None:
    gc.disable()
    try:
        assert _state() is False
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_nested_pauses_restore_the_outer_state() -> None:
    @gc_paused
    def outer() -> tuple[bool, bool]:
        return _state(), gc.isenabled()

    assert outer() == (False, False)
    assert gc.isenabled()
