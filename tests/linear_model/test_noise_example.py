"""A reduced run of examples/noise_robustness.py asserts the paper's Section 10 findings."""

from __future__ import annotations

import numpy as np
import pytest

@pytest.fixture(scope="module")
def example(load_example):
    return load_example("noise_robustness")


def test_label_noise_hurts_pa_more_than_pa_i_and_pa_ii(example):
    """Section 10.1: at p = 0.3, PA-I and PA-II (C = 0.001) err less than PA on average."""
    res = example.noise_sweep("label", [0.0, 0.3], C=0.001, n=1000, reps=3)
    pa, pa1, pa2 = (res[v][0] for v in ("PA", "PA-I", "PA-II"))
    assert pa1[1] < pa[1] - 0.05 and pa2[1] < pa[1] - 0.05
    assert abs(pa1[1] - pa2[1]) < 0.02  # "virtually identical"
    assert max(pa[0], pa1[0], pa2[0]) < 0.02  # without noise all three are near perfect


def test_instance_noise_hurts_pa_more(example):
    res = example.noise_sweep("instance", [2.0], C=0.001, n=1000, reps=3)
    assert res["PA-I"][0][0] < res["PA"][0][0] - 0.05
    assert res["PA-II"][0][0] < res["PA"][0][0] - 0.05


def test_small_C_is_robust_to_label_noise(example):
    """Section 10.2: log10 C <= -3 beats log10 C >= 1 when p = 0.2."""
    errors = example.c_sweep(np.array([-3.0, 1.0]), label_noises=(0.2,), n=1000, reps=3)
    for variant in ("PA-I", "PA-II"):
        small, large = errors[variant, 0.2]
        assert small < large - 0.05


def test_quick_run_writes_plots(example, tmp_path, capsys):
    example.main(["--quick", "--out", str(tmp_path)])
    assert (tmp_path / "section_10_1.png").stat().st_size > 10_000
    assert (tmp_path / "section_10_2.png").stat().st_size > 10_000
    assert "Section 10.1, label noise p" in capsys.readouterr().out
