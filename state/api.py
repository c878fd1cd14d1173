"""The one way into state/ from the console (the CLI's commands, the Textual console, the benches): every name the
console uses, whatever room of state/ it lives in. An import-linter contract (pyproject.toml) forbids the console any
other optseq.state module.

Nothing is imported here until a name is first read: `status` and the console's first screen load only what they
use (tests/console/test_import_set.py), so each name is fetched from its room by the module's `__getattr__` and kept.
The same names are imported under TYPE_CHECKING for the type checker, and for import-linter's graph: the layers
contract sees what the API reaches. tests/state/test_api.py holds the two lists the same.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optseq.state import atomic as atomic
    from optseq.state.bench import perf_doc as perf_doc
    from optseq.state.cache_root import cache_root as cache_root
    from optseq.state.sha import hex_digest as hex_digest
    from optseq.state.calculus.whatif import fmt_h as fmt_h, order_text as order_text
    from optseq.state.calculus.whatif import sequencing_text as sequencing_text
    from optseq.state.code import git as git, worktrees as worktrees
    from optseq.state.code.git import GitError as GitError
    from optseq.state.errors import InputError as InputError, UnknownLever as UnknownLever
    from optseq.state.exits import Exit as Exit
    from optseq.state.lifecycle import screened as screened
    from optseq.state.lifecycle.screened import summary as screen_summary, summary_lines as screen_summary_lines
    from optseq.state.lifecycle.history_points import measured_at as measured_at, points as history_points
    from optseq.state.lifecycle.history_points import run_stats as run_stats
    from optseq.state.lifecycle.run_index import KeptCompare as KeptCompare, KeptRun as KeptRun
    from optseq.state.plan import gates as gates, loader as loader
    from optseq.state.plan.fields import did_you_mean as did_you_mean
    from optseq.state.plan.gates import atoms as gate_atoms
    from optseq.state.plan.model import Lever as Lever, PlanError as PlanError
    from optseq.state.plan.testbed import label as testbed_label
    from optseq.state.record_types import Run as Run, Stats as Stats, Summary as Summary, as_ as as_
    from optseq.state.record_types import RuleVerdict as RuleVerdict
    from optseq.state.record_types import stats_from as stats_from
    from optseq.state.report.compare_doc import render as compare_doc
    from optseq.state.report.marker import is_export as is_export
    from optseq.state.report.target import TAIL_BYTES as TAIL_BYTES, ExportTargetError as ExportTargetError
    from optseq.state.report.target import NotAChart as NotAChart, NotAnExport as NotAnExport
    from optseq.state.report.target import default_target as default_target, export_doc as export_doc
    from optseq.state.runners.interface import RunnerError as RunnerError
    from optseq.state.runners.ray_trees import listing as shipped_listing, prune as prune_shipped
    from optseq.state.runs import commit_gate as commit_gate, screen_run as screen_run
    from optseq.state.runs.check import check as check_lever
    from optseq.state.runs.screen_run import prepare as prepare_screen, run_screen as run_screen
    from optseq.state.plan.compare import tolerance_of_speedup as tolerance_of_speedup
    from optseq.state.runs.commit_gate import ToleranceError as ToleranceError, parse_tolerance as parse_tolerance
    from optseq.state.runs.compare_run import COMPARE_ID as COMPARE_ID, compare as compare
    from optseq.state.runs.compare_run import CompareReport as CompareReport
    from optseq.state.runs.compare_run import length_line as length_line, notices as notices
    from optseq.state.runs.compare_run import prepare as prepare_compare
    from optseq.state.runs.configs import measured_configs as measured_configs
    from optseq.state.runs.lever_changes import MIN_RUNS as MIN_RUNS, change_text as change_text
    from optseq.state.runs.lever_changes import Kept as Kept, changes as changes
    from optseq.state.runs.lever_changes import count_commits as count_commits
    from optseq.state.runs.lever_run import RunControl as RunControl, RunReport as RunReport
    from optseq.state.runs.measured_on import CI_SIZE as CI_SIZE, at_ci_size as at_ci_size
    from optseq.state.runs.pairs import BASELINE as BASELINE, CANDIDATE as CANDIDATE
    from optseq.state.runs.parallel import GroupRun as GroupRun
    from optseq.state.runs.passes import asks as asks, first_look as first_look, replicate_of as replicate_of
    from optseq.state.runs.progress import RunProgress as RunProgress, p_text as p_text
    from optseq.state.runs.stats import arms_text as arms_text
    from optseq.state.runs.words import WORDS as RUN_WORDS
    from optseq.state.said import text as said_text
    from optseq.state.runs.testbed import local as testbed_local, text as testbed_text
    from optseq.state.runs.watch_cost import preamble as watch_preamble
    from optseq.state.sequencer import Sequencer as Sequencer
    from optseq.state.store.doctor import check as check_store, rebuild as rebuild_store
    from optseq.state.store.layout import holds_store as holds_store
    from optseq.state.store.store import Store as Store, StoreError as StoreError
    from optseq.state.store.store import StoreUnwritable as StoreUnwritable, what_path as what_path
    from optseq.state.sync.conflicts import conflicts as conflicts, last_remote as last_remote
    from optseq.state.sync.conflicts import lines as conflict_lines, since_line as since_line
    from optseq.state.sync.conflicts import since_sync as since_sync
    from optseq.state.sync.gitrefs import RemoteMissing as RemoteMissing, check_remote as check_remote
    from optseq.state.sync.gitrefs import remote_url as remote_url
    from optseq.state.sync.segments import SegmentRefused as SegmentRefused
    from optseq.state.sync.sync import SyncRefused as SyncRefused, summary as sync_summary, sync as sync
    from optseq.state.text import clean_text as clean_text, ratio_text as ratio_text
    from optseq.state.text import terminal_safe as terminal_safe
    from optseq.state.view_types import CandidateStatus as CandidateStatus, LeverStatus as LeverStatus
    from optseq.state.view_types import Status as Status, as_json as as_json
    from optseq.state.view_types import MarkedDecision as MarkedDecision

WHERE: dict[str, tuple[str, str | None]] = {
    # the one API of plan, store and machine, and the refusals every command turns into one line
    "Sequencer": ("optseq.state.sequencer", "Sequencer"),
    "InputError": ("optseq.state.errors", "InputError"),
    "UnknownLever": ("optseq.state.errors", "UnknownLever"),
    "Exit": ("optseq.state.exits", "Exit"),
    "PlanError": ("optseq.state.plan.model", "PlanError"),
    "StoreError": ("optseq.state.store.store", "StoreError"),
    "Lever": ("optseq.state.plan.model", "Lever"),
    # text as optseq prints it
    "clean_text": ("optseq.state.text", "clean_text"),
    "ratio_text": ("optseq.state.text", "ratio_text"),
    "terminal_safe": ("optseq.state.text", "terminal_safe"),
    # what status says, as types (state/view_types.py)
    "LeverStatus": ("optseq.state.view_types", "LeverStatus"),
    "CandidateStatus": ("optseq.state.view_types", "CandidateStatus"),
    "Status": ("optseq.state.view_types", "Status"),
    "MarkedDecision": ("optseq.state.view_types", "MarkedDecision"),
    "as_json": ("optseq.state.view_types", "as_json"),
    "did_you_mean": ("optseq.state.plan.fields", "did_you_mean"),
    "said_text": ("optseq.state.said", "text"),
    "RUN_WORDS": ("optseq.state.runs.words", "WORDS"),
    "fmt_h": ("optseq.state.calculus.whatif", "fmt_h"),
    "order_text": ("optseq.state.calculus.whatif", "order_text"),
    "sequencing_text": ("optseq.state.calculus.whatif", "sequencing_text"),
    "testbed_label": ("optseq.state.plan.testbed", "label"),
    "testbed_text": ("optseq.state.runs.testbed", "text"),
    "testbed_local": ("optseq.state.runs.testbed", "local"),
    "gates": ("optseq.state.plan.gates", None),
    "gate_atoms": ("optseq.state.plan.gates", "atoms"),
    "loader": ("optseq.state.plan.loader", None),
    # the store, its folder and its checks
    "Store": ("optseq.state.store.store", "Store"),
    "StoreUnwritable": ("optseq.state.store.store", "StoreUnwritable"),
    "what_path": ("optseq.state.store.store", "what_path"),
    "holds_store": ("optseq.state.store.layout", "holds_store"),
    "check_store": ("optseq.state.store.doctor", "check"),
    "rebuild_store": ("optseq.state.store.doctor", "rebuild"),
    "cache_root": ("optseq.state.cache_root", "cache_root"),
    "atomic": ("optseq.state.atomic", None),
    "hex_digest": ("optseq.state.sha", "hex_digest"),
    # runs: a lever's, a group's, a screen's, a compare's, a check's, and how they are said
    "RunControl": ("optseq.state.runs.lever_run", "RunControl"),
    "RunReport": ("optseq.state.runs.lever_run", "RunReport"),
    "RunnerError": ("optseq.state.runners.interface", "RunnerError"),
    "GroupRun": ("optseq.state.runs.parallel", "GroupRun"),
    "RunProgress": ("optseq.state.runs.progress", "RunProgress"),
    "p_text": ("optseq.state.runs.progress", "p_text"),
    "asks": ("optseq.state.runs.passes", "asks"),
    "first_look": ("optseq.state.runs.passes", "first_look"),
    "replicate_of": ("optseq.state.runs.passes", "replicate_of"),
    "watch_preamble": ("optseq.state.runs.watch_cost", "preamble"),
    "screen_run": ("optseq.state.runs.screen_run", None),
    "prepare_screen": ("optseq.state.runs.screen_run", "prepare"),
    "run_screen": ("optseq.state.runs.screen_run", "run_screen"),
    "screened": ("optseq.state.lifecycle.screened", None),
    "screen_summary": ("optseq.state.lifecycle.screened", "summary"),
    "screen_summary_lines": ("optseq.state.lifecycle.screened", "summary_lines"),
    "check_lever": ("optseq.state.runs.check", "check"),
    "commit_gate": ("optseq.state.runs.commit_gate", None),
    "ToleranceError": ("optseq.state.runs.commit_gate", "ToleranceError"),
    "parse_tolerance": ("optseq.state.runs.commit_gate", "parse_tolerance"),
    "tolerance_of_speedup": ("optseq.state.plan.compare", "tolerance_of_speedup"),
    "COMPARE_ID": ("optseq.state.runs.compare_run", "COMPARE_ID"),
    "compare": ("optseq.state.runs.compare_run", "compare"),
    "CompareReport": ("optseq.state.runs.compare_run", "CompareReport"),
    "prepare_compare": ("optseq.state.runs.compare_run", "prepare"),
    "length_line": ("optseq.state.runs.compare_run", "length_line"),
    "notices": ("optseq.state.runs.compare_run", "notices"),
    "BASELINE": ("optseq.state.runs.pairs", "BASELINE"),
    "CANDIDATE": ("optseq.state.runs.pairs", "CANDIDATE"),
    "measured_configs": ("optseq.state.runs.configs", "measured_configs"),
    "at_ci_size": ("optseq.state.runs.measured_on", "at_ci_size"),
    "CI_SIZE": ("optseq.state.runs.measured_on", "CI_SIZE"),
    "arms_text": ("optseq.state.runs.stats", "arms_text"),
    "run_stats": ("optseq.state.lifecycle.history_points", "run_stats"),
    "KeptRun": ("optseq.state.lifecycle.run_index", "KeptRun"),
    "KeptCompare": ("optseq.state.lifecycle.run_index", "KeptCompare"),
    "Run": ("optseq.state.record_types", "Run"),
    "Stats": ("optseq.state.record_types", "Stats"),
    "Summary": ("optseq.state.record_types", "Summary"),
    "RuleVerdict": ("optseq.state.record_types", "RuleVerdict"),
    "as_": ("optseq.state.record_types", "as_"),
    "stats_from": ("optseq.state.record_types", "stats_from"),
    "measured_at": ("optseq.state.lifecycle.history_points", "measured_at"),
    "history_points": ("optseq.state.lifecycle.history_points", "points"),
    "MIN_RUNS": ("optseq.state.runs.lever_changes", "MIN_RUNS"),
    "changes": ("optseq.state.runs.lever_changes", "changes"),
    "change_text": ("optseq.state.runs.lever_changes", "change_text"),
    "count_commits": ("optseq.state.runs.lever_changes", "count_commits"),
    "Kept": ("optseq.state.runs.lever_changes", "Kept"),
    # the export and a compare's summary
    "export_doc": ("optseq.state.report.target", "export_doc"),
    "default_target": ("optseq.state.report.target", "default_target"),
    "ExportTargetError": ("optseq.state.report.target", "ExportTargetError"),
    "NotAChart": ("optseq.state.report.target", "NotAChart"),
    "NotAnExport": ("optseq.state.report.target", "NotAnExport"),
    "TAIL_BYTES": ("optseq.state.report.target", "TAIL_BYTES"),
    "is_export": ("optseq.state.report.marker", "is_export"),
    "compare_doc": ("optseq.state.report.compare_doc", "render"),
    # sync, and the code's trees
    "sync": ("optseq.state.sync.sync", "sync"),
    "sync_summary": ("optseq.state.sync.sync", "summary"),
    "SyncRefused": ("optseq.state.sync.sync", "SyncRefused"),
    "SegmentRefused": ("optseq.state.sync.segments", "SegmentRefused"),
    "RemoteMissing": ("optseq.state.sync.gitrefs", "RemoteMissing"),
    "check_remote": ("optseq.state.sync.gitrefs", "check_remote"),
    "remote_url": ("optseq.state.sync.gitrefs", "remote_url"),
    "conflicts": ("optseq.state.sync.conflicts", "conflicts"),
    "conflict_lines": ("optseq.state.sync.conflicts", "lines"),
    "since_line": ("optseq.state.sync.conflicts", "since_line"),
    "since_sync": ("optseq.state.sync.conflicts", "since_sync"),
    "last_remote": ("optseq.state.sync.conflicts", "last_remote"),
    "GitError": ("optseq.state.code.git", "GitError"),
    "git": ("optseq.state.code.git", None),
    "worktrees": ("optseq.state.code.worktrees", None),
    "shipped_listing": ("optseq.state.runners.ray_trees", "listing"),
    "prune_shipped": ("optseq.state.runners.ray_trees", "prune"),
    # the benches' page of figures
    "perf_doc": ("optseq.state.bench.perf_doc", None),
}
"""Each name of the API -> (the module it lives in, its name there; None for the module itself)."""

def __getattr__(name: str) -> object:
    try:
        module, attr = WHERE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    found = importlib.import_module(module)
    value = found if attr is None else getattr(found, attr)
    globals()[name] = value  # the next read is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *WHERE})
