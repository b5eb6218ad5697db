// A corpus of valid replies, one per entry, with the debug form (Reply::to_string()) each
// must parse to. Covers every RESP2/RESP3 type, nulls, nesting, attributes, push, streamed
// strings and aggregates, and the examples of the RESP3 specification.
#pragma once

#include <string_view>

namespace redmux::resp::testing {

struct CorpusEntry {
  std::string_view name;
  std::string_view bytes;
  std::string_view rendered;
};

inline constexpr CorpusEntry kCorpus[] = {
    // Simple types (RESP2 and the RESP3 spec's examples).
    {"simple_string", "+OK\r\n", R"("OK")"},
    {"simple_string_spec", "+hello world\r\n", R"("hello world")"},
    {"empty_simple_string", "+\r\n", R"("")"},
    {"simple_error_spec", "-ERR this is the error description\r\n",
     "(error) ERR this is the error description"},
    {"integer_spec", ":1234\r\n", "1234"},
    {"negative_integer", ":-42\r\n", "-42"},
    {"plus_integer", ":+7\r\n", "+7"},
    {"integer_min", ":-9223372036854775808\r\n", "-9223372036854775808"},
    {"bulk_string_spec", "$11\r\nhello world\r\n", R"("hello world")"},
    {"empty_bulk_spec", "$0\r\n\r\n", R"("")"},
    {"binary_bulk", std::string_view("$6\r\na\r\nb\0c\r\n", 12), R"("a\r\nb\x00c")"},
    {"resp2_null_bulk", "$-1\r\n", "nil"},
    {"resp2_null_array", "*-1\r\n", "nil"},
    {"null_spec", "_\r\n", "nil"},
    {"double_spec", ",1.23\r\n", "1.23"},
    {"double_integral_spec", ",10\r\n", "10"},
    {"double_exponent", ",-1.5e-3\r\n", "-1.5e-3"},
    {"double_plus_exponent", ",+2E+10\r\n", "+2E+10"},
    {"double_inf_spec", ",inf\r\n", "inf"},
    {"double_neg_inf_spec", ",-inf\r\n", "-inf"},
    {"double_nan_spec", ",nan\r\n", "nan"},
    {"double_neg_nan", ",-nan\r\n", "-nan"},
    {"boolean_true_spec", "#t\r\n", "true"},
    {"boolean_false_spec", "#f\r\n", "false"},
    {"bulk_error_spec", "!21\r\nSYNTAX invalid syntax\r\n", "(error) SYNTAX invalid syntax"},
    {"verbatim_spec", "=15\r\ntxt:Some string\r\n", R"((verbatim txt) "Some string")"},
    {"verbatim_empty_mkd", "=4\r\nmkd:\r\n", R"((verbatim mkd) "")"},
    {"big_number_spec", "(3492890328409238509324850943850943825024385\r\n",
     "(big number) 3492890328409238509324850943850943825024385"},
    {"negative_big_number", "(-3492890328409238509324850943850943825024385\r\n",
     "(big number) -3492890328409238509324850943850943825024385"},
    // Aggregates.
    {"empty_array", "*0\r\n", "[]"},
    {"array_spec", "*3\r\n:1\r\n:2\r\n:3\r\n", "[1, 2, 3]"},
    {"nested_array_spec", "*2\r\n*3\r\n:1\r\n$5\r\nhello\r\n:2\r\n#f\r\n",
     R"([[1, "hello", 2], false])"},
    {"array_of_bulks", "*3\r\n$3\r\nfoo\r\n$-1\r\n$3\r\nbar\r\n", R"(["foo", nil, "bar"])"},
    {"map_spec", "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n", R"({"first": 1, "second": 2})"},
    {"empty_map", "%0\r\n", "{}"},
    {"set_spec", "~5\r\n+orange\r\n+apple\r\n#t\r\n:100\r\n:999\r\n",
     R"(~["orange", "apple", true, 100, 999])"},
    {"push_spec", ">3\r\n+message\r\n+somechannel\r\n+this is the message\r\n",
     R"(>["message", "somechannel", "this is the message"])"},
    {"map_of_aggregates", "%2\r\n*1\r\n:1\r\n~1\r\n_\r\n$1\r\nk\r\n%1\r\n+a\r\n,2.5\r\n",
     R"({[1]: ~[nil], "k": {"a": 2.5}})"},
    {"hello_reply",
     "%3\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n$7\r\nmodules\r\n*0\r\n",
     R"({"server": "redis", "proto": 3, "modules": []})"},
    {"exec_with_errors", "*3\r\n+OK\r\n-ERR wrong\r\n:1\r\n", R"(["OK", (error) ERR wrong, 1])"},
    // Attributes: delivered with the reply that follows, never as a reply of their own.
    {"attribute_spec",
     "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.1923\r\n$1\r\nb\r\n,0.0012\r\n"
     "*2\r\n:2039123\r\n:9543892\r\n",
     R"(|{"key-popularity": {"a": 0.1923, "b": 0.0012}} [2039123, 9543892])"},
    {"attribute_inside_spec", "*3\r\n:1\r\n:2\r\n|1\r\n+ttl\r\n:3600\r\n:3\r\n",
     R"(|{"ttl": 3600} [1, 2, 3])"},
    {"empty_attribute", "|0\r\n:1\r\n", "|{} 1"},
    {"attribute_inside_attribute", "|1\r\n+a\r\n|1\r\n+x\r\n:0\r\n:1\r\n+v\r\n",
     R"(|{"a": 1} "v")"},
    // Streamed strings and aggregates.
    // The spec's own example really spells "Hello word" (4 + 5 + 1 bytes).
    {"streamed_string_spec", "$?\r\n;4\r\nHell\r\n;5\r\no wor\r\n;1\r\nd\r\n;0\r\n",
     R"("Hello word")"},
    {"streamed_empty_string", "$?\r\n;0\r\n", R"("")"},
    {"streamed_array_spec", "*?\r\n:1\r\n:2\r\n:3\r\n.\r\n", "[1, 2, 3]"},
    {"streamed_map_spec", "%?\r\n+a\r\n:1\r\n+b\r\n:2\r\n.\r\n", R"({"a": 1, "b": 2})"},
    {"streamed_set", "~?\r\n+x\r\n.\r\n", R"(~["x"])"},
    {"streamed_empty_array", "*?\r\n.\r\n", "[]"},
    {"streamed_nested",
     "*?\r\n$?\r\n;2\r\nab\r\n;0\r\n%?\r\n+k\r\n*?\r\n.\r\n.\r\n$?\r\n;1\r\nc\r\n;0\r\n.\r\n",
     R"(["ab", {"k": []}, "c"])"},
    {"streamed_inside_sized", "*2\r\n*?\r\n:1\r\n.\r\n:2\r\n", "[[1], 2]"},
    {"deep_nesting", "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:8\r\n", "[[[[[[[[8]]]]]]]]"},
};

}  // namespace redmux::resp::testing
