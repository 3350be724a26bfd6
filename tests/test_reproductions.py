"""The examples' reproductions: USPS (Section 10.3) in full, the River comparisons."""

from __future__ import annotations

import pytest

@pytest.fixture(scope="module")
def usps(load_example):
    return load_example("usps_multiclass")


@pytest.fixture(scope="module")
def comparison(load_example):
    return load_example("multiclass_comparison")


@pytest.fixture(scope="module")
def usps_data(usps):
    if not usps.DATA.exists():
        pytest.skip(f"shared data missing: {usps.DATA}")
    return usps.load_usps()


def test_usps_pa1_beats_the_perceptron_on_the_full_pass(usps, usps_data):
    """All 7,291 digits in file order (about 10 s): PA-I <= 5.0%, >= 2.5 points below."""
    X, y = usps_data
    assert X.shape == (7291, 256) and X.min() == -1.0 and X.max() == 1.0
    results = usps.run(X, y, ("PA-I", "Perceptron"))
    pa1 = 100 * results["PA-I"][0].mean()
    perceptron = 100 * results["Perceptron"][0].mean()
    assert pa1 <= 5.0
    assert perceptron - pa1 >= 2.5


def test_usps_example_quick_mode(usps, tmp_path):
    if not usps.DATA.exists():
        pytest.skip(f"shared data missing: {usps.DATA}")
    results = usps.main(["--quick", "--plot", str(tmp_path / "usps.png")])
    assert (tmp_path / "usps.png").stat().st_size > 0
    errors = {name: m.mean() for name, (m, _, _) in results.items()}
    assert len(results["PA"][0]) == usps.QUICK_ROUNDS
    assert errors["PA-I"] < errors["Perceptron"]


def test_multiclass_pa_beats_one_vs_rest_on_both_data_sets(comparison):
    """Full ImageSegments (2,310) and digits (1,797): our online error <= River's."""
    table = comparison.multiclass_table()
    for name, (ours, rivers) in table.items():
        assert ours.mean() <= rivers.mean(), name


def test_comparison_example_quick_mode(comparison, tmp_path):
    if not comparison.EMOTIONS.exists():
        pytest.skip(f"shared data missing: {comparison.EMOTIONS}")
    table, ml = comparison.main(["--quick", "--plot", str(tmp_path / "cmp.png")])
    assert (tmp_path / "cmp.png").stat().st_size > 0
    empty = ml.pop("empty set")
    assert empty[1] == 0.0
    for hamming, f1 in ml.values():
        assert 0.0 < hamming < empty[0] + 0.05 and 0.3 < f1 < 1.0
