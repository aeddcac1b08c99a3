import numpy as np

from dpbayes.core.distances import hellinger_dirichlet
from dpbayes.posterior import accuracy


def test_binary_distance_matrix_is_a_fresh_copy_of_the_same_bits() -> None:
    # cached per (n, prior): each call must still return the directly computed bits, in an array of its own
    n, prior = 40, (0.5, 2.0)
    counts = np.stack([np.arange(n + 1), n - np.arange(n + 1)], axis=1)
    post = counts + np.asarray(prior)
    direct = np.asarray(hellinger_dirichlet(post[:, None, :], post[None, :, :]))
    first = accuracy.binary_distance_matrix(n, prior)
    assert first.flags.writeable and np.array_equal(first.view(np.int64), direct.view(np.int64))
    first[:] = -1.0  # a caller that writes into its matrix does not change the next caller's
    second = accuracy.binary_distance_matrix(n, list(prior))
    assert second is not first and np.array_equal(second.view(np.int64), direct.view(np.int64))
    other = accuracy.binary_distance_matrix(n, (0.5, 2.5))  # another prior is another matrix
    assert not np.array_equal(other, direct)
