"""EquityBot kernel in C: splitmix64, the rollout loop and pot odds, twin of engine/bots/equity.py."""

from libc.stdint cimport uint64_t

from optseq.native._handeval cimport evaluate5

cdef enum:
    FOLD = 0
    CALL = 1
    RAISE = 2
    NUM_CARDS = 52
    BOARD_SIZE = 3
    MAX_BOARD = 3

cdef uint64_t GOLDEN = 0x9E3779B97F4A7C15ULL
cdef uint64_t SEED_MIX = 0xC2B2AE3D27D4EB4FULL


cdef uint64_t seed_for(uint64_t game_id, uint64_t decision_index) noexcept nogil:
    return (game_id * GOLDEN) ^ (decision_index * SEED_MIX)


cdef uint64_t splitmix64_next(uint64_t* state) noexcept nogil:
    cdef uint64_t z
    state[0] += GOLDEN
    z = state[0]
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef double rollout_equity(const int* hole, const int* board, int n_board, uint64_t seed,
                           int rollouts) noexcept nogil:
    cdef int unseen[NUM_CARDS]
    cdef char known[NUM_CARDS]
    cdef int mine[5]
    cdef int theirs[5]
    cdef int n = 0, need = 2 + BOARD_SIZE - n_board
    cdef int i, j, k, t, c, a, b
    cdef long score = 0
    cdef uint64_t state = seed

    for c in range(NUM_CARDS):
        known[c] = 0
    known[hole[0]] = 1
    known[hole[1]] = 1
    for k in range(n_board):
        known[board[k]] = 1
    for c in range(NUM_CARDS):
        if not known[c]:
            unseen[n] = c
            n += 1

    mine[0] = hole[0]
    mine[1] = hole[1]
    for k in range(n_board):
        mine[2 + k] = board[k]
        theirs[2 + k] = board[k]

    for _ in range(rollouts):
        # Same partial Fisher-Yates as the Python twin: slots 0-1 the opponent, then the board.
        for i in range(need):
            j = i + <int>(((splitmix64_next(&state) >> 32) * <uint64_t>(n - i)) >> 32)
            t = unseen[i]
            unseen[i] = unseen[j]
            unseen[j] = t
        theirs[0] = unseen[0]
        theirs[1] = unseen[1]
        for k in range(n_board, BOARD_SIZE):
            mine[2 + k] = unseen[2 + k - n_board]
            theirs[2 + k] = mine[2 + k]
        a = evaluate5(mine)
        b = evaluate5(theirs)
        if a > b:
            score += 2
        elif a == b:
            score += 1
    return <double>score / (2.0 * rollouts)


cdef int decide(double equity, long pot, long to_call, bint can_raise,
                double raise_equity) noexcept nogil:
    if can_raise and equity >= raise_equity:
        return RAISE
    if to_call > 0 and equity < <double>to_call / <double>(pot + to_call):
        return FOLD
    return CALL


def opponent_act(hole, board, long pot, long to_call, bint can_raise, uint64_t game_id,
                 uint64_t decision_index, int rollouts, double raise_equity):
    """(action, equity); inputs must already be checked (engine.bots.backend does it)."""
    cdef int h[2]
    cdef int bd[MAX_BOARD]
    cdef int n_board = len(board)
    cdef int k
    cdef double e
    cdef int action
    h[0] = hole[0]
    h[1] = hole[1]
    for k in range(n_board):
        bd[k] = board[k]
    with nogil:
        e = rollout_equity(h, bd, n_board, seed_for(game_id, decision_index), rollouts)
        action = decide(e, pot, to_call, can_raise, raise_equity)
    return action, e


def splitmix64(uint64_t seed, int n) -> list:
    """The first n draws from a generator seeded with `seed` (for twin-parity tests)."""
    cdef uint64_t state = seed
    return [splitmix64_next(&state) for _ in range(n)]
