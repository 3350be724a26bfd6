"""The `river-pa` command line: subcommands, --version, one-line usage errors with status 2,
every serve flag with help and default, the same flag names in evaluate and serve."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import string
import subprocess
import sys

import pytest

from river_pa import __version__, cli
from river_pa.connectors.config import ServeConfig, add_arguments, load_config


def subcommand(name: str) -> argparse.ArgumentParser:
    parser = cli.build_parser()
    actions = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return actions.choices[name]


def test_version(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out == f"river-pa {__version__}\n"


def test_every_serve_flag_has_help_and_shows_its_default():
    flags = {a.dest: a for a in subcommand("serve")._actions if a.dest != "help"}
    assert set(flags) == {"config", *(f.name for f in dataclasses.fields(ServeConfig))}
    for f in dataclasses.fields(ServeConfig):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        shown = "none" if default is None else json.dumps(default) if isinstance(
            default, (dict, list)) else str(default)
        text = flags[f.name].help
        assert text.count("(default: ") == 1, f.name  # one default, also where the help has its own
        assert f"(default: {shown}; RIVER_PA_{f.name.upper()})" in text or (
            f"(RIVER_PA_{f.name.upper()})" in text and "(default: " in text), f.name


def test_evaluate_and_serve_use_the_same_names_for_the_same_things():
    def visible(name):
        return {s for a in subcommand(name)._actions if a.help != argparse.SUPPRESS
                for s in a.option_strings}

    shared = {"--model", "--model-params", "--metric", "--report-path"}
    assert shared <= visible("evaluate") & visible("serve")
    assert not {"--params", "--report"} & (visible("evaluate") | visible("serve"))
    metric = {name: next(a for a in subcommand(name)._actions if a.dest == "metric")
              for name in ("evaluate", "serve")}
    assert all(isinstance(a, argparse._AppendAction) for a in metric.values())


def test_the_old_evaluate_names_still_work(tmp_path):
    args = cli.build_parser().parse_args(["evaluate", "--params", '{"C": 2}', "--report", "r"])
    assert (args.model_params, args.report_path) == ('{"C": 2}', "r")


@pytest.mark.parametrize("argv, message", [
    (["nope"], "river-pa: argument {evaluate,serve,report,topics,models}: invalid choice: 'nope'"),
    (["topics"], "river-pa topics: the following arguments are required: {create}"),
    (["evaluate", "--delay", "x"], "river-pa evaluate: argument --delay: invalid int value: 'x'"),
    (["serve", "--rolling-window", "x"], "argument --rolling-window: invalid int value: 'x'"),
    (["serve", "--model-params", "[1]"], "argument --model-params: not a JSON object: '[1]'"),
    (["serve", "--role", "nope"], "argument --role: invalid choice: 'nope'"),
    (["serve", "--metrics-port", "99999"], "argument --metrics-port: must be a TCP port"),
    (["report"], "river-pa report: the following arguments are required: file"),
    ([], "usage: river-pa"),
])
def test_usage_errors_are_one_line_on_stderr_with_status_2(capsys, argv, message):
    assert cli.main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("command", ["evaluate", "serve"])
def test_an_unknown_metric_is_one_line_with_status_2(capsys, command):
    extra = ["--bootstrap-servers", "127.0.0.1:1"] if command == "serve" else []
    assert cli.main([command, "--metric", "Accuracy,Nope", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"river-pa {command}: unknown metric 'Nope'; choose one of Accuracy,")
    assert err.count("\n") == 1


def test_serve_metrics_from_flags_environment_and_toml(tmp_path):
    assert load_config(["--metric", "Accuracy", "--metric", "LogLoss"], {}).metric == [
        "Accuracy", "LogLoss"]
    assert load_config([], {"RIVER_PA_METRIC": "Accuracy,F1"}).metric == ["Accuracy,F1"]
    toml = tmp_path / "serve.toml"
    toml.write_text('metric = ["MAE", "RMSE"]\n')
    assert load_config(["--config", str(toml)], {}).metric == ["MAE", "RMSE"]
    toml.write_text("metric = [1]\n")
    with pytest.raises(SystemExit, match="metric must be metric names"):
        load_config(["--config", str(toml)], {})


def test_the_command_line_imports_each_side_lazily():
    code = ("import sys; from river_pa import cli; cli.build_parser(); "
            "print(sorted(m for m in ('kafka', 'river', 'numpy', 'numba', 'matplotlib', 'rich',"
            " 'river_pa.connectors.loop.daemon', 'river_pa.evaluate.job') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "[]"


def test_evaluate_and_report_do_not_import_serve_flags():
    """serve's flags (river_pa.connectors.config) are defined only when serve or topics may
    run."""
    code = ("import sys; from river_pa import cli; cli.build_parser('{}'); "
            "print('river_pa.connectors.config' in sys.modules)")
    seen = [subprocess.run([sys.executable, "-c", code.format(c)], capture_output=True,
                           text=True, timeout=120, check=True).stdout.strip()
            for c in ("evaluate", "report", "serve", "topics")]
    assert seen == ["False", "False", "True", "True"]


MODEL_MODULES = {  # modules on the path of the tests below
    "raises_on_import": 'raise RuntimeError("boom\\nsecond line")\n',
    "exits_on_import": "import sys\nsys.exit(0)\n",
}


@pytest.mark.parametrize("spec, why", [
    # a relative import raised TypeError out of `serve`: a traceback and status 1
    (".evil:x", "not 'module:attribute' (an absolute dotted module name, no relative import"),
    ("river.linear_model:", "not 'module:attribute'"),
    ("no_such_module_here:Model", "No module named 'no_such_module_here'"),
    ("river.linear_model:Nope", "module 'river.linear_model' (/"),
    ("os:sep", "a str, not a River estimator class or instance"),
    ("Nope", "unknown model; choose one of CoordinateScaleInvariantClassifier,"),
    ("raises_on_import:Model", "importing raises_on_import raised RuntimeError: boom"),
    ("exits_on_import:Model", "importing exits_on_import raised SystemExit: 0"),
])
def test_a_model_spec_that_names_no_estimator_is_one_line_with_status_2(tmp_path, spec, why):
    for name, code in MODEL_MODULES.items():
        (tmp_path / f"{name}.py").write_text(code)
    done = subprocess.run(
        [sys.executable, "-m", "river_pa", "serve", "--model", spec,
         "--bootstrap-servers", "127.0.0.1:1"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.startswith(f"river-pa serve: --model {spec!r}: {why}"), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


def test_a_module_shadowed_by_one_already_imported_is_named_by_its_file(tmp_path):
    """`string.py` in the current folder loses to the standard library's `string`, imported at
    start-up: the message gives the file that was found, so the user sees the clash."""
    (tmp_path / "string.py").write_text("from river_pa import PAClassifier\nmodel = PAClassifier()\n")
    done = subprocess.run([sys.executable, "-m", "river_pa", "serve", "--model", "string:model",
                           "--bootstrap-servers", "127.0.0.1:1"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (f"river-pa serve: --model 'string:model': module 'string' "
                           f"({string.__file__}) has no attribute 'model'\n")


@pytest.mark.parametrize("spec", ["river..linear_model:X", ":LinearRegression", "river:",
                                  "river.linear_model:LinearRegression:x", " os:sep", "os.:sep"])
def test_a_malformed_model_spec_imports_nothing(spec):
    from river_pa.registry import make_model

    with pytest.raises(ValueError) as info:
        make_model(spec)
    assert str(info.value).startswith(f"--model {spec!r}: not 'module:attribute'")


@pytest.mark.parametrize("command", ["evaluate", "serve"])
def test_the_model_help_promises_no_factory(command, capsys):
    # evaluate's help said 'module:factory' while factories are refused
    assert cli.main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "module:factory" not in text and "factories are not called" in text


def test_each_serve_flag_states_one_default():
    # --model-topic said "(default '<events_topic>.model') (default: none; ...)"
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    helps = {a.dest: a.help for a in parser._actions if a.help}
    assert {dest: text for dest, text in helps.items() if text.count("default") != 1
            and dest != "help"} == {"config": helps["config"]}
    assert helps["model_topic"].endswith("(default: '<events_topic>.model') (RIVER_PA_MODEL_TOPIC)")
