"""The examples' reproductions: USPS (Section 10.3) in full, the River comparisons."""

from __future__ import annotations

import json

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
    results = usps.main(["--quick", "--out", str(tmp_path)])
    assert (tmp_path / "usps_multiclass.png").stat().st_size > 0
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
    table, ml = comparison.main(["--quick", "--out", str(tmp_path)])
    assert (tmp_path / "multiclass_comparison.png").stat().st_size > 0
    empty = ml.pop("empty set")
    assert empty[1] == 0.0
    for hamming, f1 in ml.values():
        assert 0.0 < hamming < empty[0] + 0.05 and 0.3 < f1 < 1.0


def test_which_learner_quick_mode(load_example, tmp_path):
    """The guide's claims on the first 5,000 events of each set (about 10 s). Full-run figures
    in README "Which learner when"; quick-run ones in the comments."""
    from river_pa.evaluate.datasets import shared_folder

    if not (shared_folder() / "elec2").is_dir():
        pytest.skip(f"shared data missing: {shared_folder()}")
    guide = load_example("which_learner")
    tables = guide.main(["--quick", "--out", str(tmp_path)])
    assert json.loads((tmp_path / "which_learner.json").read_text())["drift"] == \
        {k: list(v) for k, v in tables["drift"].items()}
    scale, drift, kernel = tables["scale"], tables["drift"], tables["kernel"]
    # raw copy: the scale-invariant learners' hinge loss unchanged (0.388, 0.962), RescaledExp's
    # 0.457 -> 133
    for name in ("CoordinateScaleInvariant", "FullScaleInvariant"):
        assert scale[name][3] == pytest.approx(scale[name][1], rel=1e-6)
    assert scale["RescaledExpClassifier"][3] > 20 * scale["RescaledExpClassifier"][1]
    # drift (elec2): C = 1 (83.9%) ahead of C = 0.01 (61.9%); stationary (a9a): the reverse
    assert drift["PAClassifier(C=1)"][0] > drift["PAClassifier(C=0.01)"][0] + 10
    assert drift["PAClassifier(C=0.01)"][1] > drift["PAClassifier(C=1)"][1] + 1
    # untuned: FullScaleInvariant within 1 point of the best C on both (83.8 / 83.2)
    for j in (0, 1):
        best = max(v[j] for k, v in drift.items() if k.startswith("PAClassifier"))
        assert drift["FullScaleInvariant"][j] > best - 1.0
    # hashing keeps the vocabulary's accuracy (82.06%) at fixed memory
    accuracies = {a for a, _ in tables["hashing"].values()}
    assert len(accuracies) == 1
    # dense USPS: kernel 5.40% vs linear 11.38%; the budget holds 500 vectors at 6.88%
    assert kernel["no budget"][0] < 0.6 * kernel["linear PAMultiClassifier()"][0]
    assert kernel["budget 500 (projectron)"][1] == 500
    assert kernel["budget 500 (projectron)"][0] < 1.5 * kernel["no budget"][0]
