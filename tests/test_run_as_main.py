"""`python -m river_pa` run from a folder of look-alike modules imports none of them."""

from __future__ import annotations

import subprocess
import sys

SHADOWS = ("json", "numpy", "river", "argparse", "tomllib", "orjson", "kafka")


def test_python_m_river_pa_ignores_modules_in_the_current_folder(tmp_path):
    # it imported ./argparse.py, ./json.py and ./numpy.py (the console script did not)
    for name in SHADOWS:
        (tmp_path / f"{name}.py").write_text(f"open({str(tmp_path / ('IMPORTED-' + name))!r}, 'w').close()\n")
    done = subprocess.run([sys.executable, "-m", "river_pa", "evaluate", "--limit", "20", "--quiet"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.glob("IMPORTED-*")) == []


def test_only_python_dash_p_ignores_a_river_pa_module_in_the_current_folder(tmp_path):
    # README: -m imports ./river_pa.py before any of our code runs; -P (or the script) does not
    (tmp_path / "river_pa.py").write_text("print('SHADOW')\n")
    run = [sys.executable, "-m", "river_pa", "--version"]
    shadowed = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert shadowed.stdout.strip() == "SHADOW"
    done = subprocess.run([sys.executable, "-P", *run[1:]], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and "SHADOW" not in done.stdout and done.stdout.strip(), done
