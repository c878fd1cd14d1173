"""The workload's code in git: commits resolved from refs, worktrees kept per commit, where an adopted branch
landed. Git is asked through `git` itself, one small helper per question; the user's working tree, index, stash and
branches are never touched."""
