"""The compiled path of `river-pa evaluate`: a fresh `PAClassifier` or `PARegressor` on CSR
arrays, without delay.

`run` calls the model's `progressive_csr` once per block: it runs the predict-then-learn loop
over the block's events and returns the margins it predicted before each update; River's
metrics are computed from them in compiled code (`river_pa.evaluate.fastmetrics`, equal to
River's metric objects to the bit). The final weights equal a `learn_one` loop's. `why_not`
says when the path does not apply.

"""

from __future__ import annotations

import itertools

import numpy as np

from river_pa.evaluate import fastmetrics
from river_pa.evaluate.events import refused
from river_pa.evaluate.params import build_metrics
from river_pa.evaluate.targets import target_array

__all__ = ["keys", "margin_tracker", "run", "why_not"]


def why_not(first, model, delay: int) -> str | None:
    """None when the compiled path applies to `model` and the first block, else the reason."""
    from river import base

    if delay > 1:  # River's delay 1 is no delay
        return f"delay {delay}: labels are learned late"
    if getattr(model, "_calibrator", None) is not None:
        return "calibration: its probabilities are not the sigmoid of the margin"
    if not hasattr(model, "progressive_csr"):
        kind = "a pipeline" if isinstance(model, base.Wrapper | dict) or hasattr(model, "steps") \
            else type(model).__name__
        return (f"{kind} has no progressive_csr (the compiled path exists for PAClassifier "
                "and PARegressor only)")
    if first.csr is None:
        return "the events are not all numbers (CSR arrays)"
    task = "binary" if isinstance(model, base.Classifier) else "regression"
    if task != first.task:
        return f"{type(model).__name__} on {first.task} data"
    return None


def margin_tracker(names: list[str], model, task: str):
    """Metrics fed from margins: compiled when every name has a compiled twin (River's
    metric module, which imports scipy.stats, is then never imported), else River's."""
    if all(n in fastmetrics.SUPPORTED[task] for n in names):
        return fastmetrics.MarginMetrics(names, task)
    return fastmetrics.RiverMarginMetrics(build_metrics(names, model), task)


def keys(csr):
    return csr.keys if csr.keys is not None else range(int(csr.indices.max(initial=-1)) + 1)


def run(first, blocks, model, names: list[str], every: int, clock) -> bool:
    """Progressive validation with the model's `progressive_csr`, called once per block (a
    chunk of the file, whatever `every` is); the metrics are fed the block's margins `every`
    events at a time for the report rows (`clock`, a `results.Clock`). False, the model
    untouched, if the first call refuses the columns (two share a weight). A later block that
    is refused, or a block without CSR arrays, is learned one event at a time."""
    tracker = margin_tracker(names, model, first.task)
    step = 0
    for block in itertools.chain([first], blocks):
        csr = block.csr
        try:
            if csr is None:
                raise ValueError("no CSR arrays")
            margins = model.progressive_csr(csr.indptr, csr.indices, csr.data, csr.y, keys(csr))
        except ValueError:
            if step == 0:
                return False
            margins = _margins_one_by_one(model, block, step)
        y = target_array(block.y, block.task)
        lo = 0
        while lo < len(block):
            hi = min(lo + every - step % every, len(block))
            tracker.update(y[lo:hi], margins[lo:hi])
            step += hi - lo
            lo = hi
            if step % every == 0:
                clock.checkpoint(step, tracker.values())
    if not clock.rows or clock.rows[-1].step != step:
        clock.checkpoint(step, tracker.values())
    return True


def _margins_one_by_one(model, block, step: int) -> np.ndarray:
    """The margins of a predict-then-learn loop over a block's dicts; errors name the event
    (`events.refused`)."""
    margin = getattr(model, "decision_function_one", model.predict_one)
    out = np.empty(len(block))
    for i, (x, y) in enumerate(block):
        try:
            out[i] = margin(x)
            model.learn_one(x, y)
        except (TypeError, ValueError) as exc:
            raise refused(exc, block, i, step + i + 1) from exc
    return out
