#!/usr/bin/env bash
# The checks and benchmarks of a lent GPU machine (NVIDIA H100/H200, 16 cores), in one call
# of the workplace's `device` tool; see docs/benchmarks.md, "On a lent GPU machine".
#
# Prepared on the development machine (the device has no Rust toolchain and no network):
#   benches/gpu_device.sh --pack     strips mx2d, the peer balls_box and the GPU and
#                                    thread-pool test binaries into .dev/dev.txz
# then run there from the repository root, carrying .gl (the Vulkan loader's .debs, as the
# tool's README says) and .dev:
#   bash benches/gpu_device.sh       logs and JSON under $OUT, a short table last
set -u
GPU_TESTS="${GPU_TESTS:-population_gpu gpu_fields gpu_broadphase gpu_mechanism render_offscreen render_balls render_frames}"
POOL_TESTS="${POOL_TESTS:-population_cpu population_scenes population_galton population_resort population_memory
parallel_pool_sizes reliability_threads contact_parallel}"
TESTS="$GPU_TESTS $POOL_TESTS"

if [[ "${1:-}" == "--pack" ]]; then
  set -e
  cargo build --release --bin mx2d --example gpu_broadphase_probe
  cargo build --release --manifest-path benches/peers/Cargo.toml --bin balls_box
  rm -rf .dev && mkdir -p .dev/t
  bins=$(cargo test --release --no-run --message-format=json $(printf -- '--test %s ' $TESTS) 2>/dev/null | python3 -c '
import sys, json
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["target"]["name"], m["executable"])')
  for t in $TESTS; do strip -o ".dev/t/$t" "$(echo "$bins" | awk -v t="$t" '$1 == t {print $2}')"; done
  strip -o .dev/mx2d target/release/mx2d
  strip -o .dev/t/gpu_broadphase_probe target/release/examples/gpu_broadphase_probe
  strip -o .dev/balls_box benches/peers/target/release/balls_box
  (cd .dev && tar cf - mx2d balls_box t | xz -T2 -6 > dev.txz && rm -rf mx2d balls_box t)
  ls -la .dev
  exit 0
fi

# SMALL=1: a dry run of this script on small sizes (lavapipe, the development machine).
# PARTS picks what runs (all by default); SIZES, RUNS, BIG, PEER_NS, PEER_BIG size it.
PARTS="${PARTS:-probe turns bench runs gpu_tests peers pool_tests}"
SIZES="${SIZES:-1000,10000,100000,1000000,10000000}"; RUNS="${RUNS:-100000 1000000}"; BIG="${BIG:-10000000}"
PEER_NS="${PEER_NS:-10000 100000}"; PEER_BIG="${PEER_BIG:-1000000}"
[[ -n "${SMALL:-}" ]] && { GPU_TESTS=population_memory; POOL_TESTS=population_cpu; SIZES=1000,2000; RUNS="1000"; BIG=2000; PEER_NS="1000"; PEER_BIG=2000; }
# Everything is written under $W; $OUT (the tool brings back at most 8 files) gets
# all.tgz, the bench's JSON and the test results.
OUT="${OUT:-/tmp/gpu_device}"
W=/tmp/gpu_device_work
BUDGET="${BUDGET:-480}"
rm -rf "$W" && mkdir -p "$W" "$OUT"
T0=$SECONDS
say() { echo "== $* ($((SECONDS - T0)) s)" | tee -a "$W/progress.log"; }
# Whether there are still $1 seconds left in the budget.
left() { (( SECONDS - T0 + $1 <= BUDGET )); }
run_tests() {
  for t in "$@"; do
    if ! left 30; then echo "$t: skipped (budget)" | tee -a "$W/tests.txt"; continue; fi
    timeout "${TEST_S:-150}" "$B/t/$t" --nocapture > "$W/test_$t.log" 2>&1
    echo "$t: exit $? $(grep -h '^test result' "$W/test_$t.log" | tail -1)" | tee -a "$W/tests.txt"
  done
}
if [[ -z "${SMALL:-}" ]]; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
[[ -f $icd ]] && export VK_DRIVER_FILES=$icd
# Unpacked outside the checkout, so that a dry run here leaves .dev as small as it travels.
B=/tmp/gpu_device_bin
rm -rf "$B" && mkdir -p "$B"
python3 -c "import tarfile, sys; tarfile.open('.dev/dev.txz').extractall(sys.argv[1])" "$B"
# The tests find the scenes through the path they were built at.
mkdir -p /work && { [[ -e /work/main ]] || ln -s "$PWD" /work/main; }
M="$B/mx2d"
# ... and the command-line tests the binary through the path it was built at.
[[ -e target/release/mx2d ]] || { mkdir -p target/release && ln -s "$M" target/release/mx2d; }
part() { [[ " $PARTS " == *" $1 "* ]]; }
export MX2D_REQUIRE_GPU=1
# A kernel that never ends on this adapter fails its wait after this long, naming itself,
# instead of hanging a test until `timeout` kills it (the GPU broadphase on the H200).
export MX2D_GPU_TIMEOUT_S="${MX2D_GPU_TIMEOUT_S:-20}"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv \
  | tee "$W/machine.txt"
echo "cores: $(nproc)" | tee -a "$W/machine.txt"

if part probe; then
  say "GPU broadphase probe (each case in its own process, each pass on its own, 8 s wait timeout)"
  # PROBE_MAX: only the first so many box sets (all by default).
  "$B/t/gpu_broadphase_probe" list 2>/dev/null | cut -f1 | head -n "${PROBE_MAX:-1000}" | while read -r case; do
    left 30 || break
    MX2D_GPU_TIMEOUT_S=8 timeout 20 "$B/t/gpu_broadphase_probe" "$case" 2>&1 | grep -v '^adapter' >> "$W/probe.txt"
    echo "  $case: exit ${PIPESTATUS[0]}" >> "$W/probe.txt"
  done
  # The test binary one test at a time: which tests end, and how.
  left 60 && MX2D_GPU_TIMEOUT_S=8 timeout "${PROBE_TEST_S:-120}" "$B/t/gpu_broadphase" --test-threads=1 --nocapture > "$W/test_gpu_broadphase_serial.log" 2>&1
  echo "gpu_broadphase, one test at a time: exit $? $(grep -h '^test result' "$W/test_gpu_broadphase_serial.log")" >> "$W/probe.txt"
fi

if part turns; then
  say "GPU tests on their own devices at once (tests/common gpu(): MX2D_TEST_GPU_TURN)"
  # TURNS: "turn:test ..." pairs (the default turn on both tests, then the creation alone
  # and nothing serialised on the broadphase's).
  for pair in ${TURNS:-test:gpu_broadphase test:render_balls create:gpu_broadphase none:gpu_broadphase}; do
    turn=${pair%%:*}; t=${pair#*:}
    left 60 || break
    MX2D_TEST_GPU_TURN=$turn MX2D_GPU_TIMEOUT_S=8 timeout 30 "$B/t/$t" --test-threads=4 > "$W/turn_${turn}_$t.log" 2>&1
    echo "$t, turn $turn, 4 test threads: exit $? $(grep -h '^test result' "$W/turn_${turn}_$t.log")" >> "$W/probe.txt"
  done
fi

if part bench; then
  say "population bench (whole step, both backends, GPU stages)"
  timeout 240 "$M" bench --scene balls_box --sizes $SIZES --repeats 10 --passes \
    --json "$W/pop_bench.json" > "$W/pop_bench.txt" 2>&1
  echo "exit $?" >> "$W/pop_bench.txt"
fi

if part runs; then
  say "GPU runs of balls_box (settling pile, summaries)"
  for n in $RUNS; do
    left 60 && timeout 60 "$M" run scenes/balls_box.ron --headless --backend gpu --set population.count=$n \
      --summary "$W/gpu_run_$n.json" > "$W/gpu_run_$n.log" 2>&1
  done
  left 90 && timeout 90 "$M" run scenes/balls_box.ron --headless --backend gpu --set population.count=$BIG \
    --steps 120 --summary "$W/gpu_run_$BIG.json" > "$W/gpu_run_$BIG.log" 2>&1
fi

if part gpu_tests; then
  say "GPU tests"
  run_tests $GPU_TESTS
fi

if part peers; then
  say "mx2d CPU twin and the peers, $(nproc) workers"
  left 150 && MX2D_BIN="$M" PEERS_BIN_DIR="$B" OUT="$W/peers" timeout 150 bash benches/peers/run.sh \
    --skip-build --no-pyramid --n "$PEER_NS" --steps 300 --backend cpu > "$W/peers.txt" 2>&1
  left 100 && MX2D_BIN="$M" PEERS_BIN_DIR="$B" OUT="$W/peers" timeout 100 bash benches/peers/run.sh \
    --skip-build --no-pyramid --n "$PEER_BIG" --steps 30 --engine box2d --backend gpu > "$W/peers_big.txt" 2>&1
fi

if part pool_tests; then
  say "thread-pool tests"
  run_tests $POOL_TESTS
fi

say "done"
cp "$W/machine.txt" "$W/probe.txt" "$W/pop_bench.json" "$W/pop_bench.txt" "$W/tests.txt" "$OUT/" 2>/dev/null
touch "$W/tests.txt" "$W/pop_bench.txt"
tar czf "$OUT/all.tgz" -C "$W" .
cat "$W/probe.txt" 2>/dev/null
cat "$W/tests.txt"
cat "$W/pop_bench.txt"
for f in "$W"/gpu_run_*.json; do
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); p=d['population']; print(sys.argv[1].split('/')[-1], 'ms/step', round(d['ms_per_step'],3), 'population stage', round(p['ms_per_step'],3), 'KE/ball', p['kinetic_per_ball'], 'overlap', p['max_overlap_ratio'], 'seen', p['max_overlap_ratio_seen'], 'escaped', p['escaped'])" "$f" 2>&1
done
grep -hE "^  (mx2d|box2d|rapier) |^balls_box" "$W/peers.txt" "$W/peers_big.txt" 2>/dev/null
grep -h -A3 "^---- \|panicked" "$W"/test_*.log 2>/dev/null | cut -c1-600 | head -60
