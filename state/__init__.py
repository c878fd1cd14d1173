"""optseq's core, in rooms: plan, lifecycle, store, runners, runs, calculus, report, bench; the sequencer on top."""
