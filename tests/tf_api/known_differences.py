"""Snippets whose jitflow output deliberately differs from TensorFlow's, with the reason.

Each entry must still differ (the test fails on a stale entry), and every difference not
listed here fails the test. The same list, for users, is docs/tf_differences.md.
"""
KNOWN = {
    "function/as_graph_def": "TF adds an Identity node per function output; jitflow's graphs return the "
                             "producing node's output directly (same values, one node fewer)",
    "function/graph_ops": "same as function/as_graph_def: no Identity node for function outputs",
    "tensor/dtype_mismatch": "mixing dtypes in an op raises TypeError naming both dtypes and the cast to "
                             "use (TF raises InvalidArgumentError); a deliberate, documented difference",
    "variable/assign_dtype_error": "assigning a value of another dtype raises TypeError (TF: ValueError), "
                                   "consistent with every other dtype mismatch in jitflow",
    "test/testcase": "TF's tf.test.TestCase has a deprecated `test_session` method that unittest counts "
                     "as a test (2 tests run); jf.test.TestCase does not",
    "complex/comparison_fails": "an op given a dtype it does not take (ordering complex numbers) raises "
                                "TypeError naming the dtype (TF: InvalidArgumentError), as for every "
                                "dtype error in jitflow",
    "variable/unhashable": "jitflow's variables hash by identity (sets and dict keys of variables work); TF 2's "
                           "raise TypeError and want v.ref(). v.ref() works in jitflow as in TF",
    "graphs/concrete_ids": "a tensor `if` whose branches return a tensor and a Python number: jitflow "
                           "converts the number to the tensor's dtype; TF raises TypeError (x float32 vs 0 "
                           "int32). jitflow's non-scalar condition raises TypeError at trace time as TF's does",
}
