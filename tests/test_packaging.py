"""Packaging: `import river_pa` stays cheap, and the package metadata is complete."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("pandas", "scipy", "matplotlib", "rich", "kafka")


def imported_after(code: str) -> list[str]:
    """Top-level packages among HEAVY that `code` imports in a fresh interpreter."""
    probe = (f"{code}; import json, sys; "
             f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r})))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, check=True, cwd="/")
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_river_pa_loads_no_heavy_package():
    assert imported_after("import river_pa; river_pa.__all__") == []


def test_every_subpackage_is_installed():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = set(meta["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts)
               for p in (ROOT / "river_pa").rglob("__init__.py")}
    assert on_disk <= packages and "river_pa.connectors" in packages
    assert meta["project"]["classifiers"] and meta["project"]["urls"]["Repository"]


def test_every_subpackage_of_connectors_is_installed():
    # connectors/ installs as river_pa.connectors through package-dir: a folder added under it
    # and not listed in the packages would be missing from the wheel without a word
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert meta["package-dir"] == {"river_pa.connectors": "connectors"}
    # every folder holding Python (one without __init__.py imports from a checkout as a
    # namespace package, and is left out of the wheel all the same)
    on_disk = {".".join(("river_pa", *p.parent.relative_to(ROOT).parts))
               for p in (ROOT / "connectors").rglob("*.py") if "__pycache__" not in p.parts}
    assert len(on_disk) > 1 and on_disk == {p for p in meta["packages"]
                                            if p.startswith("river_pa.connectors")}
