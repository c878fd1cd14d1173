"""The Cython walk against the Python reference: same queries, draws and samples, bit for bit."""
import random
import types

import pytest
import torch

from optseq.engine.games.flop_holdem import FlopHoldem
from optseq.engine.games.leduc import LeducGame
from optseq.engine.nets.mlp import MLP, MLPConfig
from optseq.engine.traversal import generator
from optseq.engine.traversal.generator import Traversal, jobs_for

_traverse = pytest.importorskip("optseq.native._traverse", reason="native extension not built")


def drive(walk, game, jobs, answer):
    """Each job's walk run to the end, answering every query with answer(info); queries kept in order."""
    out = []
    for job in jobs:
        gen, asked = walk(game, job), []
        try:
            query = next(gen)
            while True:
                asked.append(query)
                query = gen.send(answer(query.info))
        except StopIteration as stop:
            r = stop.value
        out.append((asked, r.job, r.advantage, r.strategy, r.value, r.queries))
    return out


def mlp_answers(game, seed):
    # Real float32 outputs of both signs: both branches of regret matching, inexact sums and quotients.
    torch.manual_seed(seed)
    model = MLP(MLPConfig(game.info_state_size, 16, 2, game.num_actions)).eval()

    def answer(info):
        with torch.inference_mode():
            return (model(torch.tensor([info])) * 3.0)[0].tolist()

    return answer


@pytest.mark.parametrize("game, count", [(LeducGame(), 150), (FlopHoldem(), 15)], ids=["leduc", "flop_holdem"])
@pytest.mark.parametrize("seed", [0, 1])
def test_native_walk_matches_the_python_walk(game, count, seed):
    jobs = jobs_for(seed, 3, 0, count) + jobs_for(seed, 3, 1, count)
    answer = mlp_answers(game, seed)
    python = drive(generator.python_traverse, game, jobs, answer)
    native = drive(generator.native_traverse, game, jobs, answer)
    assert sum(len(p[0]) for p in python) > count  # every traversal asked something
    mismatched = [i for i, (p, n) in enumerate(zip(python, native)) if p != n]
    assert not mismatched, f"{len(mismatched)} of {len(jobs)} traversals differ, first job {jobs[mismatched[0]]}"


def test_ties_and_zero_advantages_take_the_same_branch():
    # All-zero and all-equal answers: no positive advantage, the first best legal action takes all.
    game = LeducGame()
    jobs = jobs_for(5, 1, 0, 40) + jobs_for(5, 1, 1, 40)
    for answer in (lambda info: [0.0, 0.0, 0.0], lambda info: [-1.0, -1.0, -1.0], lambda info: [2.0, 2.0, 2.0]):
        assert drive(generator.native_traverse, game, jobs, answer) == \
            drive(generator.python_traverse, game, jobs, answer)


def test_too_many_actions_is_an_error():
    wide = types.SimpleNamespace(num_actions=17, new_initial_state=LeducGame().new_initial_state)
    gen = generator.native_traverse(wide, jobs_for(0, 1, 0, 1)[0])
    with pytest.raises(ValueError, match="num_actions must be in 1..16"):
        next(gen)


def test_record_types_must_be_plain_tuple_subclasses():
    game = LeducGame()
    job = jobs_for(0, 1, 0, 1)[0]
    result = generator.TraversalResult(job)
    for query_type, sample_type in ((list, generator.Sample), (generator.Query, dict)):
        gen = _traverse.walk(game, result, 1, 0, 1.0, query_type, sample_type, -1, -2)
        with pytest.raises(TypeError, match="is not a tuple subclass"):
            next(gen)


@pytest.mark.parametrize("seed", [0, 1, 2**32 - 1, 2**32, 2**63 + 12345, 2**64 - 1])
def test_c_mersenne_twister_draws_what_random_random_draws(seed):
    # 700 draws take 1400 words: past the first round of 624, whose twist runs word by word.
    rng = random.Random(seed)
    assert _traverse.mt_draws(seed, 700) == [rng.random() for _ in range(700)]


@pytest.mark.parametrize("seed", [-12345, 2**64, 2**70 + 3])
def test_seeds_outside_the_c_seeding_use_the_stock_rng(seed):
    game = LeducGame()
    jobs = [Traversal(traverser, 2, seed) for traverser in (0, 1)]
    answer = mlp_answers(game, 0)
    assert drive(generator.native_traverse, game, jobs, answer) == drive(generator.python_traverse, game, jobs, answer)


def test_a_legal_action_outside_the_game_is_an_error():
    class Bad:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def apply(self, action):
            return Bad(self.inner.apply(action))

        def legal_actions(self):
            return [1, 7]

    game = types.SimpleNamespace(num_actions=3, new_initial_state=lambda: Bad(LeducGame().new_initial_state()))
    gen = generator.native_traverse(game, jobs_for(0, 1, 0, 1)[0])
    next(gen)
    with pytest.raises(ValueError, match="legal action 7 is outside 0..2"):
        gen.send([0.0, 1.0, 2.0])
