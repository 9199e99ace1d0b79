"""The jobs a user runs on a cluster, the top layer: `dlcharts run` (a chart's job for real on CPU: run/), `sweep`
(hyperparameter sweeps as releases: sweep/), `import` (Kubeflow manifests as values files: importer/) and the demo
(demo.py); cli.py registers their subcommands."""
