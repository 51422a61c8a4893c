// SPDX-License-Identifier: Apache-2.0
// PMI-1's wire text (bootstrap/pmi1_wire.h): lines as Hydra reads them, its answers as it
// writes them (taken from a real mpiexec.hydra), values that hold any bytes.
// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
// cmocka 1.1.5's header has no extern "C" guard of its own.
extern "C" {
#include <cmocka.h>
}
// clang-format on

#include <map>
#include <string>

#include "bootstrap/pmi1_wire.h"

namespace {

using hvd::bootstrap::pmi1_line;
using hvd::bootstrap::pmi1_parse;
using Fields = std::map<std::string, std::string>;

void test_lines(void **) {
    assert_string_equal(pmi1_line("barrier_in").c_str(), "cmd=barrier_in\n");
    assert_string_equal(pmi1_line("init", {{"pmi_version", "1"}, {"pmi_subversion", "1"}}).c_str(),
                        "cmd=init pmi_version=1 pmi_subversion=1\n");
    assert_string_equal(
        pmi1_line("put", {{"kvsname", "kvs_1_0"}, {"key", "k"}, {"value", "00ff"}}).c_str(),
        "cmd=put kvsname=kvs_1_0 key=k value=00ff\n");
}

void test_answers(void **) {
    Fields f;
    assert_true(pmi1_parse("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0", &f));
    assert_string_equal(f["cmd"].c_str(), "response_to_init");
    assert_string_equal(f["rc"].c_str(), "0");
    assert_true(pmi1_parse("cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n", &f));
    assert_string_equal(f["vallen_max"].c_str(), "1024");
    assert_true(pmi1_parse("cmd=get_result rc=-1 msg=key_nokey_not_found value=unknown", &f));
    assert_string_equal(f["rc"].c_str(), "-1");
    assert_string_equal(f["msg"].c_str(), "key_nokey_not_found");
    assert_true(pmi1_parse("cmd=barrier_out", &f));
    assert_int_equal(f.size(), 1);
    assert_true(pmi1_parse("cmd=x empty=", &f));  // an empty value is a value
    assert_string_equal(f["empty"].c_str(), "");
    // Not PMI-1: no cmd, a word without '=', a key without a name, nothing.
    assert_false(pmi1_parse("rc=0 value=1", &f));
    assert_false(pmi1_parse("cmd=get_result oops", &f));
    assert_false(pmi1_parse("cmd=get_result =1", &f));
    assert_false(pmi1_parse("", &f));
}

void test_values(void **) {
    const std::string bytes("10.0.0.1 29400 s p=a\nce\0\xff", 25);
    const std::string text = hvd::bootstrap::pmi1_value_text(bytes);
    assert_int_equal(text.size(), 2 * bytes.size());
    assert_int_equal(text.find_first_not_of("0123456789abcdef"), std::string::npos);
    std::string back;
    assert_true(hvd::bootstrap::pmi1_value_bytes(text, &back));
    assert_true(back == bytes);
    assert_false(hvd::bootstrap::pmi1_value_bytes("abc", &back));  // odd length
    assert_false(hvd::bootstrap::pmi1_value_bytes("zz", &back));
    assert_true(hvd::bootstrap::pmi1_value_bytes("", &back));
    assert_true(back.empty());
}

}  // namespace

int main() {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_answers),
        cmocka_unit_test(test_values),
    };
    return cmocka_run_group_tests(tests, nullptr, nullptr);
}
