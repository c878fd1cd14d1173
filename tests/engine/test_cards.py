"""Card encoding and the 5-card evaluator: every category, kickers, the wheel, ties."""
import pytest

from optseq.engine.games import cards as C


def value(text):
    return C.evaluate(C.cards(text))


def test_encoding_round_trips_and_orders_ranks():
    assert C.card("2c") == 0 and C.card("As") == 51 and C.card("Td") == 33
    assert [C.card(C.card_str(c)) for c in C.DECK] == list(C.DECK)
    assert C.rank_of(C.card("Kh")) == 11 and C.suit_of(C.card("Kh")) == 2


@pytest.mark.parametrize("bad", ["1s", "Ax", "A", "10s", "as"])
def test_bad_card_text_is_named(bad):
    with pytest.raises(ValueError, match=repr(bad)):
        C.card(bad)


@pytest.mark.parametrize("hand, category", [
    ("Ts Js Qs Ks As", C.STRAIGHT_FLUSH),
    ("9h 9d 9s 9c 2d", C.QUADS),
    ("8h 8d 8s Kc Kd", C.FULL_HOUSE),
    ("2h 7h 9h Jh Kh", C.FLUSH),
    ("5d 6h 7s 8c 9d", C.STRAIGHT),
    ("Qh Qd Qs 3c 7d", C.TRIPS),
    ("Jh Jd 4s 4c Ad", C.TWO_PAIR),
    ("Th Td 2s 5c Ad", C.PAIR),
    ("2h 5d 9s Jc Ad", C.HIGH_CARD),
])
def test_each_category_is_recognised(hand, category):
    assert C.category(value(hand)) == category


def test_categories_are_ordered():
    ladder = ["2h 5d 9s Jc Kd", "2h 2d 4s 5c 7d", "2h 2d 3s 3c 4d", "2h 2d 2s 3c 4d",
              "2h 3d 4s 5c 6d", "2h 4h 6h 8h Th", "2h 2d 2s 3c 3d", "2h 2d 2s 2c 3d",
              "2h 3h 4h 5h 6h"]
    values = [value(h) for h in ladder]
    assert values == sorted(values) and len(set(values)) == len(values)


def test_kickers_break_ties():
    assert value("Ah Ad Ks 7c 2d") > value("As Ac Qs Jc Td")   # pair, first kicker
    assert value("Ah Ad Ks 7c 3d") > value("As Ac Kd 7h 2s")   # pair, last kicker
    assert value("Kh Kd 5s 5c 9d") > value("Ks Kc 5h 5d 8s")   # two pair kicker
    assert value("Kh Kd 6s 6c 2d") > value("Ks Kc 5h 5d As")   # second pair beats kicker
    assert value("7h 7d 7s Ac 2d") > value("7c 7d 7h Kc Qd")   # trips kicker
    assert value("9h 9d 9s 9c Ad") > value("9h 9d 9s 9c Kd")   # quads kicker
    assert value("3h 3d 3s 2c 2d") > value("2h 2d 2s Ac Ad")   # full house: trips first
    assert value("Ah Jh 9h 8h 2h") > value("Ad Jd 9d 7d 6d")   # flush, fourth card


def test_wheel_is_the_lowest_straight():
    wheel = value("Ah 2d 3s 4c 5d")
    assert C.category(wheel) == C.STRAIGHT
    assert wheel < value("2h 3d 4s 5c 6d") < value("Th Jd Qs Kc Ad")
    assert wheel > value("Ah Ad Ks Kc Qd")  # but beats two pair
    steel = value("Ah 2h 3h 4h 5h")
    assert C.category(steel) == C.STRAIGHT_FLUSH and steel < value("2c 3c 4c 5c 6c")
    assert C.category(value("Qh Kd As 2c 3d")) == C.HIGH_CARD  # no wrap-around straight


def test_same_ranks_in_other_suits_split():
    assert value("Ah Kd 9s 7c 2d") == value("Ad Kh 9c 7s 2h")
    assert value("5d 6h 7s 8c 9d") == value("5h 6d 7c 8s 9h")


@pytest.mark.parametrize("hand", [[0, 1, 2, 3], [0, 1, 2, 3, 3], [0, 1, 2, 3, 52], [0, 1, 2, 3, "x"]])
def test_evaluate_rejects_bad_hands(hand):
    with pytest.raises(ValueError, match="evaluate"):
        C.evaluate(hand)
