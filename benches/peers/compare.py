#!/usr/bin/env python3
"""Prints one comparison table from an mx2d summary JSON and a peers JSON (see run.sh).

Usage: compare.py balls_box|pyramid MX2D_SUMMARY.json PEERS.json "caption"

mx2d's summary keys are read defensively: a key that is absent (the field is not in this
build of mx2d yet) or a summary that is missing (the run failed: its stderr is shown) prints
"n/a" rather than stopping the comparison.
"""
import json
import math
import os
import re
import sys

# Candidate names of each quality figure in mx2d's summary, most likely first. A dotted name
# is tried both as a literal key and as a path into nested objects.
MX2D_KEYS = {
    "ms": ["ms_per_step"],
    "ke0": ["population.initial.kinetic_per_ball", "population.kinetic_energy_per_ball_initial", "kinetic_energy_per_ball_initial",
            "population.initial_kinetic_energy_per_ball"],
    "ke": ["population.kinetic_per_ball", "population.kinetic_energy_per_ball", "kinetic_energy_per_ball",
           "population.kinetic_energy_per_ball_final"],
    "ov_end": ["population.max_overlap_ratio", "population.max_penetration_ratio", "max_penetration_ratio",
               "population.max_penetration_ratio_final", "population.penetration_ratio"],
    "ov_run": ["population.max_overlap_ratio_seen", "population.max_penetration_ratio_run", "max_penetration_ratio_run",
               "population.max_penetration_ratio_max"],
    "escaped": ["population.escaped", "escaped", "population.balls_lost", "balls_lost",
                "population.lost"],
    "drift": ["max_drift", "contacts.max_drift", "stack.max_drift", "max_body_drift"],
    "pen": ["max_penetration"],
    "ke_body": ["kinetic_energy_per_body", "contacts.kinetic_energy_per_body"],
}


def lookup(d, names):
    for name in names:
        if d is None:
            return None
        if name in d:
            return d[name]
        node = d
        for part in name.split("."):
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                break
        if node is not None and not isinstance(node, dict):
            return node
    return None


def fmt(v, spec):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        width = re.match(r"\D*(\d+)", spec)
        return "n/a".rjust(int(width.group(1)) if width else 0)
    return format(v, spec)


def load_mx2d(path):
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f), None
    why = "no summary"
    err = path + ".err"
    if os.path.exists(err):
        with open(err) as f:
            lines = [l.strip() for l in f if l.strip()]
        if lines:
            why = lines[0][:160]
    return None, why


def main():
    scene, mx2d_path, peers_path, caption = sys.argv[1:5]
    mx2d, why = load_mx2d(mx2d_path)
    with open(peers_path) as f:
        peers = json.load(f)
    mx_ms = lookup(mx2d, MX2D_KEYS["ms"])
    rows = [("mx2d", mx2d, True)] + [(name, rec, False) for name, rec in peers.items()]
    print()
    print(f"{scene}: {caption}")
    if mx2d is None:
        print(f"  mx2d: n/a ({why})")
    if scene == "balls_box":
        head = (f"  {'engine':<7} {'ms/step':>9} {'÷ mx2d':>8} {'KE/ball t=0':>12} {'KE/ball end':>12}"
                f" {'overlap/r end':>13} {'overlap/r max':>13} {'escaped':>8}")
        print(head)
        for name, rec, is_mx in rows:
            if is_mx:
                ms, ke0, ke = (lookup(rec, MX2D_KEYS[k]) for k in ("ms", "ke0", "ke"))
                ov_end, ov_run, esc = (lookup(rec, MX2D_KEYS[k]) for k in ("ov_end", "ov_run", "escaped"))
            else:
                ms, ke0, ke = rec["ms_per_step"], rec["kinetic_energy_per_ball_initial"], rec["kinetic_energy_per_ball"]
                ov_end, ov_run, esc = rec["max_overlap_ratio_end"], rec["max_overlap_ratio_run"], rec["escaped"]
            ratio = ms / mx_ms if (ms is not None and mx_ms) else None
            print(f"  {name:<7} {fmt(ms, '9.3f')} {fmt(ratio, '8.2f')} {fmt(ke0, '12.4e')} {fmt(ke, '12.4e')}"
                  f" {fmt(ov_end, '13.4f')} {fmt(ov_run, '13.4f')} {fmt(esc, '>8')}")
    else:
        head = (f"  {'engine':<7} {'ms/step':>9} {'÷ mx2d':>8} {'drift m':>10} {'drift/size':>10}"
                f" {'pen. end m':>11} {'pen. max m':>11} {'KE/box J':>10}")
        print(head)
        for name, rec, is_mx in rows:
            if is_mx:
                ms, drift, pen, ke = (lookup(rec, MX2D_KEYS[k]) for k in ("ms", "drift", "pen", "ke_body"))
                pen_end = None
                drift_ratio = drift / 1.0 if drift is not None else None
            else:
                ms, drift, ke = rec["ms_per_step"], rec["max_drift"], rec["kinetic_energy_per_box"]
                pen_end, pen, drift_ratio = rec["max_penetration_end"], rec["max_penetration_run"], rec["max_drift_ratio"]
            ratio = ms / mx_ms if (ms is not None and mx_ms) else None
            print(f"  {name:<7} {fmt(ms, '9.3f')} {fmt(ratio, '8.2f')} {fmt(drift, '10.3e')} {fmt(drift_ratio, '10.3e')}"
                  f" {fmt(pen_end, '11.3e')} {fmt(pen, '11.3e')} {fmt(ke, '10.3e')}")
    print("  (÷ mx2d: the engine's ms/step over mx2d's; > 1 means mx2d is faster)")


if __name__ == "__main__":
    main()
