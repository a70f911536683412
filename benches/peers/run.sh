#!/usr/bin/env bash
# Runs mx2d and the peer programs (Box2D v3 via boxdd, rapier2d) on the same scenes at the
# same sizes, back to back, and prints one table per size with the ms/step ratios and the
# quality figures. Run from anywhere; see benches/peers/README.md.
#
#   benches/peers/run.sh [--n "1000 10000"] [--steps 300] [--rows "20 100"]
#                        [--pyramid-steps 600] [--engine both|box2d|rapier]
#                        [--backend cpu|gpu] [--workers W] [--repeat R]
#                        [--skip-build] [--no-pyramid] [--no-balls]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PEERS="$ROOT/benches/peers"
OUT="${OUT:-$PEERS/target/compare}"
NS="1000 10000"
STEPS=300
ROWS="20 100"
PSTEPS=600
ENGINE=both
BACKEND=cpu
WORKERS=""
REPEAT=1
BUILD=1
BALLS=1
PYRAMID=1
# Scene paths mx2d's --set uses for the sizes (override if the scene schema names them otherwise).
COUNT_SET="${COUNT_SET:-population.count}"
ROWS_SET="${ROWS_SET:-rows}"

while [[ $# -gt 0 ]]; do
  case "$1" in
    --n) NS="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --rows) ROWS="$2"; shift 2 ;;
    --pyramid-steps) PSTEPS="$2"; shift 2 ;;
    --engine) ENGINE="$2"; shift 2 ;;
    --backend) BACKEND="$2"; shift 2 ;;
    --workers) WORKERS="$2"; shift 2 ;;
    --repeat) REPEAT="$2"; shift 2 ;;
    --skip-build) BUILD=0; shift ;;
    --no-pyramid) PYRAMID=0; shift ;;
    --no-balls) BALLS=0; shift ;;
    -h|--help) sed -n 2,10p "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

if [[ $BUILD == 1 ]]; then
  echo "== building mx2d and the peers (release)" >&2
  (cd "$ROOT" && cargo build --release --bin mx2d)
  cargo build --release --manifest-path "$PEERS/Cargo.toml"
fi
# MX2D_BIN and PEERS_BIN_DIR point at binaries built elsewhere (a lent GPU machine, benches/gpu_device.sh).
MX2D="${MX2D_BIN:-$ROOT/target/release/mx2d}"
PBIN="${PEERS_BIN_DIR:-$PEERS/target/release}"
mkdir -p "$OUT"
WARGS=()
[[ -n "$WORKERS" ]] && WARGS=(--workers "$WORKERS")

# Runs mx2d; on failure leaves no summary and keeps its stderr beside it.
run_mx2d() { # scene set steps summary
  local scene="$1" set="$2" steps="$3" summary="$4"
  rm -f "$summary"
  if [[ ! -f "$ROOT/$scene" ]]; then
    echo "$scene is not in this checkout" > "$summary.err"
    return 0
  fi
  (cd "$ROOT" && "$MX2D" run "$scene" --headless --backend "$BACKEND" --set "$set" \
      --steps "$steps" --summary "$summary") > "$summary.log" 2> "$summary.err" || true
}

for rep in $(seq 1 "$REPEAT"); do
  if [[ $BALLS == 1 ]]; then
    for n in $NS; do
      tag="balls_box_n${n}_s${STEPS}_r${rep}"
      echo "== balls_box N=$n steps=$STEPS (run $rep/$REPEAT)" >&2
      run_mx2d scenes/balls_box.ron "$COUNT_SET=$n" "$STEPS" "$OUT/$tag.mx2d.json"
      "$PBIN/balls_box" --engine "$ENGINE" --n "$n" --steps "$STEPS" "${WARGS[@]}" \
        --json "$OUT/$tag.peers.json" > "$OUT/$tag.peers.log"
      python3 "$PEERS/compare.py" balls_box "$OUT/$tag.mx2d.json" "$OUT/$tag.peers.json" \
        "N = $n, $STEPS steps, mx2d backend $BACKEND"
    done
  fi
  if [[ $PYRAMID == 1 ]]; then
    for rows in $ROWS; do
      tag="pyramid_rows${rows}_s${PSTEPS}_r${rep}"
      echo "== pyramid rows=$rows steps=$PSTEPS (run $rep/$REPEAT)" >&2
      run_mx2d scenes/pyramid.ron "$ROWS_SET=$rows" "$PSTEPS" "$OUT/$tag.mx2d.json"
      "$PBIN/pyramid" --engine "$ENGINE" --rows "$rows" --steps "$PSTEPS" "${WARGS[@]}" \
        --json "$OUT/$tag.peers.json" > "$OUT/$tag.peers.log"
      python3 "$PEERS/compare.py" pyramid "$OUT/$tag.mx2d.json" "$OUT/$tag.peers.json" \
        "$rows rows, $PSTEPS steps, mx2d backend $BACKEND"
    done
  fi
done
echo "(raw JSON and logs in $OUT)" >&2
