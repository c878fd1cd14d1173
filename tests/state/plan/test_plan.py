"""The plan loader: the default plan's content, and one clean one-line error per malformed plan."""
import datetime as dt
import pickle
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from optseq.state.plan.model import DECISION_OUTCOMES, PAIRED_OUTCOMES, PlanError
from optseq.state.plan.loader import load
from optseq.state.plan.prose import Prose, localized

REPO = Path(__file__).resolve().parents[3]
DEFAULT_PLAN = REPO / "configs" / "sequencing.toml"
PLANS = Path(__file__).resolve().parents[1] / "plans"
BAD = PLANS / "bad"
GOOD = sorted(PLANS.glob("good/*.toml")) + [DEFAULT_PLAN]
ABSENT = "missing.toml"
"""Listed in EXPECTED.txt but never created: the loader must report a plan that does not exist."""

def _expected() -> dict[str, tuple[str, str]]:
    rows = {}
    for line in (BAD / "EXPECTED.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, key, fragment = (part.strip() for part in line.split(" | ", 2))
            rows[name] = (key, fragment)
    return rows


EXPECTED = _expected()
CASES = [pytest.param(name, key, fragment, id=name.removesuffix(".toml"))
         for name, (key, fragment) in EXPECTED.items()]


def _check_line(line: str, path: Path, key: str, fragment: str) -> None:
    """The error is one line: `FILE: KEY: PROBLEM` (or `FILE: PROBLEM` when the file as a whole is at fault)."""
    assert "\n" not in line and "\r" not in line, f"not one line: {line!r}"
    assert line.startswith(f"{path}: "), line
    if key == "-":
        assert line.startswith(f"{path}: {fragment}"), f"names a key or misses the problem: {line!r}"
    elif key.endswith("*"):
        assert line.startswith(f"{path}: {key[:-1]}"), line
    else:
        assert line.startswith(f"{path}: {key}: "), line
    assert fragment in line, line


# -- the default plan and the minimal one ------------------------------------------------------

def test_default_plan_mirrors_the_seed_doc():
    plan = load(DEFAULT_PLAN)
    assert [lever.id for lever in plan.levers] == [
        "julia_port", "port", "cython_bot", "option_b", "model_size", "amp", "compile", "tensorrt", "option_a"]
    assert plan.as_of == dt.date(2026, 5, 7) and plan.lang == "ko"
    julia = plan.lever("julia_port")
    assert julia.kind == "decision" and julia.outcomes == DECISION_OUTCOMES
    assert [c.id for c in julia.criteria.candidates] == ["flux", "torch_jl"]
    assert [c.id for c in julia.criteria.criteria] == ["c1", "c2", "c3", "c4"]
    assert julia.criteria.candidates[0].verdict == "fail"
    assert julia.criteria.candidates[1].results == {"c1": "pass", "c2": "pass", "c3": "pass"}
    assert julia.criteria.branch("GO").opens == ("port",)
    assert julia.criteria.branch("NO-GO").closes == ("port",)
    assert [f.id for f in plan.facts] == ["eval_dense"] and plan.fact("eval_dense").value is False
    assert [p.id for p in plan.decision_points] == ["torch_jl_result", "option_b_plan", "model_size_results"]
    assert plan.lever("cython_bot").prior.outcome == "adopt" and plan.lever("cython_bot").prior.estimate == 2.55
    assert plan.lever("cython_bot").timeout_s == 300.0
    assert plan.lever("amp").remeasure_when == ("model_size", "option_b")
    assert plan.table == ("model_size", "option_b", "amp", "compile", "tensorrt", "option_a", "julia_port")


HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")


def prose(value):
    """Every text of a plan (or a part of one), wherever it sits in its Structs."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            yield from prose(getattr(value, name))
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from prose(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from prose(item)


def test_the_default_plan_gives_english_beside_every_korean_text():
    plan = load(DEFAULT_PLAN)
    korean = [text for text in prose(plan) if HANGUL.search(text)]
    assert len(korean) >= 40  # the seed's prose: intro, states, labels, order, status, decision points
    untranslated = [text for text in korean if not isinstance(text, Prose) or HANGUL.search(text.in_lang("en"))]
    assert untranslated == []
    english = localized(plan, "en")
    assert not [text for text in prose(english) if HANGUL.search(text)]
    # read as the plan's own language everywhere (console, CLI): the Korean, as the seed wrote it
    assert plan.intro == "여러 최적화 lever 사이의 의존성과 권장 진행 순서. 시간 지나면서 update."
    assert english.intro.startswith("Dependencies between the optimization levers")
    assert localized(plan, "ko") == localized(plan, "ko") and type(localized(plan, "ko").intro) is str


def test_a_text_in_two_languages_reads_as_the_plans_and_keeps_both(tmp_path):
    path = tmp_path / "two.toml"
    path.write_text('[plan]\ntitle = { en = "Two", ko = "둘" }\nas_of = 2026-01-01\nlang = "en"\n'
                    'intro.en = "English first"\nintro.ko = "한국어"\n'
                    '\n[[levers]]\nid = "a"\nkind = "speedup"\ntitle = "A"\n'
                    'status = { ko = "미시작", en = "not started" }\n',
                    encoding="utf-8")
    plan = load(path)
    assert (plan.title, plan.intro, plan.lever("a").status, plan.lever("a").title) == (
        "Two", "English first", "not started", "A")
    korean = localized(plan, "ko")
    assert (korean.title, korean.intro, korean.lever("a").status, korean.lever("a").title) == (
        "둘", "한국어", "미시작", "A")
    # a copy (a worker process, a deepcopy) keeps every language
    again = pickle.loads(pickle.dumps(plan))
    assert again == plan and localized(again, "ko") == korean
    assert localized(plan, "en").levers[0].requires is plan.levers[0].requires  # nothing rebuilt without prose


def test_minimal_plan_gets_the_defaults():
    plan = load(PLANS / "good" / "minimal.toml")
    assert plan.title == "Minimal plan" and plan.as_of == dt.date(2026, 1, 1) and plan.lang == "en"
    (lever,) = plan.levers
    assert (lever.id, lever.kind, lever.code, lever.timeout_s) == ("a", "speedup", "none", 900.0)
    assert lever.outcomes == PAIRED_OUTCOMES and lever.requires is None and lever.needs_plan
    assert plan.table == ("a",) and plan.facts == () and plan.decision_points == ()


# -- the malformed corpus ------------------------------------------------------------------------

def test_corpus_and_expected_list_agree():
    on_disk = {p.name for p in BAD.glob("*.toml")}
    assert on_disk == set(EXPECTED) - {ABSENT}
    assert not (BAD / ABSENT).exists()
    assert len(on_disk) >= 20


@pytest.mark.parametrize("name, key, fragment", CASES)
def test_bad_plan_fails_with_one_line(name, key, fragment):
    path = BAD / name
    with pytest.raises(PlanError) as info:
        load(path)
    err = info.value
    if key == "-":
        assert err.key == ""
    elif not key.endswith("*"):
        assert err.key == key
    assert fragment in err.problem, err.problem
    _check_line(str(err), path, key, fragment)


def test_directory_is_not_a_plan(tmp_path):
    with pytest.raises(PlanError) as info:
        load(tmp_path)
    assert str(info.value) == f"{tmp_path}: not a regular file (a folder): not a plan"


# -- the real command line -----------------------------------------------------------------------

_CLI = REPO / "console" / "cli.py"
needs_validate = pytest.mark.skipif(
    not _CLI.exists() or "validate" not in _CLI.read_text(encoding="utf-8"),
    reason="console/cli.py has no `validate` command yet; these run the real CLI once it does")


def _validate(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "optseq.console.cli", "validate", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


@needs_validate
@pytest.mark.parametrize("name, key, fragment", CASES)
def test_cli_rejects_bad_plan(name, key, fragment):
    path = BAD / name
    with pytest.raises(PlanError) as info:
        load(path)
    proc = _validate(path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr == f"optseq: {info.value}\n"
    _check_line(proc.stderr.removeprefix("optseq: ").removesuffix("\n"), path, key, fragment)


@needs_validate
@pytest.mark.parametrize("path", GOOD, ids=lambda p: p.name)
def test_cli_accepts_good_plan(path):
    proc = _validate(path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


# -- limits: generated plans too big for the corpus ------------------------------------------------

_HEAD = '[plan]\ntitle = "Limits"\nas_of = 2026-01-01\n'


def _lever(lever_id: str, extra: str = "") -> str:
    return f'\n[[levers]]\nid = "{lever_id}"\ntitle = "{lever_id}"\nkind = "speedup"\n{extra}'


def _refused(path: Path, text: str) -> PlanError:
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PlanError) as info:
        load(path)
    line = str(info.value)
    assert "\n" not in line and line.startswith(f"{path}: ")
    proc = _validate(path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == f"optseq: {line}\n"
    return info.value


def test_inline_tables_nested_past_the_parser_are_one_line(tmp_path):
    err = _refused(tmp_path / "deep.toml", _HEAD + "deep = " + "{ a = " * 600 + "1" + " }" * 600 + "\n")
    assert err.key == "" and err.problem.startswith("nested too deeply to read")


def test_nesting_is_counted_outside_strings_and_comments():
    from optseq.state.plan.loader import MAX_NESTING, nesting

    text = ('a = "[[{{ \\" [[" # [[[[\nb = [1, [2, { c = \'[[\' }]]\n'
            'd = """ " ]] "" [[ """\ne = \'\'\'[[[\'\'\'\n[[levers]]\n')
    assert nesting(text) == 3
    assert nesting("x = " + "[" * MAX_NESTING + "]" * MAX_NESTING) == MAX_NESTING


def test_a_nest_tomllib_reads_past_the_limit_is_refused_and_a_sound_plan_is_not_scanned(tmp_path, monkeypatch):
    # tomllib reads 65 arrays deep; the text is counted once what it parsed to goes past the limit, or it failed
    from optseq.state.plan import loader
    from optseq.state.plan.loader import MAX_NESTING

    for deep in ("[" * (MAX_NESTING + 1) + "1" + "]" * (MAX_NESTING + 1),  # read by tomllib
                 "[" * (MAX_NESTING + 1) + "1 2" + "]" * (MAX_NESTING + 1)):  # and a syntax error too
        err = _refused(tmp_path / "deep.toml", _HEAD + f"deep = {deep}\n")
        assert err.key == "" and err.problem.startswith("nested too deeply to read")
    calls = []
    counted = loader.nesting

    def nesting(text):
        calls.append(len(text))
        return counted(text)

    monkeypatch.setattr(loader, "nesting", nesting)  # the real count, counted
    sound = tmp_path / "sound.toml"
    sound.write_text(_HEAD + "x = " + "[" * MAX_NESTING + "1" + "]" * MAX_NESTING + "\n", encoding="utf-8")
    with pytest.raises(PlanError, match="plan.x: unknown key"):  # as deep as allowed: counted, then read on
        load(sound)
    assert calls == [sound.stat().st_size]
    assert load(REPO / "configs" / "sequencing.toml").levers and len(calls) == 1  # the default plan: not scanned


def test_too_many_levers_are_refused_before_their_chain_is_walked(tmp_path):
    # each lever requires the next: walking the gates of such a chain recurses once per lever
    chain = "".join(_lever(f"l{i}", f'requires = "l{i + 1}:adopt"\n' if i < 200 else "") for i in range(201))
    err = _refused(tmp_path / "many.toml", _HEAD + chain)
    assert (err.key, err.problem) == ("levers", "at most 200 levers in one plan, got 201")


def test_the_limits_themselves_are_accepted(tmp_path):
    path = tmp_path / "edge.toml"
    nested = "{ all = [" * 16 + '"b:adopt"' + "] }" * 16
    path.write_text(_HEAD + _lever("b") + _lever("a", f"timeout_s = 604800\nrequires = {nested}\n"
                                                      'rule = { metric = "m", repeats = 10000, max_repeats = 10000 }\n')
                    + "".join(_lever(f"x{i}") for i in range(198)), encoding="utf-8")
    plan = load(path)
    a = plan.lever("a")
    assert len(plan.levers) == 200 and a.timeout_s == 604800.0
    assert (a.rule.repeats, a.rule.max_repeats) == (10000, 10000)
    assert _validate(path).returncode == 0


def test_a_decision_lever_may_still_run_a_command_that_reports_criteria(tmp_path):
    # only `rule` is refused on a decision lever: a run's `criterion` events are how its gate gets results
    path = tmp_path / "gate.toml"
    path.write_text(_HEAD + '\n[[levers]]\nid = "j"\ntitle = "J"\nkind = "decision"\nrun = ["python", "eval.py"]\n'
                    '[levers.criteria]\ncriteria = [{ id = "c1" }]\ncandidates = [{ id = "x" }]\n', encoding="utf-8")
    assert load(path).lever("j").run == ("python", "eval.py")


def test_an_endless_or_huge_file_is_refused_without_reading_it_all(tmp_path):
    big = tmp_path / "big.toml"
    big.write_bytes(b"# padding\n" * 200_000)  # 2 MB of comments: valid TOML, far too big for a plan
    out = subprocess.run([sys.executable, "-m", "optseq.console.cli", "validate", str(big)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and out.stderr == f"optseq: {big}: larger than 1 MiB: not a plan\n"
    # an endless device is no file at all: refused before it is opened
    out = subprocess.run([sys.executable, "-m", "optseq.console.cli", "validate", "/dev/zero"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and out.stderr == "optseq: /dev/zero: not a regular file (a device): not a plan\n"
