"""The external-sampling walk in C: twin of engine/traversal/generator.py's traverse(), step for step.

Same generator protocol (yields queries, receives advantages through send(), returns the result),
same RNG draws in the same order and the same float operations in the same order, so both twins
give identical samples. The game stays a Python object behind its State API; what moves to C is the
walk's own bookkeeping: the job's RNG, regret matching, the opponent's draw, the explicit stack
and the regret targets: at K = 64 the walk, not the forward, was most of Option B's time.

native never imports the engine (import-linter): the caller hands in the result object, the seed,
the record types and the game's CHANCE/TERMINAL codes.
"""

import random

from libc.stdint cimport uint32_t, uint64_t
from libc.string cimport memcpy

from cpython.float cimport PyFloat_FromDouble
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM

cdef enum:
    MAX_ACTIONS = 16

cdef extern from *:
    """
    /* What tuple.__new__(cls, (a, b[, c])) builds for a tuple subclass without a __dict__ (a NamedTuple),
       minus the slot wrapper, the argument tuple and the temporary tuple that tuple_subtype_new copies. */
    static PyObject* optseq_record(PyObject* cls, PyObject* a, PyObject* b, PyObject* c) {
        PyTypeObject* type = (PyTypeObject*)cls;
        Py_ssize_t n = c == NULL ? 2 : 3;
        PyObject* out = type->tp_alloc(type, n);
        if (out == NULL) return NULL;
        Py_INCREF(a); PyTuple_SET_ITEM(out, 0, a);
        Py_INCREF(b); PyTuple_SET_ITEM(out, 1, b);
        if (c != NULL) { Py_INCREF(c); PyTuple_SET_ITEM(out, 2, c); }
        return out;
    }
    """
    object optseq_record(object cls, object a, object b, void* c)
    object optseq_record3 "optseq_record"(object cls, object a, object b, object c)


# -- Mersenne Twister, as CPython's _randommodule.c seeds and draws it ---------------------------------------
# random.Random(seed) for 0 <= seed < 2**64, drawn by random(), without a Python call per draw. Two costs of
# the stock seeding go: init_genrand(19650218) is the same for every seed (computed once, copied), and the
# first twist of all 624 words runs word by word as draws need them (a Leduc walk draws a handful).
cdef enum:
    MT_N = 624
    MT_M = 397

cdef uint32_t _MT_BASE[MT_N]


cdef struct MT:
    uint32_t mt[MT_N]
    int index      # next word to hand out
    int twisted    # words of the current round already twisted (MT_N: the round is complete)


cdef void _mt_base() noexcept:
    cdef int i
    _MT_BASE[0] = 19650218U
    for i in range(1, MT_N):
        _MT_BASE[i] = 1812433253U * (_MT_BASE[i - 1] ^ (_MT_BASE[i - 1] >> 30)) + <uint32_t>i


_mt_base()


cdef void mt_seed(MT* r, uint64_t seed) noexcept:
    """init_by_array over seed's 32-bit words, low first (one word when seed < 2**32).

    The stock loops with their wrap-around tests unrolled: a key of one or two words is shorter than
    the state, so the first loop runs over words 1..623 then word 1 again, the second over 2..623 then 1.
    """
    cdef uint32_t key[2]
    cdef uint32_t* mt = r.mt
    cdef uint32_t mask = 1 if seed >> 32 else 0  # j = step % key_length
    cdef int i
    key[0] = <uint32_t>seed
    key[1] = <uint32_t>(seed >> 32)
    memcpy(mt, _MT_BASE, sizeof(_MT_BASE))
    for i in range(1, MT_N):
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525U)) + key[(i - 1) & mask] + ((i - 1) & mask)
    mt[0] = mt[MT_N - 1]
    mt[1] = (mt[1] ^ ((mt[0] ^ (mt[0] >> 30)) * 1664525U)) + key[(MT_N - 1) & mask] + ((MT_N - 1) & mask)
    for i in range(2, MT_N):
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941U)) - <uint32_t>i
    mt[0] = mt[MT_N - 1]
    mt[1] = (mt[1] ^ ((mt[0] ^ (mt[0] >> 30)) * 1566083941U)) - 1U
    mt[0] = 0x80000000U
    r.index = 0
    r.twisted = 0


cdef inline uint32_t _twist_word(uint32_t* mt, int kk) noexcept:
    cdef uint32_t y
    if kk < MT_N - 1:
        y = (mt[kk] & 0x80000000U) | (mt[kk + 1] & 0x7fffffffU)
    else:
        y = (mt[kk] & 0x80000000U) | (mt[0] & 0x7fffffffU)
    return mt[(kk + MT_M) % MT_N] ^ (y >> 1) ^ (0x9908b0dfU if y & 1 else 0U)


cdef inline uint32_t mt_next(MT* r) noexcept:
    cdef uint32_t y
    cdef uint32_t* mt = r.mt
    if r.index >= MT_N:
        r.index = 0
        r.twisted = 0
    # The stock generator twists words 0..623 in order before handing out word 0; word kk reads only
    # words kk, kk+1 and kk+397 (mod 624), so twisting it just before it is handed out gives the same words.
    if r.index >= r.twisted:
        mt[r.twisted] = _twist_word(mt, r.twisted)
        r.twisted += 1
    y = mt[r.index]
    r.index += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9d2c5680U
    y ^= (y << 15) & 0xefc60000U
    y ^= y >> 18
    return y


cdef inline double mt_random(MT* r) noexcept:
    """random.Random.random(): 53 bits from two words."""
    cdef uint32_t a = mt_next(r) >> 5, b = mt_next(r) >> 6
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


def mt_draws(seed, int n):
    """n random() draws from the C generator seeded with `seed` (0 <= seed < 2**64): for the parity tests."""
    cdef MT r
    mt_seed(&r, seed)
    return [mt_random(&r) for _ in range(n)]


cdef class _Frame:
    """A traverser node whose actions are being explored."""

    cdef object node
    cdef object info
    cdef list legal
    cdef int n_legal
    cdef int next
    cdef double strategy[MAX_ACTIONS]
    cdef double values[MAX_ACTIONS]


cdef inline int _match(object advantages, list legal, int n_legal, double* probs, int num_actions) except -1:
    """Regret matching into probs, as generator.regret_matching does (same sums in the same order)."""
    cdef int i, a, best
    cdef double v, top, total = 0.0
    cdef double adv[MAX_ACTIONS]
    for a in range(num_actions):
        probs[a] = 0.0
    for i in range(n_legal):
        a = legal[i]
        if not 0 <= a < num_actions:  # bounds checks are off: a bad action would write past probs
            raise ValueError(f"walk: legal action {a} is outside 0..{num_actions - 1}")
        v = advantages[a]
        adv[i] = v
        if v > 0.0:
            total += v
    if total > 0.0:
        for i in range(n_legal):
            v = adv[i]
            if v > 0.0:
                probs[<int>legal[i]] = v / total
    else:
        best = 0
        top = adv[0]
        for i in range(n_legal):
            if adv[i] > top:
                best, top = i, adv[i]
        probs[<int>legal[best]] = 1.0
    return 0


cdef object _pick(list pairs, double u):
    """The outcome u falls on among (outcome, probability) pairs; generator._pick after its draw."""
    cdef double acc = 0.0
    for outcome, p in pairs:
        acc += <double>p
        if u < acc:
            return outcome
    for outcome, p in reversed(pairs):
        if p > 0:
            return outcome


cdef tuple _floats(const double* xs, int n):
    """A tuple of n Python floats, built in place (no list in between)."""
    cdef tuple out = PyTuple_New(n)
    cdef int i
    for i in range(n):
        x = PyFloat_FromDouble(xs[i])
        Py_INCREF(x)  # SET_ITEM steals a reference; `x` gives its own up at the next assignment
        PyTuple_SET_ITEM(out, i, x)
    return out


def walk(game, result, seed, int traverser, double weight, query_type, sample_type, int chance, int terminal):
    """traverse()'s generator: yields query_type(player, info), returns `result` filled in."""
    cdef int num_actions = game.num_actions
    if not 0 < num_actions <= MAX_ACTIONS:
        raise ValueError(f"walk: num_actions must be in 1..{MAX_ACTIONS}, got {num_actions}")
    for record in (query_type, sample_type):
        # optseq_record fills tuple slots: only a tuple subclass with no instance dict fits it.
        if not (isinstance(record, type) and issubclass(record, tuple) and (<type>record).__dictoffset__ == 0):
            raise TypeError(f"walk: {record!r} is not a tuple subclass without a __dict__ (a NamedTuple)")
    cdef list advantage_out = result.advantage
    cdef list strategy_out = result.strategy
    # The job's RNG is random.Random(seed): in C when the seed fits the C seeding, else the stock object.
    cdef MT mt
    cdef bint c_rng = isinstance(seed, int) and abs(seed) < 2 ** 64
    if c_rng:
        mt_seed(&mt, abs(seed))
    else:
        draw = random.Random(seed).random
    cdef list stack = []
    cdef _Frame frame
    cdef list legal
    cdef int player, n_legal, i, a, queries = 0
    cdef double u, acc, ev, value
    cdef double probs[MAX_ACTIONS]
    cdef double regrets[MAX_ACTIONS]
    state = game.new_initial_state()
    while True:
        player = state.current_player()
        while player == chance:
            state = state.apply(_pick(state.chance_outcomes(), mt_random(&mt) if c_rng else draw()))
            player = state.current_player()
        if player != terminal:
            info = state.info_state_tensor(player)
            if not isinstance(info, tuple):
                info = tuple(info)
            queries += 1
            advantages = yield optseq_record(query_type, player, info, NULL)
            legal = state.legal_actions()
            n_legal = len(legal)
            if n_legal < 1:
                raise ValueError(f"walk: player {player} to act with no legal action")
            _match(advantages, legal, n_legal, probs, num_actions)
            if player == traverser:
                frame = _Frame.__new__(_Frame)  # tp_new directly, not a call through type()
                frame.node, frame.info, frame.legal, frame.n_legal, frame.next = state, info, legal, n_legal, 1
                for a in range(num_actions):
                    frame.strategy[a] = probs[a]
                    frame.values[a] = 0.0
                stack.append(frame)
                state = state.apply(legal[0])
            else:
                strategy_out.append(optseq_record3(sample_type, info, _floats(probs, num_actions), weight))
                u = mt_random(&mt) if c_rng else draw()
                acc = 0.0
                a = -1
                for i in range(n_legal):
                    acc += probs[<int>legal[i]]
                    if u < acc:
                        a = legal[i]
                        break
                if a < 0:
                    for i in range(n_legal - 1, -1, -1):
                        if probs[<int>legal[i]] > 0:
                            a = legal[i]
                            break
                state = state.apply(a)
            continue
        value = state.returns()[traverser]
        while stack:
            frame = <_Frame>stack[len(stack) - 1]  # wraparound is off: no [-1]
            legal = frame.legal
            frame.values[<int>legal[frame.next - 1]] = value
            if frame.next < frame.n_legal:
                frame.next += 1
                state = frame.node.apply(legal[frame.next - 1])
                break
            stack.pop()
            ev = 0.0
            for i in range(frame.n_legal):
                a = legal[i]
                ev += frame.strategy[a] * frame.values[a]
            for a in range(num_actions):
                regrets[a] = 0.0
            for i in range(frame.n_legal):
                a = legal[i]
                regrets[a] = frame.values[a] - ev
            advantage_out.append(optseq_record3(sample_type, frame.info, _floats(regrets, num_actions), weight))
            value = ev
        else:
            result.value = value
            result.queries = queries
            return result
