# Five-card hand evaluator; values match engine.games.cards.evaluate5 exactly.

cdef int evaluate5(const int* hand) noexcept nogil
