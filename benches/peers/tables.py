#!/usr/bin/env python3
"""Markdown tables from a folder of peer JSON files (balls_box/pyramid --json outputs).

Usage: tables.py DIR    (files named bb_*.json and py_*.json; repeats of one configuration
are shown as "first / second" so the spread is visible.)
"""
import glob
import json
import os
import sys
from collections import defaultdict


def collect(pattern):
    runs = defaultdict(list)  # (size, engine) -> [record, ...]
    for path in sorted(glob.glob(pattern)):
        with open(path) as f:
            for engine, rec in json.load(f).items():
                size = rec.get("n", rec.get("rows"))
                runs[(size, engine)].append(rec)
    return runs


def join(recs, key, spec):
    vals = [r.get(key) for r in recs]
    return " / ".join("n/a" if v is None else format(v, spec) for v in vals)


def main():
    d = sys.argv[1]
    bb = collect(os.path.join(d, "bb_*.json"))
    if bb:
        print("| N | steps | engine | ms/step (wall) | CPU ms/step | KE/ball t=0 → end (J) | overlap/r end | overlap/r max (step) | escaped |")
        print("|---|---|---|---|---|---|---|---|---|")
        for (n, engine), recs in sorted(bb.items()):
            r = recs[0]
            print(f"| {n:,} | {r['steps']} | {engine} ({r['workers']} workers) | {join(recs, 'ms_per_step', '.3g')} | "
                  f"{join(recs, 'cpu_ms_per_step', '.3g')} | {r['kinetic_energy_per_ball_initial']:.3f} → "
                  f"{r['kinetic_energy_per_ball']:.3g} | {r['max_overlap_ratio_end']:.3f} | "
                  f"{r['max_overlap_ratio_run']:.3f} ({r['max_overlap_step']}) | {r['escaped']} |")
        print()
    py = collect(os.path.join(d, "py_*.json"))
    if py:
        print("| rows (boxes) | engine | ms/step (wall) | CPU ms/step | max drift m (/ box size) | of which horizontal, vertical m | penetration end / max m | KE/box end J |")
        print("|---|---|---|---|---|---|---|---|")
        for (rows, engine), recs in sorted(py.items()):
            r = recs[0]
            print(f"| {rows} ({r['boxes']:,}) | {engine} ({r['workers']} workers) | {join(recs, 'ms_per_step', '.3g')} | "
                  f"{join(recs, 'cpu_ms_per_step', '.3g')} | {r['max_drift']:.3g} ({r['max_drift_ratio']:.1%}) | "
                  f"{r.get('max_drift_x', float('nan')):.3g}, {r.get('max_drift_y', float('nan')):.3g} | "
                  f"{r['max_penetration_end']:.3g} / {r['max_penetration_run']:.3g} | {r['kinetic_energy_per_box']:.2g} |")


if __name__ == "__main__":
    main()
