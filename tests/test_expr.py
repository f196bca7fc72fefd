import pickle
import time

import pytest

from mmcheck.describe.expr import Expr, ExprError


@pytest.mark.parametrize("text, env, want", [
    ("cdiv(N, 32)", {"N": 33}, 2),
    ("cdiv(N, 32)", {"N": 32}, 1),
    ("M == N and N % 16 == 0", {"M": 32, "N": 32}, 1),
    ("M == N and N % 16 == 0", {"M": 32, "N": 33}, 0),
    ("1 <= K < 64", {"K": 63}, 1),
    ("max(M, N) * 2 ** 3 - min(K, 4)", {"M": 1, "N": 5, "K": 9}, 36),
    ("not batch > 1 or M > 0", {"batch": 1, "M": 0}, 1),
    ("-K // 2", {"K": 3}, -2),
])
def test_evaluates(text, env, want):
    assert Expr(text).eval(env) == want


def test_sizeof_is_the_dtype_size():
    sizes = {"T": 2, "TC": 4}
    assert Expr("2 * 16 * 17 * sizeof(T)").eval({}, sizeof=sizes) == 1088
    assert Expr("sizeof()").eval({}, sizeof=sizes) == 2 and Expr("sizeof(float)").eval({}, sizeof=sizes) == 2
    assert Expr("sizeof(TC)").eval({}, sizeof=sizes) == 4
    with pytest.raises(ExprError, match="needs a dtype"):
        Expr("sizeof()").eval({})


@pytest.mark.parametrize("text, env, want", [
    ("32 if M >= 64 and N >= 64 else 16", {"M": 64, "N": 64}, 32),
    ("32 if M >= 64 and N >= 64 else 16", {"M": 64, "N": 63}, 16),
    ("(8 if K % 8 == 0 else 1) * 2", {"K": 24}, 16),
    ("1 if M > 1 else 2 if N > 1 else 3", {"M": 1, "N": 1}, 3),
])
def test_conditional_expressions(text, env, want):
    assert Expr(text).eval(env) == want


def test_true_and_false_are_one_and_zero():
    assert Expr("true").eval({}) == 1 and Expr("false").eval({}) == 0
    assert Expr("16 if true else 8").eval({}) == 16 and Expr("N * false").eval({"N": 3}) == 0
    assert Expr("true and M > 1").names == {"M"}


@pytest.mark.parametrize("text, env, want", [
    ("false", {}, "false"),
    ("true", {}, "true"),
    ("N % 4 == 0", {"N": 8}, "true"),
    ("not M > 1 or N > 1", {"M": 2, "N": 1}, "false"),
    ("true if M >= 64 else K > 8", {"M": 1, "K": 9}, "true"),
    ("1", {}, "1"),                          # an integer stays one: it may be an int parameter's 1
    ("32 if M >= 64 else 16", {"M": 64}, "32"),
    ("M > 1 if N else 4", {"M": 2, "N": 1}, "1"),  # one branch not a truth value: an integer
])
def test_a_truth_value_is_written_as_cxx_true_or_false(text, env, want):
    e = Expr(text)
    assert e.literal(e.eval(env)) == want


def test_let_names_are_allowed_only_where_declared():
    e = Expr("cdiv(N, TILE) * TILE", frozenset({"TILE"}))
    assert e.names == {"N", "TILE"} and e.eval({"N": 33, "TILE": 16}) == 48
    with pytest.raises(ExprError, match="unknown name 'TILE'"):
        Expr("cdiv(N, TILE)")


@pytest.mark.parametrize("text, message", [
    ("__import__('os').system('true')", "unknown name '__import__'"),
    ("open('x')", "unknown name 'open'"),
    ("N.bit_length()", "only plain calls"),
    ("N.real", "an attribute is not allowed"),
    ("M * N / 8", r"'/' is not allowed in 'M \* N / 8': sizes are integers; write // to round down, or cdiv"),
    ("[N for N in M]", "not allowed"),
    ("lambda: 0", "not allowed"),
    ("N + 1.5", "only integer constants"),
    ("N +", "cannot parse"),
    ("DIM * 2", "unknown name 'DIM'"),
    ("'a' * N", "only integer constants"),
    ("cdiv(N, k=2)", "only plain calls"),
    ("max(*M)", "only plain calls"),
    ("max(M)", "max takes two or more arguments"),  # Python's max would iterate over its one argument
    ("min()", "min takes two or more arguments"),
    ("cdiv(M)", "cdiv takes two arguments"),
    ("cdiv(M, N, K)", "cdiv takes two arguments"),
    ("M(16)", "M is not callable"),
    ("sizeof(T, TC)", "sizeof takes at most one type name"),
    ("sizeof(4)", "sizeof takes at most one type name"),
])
def test_rejects_anything_outside_the_whitelist(text, message):
    with pytest.raises(ExprError, match=message):
        Expr(text)


@pytest.mark.parametrize("text, env, message", [
    ("N // 0", {"N": 1}, "division by zero"),
    ("cdiv(N, K)", {"N": 1, "K": 0}, "division by zero"),
    ("2 ** N", {"N": 100000}, "exponent"),
    ("M + 1", {}, "M has no value"),
])
def test_evaluation_errors_are_clear(text, env, message):
    with pytest.raises(ExprError, match=message):
        Expr(text).eval(env)


def test_names_lists_the_shape_sizes_used():
    assert Expr("cdiv(N, 16) * batch").names == {"N", "batch"}


@pytest.mark.parametrize("text, message", [
    (" + ".join(["M"] * 1000), "nested too deeply"),
    ("(" * 300 + "1" + ")" * 300, "too many nested parentheses"),
    ("-" * 100 + "M", "nested too deeply"),
    (", ".join(["max(M"] * 200) + ")" * 200, "nested too deeply"),
    ("max(" + ", ".join(["M"] * 600) + ")", "too large"),
    ("M" + " " * 5000, "characters long"),
    (str(2**300), "out of range"),
])
def test_an_expression_too_deep_or_too_large_is_refused_when_parsed(text, message):
    with pytest.raises(ExprError, match=message):
        Expr(text)


@pytest.mark.parametrize("text, env", [
    ("((10**64)**64)**64", {}),
    ("2 ** 64 * 2 ** 64 * 2 ** 64 * 2 ** 64 * 2", {}),
    ("N ** 64", {"N": 1 << 20}),
    ("-(2 ** 64) ** 4 * 2 - 1", {}),
    ("min(2 ** 64 ** 1 * 2 ** 64, 1) * 0 + (2 ** 64) ** 5", {}),
])
def test_every_value_stays_within_256_bits_and_a_power_is_refused_before_it_is_computed(text, env):
    start = time.perf_counter()
    with pytest.raises(ExprError, match="out of range"):
        Expr(text).eval(env)
    assert time.perf_counter() - start < 0.5


def test_values_up_to_256_bits_are_exact():
    assert Expr("(2 ** 64) ** 3 * (2 ** 64 - 1)").eval({}) == 2**256 - 2**192
    assert Expr("(-2) ** 63 * 2 ** 64 * 2 ** 64 * 2 ** 64").eval({}) == -(2**255)
    assert Expr("1 ** 64 + (-1) ** 63 + 0 ** 64").eval({}) == 0


def test_an_expression_survives_pickling_as_check_js_workers_receive_it():
    e = pickle.loads(pickle.dumps(Expr("cdiv(N, TILE) * sizeof(TC)", frozenset({"TILE"}))))
    assert e == Expr("cdiv(N, TILE) * sizeof(TC)", frozenset({"TILE"}))
    assert e.names == {"N", "TILE"} and e.eval({"N": 33, "TILE": 16}, sizeof={"T": 2, "TC": 4}) == 12
