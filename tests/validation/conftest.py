"""Loads the validation images' check scripts (validation/ is not a package of the project)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

VALIDATION = Path(__file__).resolve().parents[2] / "validation"
if str(VALIDATION) not in sys.path:
    sys.path.insert(0, str(VALIDATION))  # the checks import their shared `report` module, as in the images


def load(name: str) -> ModuleType:
    """validation/<name>.py as the module `magicstick_validation_<name>`."""
    module_name = f"magicstick_validation_{name}"
    spec = importlib.util.spec_from_file_location(module_name, VALIDATION / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
