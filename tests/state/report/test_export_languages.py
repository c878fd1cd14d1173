"""Every sentence optseq writes into the export is in the export's language (issue 32, point 6): the seed story
exported in Korean and in English at every state, each scanned for the other script.

What is exempt is the text optseq did not write: the plan's own words in the doc's language (titles, notes, the
order's paragraphs, the seed's English terms), what the user typed (a decision's why, a criterion's evidence), and
code spans and fenced blocks (ids, paths, the graph's source). A stale or closed lever's reason is optseq's: the
store keeps it in English for `optseq status` and, beside it, its key and fields, which the export says in its own
language.
"""
from __future__ import annotations

import json
import os
import re
import subprocess

import msgspec
import pytest

from optseq.state.plan import loader as plan_loader
from optseq.state.plan.prose import localized
from optseq.state.report.labels import LABELS
from tests.conftest import DEFAULT_PLAN, OPTSEQ
from tests.state.lifecycle.test_one_next import STORY, cli, walk_story

HANGUL = re.compile(r"[\uac00-\ud7a3\u1100-\u11ff\u3130-\u318f]")
ENGLISH_RUN = re.compile(r"(?<![\w.-])[A-Za-z][A-Za-z']*(?: +[A-Za-z][A-Za-z']*){2,}(?![\w-])")
"""Three English words in a row: a sentence, where the Korean doc writes none of its own."""


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """[(state, status --json, {lang: export})] along the seed story."""
    return [(name, json.loads(cli(env, "status", "--json")),
             {lang: cli(env, "export", "--lang", lang) for lang in ("ko", "en")})
            for name, env in walk_story(tmp_path_factory, "languages")]


def plan_strings(lang: str) -> list[str]:
    """Every string the plan gives, in `lang` where it gives one: what the doc quotes from the plan."""
    found: list[str] = []

    def walk(value):
        if isinstance(value, str):
            found.extend([value, *re.findall(r"\*\*(.+?)\*\*", value)])  # a title's bold part: its short name
        elif isinstance(value, msgspec.Struct):
            for name in value.__struct_fields__:
                walk(getattr(value, name))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for v in value:
                walk(v)

    walk(localized(plan_loader.load(DEFAULT_PLAN), lang))
    return found


def user_strings() -> list[str]:
    """What the story's user typed: each step's free text (a why, an evidence)."""
    return [step[i + 1] for _, steps in STORY for step in steps for i, arg in enumerate(step)
            if arg in ("--why", "--evidence")]


def optseqs_own(doc: str, exempt: list[str]) -> str:
    """The doc without the exempt strings (the longest first: one may hold another), fenced blocks and code spans."""
    for text in sorted({t.strip() for t in exempt if len(t.strip()) > 2}, key=len, reverse=True):
        doc = doc.replace(text, " ")
    doc = re.sub(r"^```.*?^```", "", doc, flags=re.M | re.S)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", doc)


def test_the_english_export_has_no_korean(exports):
    for name, _, docs in exports:
        # the plan gives an English text for each of its Korean ones, and the story's user writes English
        found = [line for line in docs["en"].splitlines() if HANGUL.search(line)]
        assert not found, (name, found[:5])


def test_the_korean_export_writes_no_english_sentence_of_its_own(exports):
    exempt = plan_strings("ko") + user_strings()
    for name, _, docs in exports:
        own = optseqs_own(docs["ko"], exempt)
        found = [(line, ENGLISH_RUN.findall(line)) for line in own.splitlines() if ENGLISH_RUN.search(line)]
        assert not found, (name, found[:8])


def test_the_hours_section_is_in_the_doc_language(exports):
    """The issue's own lines, each said in Korean in the Korean doc, and in English in the English one."""
    docs = exports[3][2]  # option_b adopted: the calculus weighs priors, defaults and missing inputs
    for english, korean in (("the plan's order nets as much as any", "plan의 순서가 어느 순서 못지않게 절약"),
                            ("effort_h not declared, 0 h counted", "effort_h 미선언, 0 h로 계산"),
                            ("S and q: not measured and no prior", "S, q: 측정값도 prior도 없음")):
        assert english not in docs["ko"] and korean in docs["ko"]
        assert english in docs["en"] and korean not in docs["en"]


@pytest.mark.parametrize("table", ["calculus", "lifecycle", "runs", "code"])
def test_every_sentence_is_given_in_both_languages(table):
    from optseq.state.report.labels import CALCULUS, CODE, LIFECYCLE, RUNS

    words = {"calculus": CALCULUS, "lifecycle": LIFECYCLE, "runs": RUNS, "code": CODE}[table]
    assert LABELS["ko"].keys() == LABELS["en"].keys()
    assert words["ko"].keys() == words["en"].keys()
    for lang in ("ko", "en"):  # the same fields in each language's sentence
        for key, text in words[lang].items():
            fields = set(re.findall(r"(?<!\{)\{(\w+)", text)) - {"s"}  # `s`: the English plural alone
            assert fields == set(re.findall(r"(?<!\{)\{(\w+)", words["en"][key])) - {"s"}, (lang, key)


def test_a_sentence_copied_or_pickled_is_said_again_in_either_language():
    import copy
    import pickle

    from optseq.state.calculus.words import Said

    said = Said("order_reruns", order="a → b", saved="1.00", cost="0.00", net="1.00", n=1, s="",
                reruns=[Said("rerun_hours", experiment="grow", lever="b", hours="—")])
    assert said == "a → b: saves 1.00 h, costs 0.00 h, forces 1 re-run (grow after b: — h); net 1.00 h"
    for again in (copy.deepcopy(said), pickle.loads(pickle.dumps(said))):
        assert again == said and again.in_lang("ko") == "a → b: 1.00 h 절약, 비용 0.00 h, 재실행 1개 (b 뒤 grow: — h); 순 1.00 h"
    assert json.loads(json.dumps({"verdict": said}))["verdict"] == str(said)  # whatif --json: the English


def test_stale_and_closed_reasons_are_said_in_the_docs_language(exports):
    """status keeps the reasons' English; each doc says them in its own language."""
    name, status, docs = exports[7]
    assert name == "model size again: stale levers"
    levers = {v["id"]: v for v in status["levers"]}
    assert levers["amp"]["stale_reason"] == "model_size decided h32x2 after amp was measured"
    assert levers["port"]["why_blocked"] == ["closed: julia_port decided NO-GO"]
    assert "stale: model_size decided h32x2 after amp was measured" in docs["en"]
    assert "closed: julia_port decided NO-GO" in docs["en"]
    assert "stale: amp 측정 뒤 model_size h32x2 결정" in docs["ko"]
    assert "closed: julia_port NO-GO 결정" in docs["ko"]
    assert "after amp was measured" not in docs["ko"] and "julia_port decided" not in optseqs_own(docs["ko"], [])


def test_a_snapshot_without_the_reasons_saids_is_quoted_as_stored(tmp_path):
    """A store whose snapshot an older release wrote (its reasons in English alone) still exports: the doc quotes the
    stored text, in any language, as it did."""
    env = dict(os.environ, OPTSEQ_DB=str(tmp_path / "state"), OPTSEQ_PLAN=str(DEFAULT_PLAN))
    for _, steps in STORY[:8]:
        for step in steps:
            cli(env, *step)
    path = tmp_path / "state" / "optseq.json"
    data = json.loads(path.read_text())
    (snapshot,) = data["snapshot"].values()
    levers = snapshot["data"]["levers"]
    assert levers["amp"]["stale_said"]["key"] == "after_measured" and levers["port"]["closed_said"]["key"] == "decided"
    for lever in levers.values():
        del lever["stale_said"], lever["closed_said"]
    path.write_text(json.dumps(data))
    ko = cli(env, "export", "--lang", "ko")
    assert "stale: model_size decided h32x2 after amp was measured" in ko
    assert "closed: julia_port decided NO-GO" in ko
    levers = {v["id"]: v for v in json.loads(cli(env, "status", "--json"))["levers"]}
    assert levers["amp"]["stale_reason"] == "model_size decided h32x2 after amp was measured"


@pytest.mark.parametrize("table", ["lifecycle", "runs", "code"])
def test_no_stored_sentence_is_english_in_korean(table):
    """Each of the sentences the store keeps a said of, filled with ids and figures, writes no English run in
    Korean (the seed story reaches a few of them; a branch that left the baseline or an eroded gain the rest)."""
    from optseq.state.lifecycle.words import text
    from optseq.state.report.labels import CODE, LIFECYCLE, RUNS

    words = {"lifecycle": LIFECYCLE, "runs": RUNS, "code": CODE}[table]
    for key, sentence in words["ko"].items():
        fields = {name: "x_1" for name in re.findall(r"(?<!\{)\{(\w+)", sentence)}
        said = text({"key": key, "fields": fields}, "ko", words)
        assert not ENGLISH_RUN.search(said), (key, said)


def test_the_gates_reasons_are_said_as_status_says_them():
    """What the lifecycle keeps of an unmet gate says, in English, what gates.unmet says: status's words stand."""
    from optseq.state.lifecycle.machine import PlanMachine
    from optseq.state.lifecycle.words import text, unmet
    from optseq.state.plan import gates

    plan = plan_loader.load(DEFAULT_PLAN)
    machine = PlanMachine(plan)
    seen = 0
    for decision in [("julia_port", "NO-GO"), ("option_b", "adopt"), ("model_size", "h64x3"), ("julia_port", "GO")]:
        ctx = machine.context()
        for lever in plan.levers:
            english = gates.unmet(lever.requires, ctx)
            assert [text(said) for said in unmet(lever.requires, ctx)] == english, lever.id
            seen += len(english)
        machine.apply("decisions", {"id": seen + 100, "seq": seen + 100, "lever": decision[0], "outcome": decision[1]})
    assert seen


def test_a_runs_noise_line_is_said_in_the_docs_language(tmp_path, cli_env):
    """A busy machine's warning: the run and the CLI keep its English, the export's results say it in the doc's."""
    from tests.state.bench.test_bench_figures import optseq, plan_env

    # the load reading is overridden: no test loads the machine to see the warning
    env = plan_env(tmp_path, cli_env, ["--ratio", "1.5"], OPTSEQ_LOADAVG="1000")
    optseq(env, "--run", "lever")
    cores = os.cpu_count()
    english = f"noisy: load average 1000.0 on {cores} core{'s' * (cores != 1)} while it ran; its figures may not repeat"
    (run,) = json.loads(optseq(env, "runs", "--json").stdout)["runs"]
    assert run["summary"]["stats"]["noise"] == english
    docs = {lang: optseq(env, "export", "--lang", lang).stdout for lang in ("ko", "en")}
    korean = f"측정 잡음: 실행 중 load average 1000.0 (코어 {cores}개); 수치가 재현되지 않을 수 있음"
    assert english in docs["en"] and korean not in docs["en"]
    assert korean in docs["ko"] and english not in docs["ko"]
    row = next(r for r in docs["ko"].splitlines() if r.startswith("| A lever | adopt |"))
    assert not ENGLISH_RUN.search(optseqs_own(row, ["A lever"])), row


def test_an_edited_lever_is_stale_in_the_docs_language(tmp_path):
    """A plan edit since the run: status says what changed in English, each doc in its own language."""
    from tests.state.runs.test_workload import cli as run_cli, lever, plan_file

    plan = plan_file(tmp_path, lever("la", 'candidate_args = ["--a=2"]'))
    db = tmp_path / "db"
    run = json.loads(run_cli(plan, db, "--run", "la", "--json").stdout)["runs"][0]["run_id"]
    plan.write_text(plan.read_text(encoding="utf-8").replace('["--a=2"]', '["--a=3"]'), encoding="utf-8")
    (la,) = json.loads(run_cli(plan, db, "status", "--json").stdout)["levers"]
    assert la["stale_reason"] == f"plan changed: la's candidate_args (since run {run})"
    docs = {lang: run_cli(plan, db, "export", "--lang", lang).stdout for lang in ("ko", "en")}
    assert f"stale: plan changed: la's candidate_args (since run {run})" in docs["en"]
    assert f"stale: plan 변경: la의 candidate_args (run {run} 이후)" in docs["ko"]
    assert "plan changed" not in docs["ko"]


def test_a_device_change_is_stale_in_the_docs_language(tmp_path, cli_env, db):
    """A number measured on another device: the stale event keeps its said beside status's English."""
    from optseq.state.sequencer import Sequencer
    from tests.state.runs.test_lever_run import run_once, write_plan

    plan = write_plan(tmp_path, ["--ratio", "1.5"])
    run_once(plan, db)
    with Sequencer.open(plan, db, mode="write") as seq:
        run = seq.store.all("runs")[-1]
        was = run["fingerprint"]["device"]
        seq.actions.mark_stack_changes(run["id"] + 1000, {**run["fingerprint"], "device": "NVIDIA H200"})
    env = dict(cli_env, OPTSEQ_PLAN=str(plan))
    (view,) = json.loads(cli(env, "status", "--json"))["levers"]
    assert view["stale_reason"] == f"device changed: measured on {was}, now NVIDIA H200"
    assert f"stale: device changed: measured on {was}, now NVIDIA H200" in cli(env, "export", "--lang", "en")
    assert f"stale: 장치 변경: {was}에서 측정, 지금은 NVIDIA H200" in cli(env, "export", "--lang", "ko")


@pytest.mark.slow
def test_a_code_change_is_stale_in_the_docs_language(tmp_path):
    """With code_changes = "stale", the workload's commits since the run: status's English, the doc's language."""
    from tests.state.runs.test_workload import BENCH, cli as run_cli, git, lever, plan_file

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "bench.py").write_text(BENCH.read_text(encoding="utf-8"), encoding="utf-8")
    workload = ('[workload]\ncommand = ["python", "bench.py", "--a=1"]\n'
                "metric = { name = \"rate\", regex = 'rate: ([0-9.]+)', unit = \"items/s\" }\nwarmup = 0\n")
    plan = plan_file(repo, lever("la", 'candidate_args = ["--a=2"]'), workload=workload)
    plan.write_text(plan.read_text(encoding="utf-8").replace('lang = "en"', 'lang = "en"\ncode_changes = "stale"'),
                    encoding="utf-8")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "bench")
    db = tmp_path / "db"
    run = json.loads(run_cli(plan, db, "--run", "la", "--json").stdout)["runs"][0]["run_id"]
    head = json.loads(run_cli(plan, db, "runs", "--json").stdout)["runs"][0]["fingerprint"]["repo"]["head"][:8]
    for i in range(2):
        (repo / "bench.py").write_text((repo / "bench.py").read_text() + f"\n# change {i}\n", encoding="utf-8")
        git(repo, "commit", "-qam", f"change {i}")
    (la,) = json.loads(run_cli(plan, db, "status", "--json").stdout)["levers"]
    assert la["stale_reason"] == f"workload code changed since run {run}: measured 2 commits ago ({head})"
    assert f"stale: {la['stale_reason']}" in run_cli(plan, db, "export", "--lang", "en").stdout
    ko = run_cli(plan, db, "export", "--lang", "ko").stdout
    assert f"stale: run {run} 이후 워크로드 코드 변경: 커밋 2개 전에 측정 ({head})" in ko


def test_a_decision_a_reversal_closed_is_superseded_in_the_docs_language(tmp_path, cli_env):
    """The port adopted on GO, then closed by NO-GO: runs --json says why in English, each doc's history in its own."""
    (tmp_path / "port.md").write_text("# port\n", encoding="utf-8")
    cli(cli_env, "record", "julia_port", "torch_jl", "c4", "pass", "--evidence", "1.1x of PyTorch")
    cli(cli_env, "plan", "port", str(tmp_path / "port.md"))
    cli(cli_env, "decide", "port", "adopt", "--why", "merged")
    cli(cli_env, "decide", "julia_port", "NO-GO", "--why", "re-measured")
    (decision,) = json.loads(cli(cli_env, "runs", "port", "--json"))["decisions"]
    assert decision["superseded_by"].endswith(": closed: julia_port decided NO-GO")
    docs = {lang: cli(cli_env, "export", "--lang", lang) for lang in ("ko", "en")}
    assert "— superseded: closed: julia_port decided NO-GO" in docs["en"]
    assert "— 대체됨: closed: julia_port NO-GO 결정" in docs["ko"]
    assert "julia_port decided" not in optseqs_own(docs["ko"], [])  # the graph's source names its classes


def test_an_inconclusive_run_says_why_in_the_docs_language(tmp_path, cli_env):
    """A guard the bench never reports: the run cannot tell; status keeps the rule's English, each doc its own."""
    from tests.state.bench.test_bench_figures import optseq, plan_env

    env = plan_env(tmp_path, cli_env, ["--ratio", "1.5"], OPTSEQ_LOADAVG="0",
                   rule='metric = "items_per_s", min_speedup = 1.2, repeats = 6, max_repeats = 12, '
                        "guards = [{ name = \"loss\", max = 1.0 }]")
    subprocess.run([*OPTSEQ, "--run", "lever"], env=env, capture_output=True, text=True, timeout=300)
    (run,) = json.loads(optseq(env, "runs", "--json").stdout)["runs"]
    reason = run["summary"]["verdict"]["reason"]
    assert run["verdict"] == "inconclusive" and reason.startswith("guard loss not reported (items_per_s 1.")
    docs = {lang: optseq(env, "export", "--lang", lang).stdout for lang in ("ko", "en")}
    assert f"inconclusive in run {run['id']}: {reason}" in docs["en"]
    assert f"run {run['id']} 결과 inconclusive: guard loss 보고 없음 (items_per_s 1." in docs["ko"]
    assert reason not in docs["ko"]
    assert not [line for line in optseqs_own(docs["ko"], ["A lever"]).splitlines() if ENGLISH_RUN.search(line)]


def test_a_straddling_run_says_what_would_settle_it_in_the_docs_language(tmp_path, cli_env):
    """Launches on both sides of the threshold: the pass loop adds why it stopped and what would likely settle it
    to the rule's reason; each doc says the whole of it in its own language, status keeps the English."""
    from tests.state.bench.test_bench_figures import optseq, plan_env

    env = plan_env(tmp_path, cli_env, ["--ratio", "1.2", "--noise", "0.05", "--straddle"], OPTSEQ_LOADAVG="0")
    subprocess.run([*OPTSEQ, "--run", "lever"], env=env, capture_output=True, text=True, timeout=300)
    (run,) = json.loads(optseq(env, "runs", "--json").stdout)["runs"]
    reason = run["summary"]["verdict"]["reason"]
    assert run["verdict"] == "inconclusive" and ("would likely settle it" in reason or "about evenly" in reason)
    docs = {lang: optseq(env, "export", "--lang", lang).stdout for lang in ("ko", "en")}
    assert f"inconclusive in run {run['id']}: {reason}" in docs["en"]
    assert reason not in docs["ko"]
    assert "더 측정해도 결정되기 어려움" in docs["ko"] or "더 측정하면 결정될 것" in docs["ko"]
    assert not [line for line in optseqs_own(docs["ko"], ["A lever"]).splitlines() if ENGLISH_RUN.search(line)]


def test_a_remeasure_that_cannot_tell_supersedes_in_the_docs_language(tmp_path, cli_env):
    """A lever decided by hand, then re-measured to no verdict: its decision leaves the stack, and the doc says why
    (the rule's reason nested in the lifecycle's sentence) in its own language; runs --json keeps the English."""
    from tests.state.bench.test_bench_figures import optseq, plan_env

    env = plan_env(tmp_path, cli_env, ["--ratio", "1.2", "--noise", "0.05", "--straddle"], OPTSEQ_LOADAVG="0")
    optseq(env, "decide", "lever", "adopt", "--why", "measured elsewhere")
    subprocess.run([*OPTSEQ, "--run", "lever"], env=env, capture_output=True, text=True, timeout=300)
    (run,) = json.loads(optseq(env, "runs", "--json").stdout)["runs"]
    assert run["verdict"] == "inconclusive"
    docs = {lang: optseq(env, "export", "--lang", lang).stdout for lang in ("ko", "en")}
    assert f"re-measured inconclusive in run {run['id']}: {run['summary']['verdict']['reason']}" in docs["en"]
    assert f"run {run['id']} 재측정 결과 inconclusive: " in docs["ko"]
    assert not [line for line in optseqs_own(docs["ko"], ["A lever", "measured elsewhere"]).splitlines()
                if ENGLISH_RUN.search(line)]


def test_a_best_of_runs_reason_is_said_in_the_docs_language(tmp_path, cli_env):
    """An experiment decided by best of N, one config excluded by its cost: the decision's reason (the comparison,
    the exclusion, the figures) in each doc's language, runs --json keeping the English."""
    from tests.state.bench.test_bench_figures import optseq
    from tests.state.runs.test_lever_run import experiment_plan

    env = dict(cli_env, OPTSEQ_PLAN=str(experiment_plan(tmp_path)), OPTSEQ_LOADAVG="0")
    subprocess.run([*OPTSEQ, "--run", "size"], env=env, capture_output=True, text=True, timeout=300)
    (run,) = json.loads(optseq(env, "runs", "--json").stdout)["runs"]
    reason = run["summary"]["reason"]
    assert run["verdict"] == "h256x4" and "excluded: h1024x6 costs" in reason, reason
    docs = {lang: optseq(env, "export", "--lang", lang).stdout for lang in ("ko", "en")}
    assert reason in docs["en"]
    assert reason not in docs["ko"] and "제외: h1024x6" in docs["ko"] and "비용, 허용치 8× 초과" in docs["ko"]
    assert not [line for line in optseqs_own(docs["ko"], ["Model size"]).splitlines() if ENGLISH_RUN.search(line)]
