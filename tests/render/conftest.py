from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.inputs import render_demo


@pytest.fixture(scope="session")
def demo_render(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo rendered once at NOW; tests only read it (copy it to change it)."""
    return render_demo(tmp_path_factory.mktemp("demo"))
