"""Benchmark of the multiclass learners (issue 4), against the anchors the issue names.

1. Linear multiclass, progressive validation (predict_one then learn_one) on scikit-learn's
   digits (64 features, 10 classes; the 1,797 digits three times): `PAMultiClassifier` vs
   River's `OneVsRestClassifier(PAClassifier())`, interleaved rounds in this process, median
   time per event and the ratio (target >= 5x).
2. Kernel PA-I (kernel (x.v)^3, C = 100) one pass over the 7,291 USPS digits (target <= 60 s).
3. The same with `budget=500` over the USPS pass repeated 10 times: time per event of each
   pass (flat once the budget is full) and memory after 1 pass vs after 10 (flat).

Run: ``PYTHONPATH=. python benchmarks/bench_multiclass.py [--quick]``. Timings on a
shared machine are noisy: read the ratios.

"""

from __future__ import annotations

import argparse
import importlib.util
import pickle
import statistics
from pathlib import Path

from river import multiclass, linear_model, stream
from sklearn.datasets import load_digits

import river_pa
from streams import progressive_seconds


def _usps_example():
    path = Path(__file__).resolve().parents[1] / "examples" / "usps_multiclass.py"
    spec = importlib.util.spec_from_file_location("usps_multiclass", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def progressive(model, events) -> float:
    """Seconds per event of predict_one + learn_one over `events`."""
    return progressive_seconds(model, events) / len(events)


def bench_linear(rounds: int, repeat: int) -> None:
    X, y = load_digits(return_X_y=True)
    events = list(stream.iter_array(X, y.tolist())) * repeat
    makers = {
        "PAMultiClassifier": river_pa.PAMultiClassifier,
        "OneVsRest(PAClassifier)": lambda: multiclass.OneVsRestClassifier(
            linear_model.PAClassifier()),
    }
    times = {name: [] for name in makers}
    progressive(river_pa.PAMultiClassifier(), events[:50])  # compile the kernels
    for _ in range(rounds):
        for name, make in makers.items():
            times[name].append(progressive(make(), events))
    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"1. digits x{repeat} ({len(events)} events, 64 features, 10 classes), "
          f"median of {rounds} interleaved rounds")
    for name, t in med.items():
        print(f"   {name:<26}{1e6 * t:9.1f} us/event{1 / t:12,.0f} events/s")
    ratio = med["OneVsRest(PAClassifier)"] / med["PAMultiClassifier"]
    print(f"   speed-up {ratio:.1f}x (target >= 5x): {'met' if ratio >= 5 else 'MISSED'}")


def usps_events(n: int | None):
    usps = _usps_example()
    X, y = usps.load_usps(n=n)
    keys = range(X.shape[1])
    return [(dict(zip(keys, row)), label) for row, label in zip(X.tolist(), y.tolist())]


def kernel_model(budget=None):
    return river_pa.KernelPAClassifier(kernel="poly", degree=3, gamma=1.0, coef0=0.0,
                                       variant="PA-I", C=100.0, budget=budget)


def bench_kernel(events) -> None:
    progressive(kernel_model(), events[:50])
    model = kernel_model()
    t = progressive(model, events) * len(events)
    print(f"2. kernel PA-I, one pass over {len(events)} USPS digits: {t:.1f} s "
          f"({model.n_support} support vectors; target <= 60 s: {'met' if t <= 60 else 'MISSED'})")


def bench_budget(events, passes: int, budget: int) -> None:
    model = kernel_model(budget)
    print(f"3. kernel PA-I, budget {budget}, the USPS pass repeated {passes} times")
    print(f"   {'pass':>4}{'us/event':>10}{'support':>9}{'pickled bytes':>15}"
          f"{'River memory bytes':>20}")
    first = None
    for k in range(passes):
        t = progressive(model, events)
        size = len(pickle.dumps(model))
        memory = model._raw_memory_usage
        first = first or (t, size, memory)
        print(f"   {k + 1:>4}{1e6 * t:>10.1f}{model.n_support:>9}{size:>15,}{memory:>20,}")
    print(f"   after {passes} passes vs 1: time per event x{t / first[0]:.2f}, "
          f"memory x{memory / first[2]:.3f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller streams")
    args = parser.parse_args(argv)
    bench_linear(rounds=3 if args.quick else 5, repeat=1 if args.quick else 3)
    events = usps_events(1500 if args.quick else None)
    bench_kernel(events)
    bench_budget(events, passes=3 if args.quick else 10, budget=500)


if __name__ == "__main__":
    main()
