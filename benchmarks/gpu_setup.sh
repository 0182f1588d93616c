# The start every benchmarks/gpu_issue36*.sh script makes on the device machine, sourced after it has set WHL
# (the wheels carried with the call) and BEFORE: $OUT made, the wheels installed offline, the interpreter off,
# and the GPU, torch and Triton written to $OUT/probe.txt.
OUT=${OUT:-out}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile "${WHL:?set WHL to the folder of wheels}"/*.whl > /dev/null 2>&1 || exit 1
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 TRITON_INTERPRET=0
nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/probe.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/probe.txt"

# The whole suite, compiled (0 failed is the bar), into $OUT/suite.log: the device scripts call it with SUITE=1.
run_suite() {
  timeout ${SUITE_TIMEOUT:-240} python3 -m pytest -q -n 14 -rs -p no:cacheprovider --timeout 300 \
      -m "exhaustive or not exhaustive" > "$OUT/suite.log" 2>&1; echo "suite rc $?"; tail -3 "$OUT/suite.log"
  grep -E "^(FAILED|ERROR)" "$OUT/suite.log" | head -20
}
