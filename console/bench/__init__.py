"""The console measuring itself into docs/performance.md: the first paint and `status` (paint_bench), the export
preview (bench_preview). Beside state/bench/, which may not import the console."""
