# EquityBot kernel: the PRNG, the Monte Carlo rollout loop and the pot-odds rule of
# engine/bots/equity.py, in C.

from libc.stdint cimport uint64_t

cdef uint64_t seed_for(uint64_t game_id, uint64_t decision_index) noexcept nogil
cdef uint64_t splitmix64_next(uint64_t* state) noexcept nogil
cdef double rollout_equity(const int* hole, const int* board, int n_board, uint64_t seed,
                           int rollouts) noexcept nogil
cdef int decide(double equity, long pot, long to_call, bint can_raise,
                double raise_equity) noexcept nogil
