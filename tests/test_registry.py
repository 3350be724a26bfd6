"""`--model module:attribute` builds River estimator classes and clones instances, and calls
nothing else, whether named by a flag, a TOML file or an environment variable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from river import linear_model, preprocessing

from river_pa.registry import make_model

TRUSTED = '''
import river_pa
from river import preprocessing

pipeline = preprocessing.StandardScaler() | river_pa.PAClassifier(C=0.25)
learner = river_pa.PAClassifier(C=0.5)


def factory(**params):
    raise AssertionError("a factory was called")


class NotAnEstimator:
    def __init__(self, **params):
        raise AssertionError("a non-estimator class was called")
'''


@pytest.fixture
def trusted_module(tmp_path, monkeypatch):
    (tmp_path / "trusted_models.py").write_text(TRUSTED)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "trusted_models"


def test_estimator_classes_are_built_with_their_parameters():
    model = make_model("river.linear_model:LogisticRegression", {"l2": 0.1})
    assert isinstance(model, linear_model.LogisticRegression) and model.l2 == 0.1


def test_estimator_instances_are_cloned_never_shared(trusted_module):
    import trusted_models

    model = make_model(f"{trusted_module}:learner", {"C": 2.0})
    assert model.C == 2.0 and trusted_models.learner.C == 0.5 and model is not trusted_models.learner
    pipeline = make_model(f"{trusted_module}:pipeline")
    assert isinstance(pipeline["StandardScaler"], preprocessing.StandardScaler)
    assert pipeline is not trusted_models.pipeline


@pytest.mark.parametrize("attr", ["factory", "NotAnEstimator"])
def test_callables_that_are_not_estimator_classes_are_never_called(trusted_module, attr):
    with pytest.raises(ValueError, match="not a River estimator class or instance"):
        make_model(f"{trusted_module}:{attr}", {"x": 1})


@pytest.mark.parametrize("how", ["flags", "toml", "environment"])
def test_os_system_runs_nothing_from_any_configuration_source(tmp_path, monkeypatch, capsys, how):
    # `--model os:system --model-params '{"command": ...}'` ran the command
    from river_pa.cli import main

    marker = tmp_path / "pwned"
    params = f'{{"command": "touch {marker}"}}'
    argv = ["serve", "--bootstrap-servers", "127.0.0.1:1", "--checkpoint-path", str(tmp_path / "ck"),
            "--report-path", str(tmp_path / "r.jsonl")]
    if how == "flags":
        argv += ["--model", "os:system", "--model-params", params]
    elif how == "toml":
        (tmp_path / "serve.toml").write_text(
            f"model = 'os:system'\n[model_params]\ncommand = 'touch {marker}'\n")
        argv += ["--config", str(tmp_path / "serve.toml")]
    else:
        monkeypatch.setenv("RIVER_PA_MODEL", "os:system")
        monkeypatch.setenv("RIVER_PA_MODEL_PARAMS", params)
    assert main(argv) == 2
    assert "not a River estimator class or instance" in capsys.readouterr().err
    assert not marker.exists()


MODELS_FILE = '''
from river import preprocessing

import helpers  # a sibling module of the current folder

model = preprocessing.StandardScaler() | helpers.learner()
'''


def test_a_module_in_the_current_folder_is_found_without_pythonpath(tmp_path, monkeypatch):
    # `--model mymodels:model` said "No module named 'mymodels'" unless PYTHONPATH=. was set
    (tmp_path / "mymodels.py").write_text(MODELS_FILE)
    (tmp_path / "helpers.py").write_text("import river_pa\n\ndef learner():\n"
                                         "    return river_pa.PAClassifier(C=0.25)\n")
    monkeypatch.chdir(tmp_path)
    for name in ("mymodels", "helpers"):  # imported afresh, and forgotten after the test
        monkeypatch.delitem(sys.modules, name, raising=False)
    path = list(sys.path)
    model = make_model("mymodels:model")
    assert isinstance(model["StandardScaler"], preprocessing.StandardScaler)
    assert model["PAClassifier"].C == 0.25
    assert sys.path == path  # the folder was on the path for that import only


def test_the_river_pa_script_evaluates_a_pipeline_defined_in_a_file_of_the_current_folder(
        tmp_path):
    (tmp_path / "mymodels.py").write_text(MODELS_FILE)
    (tmp_path / "helpers.py").write_text("import river_pa\n\ndef learner():\n"
                                         "    return river_pa.PAClassifier(C=0.25)\n")
    script = Path(sys.executable).with_name("river-pa")
    done = subprocess.run([str(script), "evaluate", "--model", "mymodels:model", "--limit", "200",
                           "--report-path", "run.jsonl", "--quiet"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr
    last = json.loads((tmp_path / "run.jsonl").read_text().splitlines()[-1])
    assert last["events"] == 200


def test_a_missing_module_says_where_it_was_looked_for(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as info:
        make_model("no_models_here:model")
    assert str(info.value) == (f"--model 'no_models_here:model': No module named "
                               f"'no_models_here' (looked in the current folder {tmp_path} first, "
                               "then sys.path)")
