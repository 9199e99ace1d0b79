"""`python -m bench.gpu`: each training chart's own program on one NVIDIA GPU, with the environment the chart
gives its pod, against the same program launched bare (issue 46).

    python -m bench.gpu prepare     here, with helm: render the charts, write the plan (build/bench/gpu-plan/)
    python -m bench.gpu run         on the device machine: run the plan's cases, ours and bare (`--cpu`: the CPU
                                    cases, gloo and tiny models, for the test)
    python -m bench.gpu report F    write bench/results.md's section from a run's JSON (no F: pending)

The device machine has no helm, no Kubernetes and no dlcharts install, so the render happens before (prepare) and
the run path (bench.gpu.plan, bench.gpu.run) uses only the standard library and the frameworks preinstalled there.
bench/NOTES.md ("GPU: ours vs bare") says what is substituted for what a pod would see, and why.
"""
