import pytest

from mmcheck.expr import Expr, ExprError


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
    assert Expr("2 * 16 * 17 * sizeof(T)").eval({}, sizeof=8) == 4352
    assert Expr("sizeof()").eval({}, sizeof=4) == 4
    with pytest.raises(ExprError, match="needs a dtype"):
        Expr("sizeof()").eval({})


@pytest.mark.parametrize("text, message", [
    ("__import__('os').system('true')", "only plain calls"),
    ("open('x')", "unknown name 'open'"),
    ("N.bit_length()", "only plain calls"),
    ("N.real", "not allowed"),
    ("[N for N in M]", "not allowed"),
    ("lambda: 0", "not allowed"),
    ("N + 1.5", "only integer constants"),
    ("N +", "cannot parse"),
    ("DIM * 2", "unknown name 'DIM'"),
    ("'a' * N", "only integer constants"),
    ("cdiv(N, k=2)", "only plain calls"),
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
