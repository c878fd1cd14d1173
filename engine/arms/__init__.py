"""The command-pair driver: runs a lever's two plain commands interleaved and reports them in the run protocol.

optseq launches `python -m optseq.engine.arms` for a lever declared with `arms` in the plan, and passes the
lever's spec in OPTSEQ_ARMS (JSON, written by optseq.state.plan.model.Arms.to_dict). Each arm's output is
streamed as log, prefixed with the arm and pair, so no line of a user's command is ever read as an event.
"""
