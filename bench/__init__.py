"""dl-charts' benchmarks, run from the checkout's root as modules: ``python -m bench.<tool>``.

Each tool measures, saves its raw numbers to build/bench/, writes its section's data to bench/data/
(bench.model) and rewrites bench/results.md with the one writer, bench.results. bench/NOTES.md, written by
hand, explains each section and lists the tools ("How the bench works"); `make bench` runs bench.run.
"""
