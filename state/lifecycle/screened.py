"""What the screens (`optseq --run screen`) measured of the plan's levers, derived from their run records: each
lever's main effect and call, each pair's interaction, and the plan's claims (`requires`, `remeasure_when`) beside
the data. Records are the truth: nothing here is stored, every view recomputes it from the machine's run index.

A screen's record (written by the run, state/runs) holds `screen`: its levers, design, blocks, launches and the last
look's step, whose fit has every estimable effect as a ratio with its 95% interval. An interaction `a×b` is a ratio
of ratios (a's ratio with b on over a's ratio with b off); in the fit's ±1 coding the log of a's ratio is the main
effect's plus or minus half the interaction's, so a's ratio is main·I^(−1/2) with b off and main·I^(1/2) with b on.
The sentences are saids (state/said.py), in the export's language by `text`.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

from optseq.state.kinds import IN_FLIGHT
from optseq.state.plan.gates import atoms
from optseq.state.said import say, text as said_text
from optseq.state.screen_record import Design, Effect, Sample, ScreenRun, builtins, samples, screen_run
from optseq.state.text import ratio_text

WORDS: dict[str, dict[str, str]] = {
    "en": {
        "depends": "measured: {lever}'s gain depends on {other}: {off} without {other}, {on} with it (screen run "
                   "{run}: {pair} {figure}{aliased})",
        "main": "screen run {run}: {figure} over the other levers' settings; {call}",
        "call": "{outcome} ({reason})",
        "claim_none": "the plan says {lever}'s gain depends on {other} ({claim}); screen run {run} measured no "
                      "interaction as large as {bound}: {pair} {figure}{aliased}",
        "claim_missing": "the plan does not say {lever}'s gain depends on {other}; screen run {run} measured {pair} "
                         "{figure}{aliased}",
        "requires": "requires {gate}",
        "remeasure": "re-measure when {other} is decided",
        "aliased": "; aliased with {aliases}",
        "and": ", ",
        "heading": "Measured by screens",
        "intro": "What the screens (`optseq --run screen`) measured of each lever; where their data contradicts the "
                 "plan's edges, the plan is unchanged and the line says so.",
    },
    "ko": {
        "depends": "측정됨: {lever}의 이득은 {other}에 따라 다름: {other} 없이 {off}, 함께 {on} "
                   "(스크린 run {run}: {pair} {figure}{aliased})",
        "main": "스크린 run {run}: 다른 레버 설정 전체에 걸쳐 {figure}; {call}",
        "call": "{outcome} ({reason})",
        "claim_none": "계획은 {lever}의 이득이 {other}에 따라 다르다고 함 ({claim}); 스크린 run {run}에서 {bound} 이상의 "
                      "상호작용 없음: {pair} {figure}{aliased}",
        "claim_missing": "계획은 {lever}의 이득이 {other}에 따라 다르다고 하지 않음; 스크린 run {run} 측정: {pair} "
                         "{figure}{aliased}",
        "requires": "requires {gate}",
        "remeasure": "{other} 결정 시 재측정",
        "aliased": "; {aliases}와 교락",
        "and": ", ",
        "heading": "스크린 측정",
        "intro": "스크린(`optseq --run screen`)이 각 레버에 대해 측정한 것; 데이터가 계획의 관계와 어긋나면 계획은 그대로 두고 "
                 "그렇다고 적음.",
    },
}

def text(said: dict, lang: str = "en") -> str:
    return said_text(said, lang if lang in WORDS else "en", WORDS)


def figure(effect: Effect) -> str:
    """`0.82× [0.75, 0.90]`: an effect's ratio and its 95% interval."""
    low, high = effect.low, effect.high
    bounds = f" [{ratio_text(low)}, {ratio_text(high)}]" if _number(low) and _number(high) else ""
    return f"{ratio_text(effect.ratio)}×{bounds}"


def pair_name(effect: Effect) -> str:
    return " × ".join(effect.pair)


def finished(screens: Iterable[ScreenRun]) -> list[ScreenRun]:
    """The screens that ended with a fit (cancelled ones included: what they measured stands), newest first."""
    done = [r for r in screens if r.status not in IN_FLIGHT and r.screen.fit.mains]
    return sorted(done, key=lambda r: r.id or 0, reverse=True)


def significant(record: ScreenRun) -> set[str]:
    """The names of the interactions the screen's last look found significant."""
    step = record.screen.step
    return {e.name for e in step.interactions} if step is not None else set()


def interactions(screens: Iterable[ScreenRun]) -> dict[frozenset[str], tuple[Effect, ScreenRun]]:
    """{a, b} -> (the interaction, the screen's record), from the latest finished screen whose fit estimates it."""
    found: dict[frozenset[str], tuple[Effect, ScreenRun]] = {}
    for record in finished(screens):
        for effect in record.screen.fit.interactions:
            if len(effect.levers) == 2 and _number(effect.ratio):
                found.setdefault(frozenset(effect.levers), (effect, record))
    return found


def lever_facts(screens: list[ScreenRun]) -> dict[str, dict[str, Any]]:
    """lever -> {"run", "main" (its main effect), "call" (its LeverCall), "main_said", "interactions": [{"with",
    "effect", "run", "significant", "off", "on", "said"}]}: its main effect and call from the latest finished screen
    that holds it, each significant interaction from the latest that estimates it. The effects and calls are
    handed out as stored (status --json). `screens`: the run index's, each decoded once as it was kept."""
    facts: dict[str, dict[str, Any]] = {}
    mains: dict[str, Effect] = {}
    for record in finished(screens):
        screen = record.screen
        calls = screen.step.calls if screen.step is not None else {}
        for main in screen.fit.mains:
            lever = main.pair[0]
            if lever in facts or not _number(main.ratio):
                continue
            call = calls.get(lever)
            # the screen's decision where it made one (a confirmed combination adopted), else its last look's call
            said_call = say("call", outcome=screen.verdicts.get(lever) or call.outcome,
                            reason=screen.whys.get(lever) or call.reason or "") if call else ""
            mains[lever] = main
            facts[lever] = {"run": record.id, "main": builtins(main), "call": builtins(call) if call else None,
                            "interactions": [],
                            "main_said": say("main", run=record.id, figure=figure(main), call=said_call)}
    for levers, (effect, record) in interactions(screens).items():
        if effect.name not in significant(record):
            continue
        for lever in sorted(levers):
            other = next(iter(levers - {lever}))
            found = mains.get(lever)
            if found is None or facts[lever]["run"] != record.id:
                found = next((m for m in record.screen.fit.mains if lever in m.levers), None)
            if found is None:
                continue
            half = effect.ratio ** 0.5
            off, on = found.ratio / half, found.ratio * half
            facts.setdefault(lever, {"run": None, "main": None, "call": None, "main_said": None,
                                     "interactions": []})["interactions"].append({
                "with": other, "effect": builtins(effect), "run": record.id, "significant": True, "off": off,
                "on": on,
                "said": say("depends", run=record.id, lever=lever, other=other, off=f"{ratio_text(off)}×",
                            on=f"{ratio_text(on)}×", pair=pair_name(effect), figure=figure(effect),
                            aliased=_aliased(effect))})
    return facts


def claimed(plan) -> dict[tuple[str, str], dict]:
    """(a, b) -> the plan's claim that a's gain depends on b: a gate of a naming b (`requires`), or b among the
    levers whose decision makes a re-measured (`remeasure_when`)."""
    found: dict[tuple[str, str], dict] = {}
    ids = {lever.id for lever in plan.levers}
    for lever in plan.levers:
        for atom in atoms(lever.requires):
            if atom.lever is not None and atom.lever in ids and atom.lever != lever.id:
                found.setdefault((lever.id, atom.lever), say("requires", gate=atom.text()))
        for other in lever.remeasure_when:
            if other in ids and other != lever.id:
                found.setdefault((lever.id, other), say("remeasure", other=other))
    return found


def claims_beside_data(plan, screens: Iterable[ScreenRun]) -> list[dict]:
    """One said per pair of screened levers where the data contradicts the plan: the plan says one's gain depends
    on the other and the screen bounded any interaction below the gain their rules ask for, or the screen found one
    the plan does not mention. The plan
    is never changed: this is said, and the team decides."""
    out = []
    edges = claimed(plan)
    for levers, (effect, record) in sorted(interactions(screens).items(), key=lambda kv: sorted(kv[0])):
        a, b = sorted(levers)
        claims = [(x, y, edges[(x, y)]) for x, y in ((a, b), (b, a)) if (x, y) in edges]
        common = dict(run=record.id, pair=pair_name(effect), figure=figure(effect), aliased=_aliased(effect))
        if effect.name in significant(record):
            if not claims:
                out.append({"levers": [a, b], "run": record.id,
                            "said": say("claim_missing", lever=a, other=b, **common)})
        elif (bound := _immaterial(plan, (a, b), effect)) is not None:
            for lever, other, claim in claims:
                out.append({"levers": [lever, other], "run": record.id,
                            "said": say("claim_none", lever=lever, other=other, claim=claim, bound=bound, **common)})
    return out


def _immaterial(plan, levers: tuple[str, str], effect: Effect) -> str | None:
    """`1.1×` where the interaction's 95% interval lies within [1/T, T], T the smaller of the two levers'
    thresholds: a dependence smaller than the gain either rule asks for, which contradicts a claim that one's gain
    depends on the other. None where the interval leaves room for one that large: an interaction not found is not
    one shown absent, and the plan's claim then stands unchallenged."""
    rules = [lever.rule.min_speedup for lever in plan.levers
             if lever.id in levers and lever.rule is not None and lever.rule.min_speedup > 1]
    low, high = effect.low, effect.high
    if not rules or low is None or high is None:
        return None
    bound = min(rules)
    return f"{ratio_text(bound)}×" if 1 / bound <= low and high <= bound else None


def design_text(design: Design) -> str:
    """`2^(4-1) resolution IV, 8 runs a block; D = ABC` from a design's record (state/screen/design.py's to_dict)."""
    k, gens = len(design.factors), design.generators
    size = f"2^{k}" if not gens else f"2^({k}-{len(gens)})"
    res = design.resolution
    kind = "full factorial" if res is None else f"resolution {ROMAN.get(res, res)}"
    tail = f"; {', '.join(g.replace('=', ' = ') for g in gens)}" if gens else ""
    return f"{size} {kind}, {len(design.runs)} runs a block{tail}"


ROMAN = {3: "III", 4: "IV", 5: "V", 6: "VI", 7: "VII", 8: "VIII"}


def summary(record: Mapping[str, Any] | ScreenRun) -> dict[str, Any]:
    """A screen run as status, runs and the console say it: its levers, design, blocks, launches, each lever's
    call, the significant interactions' sentences and the confirmation. `record`: a kept screen (its type), or a
    stored record (`optseq runs`, which reads the store), decoded here."""
    run = screen_run(record)
    screen = run.screen
    step = screen.step
    calls = step.calls if step is not None else {}
    design = screen.design or Design()
    mains = {m.pair[0]: m for m in screen.fit.mains}
    levers = list(screen.levers or design.factors)
    return {"id": run.id, "status": run.status, "levers": levers,
            "design": design_text(design), "blocks": len(screen.blocks),
            "launches": screen.launches, "budget": screen.budget,
            # the budget counts the design's runs; each pass's warm-ups come on top of it (screen_run.Screen.asks)
            "timed": len(screen.blocks) * len(design.runs),
            # the decision where the screen made one (a confirmed combination's levers adopted), else its last call
            "calls": {lever: {"outcome": screen.verdicts.get(lever) or (call.outcome if call else None),
                              "reason": screen.whys.get(lever) or (call.reason if call else None),
                              "figure": figure(mains[lever]) if lever in mains else None}
                      for lever in levers for call in (calls.get(lever),)},
            "said": list(step.said) if step is not None else [], "note": step.note if step is not None else None,
            "confirmed": builtins(screen.confirmed) if screen.confirmed is not None else None}


def launches_text(view: dict) -> str:
    """`72 of 72 launches (+8 warm-ups)`: the design's runs against the budget, which counts them alone, and the
    warm-ups beside them ("" before any launch is on record). `view` is a summary (status --json's `screen`)."""
    launches, timed, budget = view["launches"], view["timed"] or 0, view["budget"]
    warm = launches - timed if _number(launches) and timed and launches > timed else 0
    if not timed:
        return f"{launches} launches" if launches is not None else ""
    return ((f"{timed} of {budget} launches" if _number(budget) else f"{timed} launches")
            + (f" (+{warm} warm-up{'s' * (warm != 1)})" if warm else ""))


def summary_lines(view: dict) -> list[str]:
    """`screen run 12 (ok) over amp, compile: 2^2 full factorial, 4 runs a block; 3 blocks, 12 of 48 launches (+3
    warm-ups)`: the design's runs against the budget, which counts them alone, and the warm-ups beside them;
    then each lever's call, the interactions' sentences and the confirmation, one line each. `view` is a summary
    (status --json's `screen`)."""
    spent = launches_text(view)
    lines = [f"screen run {view['id']} ({view['status']}) over {', '.join(view['levers'])}: {view['design']}; "
             f"{view['blocks']} block{'s' * (view['blocks'] != 1)}" + (f", {spent}" if spent else "")]
    calls = [f"{lever} {c['outcome'] or 'undecided'}" + (f" {c['figure']}" if c["figure"] else "")
             for lever, c in view["calls"].items()]
    if calls:
        lines.append("  " + "; ".join(calls))
    lines += [f"  {sentence}" for sentence in view["said"]]
    confirmed = view["confirmed"]
    if confirmed:
        lines.append(f"  confirmed {' + '.join(confirmed['levers'])}: {confirmed['outcome']}"
                     + (f" in run {confirmed['run']}" if confirmed["run"] is not None else ""))
    elif view["note"] and view["status"] not in IN_FLIGHT:
        lines.append(f"  {view['note']}")
    return lines


def _aliased(effect: Effect) -> dict | str:
    aliases = [str(a) for a in effect.aliases or ()]
    return say("aliased", aliases=aliases) if aliases else ""


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def corners(design: Design, found: Iterable[Sample], a: str, b: str) -> dict[tuple[int, int], float] | None:
    """The metric's mean at each corner of the pair (a, b): (level of a, level of b) -> the mean of the samples
    whose design run had those levels (each sample's `arm` is `run-<index>` into the design's runs), every other
    lever's setting averaged over; None where a corner has no sample yet."""
    if a not in design.factors or b not in design.factors:
        return None
    ia, ib = design.factors.index(a), design.factors.index(b)
    sums: dict[tuple[int, int], list[float]] = {}
    for sample in found:
        index = sample.index
        if index is None or index >= len(design.runs) or not _number(sample.value):
            continue
        sums.setdefault((design.runs[index][ia], design.runs[index][ib]), []).append(float(sample.value))
    if len(sums) < 4:
        return None
    return {corner: sum(values) / len(values) for corner, values in sums.items()}


__all__ = ["WORDS", "text", "figure", "pair_name", "finished", "significant", "interactions",
           "lever_facts", "claimed", "claims_beside_data", "design_text", "summary", "launches_text",
           "summary_lines", "corners", "screen_run", "samples", "ScreenRun", "Sample", "Design"]
