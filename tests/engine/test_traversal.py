"""Deep CFR traversal: one generator, several drivers, identical samples for identical seeds."""
import hashlib

import pytest
import torch

from optseq.engine.games.api import CALL, FOLD, RAISE, InfoRow
from optseq.engine.games.flop_holdem import FlopHoldem
from optseq.engine.games.leduc import LeducGame
from optseq.engine.traversal import option_a, option_b, sequential
from optseq.engine.traversal.generator import Query, Traversal, jobs_for, regret_matching, traverse
from optseq.engine.traversal.sequential import exact_net

GAME = LeducGame()



def jobs(n=40, iteration=3):
    return jobs_for(7, iteration, 0, n) + jobs_for(7, iteration, 1, n)


def signature(results):
    return [(r.job, r.advantage, r.strategy, r.value, r.queries) for r in results]


def test_regret_matching():
    assert regret_matching([2.0, -1.0, 6.0], [FOLD, CALL, RAISE], 3) == [0.25, 0.0, 0.75]
    # Illegal actions get nothing even with a positive advantage.
    assert regret_matching([5.0, 1.0, 3.0], [CALL, RAISE], 3) == [0.0, 0.25, 0.75]
    # No positive advantage: everything on the best legal action.
    assert regret_matching([-3.0, -2.0, -0.5], [CALL, RAISE], 3) == [0.0, 0.0, 1.0]
    assert regret_matching([0.0, 0.0, 0.0], [CALL, RAISE], 3) == [0.0, 1.0, 0.0]


def test_seeds_depend_only_on_their_coordinates():
    assert jobs_for(1, 2, 0, 5) == jobs_for(1, 2, 0, 5)
    assert jobs_for(1, 2, 0, 5)[:3] == jobs_for(1, 2, 0, 3)
    seeds = {j.seed for j in jobs_for(1, 2, 0, 5) + jobs_for(1, 2, 1, 5) + jobs_for(1, 3, 0, 5) + jobs_for(2, 2, 0, 5)}
    assert len(seeds) == 20


def test_generator_yields_queries_for_the_player_to_act():
    net = exact_net(GAME.info_state_size, GAME.num_actions)
    gen = traverse(GAME, Traversal(traverser=1, iteration=4, seed=11))
    query = next(gen)
    count = 0
    try:
        while True:
            assert isinstance(query, Query) and len(query.info) == GAME.info_state_size
            assert query.info[query.player] == 1.0 and query.info[1 - query.player] == 0.0
            count += 1
            query = gen.send(sequential.forward_rows(net, [query.info])[0])
    except StopIteration as stop:
        result = stop.value
    assert result.queries == count > 0
    assert result.advantage and all(s.weight == 4.0 for s in result.advantage + result.strategy)
    # Regret samples are the traverser's, strategy samples the opponent's.
    assert all(s.info[1] == 1.0 for s in result.advantage)
    assert all(s.info[0] == 1.0 for s in result.strategy)
    for s in result.strategy:
        assert sum(s.target) == pytest.approx(1.0) and min(s.target) >= 0.0


def test_regret_targets_are_action_values_minus_their_mean():
    # Equal advantages everywhere make every strategy uniform over the legal actions, so the regrets
    # recorded at each information set (value of an action minus the mean) must sum to zero.
    def flat(x):
        return torch.ones(x.shape[0], 3)

    results = sequential.run(GAME, flat, jobs(10))
    regrets = [s.target for r in results for s in r.advantage]
    assert all(sum(t) == pytest.approx(0.0, abs=1e-9) for t in regrets)
    assert any(t[RAISE] != 0.0 for t in regrets)
    # Player 0's opening decision has no fold: its regret slot stays zero.
    opening = [s.target for r in results for s in r.advantage if s.info[0] == 1.0 and sum(s.info[8:]) == 0]
    assert opening and all(t[FOLD] == 0.0 for t in opening)


@pytest.mark.parametrize("k", [1, 5, 64])
def test_option_b_matches_sequential(k):
    net = exact_net(GAME.info_state_size, GAME.num_actions, seed=3)
    work = jobs()
    assert signature(option_b.run(GAME, net, work, k=k)) == signature(sequential.run(GAME, net, work))


@pytest.mark.parametrize("workers, k", [(1, 1), (3, 1), (4, 8)])
def test_option_a_and_a_plus_b_match_sequential(workers, k):
    net = exact_net(GAME.info_state_size, GAME.num_actions, seed=4)
    work = jobs()
    stats = option_a.ServerStats()
    got = option_a.run(GAME, net, work, workers=workers, k=k, stats=stats)
    assert signature(got) == signature(sequential.run(GAME, net, work))
    assert sum(stats.batch_sizes) == sum(r.queries for r in got)
    assert max(stats.batch_sizes) <= workers * k
    if workers * k > 1:
        assert stats.mean_batch > 1.0  # the server really did merge requests
    assert 0.0 < stats.latency_quantile(0.5) <= stats.latency_quantile(0.99)


# sha256 of the samples of a fixed job set under an exact net, recorded with the recursive `yield from`
# traversal and the uncached Leduc states: speeding up the walk or the game must not change one bit.
PINNED = {
    "leduc": (60, "53949d50cb7dd9e9fcbcb14c93e1cfbe3062ea154c65035a37e7fd5916adc2a0", 1917),
    "flop_holdem": (20, "3d912ab569343025a1126e89dc407cb23cf4b172db25b0073c5cb16cc3a33b5d", 240),
}


@pytest.mark.parametrize("game", [LeducGame(), FlopHoldem()], ids=lambda g: g.name)
@pytest.mark.parametrize("driver", ["sequential", "option_b"])
def test_samples_match_the_recorded_digest(game, driver):
    count, digest, queries = PINNED[game.name]
    work = jobs_for(2026, 5, 0, count) + jobs_for(2026, 5, 1, count)
    net = exact_net(game.info_state_size, game.num_actions, seed=9)
    results = sequential.run(game, net, work) if driver == "sequential" else option_b.run(game, net, work, k=16)
    assert sum(r.queries for r in results) == queries
    assert hashlib.sha256(repr(signature(results)).encode()).hexdigest() == digest


def test_info_rows_batch_as_their_floats_would():
    rows = [(1.0, 0.0, 0.5), (0.0, -2.0, 3.25)]
    joined = sequential.batch([InfoRow(r) for r in rows])
    assert joined.dtype.name == "float32" and joined.shape == (2, 3) and joined.flags.writeable
    assert joined.tolist() == sequential.batch(rows).tolist() == [list(r) for r in rows]
    # One plain row among InfoRows: numpy parses them all.
    assert sequential.batch([InfoRow(rows[0]), list(rows[1])]).tolist() == [list(r) for r in rows]
    row = InfoRow(rows[1])
    assert row == rows[1] and repr(row) == repr(rows[1]) and tuple(row) == rows[1]
    with pytest.raises(ValueError):  # rows of different widths are an error either way
        sequential.batch([InfoRow(rows[0]), InfoRow((1.0,))])


def test_samples_change_with_the_net():
    work = jobs(10)
    a = sequential.run(GAME, exact_net(GAME.info_state_size, 3, seed=1), work)
    b = sequential.run(GAME, exact_net(GAME.info_state_size, 3, seed=2), work)
    assert signature(a) != signature(b)


def test_server_failure_reaches_the_caller():
    def broken(x):
        raise RuntimeError("net exploded")

    with pytest.raises(RuntimeError, match="inference server failed"):
        option_a.run(GAME, broken, jobs(4), workers=2)


def test_bad_driver_arguments():
    net = exact_net(GAME.info_state_size, 3)
    with pytest.raises(ValueError, match="k must be"):
        option_b.run(GAME, net, jobs(2), k=0)
    with pytest.raises(ValueError, match="workers must be"):
        option_a.run(GAME, net, jobs(2), workers=0)


def test_gc_pause_leaves_no_young_collection_behind():
    import gc

    collections = []

    def record(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(record)
    try:
        with sequential.gc_paused():
            assert not gc.isenabled()
            kept = [[i] for i in range(50_000)]
        more = [[i] for i in range(10)]
        # The survivors went to the oldest generation unscanned: re-enabling ran no collection over them.
        assert gc.isenabled() and collections == [] and gc.get_freeze_count() == 0
        assert len(kept) + len(more) == 50_010
        gc.freeze()  # someone else's frozen objects stay frozen
        frozen = gc.get_freeze_count()
        with sequential.gc_paused():
            others = [[i] for i in range(1_000)]
        assert gc.get_freeze_count() == frozen and gc.isenabled() and len(others) == 1_000
    finally:
        gc.unfreeze()
        gc.callbacks.remove(record)
