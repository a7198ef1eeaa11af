#!/usr/bin/env python3
"""`onyx run --profile` and `onyx bench --profile` write Chrome traces: checks
each against the Trace Event Format's rules for complete ("X") events, and
that every step of every run has its event (one per kernel).

    profile_trace_test.py ONYX_CLI MODEL.onnx
"""
import json
import subprocess
import sys
import tempfile


def check_trace(path, runs):
    with open(path) as f:
        trace = json.load(f)
    assert isinstance(trace, dict) and isinstance(trace.get("traceEvents"), list), "traceEvents must be a list"
    events = trace["traceEvents"]
    for e in events:
        assert isinstance(e.get("name"), str) and e["name"], e
        assert isinstance(e.get("cat"), str), e
        assert e.get("ph") == "X", e
        assert isinstance(e.get("ts"), (int, float)) and e["ts"] >= 0, e
        assert isinstance(e.get("dur"), (int, float)) and e["dur"] >= 0, e
        assert isinstance(e.get("pid"), int) and isinstance(e.get("tid"), int), e
        assert all(isinstance(v, str) for v in e.get("args", {}).values()), e
    run_events = [e for e in events if e["cat"] == "run"]
    assert len(run_events) == runs, f"{len(run_events)} run events, expected {runs}"
    steps = [e for e in events if e["cat"] in ("kernel", "copy", "control_flow")]
    per_run = int(run_events[0]["args"]["steps"])
    assert len(steps) == runs * per_run, f"{len(steps)} step events for {runs} runs of {per_run} steps"
    kernels = [e for e in steps if e["cat"] == "kernel"]
    assert kernels and all(e["args"].get("provider") == "cpu" and e["args"].get("op") for e in kernels)
    for run in run_events:  # each step lies inside a run
        inside = [e for e in steps if run["ts"] <= e["ts"] and e["ts"] + e["dur"] <= run["ts"] + run["dur"] + 1e-3]
        assert len(inside) >= per_run, "steps must fall inside their run"
    return len(kernels)


def main():
    cli, model = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        run_trace, bench_trace = f"{tmp}/run.json", f"{tmp}/bench.json"
        subprocess.run([cli, "run", model, "--provider", "cpu", "--fallback", "fail", "--profile", run_trace],
                       check=True, capture_output=True)
        kernels = check_trace(run_trace, runs=1)
        subprocess.run([cli, "bench", model, "--warmup", "2", "--iterations", "5", "--profile", bench_trace],
                       check=True, capture_output=True)
        check_trace(bench_trace, runs=5)
    print(f"profile traces valid: {kernels} kernel events per run")


if __name__ == "__main__":
    main()
