"""jupyter_kernel_test's KernelTests against the built `kiln kernel`, with every sample
attribute filled so that no test is skipped."""
import unittest

import jupyter_kernel_test


class KilnKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "kiln"
    language_name = "kiln"
    file_extension = ".kiln"

    code_hello_world = 'print("hello, world")'
    code_stderr = "!echo oops >&2"

    completion_samples = [
        {"text": "pri", "matches": {"print"}},
        {"text": "%lsmag", "matches": {"%lsmagic"}},
    ]
    complete_code_samples = ["x = 1", 'print("hi")', "%lsmagic", "x = [1,\n 2]"]
    incomplete_code_samples = ["x = [1,", "print(1,", 'x = {"a": 1,']
    invalid_code_samples = ["x = )", "1 +* 2"]

    code_page_something = "print?"
    code_generate_error = "undefined_name_for_error"
    code_execute_result = [
        {"code": "1+2", "result": "3"},
        {"code": "2*4", "result": "8"},
        {"code": "'ab' + 'c'", "result": "'abc'"},
    ]
    code_display_data = [
        {"code": "%%html\n<b>lr</b> = 0.001", "mime": "text/html"},
        {"code": "%html <i>hello</i>", "mime": "text/plain"},
    ]
    code_history_pattern = "1?2"
    supported_history_operations = ("tail", "range", "search")
    code_inspect_sample = "print"
    code_clear_output = "%clear"


if __name__ == "__main__":
    unittest.main()
