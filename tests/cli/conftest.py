"""Every CLI test runs in its own empty working folder: `dgsr fit` writes `run/` there by default,
and a user who ran the README's first command has a `run/` of their own in the checkout."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _own_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
