"""What both rooms print of a lever and a run in a few plain words: estimates, states and marks (figures), a branch
lever's code (branch_words). No textual: `optseq runs` lists runs with them, the console's table and panes too."""
