"""optseq measuring itself: decision quality (simulate), store cost, runner overhead, into docs/performance.md."""
