// SPDX-License-Identifier: Apache-2.0
// hvd_settings_table: README.md's table of settings from the one declaration
// (src/config/settings.cc).
//   hvd_settings_table               prints the generated block
//   hvd_settings_table --check FILE  exits 1 (printing both) when FILE's block differs
//   hvd_settings_table --update FILE rewrites FILE's block
// FILE must hold the block's two marker lines (settings_markdown.h). Exit 2: usage or I/O error.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "settings_markdown.h"

namespace {

bool read_file(const char *path, std::string *text) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream s;
    s << in.rdbuf();
    *text = s.str();
    return true;
}

int usage() {
    std::fprintf(stderr, "usage: hvd_settings_table [--check FILE | --update FILE]\n");
    return 2;
}

}  // namespace

int main(int argc, char **argv) {
    using namespace hvd::settings_table;
    const std::string block = markdown_block();
    if (argc == 1) {
        std::fputs(block.c_str(), stdout);
        return 0;
    }
    if (argc != 3) return usage();
    const bool check = std::strcmp(argv[1], "--check") == 0;
    if (!check && std::strcmp(argv[1], "--update") != 0) return usage();
    std::string text;
    if (!read_file(argv[2], &text)) {
        std::fprintf(stderr, "hvd_settings_table: cannot read %s\n", argv[2]);
        return 2;
    }
    size_t begin = 0, end = 0;
    if (!find_block(text, &begin, &end)) {
        std::fprintf(stderr, "hvd_settings_table: %s lacks one pair of the markers\n%s\n%s\n",
                     argv[2], kBegin, kEnd);
        return 2;
    }
    const std::string current = text.substr(begin, end - begin);
    if (check) {
        if (current == block) return 0;
        std::fprintf(stderr,
                     "%s's table of settings differs from src/config/settings.cc's; run "
                     "`cmake --build build --target hvd_settings_readme_update`.\n"
                     "--- in %s:\n%s--- generated:\n%s",
                     argv[2], argv[2], current.c_str(), block.c_str());
        return 1;
    }
    if (current == block) return 0;
    text.replace(begin, end - begin, block);
    std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) {
        std::fprintf(stderr, "hvd_settings_table: cannot write %s\n", argv[2]);
        return 2;
    }
    return 0;
}
