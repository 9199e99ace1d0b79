#!/bin/sh
# The device run of bench.gpu (issue 46), one `run` tool command from the checkout's root:
#   bash bench/gpu/device.sh            with carry ["build/bench/gpu-plan"] and timeout_s 540
# The plan comes from `python -m bench.gpu prepare` here (the device has no helm). The run's own budget (420 s for
# every case, 150 s a run at most) keeps it within 8 minutes; `timeout` is the backstop should a run hang past it.
set -u
plan=build/bench/gpu-plan/plan.json
[ -f "$plan" ] || { echo "device.sh: no $plan: run 'python -m bench.gpu prepare' first and carry build/bench/gpu-plan" >&2; exit 2; }
py=${PYTHON:-$(command -v python3 || command -v python)}
out=${OUT:-build/bench/gpu}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "device.sh: no nvidia-smi"
timeout -k 10 470 "$py" -m bench.gpu run --out "$out" "$@"
rc=$?
echo "device.sh: bench.gpu run exited $rc; results in $out/gpu.json"
exit $rc
